//===- BufferViews.cpp - reshape, slice and concat as buffers -------------===//
//
// Three views of language.md §3 give buffers instead of index maps (their
// maps are not affine in general, and a buffer costs nothing where the
// value is in memory already):
//  * reshape(v, extents) of a read of a contiguous buffer (a ref, a window
//    along axis 0, another reshape) is an alias: the same memory read with
//    the new extents and their row-major strides, no copy. Of anything else
//    (a computed value), v is kept in a temporary first (materializeValue)
//    and the temporary is aliased.
//  * slice(v, axis, begin, end) of a computed value: v in a temporary, then
//    a window of it (slices of reads are windows from the start: the
//    frontend makes them).
//  * concat({a, b, ...}, axis): a temporary of the result's shape, each part
//    stored into its window of it, the result read back after those stores.
//  * repeat(v, count, axis) reads v's elements at run-time computed indices
//    (the loop's index over the count): v must be a load, so a computed v
//    is kept in a temporary first, like a reshaped one.
// A temporary read through an alias or a window is ordered like a windowed
// ref (Fusion.cpp): its loads carry the number of stores before them.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::ir;

namespace {

class ViewBuffers {
public:
  explicit ViewBuffers(Function &F) : F(F) {}

  unsigned run() {
    unsigned Changed = 0;
    for (;;) {
      std::optional<NodeId> N = next();
      if (!N)
        break;
      lower(*N);
      ++Changed;
    }
    if (Changed)
      canonicalize(F);
    return Changed;
  }

private:
  bool isBufferView(const Node &N) const {
    if (N.Kind == NodeKind::Repeat)
      return F.Nodes[N.Operands[0]].Kind != NodeKind::Load;
    return N.Kind == NodeKind::Concat ||
           (N.Kind == NodeKind::View &&
            (N.View == ViewKind::Reshape || N.View == ViewKind::Slice));
  }

  /// The first view still to lower: lowering one never moves an earlier
  /// one (materializeValue inserts nodes after the value, which comes
  /// before its view).
  std::optional<NodeId> next() const {
    for (NodeId I = 0; I < F.Nodes.size(); ++I)
      if (!F.Nodes[I].Dead && isBufferView(F.Nodes[I]))
        return I;
    return std::nullopt;
  }

  std::string uniqueName(const std::string &Base) const {
    std::string Name = Base;
    for (unsigned N = 2;
         llvm::any_of(F.Params, [&](const Param &P) { return P.Name == Name; });
         ++N)
      Name = Base + std::to_string(N);
    return Name;
  }

  std::string baseName(unsigned P) const { return F.Params[rootOf(F, P)].Name; }

  /// The buffer `Parent`'s memory read with the extents `S` (row-major).
  unsigned alias(unsigned Parent, const Shape &S, SrcLoc Loc) {
    Param A;
    A.Kind = ParamKind::Alias;
    A.Type = F.Params[Parent].Type;
    A.Rank = S.size();
    A.Parent = Parent;
    A.TempShape = S;
    A.WindowWritable = F.Params[Parent].isWritable();
    A.Loc = Loc;
    A.Name = uniqueName(baseName(Parent) + "_r");
    F.Params.push_back(std::move(A));
    return F.Params.size() - 1;
  }

  /// The window [B, E) along `Axis` of buffer `Parent`.
  unsigned window(unsigned Parent, unsigned Axis, ExtentId B, ExtentId E,
                  SrcLoc Loc) {
    const Param Pa = F.Params[Parent];
    Param W;
    W.Kind = ParamKind::Window;
    W.Type = Pa.Type;
    W.Rank = Pa.Rank;
    W.Loc = Loc;
    W.Parent = Parent;
    W.Root = Pa.isWindow() ? Pa.Root : Parent;
    W.WindowAxis = Axis;
    W.Begin = B;
    W.End = E;
    W.WindowWritable = Pa.isWritable();
    W.TempShape = refShape(F, Parent);
    W.TempShape[Axis] = F.Extents.sub(E, B);
    for (unsigned A = 0; A < Pa.Rank; ++A)
      W.RootOffset.push_back(Pa.isWindow() ? Pa.RootOffset[A]
                                           : F.Extents.constant(0));
    W.RootOffset[Axis] = F.Extents.add(W.RootOffset[Axis], B);
    W.Name = uniqueName(baseName(Parent) + "_w");
    F.Params.push_back(std::move(W));
    return F.Params.size() - 1;
  }

  /// Every load of temporary `T`'s memory reads it after its `Stores`
  /// stores (it is now ordered by versions, not as a plain temporary).
  void readAfterStores(unsigned T, unsigned Stores) {
    for (Node &N : F.Nodes)
      if (!N.Dead && N.Kind == NodeKind::Load && rootOf(F, N.Param) == T)
        N.Version = Stores;
  }

