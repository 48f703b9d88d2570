//===- PlanBuffers.cpp - The buffers of a Loop IR program -----------------===//
//
// Lists every buffer the program's nests address (the ref parameters and the
// temporaries) and places the temporaries in one workspace: each lives from
// the first step that writes it to the last that reads it, and temporaries
// whose lifetimes do not overlap share a slot, first fit in the order they
// are first written. A 7-matmul layer holds its live buffers, not 7.
//
// First, a temporary whose one job is to be copied whole into an output ref
// (`q[_] = concat(...)`, a reshaped product stored) gets that ref as its
// home: it is computed in the ref's memory and the copy is skipped whenever
// the two have the same extents at run time (a store may broadcast, so the
// extents are only known to fit). The ref must be written by that copy alone
// and read by nothing: then no step sees it change early. Likewise a
// temporary stored beside such a ref from the same value (`h[_] = act;`
// where a later group reads `act`): the value is then written once, into
// the ref.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <functional>
#include <map>

using namespace pk;
using namespace pk::ir;

namespace {

/// The temporary a step copies whole into its home ref, and when the two
/// share a layout.
struct HomeChoice {
  unsigned Temp = 0, Ref = 0, Via = 0;
  std::vector<std::pair<ExtentId, ExtentId>> When;
};

/// How often each root buffer is loaded and stored over all nests, and the
/// last step that stores it.
struct BufferUses {
  std::map<unsigned, unsigned> Loads, Stores, LastStore;
};

/// Over every step, or over step `Only` alone.
BufferUses countUses(const loop::Program &P,
                     std::optional<unsigned> Only = std::nullopt) {
  const Function &F = *P.F;
  BufferUses U;
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    if (Only && I != *Only)
      continue;
    std::vector<unsigned> Nests = {P.Steps[I].Nest};
    Nests.insert(Nests.end(), P.Steps[I].Otherwise.begin(),
                 P.Steps[I].Otherwise.end());
    for (unsigned N : Nests)
      for (const loop::Stmt &S : P.Nests[N].Body) {
        if (S.K == loop::Stmt::Load)
          ++U.Loads[rootOf(F, S.Param)];
        if (S.K == loop::Stmt::Store) {
          ++U.Stores[rootOf(F, S.Param)];
          U.LastStore[rootOf(F, S.Param)] = I;
        }
      }
  }
  return U;
}

/// How often `Key` occurs in a count.
unsigned countOf(const std::map<unsigned, unsigned> &M, unsigned Key) {
  auto It = M.find(Key);
  return It == M.end() ? 0u : It->second;
}

/// Whether a load or store addresses element k of the domain's first `Rank`
/// axes as element k of its buffer: no moved, gathered or index-0 axis.
bool identityAccess(const loop::Stmt &S, unsigned Rank) {
  if (S.Map.Axes.size() != Rank)
    return false;
  for (unsigned K = 0; K < Rank; ++K)
    if (S.Map.Axes[K].Axis != static_cast<int>(K) || S.Map.Axes[K].Gathered)
      return false;
  return true;
}

/// Step `I` when it only copies a temporary (or a reshape of it) whole into
/// a ref that can be the temporary's home.
std::optional<HomeChoice> homeCopy(const loop::Program &P, unsigned I,
                                   const BufferUses &U) {
  const Function &F = *P.F;
  const loop::Step &St = P.Steps[I];
  if (St.isConditional())
    return std::nullopt;
  const loop::Nest &N = P.Nests[St.Nest];
  if (N.isReduction() || N.Attention || N.Grouped || N.Body.size() != 2)
    return std::nullopt;
  const loop::Stmt &L = N.Body[0], &S = N.Body[1];
  if (L.K != loop::Stmt::Load || S.K != loop::Stmt::Store ||
      S.Args != std::vector<unsigned>{0})
    return std::nullopt;
  // The load reads the temporary itself or an alias of it (its memory in
  // the same order), never a window.
  unsigned T = L.Param;
  while (F.Params[T].isAlias())
    T = F.Params[T].Parent;
  const Param &TP = F.Params[T], &RP = F.Params[S.Param];
  if (!TP.isTemp() || !RP.isArgument() || !RP.isWritable() ||
      TP.Type != RP.Type)
    return std::nullopt;
  // Element k of the domain is element k of both: the identity, no
  // gathered or index-0 axes.
  const unsigned Rank = RP.Rank;
  if (F.Params[L.Param].Rank != Rank || N.Domain.size() != Rank ||
      !identityAccess(L, Rank) || !identityAccess(S, Rank))
    return std::nullopt;
  // The ref: this copy is its only write and nothing reads it. The
  // temporary: written before this step only.
  if (countOf(U.Loads, S.Param) != 0 || countOf(U.Stores, S.Param) != 1 ||
      countOf(U.LastStore, T) >= I)
    return std::nullopt;
  HomeChoice H;
  H.Temp = T;
  H.Ref = S.Param;
  H.Via = L.Param;
  for (unsigned K = 0; K < Rank; ++K) {
    ExtentId A = refExtent(F, L.Param, K), B = refExtent(F, S.Param, K);
    if (A != B)
      H.When.push_back({A, B});
  }
  return H;
}

