//===- InferShapes.cpp - Symbolic shapes and compile-time shape errors ----===//
//
// Every node gets a shape of symbolic extents. Broadcasting follows NumPy
// (right-aligned, extent 1 stretches); two extents that are different symbols
// broadcast to bcast(a, b), checked at run time by the guards. Errors that are
// certain at compile time (constants that cannot broadcast, ranks that do not
// fit, axes out of range) become diagnostics here.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::ir;

namespace {

class ShapeInference {
public:
  explicit ShapeInference(Function &F) : F(F), X(F.Extents) {}

  std::vector<UserDiag> run() {
    Failed.assign(F.Nodes.size(), false);
    for (NodeId I = 0; I < F.Nodes.size(); ++I) {
      const Node &N = F.Nodes[I];
      if (N.Dead)
        continue;
      // A value whose operand has no shape gets none either, silently: one
      // mistake is reported once, not again at every use of its result.
      if (llvm::any_of(N.Operands, [&](NodeId O) { return Failed[O]; })) {
        Failed[I] = true;
        continue;
      }
      size_t Before = Diags.size();
      visit(I);
      Failed[I] = Diags.size() != Before;
    }
    return std::move(Diags);
  }

private:
  /// `x[x.0, x.1]` for a parameter or local, `(a[_] * 2.0f)[a.0]` for an
  /// expression (the same convention as the run-time guard messages).
  std::string describe(NodeId Id) const {
    const Node &N = F.Nodes[Id];
    std::string Label;
    if (N.Kind == NodeKind::Load || N.Kind == NodeKind::ScalarParam)
      Label = F.Params[N.Param].Name;
    else if (!N.Name.empty())
      Label = N.Name;
    else if (!N.Label.empty())
      Label = "(" + N.Label + ")";
    else
      Label = "value";
    return Label + shapeToString(F, N.Sh);
  }

  void error(const Node &N, std::string Message, std::string Note = "") {
    Diags.push_back({N.Loc, "pk-shape", std::move(Message), std::move(Note)});
  }

  /// Normalises `Axis` for a value of rank `Rank`; reports and returns -1
  /// when it is out of range.
  int normaliseAxis(const Node &N, int Axis, unsigned Rank) {
    int R = static_cast<int>(Rank);
    if (Axis < -R || Axis >= R) {
      error(N,
            fmt::format("axis {} is out of range for a value of rank {}", Axis,
                        Rank),
            R ? fmt::format("valid axes are {}..{} (negative counts from the "
                            "end)",
                            -R, R - 1)
              : "a rank-0 value has no axes");
      return -1;
    }
    return Axis < 0 ? Axis + R : Axis;
  }

  /// take(table, indices, axis): table's shape with the axis replaced by the
  /// indices' shape. What pkc compiles: a table read from a ref (or a view
  /// of one) and indices read from an In ref or a scalar, which the entry
  /// checks against the table's extent before any write (language.md §3).
  void visitTake(Node &N) {
    const Node &T = F.Nodes[N.Operands[0]], &I = F.Nodes[N.Operands[1]];
    const int Ax = normaliseAxis(N, N.Axes[0], T.rank());
    if (Ax < 0)
      return;
    if (!isInteger(I.Type)) {
      error(N,
            fmt::format("take's indices {} are not integers",
                        describe(N.Operands[1])),
            "index with int32_t or int64_t values");
      return;
    }
    auto NotYet = [&](std::string Message, std::string Note) {
      Diags.push_back(
          {N.Loc, "pk-not-supported-yet", std::move(Message), std::move(Note)});
    };
    if (T.Kind != NodeKind::Load) {
      NotYet(fmt::format("pkc compiles take from a ref only, not yet from the "
                         "computed value {}",
                         describe(N.Operands[0])),
             "store the value to an Out ref in one kernel and take from that "
             "ref in a second");
      return;
    }
    const bool IndexRef =
        I.Kind == NodeKind::Load && F.Params[I.Param].Kind == ParamKind::In;
    if (!IndexRef && I.Kind != NodeKind::ScalarParam &&
        I.Kind != NodeKind::Const) {
      NotYet(fmt::format("pkc compiles take with indices read from an In ref "
                         "or a scalar parameter only, not yet {}",
                         describe(N.Operands[1])),
             "pass the indices as an In ref (the compiled kernel checks them "
             "all before any write); computed indices need a second kernel");
      return;
    }
    N.Axes[0] = Ax;
    N.Sh.assign(T.Sh.begin(), T.Sh.begin() + Ax);
    N.Sh.insert(N.Sh.end(), I.Sh.begin(), I.Sh.end());
    N.Sh.insert(N.Sh.end(), T.Sh.begin() + Ax + 1, T.Sh.end());
  }

