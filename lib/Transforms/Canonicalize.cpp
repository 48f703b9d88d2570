//===- Canonicalize.cpp - Folding, CSE and DCE on Graph IR ----------------===//
//
// Constants are folded while the graph is built (Builder::elementwise); this
// pass merges nodes that compute the same thing (so `x[_] * x[_]` loads x
// once) and removes what no store needs, including stores that a later store
// to the same ref overwrites entirely (every store writes the whole ref).
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

using namespace pk;
using namespace pk::ir;

namespace {

/// Everything that makes two nodes compute the same value.
using NodeKey =
    std::tuple<int, int, int, std::vector<NodeId>, unsigned, uint64_t, int64_t,
               int, std::vector<int>, bool, int, std::vector<int>, ExtentId,
               unsigned, std::vector<ExtentId>>;

NodeKey keyOf(const Node &N) {
  uint64_t Bits;
  static_assert(sizeof(Bits) == sizeof(N.FloatValue));
  std::memcpy(&Bits, &N.FloatValue, sizeof(Bits));
  return {static_cast<int>(N.Kind), static_cast<int>(N.Op),
          static_cast<int>(N.Type),
          std::vector<NodeId>(N.Operands.begin(), N.Operands.end()), N.Param,
          Bits, N.IntValue, static_cast<int>(N.Reduction),
          std::vector<int>(N.Axes.begin(), N.Axes.end()), N.KeepDims,
          // Views: expand_dims(x, 0) and squeeze(x, 0) differ only here.
          static_cast<int>(N.View),
          std::vector<int>(N.Map.Source.begin(), N.Map.Source.end()),
          // Extent nodes: x.extent(0) and x.extent(1) differ only here.
          N.Ext,
          // Loads of a window's memory before and after a store to it.
          N.Version,
          // reshape and slice: the extents and bounds.
          std::vector<ExtentId>(N.ViewExtents.begin(), N.ViewExtents.end())};
}

void eliminateCommonSubexpressions(Function &F) {
  std::map<NodeKey, NodeId> Seen;
  std::vector<NodeId> Replacement(F.Nodes.size());
  for (NodeId I = 0; I < F.Nodes.size(); ++I) {
    Replacement[I] = I;
    Node &N = F.Nodes[I];
    if (N.Dead)
      continue;
    for (NodeId &O : N.Operands)
      O = Replacement[O];
    if (N.isStore())
      continue;
    auto [It, Inserted] = Seen.try_emplace(keyOf(N), I);
    if (Inserted)
      continue;
    Node &Kept = F.Nodes[It->second];
    if (Kept.Name.empty())
      Kept.Name = N.Name;
    Kept.Weak = Kept.Weak && N.Weak;
    Replacement[I] = It->second;
    N.Dead = true;
  }
}

void eliminateDeadCode(Function &F) {
  // A store is never observed when a later store to the same ref (or to
  // the whole of its root) overwrites everything it wrote before any load
  // reads the root's memory: reads in between see the stored SSA value, not
  // memory. Memory is read after stores only through windows (language.md
  // §2): a load of version v sees the first v stores to its root, so a store
  // at position i overwritten at j is observed by loads of version i < v <= j.
  //
  // Versions count the stores that are live when this runs (the frontend's
  // count, then this pass's renumbering below), so the stores an earlier run
  // removed are not in the list: counting them made a second run (after
  // BufferViews) shift every version past a removed store down by one more,
  // and Fusion then ordered a window's read before the store it reads
  // (long-mode finding mismatch-9767-k23, regressions/dead_store_version).
  std::map<unsigned, std::vector<NodeId>> StoresTo; // root -> live stores
  std::map<unsigned, std::vector<unsigned>> LoadVersions;
  for (NodeId I = 0; I < F.Nodes.size(); ++I) {
    const Node &N = F.Nodes[I];
    if (N.isStore() && !N.Dead)
      StoresTo[rootOf(F, N.Param)].push_back(I);
    else if (!N.Dead && N.Kind == NodeKind::Load && N.Version > 0)
      LoadVersions[rootOf(F, N.Param)].push_back(N.Version);
  }
  std::vector<bool> Live(F.Nodes.size(), false);
  for (const auto &[Root, Stores] : StoresTo)
    for (unsigned At = 0; At < Stores.size(); ++At) {
      const Node &S = F.Nodes[Stores[At]];
      if (S.Dead)
        continue;
      Live[Stores[At]] = true;
      for (unsigned Later = At + 1; Later < Stores.size(); ++Later) {
        const Node &T = F.Nodes[Stores[Later]];
        if (T.Dead || (T.Param != S.Param && T.Param != Root))
          continue;
        Live[Stores[At]] = llvm::any_of(LoadVersions[Root], [&](unsigned V) {
          return At < V && V <= Later;
        });
        break;
      }
    }
  for (NodeId I = F.Nodes.size(); I-- > 0;) {
    if (!Live[I])
      continue;
    for (NodeId O : F.Nodes[I].Operands)
      Live[O] = true;
  }
  for (NodeId I = 0; I < F.Nodes.size(); ++I)
    if (!Live[I])
      F.Nodes[I].Dead = true;
  // Versions count the live stores only (Fusion orders by them): a load
  // that saw v stores sees those of them that are left.
  for (Node &N : F.Nodes) {
    if (N.Dead || N.Kind != NodeKind::Load || N.Version == 0)
      continue;
    const std::vector<NodeId> &Stores = StoresTo[rootOf(F, N.Param)];
    unsigned Seen = 0;
    for (unsigned At = 0; At < N.Version && At < Stores.size(); ++At)
      Seen += !F.Nodes[Stores[At]].Dead;
    N.Version = Seen;
  }
}

/// A reduction of a rank-0 value reduces one element: sum, mean, max and
/// min of it are the element itself, converted to the result's dtype. (Found
/// by libFuzzer: no loop nest handles a reduction without axes.)
void foldRankZeroReductions(Function &F) {
  for (Node &N : F.Nodes)
    if (!N.Dead && N.Kind == NodeKind::Reduce &&
        F.node(N.Operands[0]).rank() == 0) {
      N.Kind = NodeKind::Cast;
      N.Axes.clear();
      N.KeepDims = false;
    }
}

} // namespace

void pk::canonicalize(Function &F) {
  foldRankZeroReductions(F);
  eliminateCommonSubexpressions(F);
  eliminateDeadCode(F);
}
