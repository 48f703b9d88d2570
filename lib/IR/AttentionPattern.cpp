//===- AttentionPattern.cpp - Recognising attention in Graph IR -----------===//

#include "IR/AttentionPattern.h"

#include <set>
#include <vector>

using namespace pk;
using namespace pk::ir;

namespace {

/// Whether the cone of `Root` holds only elementwise work on loads, scalars,
/// constants and indices, apart from the nodes in `Allowed` (whose operands
/// are not visited).
bool elementwiseCone(const Function &F, NodeId Root,
                     const std::set<NodeId> &Allowed) {
  return walkCone(F, {Root}, [&](NodeId V, const Node &N) {
    if (Allowed.count(V))
      return Walk::Skip;
    bool Elementwise = N.Kind != NodeKind::Reduce &&
                       N.Kind != NodeKind::MatMul && !N.isStore();
    return Elementwise ? Walk::Operands : Walk::Stop;
  });
}

/// A reduction of `N` over its last axis only, keeping it.
bool lastAxisKept(const Function &F, const Node &N, ReduceKind K) {
  if (N.Kind != NodeKind::Reduce || N.Reduction != K || !N.KeepDims ||
      N.Axes.size() != 1)
    return false;
  int R = F.Nodes[N.Operands[0]].rank();
  return N.Axes[0] == -1 || N.Axes[0] == R - 1;
}

/// The one matmul in the cone of `Root` (nullopt for none or several).
std::optional<NodeId> onlyMatMul(const Function &F, NodeId Root) {
  std::optional<NodeId> Found;
  bool One = walkCone(F, {Root}, [&](NodeId V, const Node &N) {
    if (N.Kind != NodeKind::MatMul)
      return Walk::Operands;
    if (Found)
      return Walk::Stop;
    Found = V;
    return Walk::Skip;
  });
  return One ? Found : std::nullopt;
}

} // namespace

std::optional<AttentionMatch> ir::matchAttention(const Function &F,
                                                 NodeId Store) {
  AttentionMatch A;
  A.Store = Store;
  A.PV = F.Nodes[Store].Operands[0];
  const Node &PV = F.Nodes[A.PV];
  if (PV.Kind != NodeKind::MatMul ||
      (PV.Type != DType::F32 && PV.Type != DType::F64))
    return std::nullopt;
  // e / sum(e, -1, keepdims)
  const Node &P = F.Nodes[PV.Operands[0]];
  if (P.Kind != NodeKind::Elementwise || P.Op != OpCode::Div)
    return std::nullopt;
  NodeId E = P.Operands[0];
  A.Sum = P.Operands[1];
  const Node &Sum = F.Nodes[A.Sum];
  if (!lastAxisKept(F, Sum, ReduceKind::Sum) || Sum.Operands[0] != E)
    return std::nullopt;
  // e = exp(s - max(s, -1, keepdims))
  const Node &Exp = F.Nodes[E];
  if (Exp.Kind != NodeKind::Elementwise || Exp.Op != OpCode::Exp)
    return std::nullopt;
  const Node &Sub = F.Nodes[Exp.Operands[0]];
  if (Sub.Kind != NodeKind::Elementwise || Sub.Op != OpCode::Sub)
    return std::nullopt;
  A.Score = Sub.Operands[0];
  A.Max = Sub.Operands[1];
  const Node &Max = F.Nodes[A.Max];
  if (!lastAxisKept(F, Max, ReduceKind::Max) || Max.Operands[0] != A.Score)
    return std::nullopt;
  // s: elementwise in q kᵀ (one matmul), of the shape of q kᵀ.
  std::optional<NodeId> QK = onlyMatMul(F, A.Score);
  if (!QK)
    return std::nullopt;
  A.QK = *QK;
  const Node &QKN = F.Nodes[A.QK];
  const Node &S = F.Nodes[A.Score];
  // (s may broadcast q kᵀ against a mask: its extents are then bcast()s of
  // both, checked by the guards.)
  if (S.rank() != QKN.rank() || QKN.Type != PV.Type || S.Type != PV.Type ||
      QKN.rank() != PV.rank() || P.Sh != S.Sh ||
      !elementwiseCone(F, A.Score, {A.QK}))
    return std::nullopt;
  // The operands of both matmuls are elementwise too.
  for (NodeId Op : {QKN.Operands[0], QKN.Operands[1], PV.Operands[1]})
    if (!elementwiseCone(F, Op, {}))
      return std::nullopt;
  return A;
}