  /// repeat(v, count, axis): v's shape with the extent along the axis
  /// multiplied by the count (a negative one is a guard, or an error when
  /// it is a constant).
  void visitRepeat(Node &N) {
    const Node &V = F.Nodes[N.Operands[0]];
    const int Ax = normaliseAxis(N, N.Axes[0], V.rank());
    if (Ax < 0)
      return;
    std::optional<ExtentId> Count = scalarExtent(F, N.Operands[1]);
    if (!Count) {
      const Node &C = F.Nodes[N.Operands[1]];
      Diags.push_back(
          {C.Loc.Line ? C.Loc : N.Loc, "pk-not-supported-yet",
           fmt::format("the count '{}' of repeat of {} is not supported by "
                       "pkc yet",
                       C.Label.empty() ? C.Name : C.Label,
                       describe(N.Operands[0])),
           "counts are integer sums, differences, products and quotients of "
           "scalar parameters, extents and constants"});
      return;
    }
    if (X.get(*Count).K == Extent::Const && X.get(*Count).Value < 0) {
      error(N,
            fmt::format("repeat of {}: the count {} is negative",
                        describe(N.Operands[0]), X.get(*Count).Value),
            "repeat each element 0 or more times");
      return;
    }
    N.Axes[0] = Ax;
    N.ViewExtents = {*Count};
    N.Sh = V.Sh;
    N.Sh[Ax] = X.mul(V.Sh[Ax], *Count);
  }

  /// Broadcasts extent `E` of operand `Op` into `Acc`, reporting constants
  /// that cannot broadcast.
  ExtentId broadcastInto(const Node &N, ExtentId Acc, NodeId AccFrom,
                         ExtentId E, NodeId Op) {
    const Extent &A = X.get(Acc), &B = X.get(E);
    if (A.K == Extent::Const && B.K == Extent::Const && A.Value != B.Value &&
        A.Value != 1 && B.Value != 1) {
      error(N,
            fmt::format("cannot broadcast {} against {}", describe(Op),
                        describe(AccFrom)),
            "extents must be equal or 1 along each axis (counted from the "
            "end)");
      return Acc;
    }
    return X.bcast(Acc, E);
  }

  void visitElementwise(NodeId Id) {
    Node &N = F.Nodes[Id];
    unsigned Rank = 0;
    for (NodeId O : N.Operands)
      Rank = std::max(Rank, F.Nodes[O].rank());
    Shape Sh(Rank, X.constant(1));
    llvm::SmallVector<NodeId, 4> From(Rank, N.Operands.front());
    for (NodeId O : N.Operands) {
      const Shape &OS = F.Nodes[O].Sh;
      unsigned Off = Rank - OS.size();
      for (unsigned K = 0; K < OS.size(); ++K) {
        ExtentId Before = Sh[Off + K];
        Sh[Off + K] = broadcastInto(N, Before, From[Off + K], OS[K], O);
        if (!X.isConst(OS[K], 1) && X.isConst(Before, 1))
          From[Off + K] = O;
      }
    }
    N.Sh = std::move(Sh);
  }

