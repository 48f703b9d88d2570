//===- Fusion.cpp - Partition a kernel into fused groups ------------------===//
//
// The rule (documented in docs/design.md, "Fusion"):
//  * Every store roots a cone: the nodes its value is computed from, down
//    to the loads of refs and of temporaries. Elementwise work is
//    recomputed inside each cone; what no cone can recompute was put in a
//    temporary by materialize() (Materialize.cpp).
//  * A store whose cone reduces values of rank n over the axes R belongs to
//    the reduction group (n, R): one nest over the rows (the axes not in R)
//    that runs the reductions and the stores of that row in phases. All the
//    reductions of one store agree on (n, R) (materialize() made sure).
//  * A store without reductions to a ref of rank n joins the first
//    reduction group of rank n (it becomes the last phase of each row);
//    otherwise the stores to refs of one rank form an elementwise group: one
//    loop nest over the shape of the first store's ref (LowerToLoops adds a
//    run-time check that the other refs have that shape, and a fallback).
//  * A matmul group computes one product (with its epilogue stores).
//  * matmul(a, b) is a reduction too: of the rank-(n+1) products
//    a[..., m, k] * b[..., k, n] over their last axis k. Its consumers
//    (bias, activation, residual) become the row values of that group, so an
//    epilogue runs where each output element is produced; its elementwise
//    producers are recomputed per product (ScheduleCpu may pack them).
//    transpose is a view: loads index through it, nothing is copied.
//  * softmax(s) v with s an elementwise function of q kᵀ (attention, see
//    IR/AttentionPattern.h) is a group of its own: one nest over the query
//    rows that runs an online softmax over the keys; no [T, S] buffer.
//  * A group never reads a temporary it writes.
//  * A store never reads its own ref's memory other than where it writes:
//    what it reads elsewhere is buffered first (FusionPlan::Buffer).
//  * Groups run in an order where a group that reads a ref's old value runs
//    before the group that overwrites it, and a temporary's writer before
//    its readers. A cycle is broken by copying the old contents of one ref
//    into a temporary (FusionPlan::Snapshot); the driver then partitions
//    again.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

using namespace pk;
using namespace pk::ir;

