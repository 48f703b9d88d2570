//===- Fusion.cpp - Partition a kernel into fused groups ------------------===//
//
// The rule (documented in docs/design.md, "Fusion"):
//  * Every store roots a cone: the nodes its value is computed from.
//    Elementwise work is recomputed inside each cone, never materialised.
//  * A store whose cone reduces values of rank n over the axes R belongs to
//    the reduction group (n, R): one nest over the rows (the axes not in R)
//    that runs the reductions and the stores of that row in phases. All the
//    reductions of one store must agree on (n, R).
//  * A store without reductions to a ref of rank n joins the first
//    reduction group of rank n (it becomes the last phase of each row);
//    otherwise the stores to refs of one rank form an elementwise group: one
//    loop nest over the shape of the first store's ref (LowerToLoops adds a
//    run-time check that the other refs have that shape, and a fallback).
//  * matmul(a, b) is a reduction too: of the rank-(n+1) products
//    a[..., m, k] * b[..., k, n] over their last axis k. Its consumers
//    (bias, activation, residual) become the row values of that group, so an
//    epilogue runs where each output element is produced; its elementwise
//    producers are recomputed per product (ScheduleCpu may pack them).
//    transpose is a view: loads index through it, nothing is copied.
//  * softmax(s) v with s an elementwise function of q kᵀ (attention, see
//    IR/AttentionPattern.h) is a group of its own: one nest over the query
//    rows that runs an online softmax over the keys; no [T, S] buffer.
//  * Groups run in an order where a group that reads a ref's old value runs
//    before the group that overwrites it. A cycle needs a temporary, which
//    pkc does not create yet: it is reported.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;

namespace {

/// The value operands of a node: broadcast_to's second operand and index's
/// operand only give a shape, their elements are never read.
llvm::ArrayRef<NodeId> valueOperands(const Node &N) {
  llvm::ArrayRef<NodeId> Ops = N.Operands;
  if (N.Kind == NodeKind::BroadcastTo)
    return Ops.take_front(1);
  if (N.Kind == NodeKind::Index)
    return {};
  return Ops;
}

/// The reduced rank and axes of a reduce or matmul node, normalised.
std::pair<unsigned, std::vector<unsigned>> reduceSignature(const Function &F,
                                                           const Node &N) {
  if (N.Kind == NodeKind::MatMul)
    return {N.rank() + 1, {N.rank()}};
  unsigned Rank = F.Nodes[N.Operands[0]].rank();
  std::vector<unsigned> Axes;
  for (int A : N.Axes)
    Axes.push_back(A < 0 ? A + static_cast<int>(Rank) : A);
  if (N.Axes.empty())
    for (unsigned A = 0; A < Rank; ++A)
      Axes.push_back(A);
  std::sort(Axes.begin(), Axes.end());
  return {Rank, Axes};
}

} // namespace