  /// The shape and index map of a view, from how it was written.
  void visitView(Node &N) {
    const NodeId From = N.Operands[0];
    Shape In = F.Nodes[From].Sh;
    unsigned Axis = 0;
    switch (N.View) {
    case ViewKind::BroadcastTo: {
      const Shape &To = F.Nodes[N.Operands[1]].Sh;
      N.Sh = To;
      if (In.size() > To.size()) {
        error(N, fmt::format("cannot broadcast {} to the shape {}: it has "
                             "more axes",
                             describe(From), shapeToString(F, To)));
        return;
      }
      for (unsigned K = 0; K < In.size(); ++K)
        broadcastInto(N, To[To.size() - In.size() + K], N.Operands[1], In[K],
                      From);
      break;
    }
    case ViewKind::ExpandDims: {
      int K = normaliseAxis(N, N.Axes[0], In.size() + 1);
      if (K < 0)
        return;
      Axis = K;
      In.insert(In.begin() + K, X.constant(1));
      N.Sh = std::move(In);
      break;
    }
    case ViewKind::Squeeze: {
      int K = normaliseAxis(N, N.Axes[0], In.size());
      if (K < 0)
        return;
      Axis = K;
      const Extent &E = X.get(In[K]);
      if (E.K == Extent::Const && E.Value != 1)
        error(N,
              fmt::format("cannot squeeze axis {} of {}: its extent is {}",
                          N.Axes[0], describe(From), E.Value),
              "squeeze removes an axis of extent 1 only");
      In.erase(In.begin() + K);
      N.Sh = std::move(In);
      break;
    }
    case ViewKind::Transpose:
      if (In.size() < 2) {
        error(N, fmt::format("transpose needs a value of rank 2 or more, {} "
                             "has rank {}",
                             describe(From), In.size()));
        N.Sh = In;
        return;
      }
      std::swap(In[In.size() - 1], In[In.size() - 2]);
      N.Sh = std::move(In);
      break;
    case ViewKind::Permute: {
      // Axis i of the view is operand axis Axes[i]: every axis once.
      N.Sh = In;
      if (N.Axes.size() != In.size()) {
        error(N,
              fmt::format("permute_dims of {} (rank {}) needs {} axes, not {}",
                          describe(From), In.size(), In.size(), N.Axes.size()),
              "list every axis of the value once, in its new order");
        return;
      }
      IndexMap M;
      M.Source.assign(In.size(), -1);
      for (unsigned I = 0; I < N.Axes.size(); ++I) {
        int K = normaliseAxis(N, N.Axes[I], In.size());
        if (K < 0)
          return;
        if (M.Source[K] >= 0) {
          error(N,
                fmt::format("permute_dims of {}: axis {} appears twice",
                            describe(From), N.Axes[I]),
                "list every axis of the value once, in its new order");
          return;
        }
        M.Source[K] = static_cast<int>(I);
        N.Sh[I] = In[K];
      }
      N.Map = std::move(M);
      return;
    }
    case ViewKind::Reshape: {
      // The -1 is the size over the product of the others (the guard
      // checks that it divides, and that no extent is negative).
      if (!scalarExtents(N, 1))
        return;
      N.Sh.assign(N.ViewExtents.begin(), N.ViewExtents.end());
      if (N.Axes[0] >= 0) {
        ExtentId Size = X.constant(1), Known = X.constant(1);
        for (ExtentId E : In)
          Size = X.mul(Size, E);
        for (size_t K = 0; K < N.Sh.size(); ++K)
          if (static_cast<int>(K) != N.Axes[0])
            Known = X.mul(Known, N.Sh[K]);
        N.Sh[N.Axes[0]] = X.div(Size, Known);
      }
      for (ExtentId E : N.ViewExtents)
        if (X.get(E).K == Extent::Const && X.get(E).Value < 0 &&
            (N.Axes[0] < 0 || E != N.ViewExtents[N.Axes[0]]))
          error(N,
                fmt::format("reshape of {}: the extent {} is negative",
                            describe(From), X.get(E).Value),
                "extents are >= 0; one literal -1 is inferred");
      return;
    }
    case ViewKind::Slice: {
      int K = normaliseAxis(N, N.Axes[0], In.size());
      if (K < 0 || !scalarExtents(N, 1))
        return;
      N.Axes[0] = K;
      // A negative constant bound counts from the end.
      for (ExtentId &B : N.ViewExtents)
        if (X.get(B).K == Extent::Const && X.get(B).Value < 0)
          B = X.add(In[K], B);
      N.Sh = In;
      N.Sh[K] = X.sub(N.ViewExtents[1], N.ViewExtents[0]);
      return;
    }
    }
    N.Map = viewMap(N.View, Axis, F.Nodes[From].rank(), N.rank());
  }