/// Whether the extents of every pair in `Pairs` are equal whenever those of
/// every pair in `Known` are (equality is transitive: h.0 == a.0 follows
/// from h.0 == d and a.0 == d).
bool implied(const std::vector<std::pair<ExtentId, ExtentId>> &Known,
             const std::vector<std::pair<ExtentId, ExtentId>> &Pairs) {
  std::map<ExtentId, ExtentId> Parent;
  std::function<ExtentId(ExtentId)> Find = [&](ExtentId E) {
    auto It = Parent.find(E);
    if (It == Parent.end() || It->second == E)
      return E;
    return It->second = Find(It->second);
  };
  for (auto [A, B] : Known)
    Parent[Find(A)] = Find(B);
  return llvm::all_of(Pairs, [&](std::pair<ExtentId, ExtentId> Q) {
    return Find(Q.first) == Find(Q.second);
  });
}

/// Step `I` when its nest stores a temporary and, from the same value, a
/// ref that can be the temporary's home (`act_buf` and `h` after `h[_] =
/// act;` where a later product reads `act`): the value is then written
/// once, into the ref, and the temporary's readers read the ref's memory.
/// The nest's store into the temporary is removed; the nest must run only
/// when the two have the same extents (its step's condition implies it),
/// so that whenever it runs the temporary is at home. The step's
/// alternatives (one nest per store, when other extents differ) keep their
/// stores: the temporary's then writes the ref's memory or the workspace,
/// as the flag says.
std::optional<HomeChoice>
homeSibling(loop::Program &P, unsigned I, const BufferUses &U,
            const std::map<unsigned, HomeChoice> &Homes) {
  const Function &F = *P.F;
  const loop::Step &St = P.Steps[I];
  loop::Nest &N = P.Nests[St.Nest];
  if (N.Attention || N.Grouped)
    return std::nullopt;
  const BufferUses Here = countUses(P, I);
  for (unsigned TI = 0; TI < N.Body.size(); ++TI) {
    const loop::Stmt &TS = N.Body[TI];
    if (TS.K != loop::Stmt::Store)
      continue;
    const unsigned T = TS.Param;
    const Param &TP = F.Params[T];
    // The temporary itself (not a view of it), written in this step only
    // and read by later steps only.
    if (!TP.isTemp() || Homes.count(T) ||
        countOf(Here.Stores, T) != countOf(U.Stores, T) ||
        countOf(Here.Loads, T) != 0 || !identityAccess(TS, TP.Rank))
      continue;
    for (unsigned RI = 0; RI < N.Body.size(); ++RI) {
      const loop::Stmt &RS = N.Body[RI];
      if (RS.K != loop::Stmt::Store || RS.Args != TS.Args)
        continue;
      const Param &RP = F.Params[RS.Param];
      // A whole ref of the value's dtype that nothing else writes or reads.
      if (!RP.isArgument() || !RP.isWritable() || RP.Type != TP.Type ||
          RP.Rank != TP.Rank || !identityAccess(RS, RP.Rank) ||
          countOf(U.Loads, RS.Param) != 0 ||
          countOf(Here.Stores, RS.Param) != countOf(U.Stores, RS.Param))
        continue;
      HomeChoice H;
      H.Temp = T;
      H.Ref = RS.Param;
      H.Via = T;
      for (unsigned K = 0; K < RP.Rank; ++K) {
        ExtentId A = refExtent(F, T, K), B = refExtent(F, RS.Param, K);
        if (A != B)
          H.When.push_back({A, B});
      }
      if (!implied(St.When, H.When))
        continue;
      // The value is stored once, into the ref: statements after the
      // removed store refer to earlier ones by index.
      N.Body.erase(N.Body.begin() + TI);
      for (loop::Stmt &S : N.Body)
        for (unsigned &A : S.Args)
          if (A > TI)
            --A;
      return H;
    }
  }
  return std::nullopt;
}

} // namespace

