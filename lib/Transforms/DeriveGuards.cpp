//===- DeriveGuards.cpp - Run-time shape conditions at kernel entry -------===//
//
// Shape inference leaves bcast(a, b) extents wherever two extents are only
// known at run time. This pass turns every such meeting into a guard that the
// generated code checks once, at entry, before any write, so that a bad call
// raises pk::ShapeError instead of reading out of bounds. It runs before
// dead-code elimination: eager code fails on any operation whose shapes do not
// broadcast, used or not, and the compiled code must fail on the same calls.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <set>
#include <tuple>

using namespace pk;
using namespace pk::ir;

namespace {

class GuardDeriver {
public:
  explicit GuardDeriver(Function &F) : F(F), X(F.Extents) {}

  void run() {
    for (NodeId I = 0; I < F.Nodes.size(); ++I)
      if (!F.Nodes[I].Dead)
        visit(I);
  }

private:
  /// `A` fits `B` whatever the run-time extents are.
  bool alwaysFits(ExtentId A, ExtentId B) const {
    if (A == B || X.isConst(A, 1))
      return true;
    // bcast(A, Y) evaluates to A unless A is 1: A fits it either way.
    const Extent &EB = X.get(B);
    return EB.K == Extent::Bcast && EB.A == A;
  }

  void add(Guard::Kind K, ExtentId A, ExtentId B, NodeId NA, NodeId NB,
           int Axis, SrcLoc Loc) {
    if (!Seen.insert({K, A, B}).second)
      return;
    F.Guards.push_back({K, A, B, NA, NB, Axis, Loc});
  }

  /// Every axis of `From` (right-aligned) must fit the same axis of `To`.
  void fitShape(NodeId From, const Shape &To, NodeId ToNode, SrcLoc Loc) {
    const Shape &S = F.Nodes[From].Sh;
    unsigned Off = To.size() - S.size();
    for (unsigned K = 0; K < S.size(); ++K)
      if (!alwaysFits(S[K], To[Off + K]))
        add(Guard::Fits, S[K], To[Off + K], From, ToNode,
            static_cast<int>(K) - static_cast<int>(S.size()), Loc);
  }

