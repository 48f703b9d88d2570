//===- ExpandArgReductions.cpp - argmax/argmin as two plain reductions ----===//
//
// argmax(v, a) is the first position along axis a where v is largest; NaN
// counts as the largest, as in NumPy. With m = max(v, a, keepdims), which
// propagates NaN, the positions where `v == m || v != v` hold are exactly
// those of the extreme (when m is a number no element is NaN; when m is NaN,
// v == m never holds and the NaNs are picked), and the first of them is
//
//   min(where(v == m || v != v, index(v, a), INT64_MAX), a)
//
// argmin is the same with min for max. Both reductions run over the same
// axis, so fusion keeps them in one nest: two phases over each row, the
// second reading the row again from cache (as softmax does). Every layer
// after this pass sees only Max, Min, elementwise ops and Index; the empty
// axis guard was derived before it, on the argmax node itself, so the
// message names argmax.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <cstdint>
#include <limits>

using namespace pk;
using namespace pk::ir;

namespace {

/// The nodes that compute ArgMax/ArgMin node `V`, in order; operand ids are
/// relative: a value >= `First` is a node of this list (First + position),
/// anything smaller a node of the function.
std::vector<Node> expansion(const Function &F, const Node &V, NodeId First) {
  const NodeId X = V.Operands[0];
  const Node &In = F.Nodes[X];
  const bool Max = V.Reduction == ReduceKind::ArgMax;
  std::vector<Node> Out;
  auto Add = [&](Node N, llvm::StringRef Name) {
    N.Loc = V.Loc;
    N.Name = Name.str();
    N.Label = V.Label;
    Out.push_back(std::move(N));
    return First + static_cast<NodeId>(Out.size() - 1);
  };
  auto Apply = [&](OpCode Op, llvm::ArrayRef<NodeId> Operands, DType T,
                   llvm::StringRef Name) {
    Node N(NodeKind::Elementwise);
    N.Op = Op;
    N.Type = T;
    N.Operands.assign(Operands.begin(), Operands.end());
    N.Sh = In.Sh;
    return Add(std::move(N), Name);
  };

  Node Best(NodeKind::Reduce);
  Best.Reduction = Max ? ReduceKind::Max : ReduceKind::Min;
  Best.Type = In.Type;
  Best.Operands = {X};
  Best.Axes = V.Axes;
  Best.KeepDims = true;
  Best.Sh = In.Sh;
  const int Axis =
      V.Axes[0] < 0 ? V.Axes[0] + static_cast<int>(In.rank()) : V.Axes[0];
  Best.Sh[Axis] = F.Extents.constant(1);
  const NodeId M = Add(std::move(Best), "best");

  NodeId Hit = Apply(OpCode::Eq, {X, M}, DType::Bool, "is_best");
  if (isFloat(In.Type)) {
    const NodeId NaN = Apply(OpCode::Ne, {X, X}, DType::Bool, "is_nan");
    Hit = Apply(OpCode::Or, {Hit, NaN}, DType::Bool, "at_best");
  }
  Node Pos(NodeKind::Index);
  Pos.Type = DType::I64;
  Pos.Operands = {X};
  Pos.Axes = {Axis};
  Pos.Sh = In.Sh;
  const NodeId P = Add(std::move(Pos), "pos");
  Node None(NodeKind::Const);
  None.Type = DType::I64;
  None.IntValue = std::numeric_limits<int64_t>::max();
  const NodeId Never = Add(std::move(None), "");
  const NodeId Cand =
      Apply(OpCode::Select, {Hit, P, Never}, DType::I64, "best_pos");

  Node FirstHit(NodeKind::Reduce);
  FirstHit.Reduction = ReduceKind::Min;
  FirstHit.Type = DType::I64;
  FirstHit.Operands = {Cand};
  FirstHit.Axes = V.Axes;
  FirstHit.KeepDims = V.KeepDims;
  FirstHit.Sh = V.Sh;
  Add(std::move(FirstHit), V.Name);
  return Out;
}

} // namespace

unsigned pk::expandArgReductions(Function &F) {
  unsigned Count = 0;
  for (NodeId V = 0; V < F.Nodes.size(); ++V) {
    const Node &N = F.Nodes[V];
    if (N.Dead || N.Kind != NodeKind::Reduce || !isArgReduction(N.Reduction))
      continue;
    // The expansion goes right after V; V stays (dead) for the guards that
    // name it, and its users read the expansion's last node.
    std::vector<Node> After = expansion(F, N, V + 1);
    const NodeId Shift = After.size();
    const NodeId Result = V + Shift;
    std::vector<Node> Old = std::move(F.Nodes);
    F.Nodes.assign(std::make_move_iterator(Old.begin()),
                   std::make_move_iterator(Old.begin() + V + 1));
    F.Nodes[V].Dead = true;
    for (Node &A : After)
      F.Nodes.push_back(std::move(A));
    for (NodeId I = V + 1; I < Old.size(); ++I) {
      Node M = std::move(Old[I]);
      for (NodeId &O : M.Operands)
        O = O == V ? Result : O > V ? O + Shift : O;
      F.Nodes.push_back(std::move(M));
    }
    for (Guard &G : F.Guards) {
      G.NodeA = G.NodeA > V ? G.NodeA + Shift : G.NodeA;
      G.NodeB = G.NodeB > V ? G.NodeB + Shift : G.NodeB;
    }
    V = Result;
    ++Count;
  }
  return Count;
}