void pk::planBuffers(loop::Program &P) {
  const Function &F = *P.F;
  // Homes first: a copy that is never needed leaves the program before the
  // lifetimes are measured.
  std::map<unsigned, HomeChoice> Homes;
  const BufferUses Uses = countUses(P);
  for (unsigned I = P.Steps.size(); I-- > 0;) {
    std::optional<HomeChoice> H = homeCopy(P, I, Uses);
    if (!H || Homes.count(H->Temp))
      continue;
    if (H->When.empty())
      loop::removeStep(P, I);
    else
      P.Steps[I].CopiesHomedTemp = H->Temp;
    Homes[H->Temp] = *H;
  }
  // Then temporaries stored beside a ref holding the same value (counted
  // again: the copies above are gone).
  const BufferUses Left = countUses(P);
  for (unsigned I = 0; I < P.Steps.size(); ++I)
    while (std::optional<HomeChoice> H = homeSibling(P, I, Left, Homes))
      Homes[H->Temp] = *H;

  std::map<unsigned, std::pair<unsigned, unsigned>> Life;
  auto Visit = [&](const loop::Nest &N, unsigned Step) {
    for (const loop::Stmt &S : N.Body)
      if ((S.K == loop::Stmt::Load || S.K == loop::Stmt::Store) &&
          F.Params[rootOf(F, S.Param)].isTemp()) {
        // A temporary lives while it or a view of it is read or written.
        auto [It, New] = Life.try_emplace(rootOf(F, S.Param), Step, Step);
        It->second.first = std::min(It->second.first, Step);
        It->second.second = std::max(It->second.second, Step);
      }
  };
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    Visit(P.Nests[P.Steps[I].Nest], I);
    for (unsigned U : P.Steps[I].Otherwise)
      Visit(P.Nests[U], I);
  }

  P.Buffers.clear();
  std::map<unsigned, size_t> BufferOf;
  for (unsigned I = 0; I < F.Params.size(); ++I) {
    const Param &Pr = F.Params[I];
    if (!Pr.isRef() || (Pr.isTemp() && !Life.count(I)))
      continue;
    BufferOf[I] = P.Buffers.size();
    loop::Buffer B;
    B.Param = I;
    if (Pr.isTemp())
      std::tie(B.FirstStep, B.LastStep) = Life[I];
    if (auto It = Homes.find(I); It != Homes.end()) {
      B.Home = It->second.Ref;
      B.HomeWhen = It->second.When;
      B.HomeVia = It->second.Via;
    }
    P.Buffers.push_back(B);
  }

  // First fit, in the order the temporaries are first written; one always
  // in its home needs no slot.
  std::vector<std::pair<unsigned, unsigned>> Starts;
  for (auto &[Param, L] : Life)
    if (!P.Buffers[BufferOf.at(Param)].alwaysHome())
      Starts.push_back({L.first, Param});
  std::sort(Starts.begin(), Starts.end());
  std::vector<unsigned> SlotEnd;
  for (auto [Start, Param] : Starts) {
    unsigned S = 0;
    while (S < SlotEnd.size() && SlotEnd[S] >= Start)
      ++S;
    if (S == SlotEnd.size())
      SlotEnd.push_back(0);
    SlotEnd[S] = Life[Param].second;
    P.Buffers[BufferOf[Param]].Slot = static_cast<int>(S);
  }
  P.NumSlots = SlotEnd.size();
}
