//===- Fusion.cpp - Partition a kernel into fused groups ------------------===//
//
// The rule (documented in docs/design.md, "Fusion"):
//  * Every store roots a cone: the nodes its value is computed from.
//    Elementwise work is recomputed inside each cone, never materialised.
//  * Stores to refs of the same rank form one group: one loop nest over the
//    shape of the first store's ref. When the other refs' extents are
//    different symbols, the nest is fused only if they are equal at run time
//    (LowerToLoops emits the check and an unfused fallback).
//  * Groups run in an order where a group that reads a ref's old value runs
//    before the group that overwrites it. A cycle needs a temporary, which
//    pkc does not create yet: it is reported.
// Reductions, matmul and the shape ops other than broadcast_to are not
// lowered yet: a cone that contains one is reported as not supported.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <fmt/format.h>

#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;

namespace {

/// The value operands of a node: broadcast_to's second operand only gives a
/// shape, its elements are never read.
llvm::ArrayRef<NodeId> valueOperands(const Node &N) {
  llvm::ArrayRef<NodeId> Ops = N.Operands;
  return N.Kind == NodeKind::BroadcastTo ? Ops.take_front(1) : Ops;
}

const char *unsupportedWhat(const Node &N) {
  switch (N.Kind) {
  case NodeKind::Reduce:
    return "reductions";
  case NodeKind::ExpandDims:
    return "expand_dims";
  case NodeKind::Squeeze:
    return "squeeze";
  case NodeKind::Index:
    return "index";
  case NodeKind::MatMul:
    return "matmul";
  case NodeKind::Transpose:
    return "transpose";
  default:
    return nullptr;
  }
}

} // namespace

FusionPlan pk::fuse(const Function &F, std::vector<UserDiag> &Diags) {
  FusionPlan Plan;
  // Cones and the refs each store's cone loads.
  std::vector<NodeId> Stores;
  std::map<NodeId, std::set<unsigned>> &Reads = Plan.StoreReads;
  std::set<NodeId> Reported;
  for (NodeId I = 0; I < F.Nodes.size(); ++I) {
    if (F.Nodes[I].Dead || !F.Nodes[I].isStore())
      continue;
    Stores.push_back(I);
    std::vector<NodeId> Work = {F.Nodes[I].Operands[0]};
    std::set<NodeId> Visited;
    while (!Work.empty()) {
      NodeId V = Work.back();
      Work.pop_back();
      if (!Visited.insert(V).second)
        continue;
      const Node &N = F.Nodes[V];
      if (const char *What = unsupportedWhat(N)) {
        if (Reported.insert(V).second)
          Diags.push_back(
              {N.Loc, "pk-not-supported-yet",
               fmt::format("pkc cannot compile {} yet", What),
               "this kernel runs in eager mode (compile it without pkc); "
               "pkc supports elementwise operations, where, cast and "
               "broadcast_to so far"});
        continue;
      }
      if (N.Kind == NodeKind::Load)
        Reads[I].insert(N.Param);
      for (NodeId O : valueOperands(N))
        Work.push_back(O);
    }
  }

  // Group by the rank of the stored ref, in source order of first stores.
  std::map<unsigned, unsigned> GroupOfRank;
  std::vector<FusionPlan::Group> Groups;
  for (NodeId S : Stores) {
    unsigned Rank = F.Params[F.Nodes[S].Param].Rank;
    auto [It, Inserted] = GroupOfRank.try_emplace(Rank, Groups.size());
    if (Inserted)
      Groups.emplace_back();
    Groups[It->second].Stores.push_back(S);
  }

  // Order: a group reading a ref's old value runs before the one writing it.
  size_t G = Groups.size();
  std::vector<std::set<unsigned>> GroupReads(G), GroupWrites(G);
  for (size_t I = 0; I < G; ++I)
    for (NodeId S : Groups[I].Stores) {
      GroupWrites[I].insert(F.Nodes[S].Param);
      GroupReads[I].insert(Reads[S].begin(), Reads[S].end());
    }
  std::vector<std::set<size_t>> Before(
      G); // Before[j]: groups that must precede j
  for (size_t I = 0; I < G; ++I)
    for (size_t J = 0; J < G; ++J)
      if (I != J)
        for (unsigned P : GroupReads[I])
          if (GroupWrites[J].count(P))
            Before[J].insert(I);
  std::vector<bool> Done(G, false);
  for (size_t Emitted = 0; Emitted < G; ++Emitted) {
    size_t Pick = G;
    for (size_t J = 0; J < G && Pick == G; ++J) {
      if (Done[J])
        continue;
      bool Ready = true;
      for (size_t I : Before[J])
        Ready &= Done[I];
      if (Ready)
        Pick = J;
    }
    if (Pick == G) {
      const Node &S = F.Nodes[Groups[0].Stores[0]];
      Diags.push_back(
          {S.Loc, "pk-not-supported-yet",
           "pkc cannot order these stores: outputs of different ranks read "
           "each other's old values",
           "read the old values into the kernel through separate In refs"});
      return Plan;
    }
    Done[Pick] = true;
    Plan.Groups.push_back(Groups[Pick]);
  }

  // Group ids per node, for --emit=graph.
  for (unsigned GI = 0; GI < Plan.Groups.size(); ++GI)
    for (NodeId S : Plan.Groups[GI].Stores) {
      std::vector<NodeId> Work = {S};
      while (!Work.empty()) {
        NodeId V = Work.back();
        Work.pop_back();
        if (!Plan.GroupOf.try_emplace(V, GI).second)
          continue;
        for (NodeId O : valueOperands(F.Nodes[V]))
          Work.push_back(O);
      }
    }
  return Plan;
}