  /// ViewExtents from the scalar operands From.. (reshape's extents,
  /// slice's bounds); reports one pkc cannot express as an extent.
  bool scalarExtents(Node &N, unsigned From) {
    N.ViewExtents.clear();
    for (unsigned I = From; I < N.Operands.size(); ++I) {
      std::optional<ExtentId> E = scalarExtent(F, N.Operands[I]);
      if (!E) {
        const Node &S = F.Nodes[N.Operands[I]];
        Diags.push_back(
            {S.Loc.Line ? S.Loc : N.Loc, "pk-not-supported-yet",
             fmt::format(
                 "the {} '{}' of {} is not supported by pkc yet",
                 N.View == ViewKind::Slice ? "slice bound" : "reshape extent",
                 S.Label.empty() ? S.Name : S.Label, describe(N.Operands[0])),
             "extents and bounds are integer sums, differences, products and "
             "quotients of scalar parameters, extents and constants"});
        return false;
      }
      N.ViewExtents.push_back(*E);
    }
    return true;
  }

  void visitConcat(Node &N) {
    const Node &First = F.Nodes[N.Operands[0]];
    const unsigned R = First.rank();
    if (R == 0) {
      error(N,
            fmt::format("concat of {}: it has rank 0", describe(N.Operands[0])),
            "concatenate values of rank 1 or more");
      return;
    }
    int K = normaliseAxis(N, N.Axes[0], R);
    if (K < 0)
      return;
    N.Axes[0] = K;
    N.Sh = First.Sh;
    for (NodeId P : llvm::ArrayRef<NodeId>(N.Operands).drop_front()) {
      const Node &Part = F.Nodes[P];
      if (Part.rank() != R) {
        error(N,
              fmt::format("concat: {} does not fit {}: the ranks differ",
                          describe(P), describe(N.Operands[0])),
              "concatenate values of one rank");
        return;
      }
      for (unsigned A = 0; A < R; ++A) {
        const Extent &E1 = X.get(Part.Sh[A]), &E2 = X.get(First.Sh[A]);
        if (static_cast<int>(A) != K && E1.K == Extent::Const &&
            E2.K == Extent::Const && E1.Value != E2.Value)
          error(N,
                fmt::format("concat: {} does not fit {} along axis {}",
                            describe(P), describe(N.Operands[0]), N.Axes[0]),
                "the extents but along the axis must be equal");
      }
      N.Sh[K] = X.add(N.Sh[K], Part.Sh[K]);
    }
  }