  void visit(NodeId Id) {
    const Node &N = F.Nodes[Id];
    switch (N.Kind) {
    case NodeKind::Elementwise: {
      // Each operand must fit the broadcast result; name the operand that
      // contributed the other extent in the message.
      for (NodeId O : N.Operands) {
        const Shape &S = F.Nodes[O].Sh;
        unsigned Off = N.rank() - S.size();
        for (unsigned K = 0; K < S.size(); ++K) {
          ExtentId R = N.Sh[Off + K];
          if (alwaysFits(S[K], R))
            continue;
          NodeId Other = O;
          for (NodeId P : N.Operands) {
            const Shape &PS = F.Nodes[P].Sh;
            if (P != O && PS.size() >= S.size() - K &&
                PS[PS.size() - (S.size() - K)] != S[K]) {
              Other = P;
              break;
            }
          }
          add(Guard::Fits, S[K], R, O, Other,
              static_cast<int>(K) - static_cast<int>(S.size()), N.Loc);
        }
      }
      return;
    }
    case NodeKind::View: {
      // A broadcast fits its operand to the target's shape; an operand axis
      // the view drops (squeeze) must have extent 1.
      if (N.View == ViewKind::BroadcastTo) {
        fitShape(N.Operands[0], N.Sh, N.Operands[1], N.Loc);
        return;
      }
      if (N.View == ViewKind::Slice) {
        // The bounds within the operand's extent (the window BufferViews
        // makes of a live slice checks them again).
        const Shape &In = F.Nodes[N.Operands[0]].Sh;
        const int K = N.Axes[0];
        if (N.ViewExtents.size() != 2 || K < 0 ||
            K >= static_cast<int>(In.size()))
          return;
        Guard G{Guard::Slice,     N.ViewExtents[0],
                N.ViewExtents[1], N.Operands[0],
                Id,               K - static_cast<int>(In.size()),
                N.Loc};
        G.List = {In[K]};
        F.Guards.push_back(std::move(G));
        return;
      }
      if (N.View == ViewKind::Reshape) {
        // As many elements as the operand (no extent negative; with a -1,
        // the others' product divides the size).
        ExtentId Old = X.constant(1), New = X.constant(1);
        for (ExtentId E : F.Nodes[N.Operands[0]].Sh)
          Old = X.mul(Old, E);
        for (ExtentId E : N.Sh)
          New = X.mul(New, E);
        bool Certain = Old == New && N.Axes[0] < 0;
        for (ExtentId E : N.ViewExtents)
          Certain &= X.get(E).K == Extent::Const;
        if (Certain)
          return;
        Guard G{Guard::Reshape, Old, New, N.Operands[0], Id, 0, N.Loc};
        G.List.assign(N.ViewExtents.begin(), N.ViewExtents.end());
        G.Infer = N.Axes[0];
        F.Guards.push_back(std::move(G));
        return;
      }
      const Shape &In = F.Nodes[N.Operands[0]].Sh;
      int R = In.size();
      for (int K = 0; K < R; ++K)
        if (N.Map.Source[K] < 0 && !X.isConst(In[K], 1))
          add(Guard::Equal, In[K], X.constant(1), N.Operands[0], N.Operands[0],
              K - R, N.Loc);
      return;
    }
    case NodeKind::Store: {
      Shape RefShape;
      for (unsigned A = 0; A < F.Params[N.Param].Rank; ++A)
        RefShape.push_back(refExtent(F, N.Param, A));
      if (F.Nodes[N.Operands[0]].rank() <= RefShape.size())
        fitShape(N.Operands[0], RefShape, Id, N.Loc);
      return;
    }
    case NodeKind::MatMul: {
      const Shape &A = F.Nodes[N.Operands[0]].Sh;
      const Shape &B = F.Nodes[N.Operands[1]].Sh;
      if (A.size() < 2 || B.size() < 2)
        return;
      ExtentId KA = A.back(), KB = B[B.size() - 2];
      if (KA != KB)
        add(Guard::Equal, KA, KB, N.Operands[0], N.Operands[1], -1, N.Loc);
      // The batch extents broadcast against each other (3 and 2 do not),
      // aligned on the right.
      const int R = N.rank();
      for (auto [Op, Other] : {std::pair{N.Operands[0], N.Operands[1]},
                               std::pair{N.Operands[1], N.Operands[0]}}) {
        const Shape &OpSh = F.Nodes[Op].Sh;
        const int OR = OpSh.size();
        for (int K = R - OR; K < R - 2; ++K)
          if (!alwaysFits(OpSh[K - (R - OR)], N.Sh[K]))
            add(Guard::Fits, OpSh[K - (R - OR)], N.Sh[K], Op, Other, K - R,
                N.Loc);
      }
      return;
    }
    case NodeKind::Reduce: {
      // Sum and mean of nothing have identities; the extremes and their
      // positions do not.
      if (N.Reduction == ReduceKind::Sum || N.Reduction == ReduceKind::Mean)
        return;
      const Shape &In = F.Nodes[N.Operands[0]].Sh;
      int R = In.size();
      for (int K = 0; K < R; ++K) {
        bool Reduced = N.Axes.empty();
        for (int A : N.Axes)
          Reduced |= (A < 0 ? A + R : A) == K;
        const Extent &E = X.get(In[K]);
        if (Reduced && !(E.K == Extent::Const && E.Value != 0))
          add(Guard::NonZero, In[K], In[K], N.Operands[0], Id, K - R, N.Loc);
      }
      return;
    }
    case NodeKind::Take: {
      // Every index within the table's extent: a pass over the indices at
      // entry (eager take checks them all before it reads).
      const ExtentId E = F.Nodes[N.Operands[0]].Sh[N.Axes[0]];
      F.Guards.push_back({Guard::Indices, E, E, N.Operands[0], N.Operands[1],
                          N.Axes[0], N.Loc});
      return;
    }
    case NodeKind::Repeat: {
      // The count is not negative (eager repeat checks it).
      if (N.ViewExtents.empty())
        return;
      const ExtentId C = N.ViewExtents[0];
      if (X.get(C).K != Extent::Const)
        add(Guard::Repeat, C, C, N.Operands[0], Id,
            N.Axes[0] - static_cast<int>(F.Nodes[N.Operands[0]].rank()), N.Loc);
      return;
    }
    case NodeKind::Concat: {
      // Every part has the first one's extents but along the axis.
      const Shape &First = F.Nodes[N.Operands[0]].Sh;
      const int R = First.size();
      for (NodeId P : llvm::ArrayRef<NodeId>(N.Operands).drop_front())
        for (int K = 0; K < R; ++K)
          if (K != N.Axes[0] && F.Nodes[P].Sh[K] != First[K])
            add(Guard::Concat, F.Nodes[P].Sh[K], First[K], P, N.Operands[0],
                K - R, N.Loc);
      return;
    }
    default:
      return;
    }
  }

  Function &F;
  ExtentTable &X;
  std::set<std::tuple<int, ExtentId, ExtentId>> Seen;
};

} // namespace

void pk::deriveGuards(Function &F) { GuardDeriver(F).run(); }