  /// Turns node `Id` into a load of buffer `P` at version `Version`.
  void becomeLoad(NodeId Id, unsigned P, unsigned Version) {
    Node &N = F.Nodes[Id];
    N.Kind = NodeKind::Load;
    N.Param = P;
    N.Version = Version;
    N.Operands.clear();
    N.Axes.clear();
    N.ViewExtents.clear();
    N.Map = {};
    N.View = ViewKind::BroadcastTo;
  }

  /// The value `V` (operand of view `Id`) in memory with its own shape: the
  /// buffer it reads when it is a load of a contiguous one, else a new
  /// temporary. Returns the buffer, the version to read it at, and the
  /// view's id after any renumbering.
  struct InMemory {
    unsigned Buffer;
    unsigned Version;
    NodeId View;
  };
  InMemory inMemory(NodeId Id, bool NeedContiguous, const std::string &Why) {
    const Node &V = F.Nodes[F.Nodes[Id].Operands[0]];
    if (V.Kind == NodeKind::Load &&
        (!NeedContiguous || isContiguous(F, V.Param)))
      return {V.Param, V.Version, Id};
    const Shape Sh = V.Sh;
    const SrcLoc Loc = V.Loc;
    unsigned T = materializeValue(F, F.Nodes[Id].Operands[0], {}, Why);
    readAfterStores(T, 1);
    // The view moved by the nodes inserted after its operand; it is still
    // the first view left.
    NodeId Moved = *next();
    // The temporary leaves out axes of extent 1; an alias puts them back.
    unsigned Buffer = T;
    if (F.Params[T].Rank != Sh.size())
      Buffer = alias(T, Sh, Loc);
    return {Buffer, 1, Moved};
  }

  void lower(NodeId Id) {
    const Node N = F.Nodes[Id];
    if (N.Kind == NodeKind::Concat)
      return lowerConcat(Id);
    if (N.Kind == NodeKind::Repeat)
      return lowerRepeat(N);
    if (N.View == ViewKind::Reshape) {
      InMemory M = inMemory(Id, /*NeedContiguous=*/true,
                            fmt::format("reshaped at line {}", N.Loc.Line));
      unsigned A = alias(M.Buffer, N.Sh, N.Loc);
      becomeLoad(M.View, A, M.Version);
      return;
    }
    // slice of a value: a window of it in memory.
    InMemory M = inMemory(Id, /*NeedContiguous=*/false,
                          fmt::format("sliced at line {}", N.Loc.Line));
    const unsigned Axis = static_cast<unsigned>(N.Axes[0]);
    unsigned W =
        window(M.Buffer, Axis, N.ViewExtents[0], N.ViewExtents[1], N.Loc);
    becomeLoad(M.View, W, M.Version);
  }

  /// repeat of a computed value: the value in a temporary, which the
  /// repeat reads (the temporary's load may come back through expand_dims,
  /// for axes of extent 1 it leaves out: an alias of the whole shape is
  /// read instead).
  void lowerRepeat(const Node &N) {
    const NodeId V = N.Operands[0];
    const Shape Sh = F.Nodes[V].Sh;
    unsigned T = materializeValue(
        F, V, {}, fmt::format("repeated at line {}", N.Loc.Line));
    readAfterStores(T, 1);
    std::optional<unsigned> Whole;
    for (NodeId I = 0; I < F.Nodes.size(); ++I) {
      const Node &R = F.Nodes[I];
      if (R.Dead || R.Kind != NodeKind::Repeat)
        continue;
      NodeId Op = R.Operands[0], Root = Op;
      while (F.Nodes[Root].Kind == NodeKind::View)
        Root = F.Nodes[Root].Operands[0];
      if (Op == Root || F.Nodes[Root].Kind != NodeKind::Load ||
          F.Nodes[Root].Param != T)
        continue;
      if (!Whole)
        Whole = alias(T, Sh, N.Loc);
      becomeLoad(Op, *Whole, 1);
    }
  }

  void lowerConcat(NodeId Id) {
    const Node N = F.Nodes[Id];
    const unsigned Axis = static_cast<unsigned>(N.Axes[0]);
    Param T;
    T.Kind = ParamKind::Temp;
    T.Type = N.Type;
    T.Rank = N.rank();
    T.TempShape = N.Sh;
    T.Loc = N.Loc;
    T.Why = fmt::format("the concatenation at line {}", N.Loc.Line);
    T.Name = uniqueName("concat_buf");
    F.Params.push_back(T);
    const unsigned TP = F.Params.size() - 1;
    ExtentId At = F.Extents.constant(0);
    for (NodeId Part : N.Operands) {
      ExtentId End = F.Extents.add(At, F.Nodes[Part].Sh[Axis]);
      unsigned W = window(TP, Axis, At, End, N.Loc);
      Node St(NodeKind::Store);
      St.Type = N.Type;
      St.Param = W;
      St.Operands = {Part};
      St.Loc = F.Nodes[Part].Loc;
      F.Nodes.push_back(St);
      At = End;
    }
    becomeLoad(Id, TP, N.Operands.size());
    F.Nodes[Id].Name = N.Name;
  }

  Function &F;
};

} // namespace

unsigned pk::bufferViews(Function &F) { return ViewBuffers(F).run(); }