FusionPlan pk::fuse(const Function &F) {
  FusionPlan Plan;
  std::vector<NodeId> Stores;
  std::map<NodeId, std::set<unsigned>> &Reads = Plan.StoreReads;
  // Store -> the signature of its reductions, and whether one is a matmul:
  // a matmul's group takes no other reductions (they would turn its gemm
  // into one dot product per element).
  using GroupKey = std::pair<ReduceSignature, bool>;
  std::map<NodeId, GroupKey> Signature;
  std::map<NodeId, AttentionMatch> Attention;
  // Refs with windows (language.md §2) are ordered by their memory: the
  // stores to a ref and its windows run in source order, and a load of
  // version v runs after the first v of them and before the others.
  std::set<unsigned> Windowed;
  for (unsigned P = 0; P < F.Params.size(); ++P)
    if (F.Params[P].isView())
      Windowed.insert(rootOf(F, P));
  struct MemRead {
    unsigned Root, Param, Version;
    bool operator<(const MemRead &O) const {
      return std::tie(Root, Param, Version) <
             std::tie(O.Root, O.Param, O.Version);
    }
  };
  std::map<NodeId, std::set<MemRead>> MemReads;
  std::map<NodeId, unsigned> StoreIndex; // among the stores to its root
  {
    std::map<unsigned, unsigned> Count;
    for (NodeId I = 0; I < F.Nodes.size(); ++I)
      if (!F.Nodes[I].Dead && F.Nodes[I].isStore() &&
          Windowed.count(rootOf(F, F.Nodes[I].Param)))
        StoreIndex[I] = Count[rootOf(F, F.Nodes[I].Param)]++;
  }
  auto NoteLoad = [&](NodeId S, const Node &N) {
    const unsigned R = rootOf(F, N.Param);
    if (Windowed.count(R))
      MemReads[S].insert({R, N.Param, N.Version});
    // A temporary read through a view is still a temporary to the rules
    // below (its writers run before its readers).
    if (!Windowed.count(R) || F.Params[R].isTemp())
      Reads[S].insert(F.Params[R].isTemp() ? R : N.Param);
  };
  auto WindowedRoot = [&](NodeId S) -> std::optional<unsigned> {
    const unsigned R = rootOf(F, F.Nodes[S].Param);
    return Windowed.count(R) ? std::optional<unsigned>(R) : std::nullopt;
  };
  // One loop cannot write a windowed ref's memory and read it other than
  // exactly where it writes (the same window, from before this store), nor
  // hold two stores to it: elements would see each other's new values.
  auto MemConflict = [&](NodeId Writer, NodeId Reader) {
    std::optional<unsigned> R = WindowedRoot(Writer);
    if (!R)
      return false;
    if (std::optional<unsigned> R2 = WindowedRoot(Reader); R2 == R)
      return true;
    for (const MemRead &M : MemReads[Reader])
      if (M.Root == *R &&
          (M.Param != F.Nodes[Writer].Param || M.Version != StoreIndex[Writer]))
        return true;
    return false;
  };
  for (NodeId I = 0; I < F.Nodes.size(); ++I) {
    if (F.Nodes[I].Dead || !F.Nodes[I].isStore())
      continue;
    Stores.push_back(I);
    if (auto A = matchAttention(F, I)) {
      Attention[I] = *A;
      // Only the refs it reads matter (for the order of the groups).
      Reads[I];
      walkCone(F, {F.Nodes[I].Operands[0]}, [&](NodeId, const Node &N) {
        if (N.Kind == NodeKind::Load)
          NoteLoad(I, N);
        return Walk::Operands;
      });
      continue;
    }
    std::optional<ReduceSignature> Sig;
    bool HasMatMul = false;
    walkCone(F, {F.Nodes[I].Operands[0]}, [&](NodeId, const Node &N) {
      if (N.Kind == NodeKind::Reduce || N.Kind == NodeKind::MatMul) {
        HasMatMul |= N.Kind == NodeKind::MatMul;
        ReduceSignature S = reduceSignature(F, N);
        if (!Sig)
          Sig = S;
        else if (!(*Sig == S))
          // materialize() buffers every value that would mix loop forms.
          llvm::report_fatal_error(
              llvm::Twine("pkc internal error: reductions of two loop forms "
                          "in the cone of one store of ") +
              F.Name);
      }
      if (N.Kind == NodeKind::Load)
        NoteLoad(I, N);
      return Walk::Operands;
    });
    Reads[I];
    if (Sig)
      Signature[I] = {*Sig, HasMatMul};
  }
  // A store that reads its own ref's memory other than exactly where it
  // writes (`h[_] = x[_] + h.slice(0, 0, 1)[_]`, a shifted window of the
  // ref, a window of it read after an earlier store) would read elements
  // its own loop has already overwritten: the value it reads is buffered
  // first, in a group that runs before it (fuzz regression
  // store_reads_own_window).
  for (NodeId S : Stores) {
    std::optional<unsigned> Root = WindowedRoot(S);
    if (!Root)
      continue;
    std::optional<NodeId> Hazard;
    walkCone(F, {F.Nodes[S].Operands[0]}, [&](NodeId V, const Node &N) {
      if (!Hazard && N.Kind == NodeKind::Load && rootOf(F, N.Param) == *Root &&
          (N.Param != F.Nodes[S].Param || N.Version != StoreIndex[S]))
        Hazard = V;
      return Hazard ? Walk::Skip : Walk::Operands;
    });
    if (!Hazard)
      continue;
    FusionPlan Retry;
    Retry.Buffer = *Hazard;
    Retry.BufferStores = {S};
    Retry.BufferWhy = fmt::format(
        "{} as read at line {}, before the store to {} at line {} overwrites "
        "it",
        paramSpelling(F, F.Nodes[*Hazard].Param), F.Nodes[*Hazard].Loc.Line,
        paramSpelling(F, F.Nodes[S].Param), F.Nodes[S].Loc.Line);
    return Retry;
  }
  // Reduction groups first (source order), then elementwise stores join a
  // reduction group of their rank or group by rank.
  std::vector<FusionPlan::Group> Groups;
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
  // A group never reads a temporary it writes, directly or through other
  // temporaries: the loads of one element would see other elements' new
  // values (or none yet), and the groups could not be ordered.
  std::map<unsigned, NodeId> WriterOf; // temporary -> its (last) store
  for (NodeId S : Stores)
    if (F.Params[rootOf(F, F.Nodes[S].Param)].isTemp())
      WriterOf[rootOf(F, F.Nodes[S].Param)] = S;
  std::map<NodeId, std::set<unsigned>> DependsOn; // store -> temps it needs
  std::function<std::set<unsigned>(NodeId)> Needs = [&](NodeId S) {
    auto Found = DependsOn.find(S);
    if (Found != DependsOn.end())
      return Found->second;
    std::set<unsigned> D;
    for (unsigned P : Reads[S])
      if (F.Params[P].isTemp()) {
        D.insert(P);
        auto W = WriterOf.find(P);
        if (W != WriterOf.end()) {
          std::set<unsigned> More = Needs(W->second);
          D.insert(More.begin(), More.end());
        }
      }
    DependsOn[S] = D;
    return D;
  };
  // Whether store W must run before store R in another group: W writes a
  // temporary R reads, or they meet in a windowed ref's memory (W's store
  // comes before R's read or store of it, or W reads what R overwrites).
  auto MustPrecede = [&](NodeId W, NodeId R) {
    const unsigned WR = rootOf(F, F.Nodes[W].Param);
    if (F.Params[WR].isTemp() && Reads[R].count(WR))
      return true;
    if (std::optional<unsigned> Root = WindowedRoot(W)) {
      for (const MemRead &M : MemReads[R])
        if (M.Root == *Root && StoreIndex[W] < M.Version)
          return true;
      if (WindowedRoot(R) == Root && StoreIndex[W] < StoreIndex[R])
        return true;
    }
    if (std::optional<unsigned> Root = WindowedRoot(R))
      for (const MemRead &M : MemReads[W])
        if (M.Root == *Root && M.Version <= StoreIndex[R])
          return true;
    return false;
  };
  // Joining S to a group must not close a cycle through other groups
  // either: G's stores may need a temporary that another group writes
  // beside a store that needs S (found by the fuzzer:
  // regressions/temp_cycle_two_forms), or a window of the KV cache that a
  // group writes from a temporary S would write. The stores not in a group
  // yet count as groups of their own: they will be in some group, and a
  // chain through them is as real (regressions/concat_temp_cycle: a
  // concatenation buffer written from a temporary, read by a store that
  // would join the temporary's writer).
  const size_t NS = Stores.size();
  std::map<NodeId, size_t> StoreAt;
  for (size_t I = 0; I < NS; ++I)
    StoreAt[Stores[I]] = I;
  std::vector<std::vector<size_t>> Successors(NS);
  for (size_t I = 0; I < NS; ++I)
    for (size_t J = 0; J < NS; ++J)
      if (I != J && MustPrecede(Stores[I], Stores[J]))
        Successors[I].push_back(J);
  auto ClosesCycle = [&](const FusionPlan::Group &G, NodeId S) {
    // Classes: Groups[K] is class K, G with S; store I alone is NG + I.
    const size_t NG = Groups.size();
    std::vector<size_t> ClassOf(NS);
    for (size_t I = 0; I < NS; ++I)
      ClassOf[I] = NG + I;
    for (size_t K = 0; K < NG; ++K)
      for (NodeId M : Groups[K].Stores)
        ClassOf[StoreAt[M]] = K;
    const size_t Start = &G - Groups.data();
    ClassOf[StoreAt[S]] = Start;
    std::vector<std::vector<size_t>> Members(NG + NS);
    for (size_t I = 0; I < NS; ++I)
      Members[ClassOf[I]].push_back(I);
    // From G's class along the edges that leave it: back into it closes
    // a cycle.
    std::vector<bool> Seen(NG + NS, false);
    std::vector<size_t> Work = {Start};
    while (!Work.empty()) {
      const size_t C = Work.back();
      Work.pop_back();
      for (size_t I : Members[C])
        for (size_t J : Successors[I]) {
          const size_t D = ClassOf[J];
          if (D == C)
            continue;
          if (D == Start)
            return true;
          if (!Seen[D]) {
            Seen[D] = true;
            Work.push_back(D);
          }
        }
    }
    return false;
  };
  auto CanJoin = [&](const FusionPlan::Group &G, NodeId S) {
    unsigned SW = rootOf(F, F.Nodes[S].Param);
    for (NodeId O : G.Stores) {
      if (MemConflict(S, O) || MemConflict(O, S))
        return false;
      unsigned OW = rootOf(F, F.Nodes[O].Param);
      if ((F.Params[OW].isTemp() && Needs(S).count(OW)) ||
          (F.Params[SW].isTemp() && Needs(O).count(SW)))
        return false;
    }
    return !ClosesCycle(G, S);
  };
  for (NodeId S : Stores) {
    auto It = Signature.find(S);
    if (It == Signature.end())
      continue;
    // One product per matmul group (two would turn its gemm into dot
    // products): stores of the same product's values share it.
    auto Products = [&](NodeId Store) {
      std::set<NodeId> P;
      for (NodeId V : cone(F, {Store}))
        if (F.Nodes[V].Kind == NodeKind::MatMul)
          P.insert(V);
      return P;
    };
    auto Same = llvm::find_if(Groups, [&](const FusionPlan::Group &G) {
      return !G.Attention && G.Rank == It->second.first.Rank &&
             G.ReduceAxes == It->second.first.Axes &&
             G.MatMul == It->second.second &&
             (!G.MatMul || Products(G.Stores.front()) == Products(S)) &&
             CanJoin(G, S);
    });
    if (Same == Groups.end()) {
      Groups.emplace_back();
      Groups.back().Rank = It->second.first.Rank;
      Groups.back().ReduceAxes = It->second.first.Axes;
      Groups.back().MatMul = It->second.second;
      Same = Groups.end() - 1;
    }
    Same->Stores.push_back(S);
  }
  for (NodeId S : Stores) {
    if (Signature.count(S) || Attention.count(S))
      continue;
    unsigned Rank = F.Params[F.Nodes[S].Param].Rank;
    // Not into a matmul's group: its rank counts the k axis, so a store of
    // that rank is not of its rows (and would break the gemm).
    auto Joined = llvm::find_if(Groups, [&](const FusionPlan::Group &G) {
      return !G.ReduceAxes.empty() && !G.Attention && !G.MatMul &&
             G.Rank == Rank && CanJoin(G, S);
    });
    if (Joined != Groups.end()) {
      Joined->Stores.push_back(S);
      std::sort(Joined->Stores.begin(), Joined->Stores.end());
      continue;
    }
    auto Elementwise = llvm::find_if(Groups, [&](const FusionPlan::Group &G) {
      return G.ReduceAxes.empty() && !G.Attention &&
             F.Params[F.Nodes[G.Stores.front()].Param].Rank == Rank &&
             CanJoin(G, S);
    });
    if (Elementwise != Groups.end()) {
      Elementwise->Stores.push_back(S);
      continue;
    }
    Groups.emplace_back();
    Groups.back().Stores.push_back(S);
  }
  std::stable_sort(Groups.begin(), Groups.end(),
                   [](const FusionPlan::Group &A, const FusionPlan::Group &B) {
                     return A.Stores.front() < B.Stores.front();
                   });

  // Order: a group reading a ref's old value runs before the one writing
  // it; a group writing a temporary runs before those reading it.
  size_t G = Groups.size();
  std::vector<std::set<unsigned>> GroupReads(G), GroupWrites(G);
  for (size_t I = 0; I < G; ++I)
    for (NodeId S : Groups[I].Stores) {
      GroupWrites[I].insert(F.Params[rootOf(F, F.Nodes[S].Param)].isTemp()
                                ? rootOf(F, F.Nodes[S].Param)
                                : F.Nodes[S].Param);
      GroupReads[I].insert(Reads[S].begin(), Reads[S].end());
    }
  std::vector<std::set<size_t>> Before(G); // groups that must precede j
  for (size_t I = 0; I < G; ++I)
    for (size_t J = 0; J < G; ++J)
      if (I != J)
        for (unsigned P : GroupReads[I])
          if (GroupWrites[J].count(P) &&
              (!Windowed.count(P) || F.Params[P].isTemp())) {
            if (F.Params[P].isTemp())
              Before[I].insert(J);
            else
              Before[J].insert(I);
          }
  // Windowed refs: by the stores' source order and the loads' versions.
  for (size_t I = 0; I < G; ++I)
    for (size_t J = 0; J < G; ++J)
      if (I != J)
        for (NodeId W : Groups[J].Stores) {
          std::optional<unsigned> R = WindowedRoot(W);
          if (!R)
            continue;
          const unsigned Index = StoreIndex[W];
          for (NodeId O : Groups[I].Stores) {
            for (const MemRead &M : MemReads[O])
              if (M.Root == *R)
                (Index < M.Version ? Before[I] : Before[J])
                    .insert(Index < M.Version ? J : I);
            if (WindowedRoot(O) == R && StoreIndex[O] < Index)
              Before[J].insert(I);
          }
        }
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
      // A cycle: copy the smallest ref that a group still to run reads
      // and another one overwrites, and partition again.
      std::optional<unsigned> Best;
      for (size_t I = 0; I < G; ++I)
        for (size_t J = 0; J < G; ++J)
          if (!Done[I] && !Done[J] && I != J)
            for (unsigned P : GroupReads[I])
              if (GroupWrites[J].count(P) && !F.Params[P].isTemp() &&
                  !Windowed.count(P) &&
                  (!Best || F.Params[P].Rank < F.Params[*Best].Rank))
                Best = P;
      if (!Best) {
        // A windowed ref read at two versions by one group, around another
        // group's store to it (`t = h[_]; h[_] = f(h); o[_] = t /
        // h.slice(...)[_]`: the old contents and a window of the new, long-
        // mode finding pkc-crash-9766-k22): the older read is kept in a
        // temporary first, in a group that runs before the store.
        std::optional<NodeId> Older;
        std::string Why;
        for (size_t I = 0; I < G && !Older; ++I)
          for (size_t J = 0; J < G && !Older; ++J) {
            if (Done[I] || Done[J] || I == J)
              continue;
            for (NodeId W : Groups[J].Stores) {
              std::optional<unsigned> R = WindowedRoot(W);
              if (!R)
                continue;
              const unsigned Index = StoreIndex[W];
              for (NodeId O : Groups[I].Stores) {
                bool After = llvm::any_of(MemReads[O], [&](const MemRead &M) {
                  return M.Root == *R && Index < M.Version;
                });
                if (!After)
                  continue;
                walkCone(
                    F, {F.Nodes[O].Operands[0]}, [&](NodeId V, const Node &N) {
                      if (!Older && N.Kind == NodeKind::Load &&
                          rootOf(F, N.Param) == *R && N.Version <= Index) {
                        Older = V;
                        Why = fmt::format(
                            "{} as read at line {}, before the store to {} at "
                            "line {} overwrites it",
                            paramSpelling(F, N.Param), N.Loc.Line,
                            paramSpelling(F, F.Nodes[W].Param),
                            F.Nodes[W].Loc.Line);
                      }
                      return Older ? Walk::Skip : Walk::Operands;
                    });
                if (Older)
                  break;
              }
              if (Older)
                break;
            }
          }
        if (!Older)
          llvm::report_fatal_error(
              llvm::Twine("pkc internal error: temporaries in a cycle in ") +
              F.Name);
        FusionPlan Retry;
        Retry.Buffer = *Older;
        Retry.BufferWhy = Why;
        return Retry;
      }
      FusionPlan Retry;
      Retry.Snapshot = Best;
      return Retry;
    }
    Done[Pick] = true;
    Plan.Groups.push_back(Groups[Pick]);
  }

  // Group ids per node, for --emit=graph.
  for (unsigned GI = 0; GI < Plan.Groups.size(); ++GI)
    walkCone(F, Plan.Groups[GI].Stores, [&](NodeId V, const Node &) {
      // A node an earlier group computes keeps that group's id.
      return Plan.GroupOf.try_emplace(V, GI).second ? Walk::Operands
                                                    : Walk::Skip;
    });
  return Plan;
}