FusionPlan pk::fuse(const Function &F, std::vector<UserDiag> &Diags) {
  FusionPlan Plan;
  std::vector<NodeId> Stores;
  std::map<NodeId, std::set<unsigned>> &Reads = Plan.StoreReads;
  // Store -> the signature of its reductions, and whether one is a matmul:
  // a matmul's group takes no other reductions (they would turn its gemm
  // into one dot product per element).
  using GroupKey = std::pair<std::pair<unsigned, std::vector<unsigned>>, bool>;
  std::map<NodeId, GroupKey> Signature;
  std::set<NodeId> Reported;
  std::map<NodeId, AttentionMatch> Attention;
  for (NodeId I = 0; I < F.Nodes.size(); ++I) {
    if (F.Nodes[I].Dead || !F.Nodes[I].isStore())
      continue;
    Stores.push_back(I);
    if (auto A = matchAttention(F, I)) {
      Attention[I] = *A;
      // Only the refs it reads matter (for the order of the groups).
      std::vector<NodeId> Work = {F.Nodes[I].Operands[0]};
      std::set<NodeId> Visited;
      while (!Work.empty()) {
        NodeId V = Work.back();
        Work.pop_back();
        if (!Visited.insert(V).second)
          continue;
        if (F.Nodes[V].Kind == NodeKind::Load)
          Reads[I].insert(F.Nodes[V].Param);
        for (NodeId O : valueOperands(F.Nodes[V]))
          Work.push_back(O);
      }
      continue;
    }
    std::vector<NodeId> Work = {F.Nodes[I].Operands[0]};
    std::set<NodeId> Visited;
    std::optional<std::pair<unsigned, std::vector<unsigned>>> Sig;
    bool HasMatMul = false;
    while (!Work.empty()) {
      NodeId V = Work.back();
      Work.pop_back();
      if (!Visited.insert(V).second)
        continue;
      const Node &N = F.Nodes[V];
      if (N.Kind == NodeKind::Reduce || N.Kind == NodeKind::MatMul) {
        HasMatMul |= N.Kind == NodeKind::MatMul;
        auto S = reduceSignature(F, N);
        if (!Sig)
          Sig = S;
        else if (*Sig != S && Reported.insert(V).second)
          Diags.push_back(
              {N.Loc, "pk-not-supported-yet",
               N.Kind == NodeKind::MatMul
                   ? "pkc cannot fuse a matmul with a reduction over other "
                     "axes (or another matmul's result) into one output yet"
                   : "pkc cannot fuse reductions over different axes (or of "
                     "values of different ranks) into one output yet",
               "write the intermediate result to an Out ref and reduce it "
               "in a second kernel"});
      }
      if (N.Kind == NodeKind::Load)
        Reads[I].insert(N.Param);
      for (NodeId O : valueOperands(N))
        Work.push_back(O);
    }
    if (Sig)
      Signature[I] = {*Sig, HasMatMul};
  }
  if (!Diags.empty())
    return Plan;

  // Reduction groups first (source order), then elementwise stores join a
  // reduction group of their rank or group by rank.
  std::vector<FusionPlan::Group> Groups;
  std::map<GroupKey, unsigned> GroupOfSig;
  std::map<unsigned, unsigned> ElementwiseGroupOfRank;
  for (NodeId S : Stores) {
    auto A = Attention.find(S);
    if (A == Attention.end())
      continue;
    unsigned R = F.Nodes[A->second.PV].rank();
    Groups.emplace_back();
    Groups.back().Stores = {S};
    Groups.back().Rank = R + 2;
    Groups.back().ReduceAxes = {R, R + 1};
    Groups.back().Attention = A->second;
  }
  for (NodeId S : Stores) {
    auto It = Signature.find(S);
    if (It == Signature.end())
      continue;
    auto [G, Inserted] = GroupOfSig.try_emplace(It->second, Groups.size());
    if (Inserted) {
      Groups.emplace_back();
      Groups.back().Rank = It->second.first.first;
      Groups.back().ReduceAxes = It->second.first.second;
      Groups.back().MatMul = It->second.second;
    }
    Groups[G->second].Stores.push_back(S);
  }
  for (NodeId S : Stores) {
    if (Signature.count(S) || Attention.count(S))
      continue;
    unsigned Rank = F.Params[F.Nodes[S].Param].Rank;
    // Not into a matmul's group: its rank counts the k axis, so a store of
    // that rank is not of its rows (and would break the gemm).
    auto Joined = llvm::find_if(Groups, [&](const FusionPlan::Group &G) {
      return !G.ReduceAxes.empty() && !G.Attention && !G.MatMul &&
             G.Rank == Rank;
    });
    if (Joined != Groups.end()) {
      Joined->Stores.push_back(S);
      std::sort(Joined->Stores.begin(), Joined->Stores.end());
      continue;
    }
    auto [It, Inserted] =
        ElementwiseGroupOfRank.try_emplace(Rank, Groups.size());
    if (Inserted)
      Groups.emplace_back();
    Groups[It->second].Stores.push_back(S);
  }
  std::stable_sort(Groups.begin(), Groups.end(),
                   [](const FusionPlan::Group &A, const FusionPlan::Group &B) {
                     return A.Stores.front() < B.Stores.front();
                   });

  // Order: a group reading a ref's old value runs before the one writing it.
  size_t G = Groups.size();
  std::vector<std::set<unsigned>> GroupReads(G), GroupWrites(G);
  for (size_t I = 0; I < G; ++I)
    for (NodeId S : Groups[I].Stores) {
      GroupWrites[I].insert(F.Nodes[S].Param);
      GroupReads[I].insert(Reads[S].begin(), Reads[S].end());
    }
  std::vector<std::set<size_t>> Before(G); // groups that must precede j
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
           "pkc cannot order these stores: fused groups read each other's "
           "old values",
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