  void visit(NodeId Id) {
    Node &N = F.Nodes[Id];
    auto Operand = [&](unsigned I) -> Node & { return F.Nodes[N.Operands[I]]; };
    switch (N.Kind) {
    case NodeKind::ScalarParam:
    case NodeKind::Const:
    case NodeKind::Extent:
      N.Sh.clear();
      if (!N.Operands.empty()) {
        // v.extent(i) of a value: its extent, now known (0 <= i < rank, as
        // the eager value's extent(i)).
        const Shape &S = Operand(0).Sh;
        if (N.Axes[0] < 0 || N.Axes[0] >= static_cast<int>(S.size())) {
          error(N,
                fmt::format("axis {} of the extent of {} is out of range",
                            N.Axes[0], describe(N.Operands[0])),
                fmt::format("valid axes are 0..{}", int(S.size()) - 1));
          return;
        }
        N.Ext = S[N.Axes[0]];
        N.Label = extentToString(F, N.Ext);
        N.Operands.clear();
        N.Axes.clear();
      }
      return;
    case NodeKind::Load:
      N.Sh.clear();
      for (unsigned A = 0; A < F.Params[N.Param].Rank; ++A)
        N.Sh.push_back(refExtent(F, N.Param, A));
      return;
    case NodeKind::Elementwise:
      visitElementwise(Id);
      return;
    case NodeKind::Cast:
    case NodeKind::Index:
      N.Sh = Operand(0).Sh;
      if (N.Kind == NodeKind::Index)
        normaliseAxis(N, N.Axes[0], N.Sh.size());
      return;
    case NodeKind::Reduce: {
      Shape In = Operand(0).Sh;
      llvm::SmallVector<bool, 4> Reduced(In.size(), N.Axes.empty());
      for (int A : N.Axes) {
        int K = normaliseAxis(N, A, In.size());
        if (K < 0)
          return;
        if (Reduced[K])
          error(N, fmt::format("axis {} is reduced twice", A));
        Reduced[K] = true;
      }
      N.Sh.clear();
      for (unsigned K = 0; K < In.size(); ++K) {
        if (!Reduced[K])
          N.Sh.push_back(In[K]);
        else if (N.KeepDims)
          N.Sh.push_back(X.constant(1));
      }
      return;
    }
    case NodeKind::View:
      visitView(N);
      return;
    case NodeKind::Concat:
      visitConcat(N);
      return;
    case NodeKind::Take:
      visitTake(N);
      return;
    case NodeKind::Repeat:
      visitRepeat(N);
      return;
    case NodeKind::MatMul: {
      const Shape &A = Operand(0).Sh, &B = Operand(1).Sh;
      if (A.size() < 2 || B.size() < 2) {
        error(N, fmt::format(
                     "matmul takes values of rank 2 or more, not {} and {}",
                     describe(N.Operands[0]), describe(N.Operands[1])));
        return;
      }
      ExtentId KA = A[A.size() - 1], KB = B[B.size() - 2];
      const Extent &EA = X.get(KA), &EB = X.get(KB);
      if (EA.K == Extent::Const && EB.K == Extent::Const &&
          EA.Value != EB.Value)
        error(N, fmt::format("matmul: the inner extents of {} and {} differ",
                             describe(N.Operands[0]), describe(N.Operands[1])));
      // The batch axes (all but the last two) broadcast as NumPy's do,
      // aligned on the right; a missing one has extent 1.
      N.Sh.clear();
      const size_t BatchA = A.size() - 2, BatchB = B.size() - 2;
      const size_t Batch = std::max(BatchA, BatchB);
      for (size_t K = 0; K < Batch; ++K) {
        ExtentId BA =
            K + BatchA >= Batch ? A[K + BatchA - Batch] : X.constant(1);
        ExtentId BB =
            K + BatchB >= Batch ? B[K + BatchB - Batch] : X.constant(1);
        N.Sh.push_back(broadcastInto(N, BA, N.Operands[0], BB, N.Operands[1]));
      }
      N.Sh.push_back(A[A.size() - 2]);
      N.Sh.push_back(B[B.size() - 1]);
      return;
    }
    case NodeKind::Store: {
      const Node &V = Operand(0);
      const Param &P = F.Params[N.Param];
      N.Sh.clear();
      if (V.rank() > P.Rank) {
        error(N,
              fmt::format("cannot store {} (rank {}) into {} of rank {}",
                          describe(N.Operands[0]), V.rank(), P.Name, P.Rank),
              "reduce the value (sum, mean, ...) or declare the ref with a "
              "higher rank");
      }
      // Ref extents are only known at run time: the guards check the fit.
      return;
    }
    }
  }

  Function &F;
  ExtentTable &X;
  std::vector<UserDiag> Diags;
  /// The nodes shape inference reported (or skipped for an operand it
  /// reported).
  std::vector<bool> Failed;
};

} // namespace

std::vector<UserDiag> pk::inferShapes(Function &F) {
  return ShapeInference(F).run();
}
