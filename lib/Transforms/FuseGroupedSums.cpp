//===- FuseGroupedSums.cpp - A product in groups and its sum, one nest ----===//
//
// llama2.c runq's product (samples/llama/common.h's linear_q8) is written as
// a batched integer product over the groups, a term per group, and a sum of
// the terms over the groups:
//
//   dot = matmul(xq, transpose(wg));                 // [G, T, N], int32
//   y   = sum(cast<float>(dot) * ws * xs, 0);        // [T, N]
//
// Fusion puts the product in one group and the sum in the next (a matmul's
// group takes no other reduction), with the terms in a [G, T, N] temporary
// between them: at a 512-token prefill of a TinyLlama FFN, 369 MiB written
// and read back. This pass merges the two nests into one grouped nest
// (loop::GroupedSum): per (g, m, n) the product's reduction over k and its
// term, added over g in order, then the sum's own statements once per
// (m, n). The temporary is no longer addressed, so planBuffers drops it.
//
// When: step s runs an int8 product (loop::matchInt8Product) whose only
// store is its term into a temporary, at [g, m, n]; step s + 1 loads that
// temporary once, at [g, m, n], sums it over axis 0 and nothing else varies
// along axis 0; no other nest addresses the temporary; neither step is
// conditional; and the product reads no ref the sum's nest writes (the
// merged nest writes outputs while later blocks still compute terms).
//
// The merged nest runs over the sum's extents for m and n, which equal the
// product's or broadcast it (a value of extent 1 stored into a larger
// output): the product's loads along m and n are marked as broadcasting
// wherever their extents are not the new loop's.
//
//===----------------------------------------------------------------------===//

#include "IR/Gemm.h"
#include "Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace pk;
using namespace pk::ir;
using loop::Nest;
using loop::Stmt;

namespace {

/// The roots of the refs nest N loads and stores.
void refsOf(const Function &F, const Nest &N, std::set<unsigned> &Loaded,
            std::set<unsigned> &Stored) {
  for (const Stmt &S : N.Body) {
    if (S.K == Stmt::Load)
      Loaded.insert(rootOf(F, S.Param));
    if (S.K == Stmt::Store)
      Stored.insert(rootOf(F, S.Param));
  }
}

bool addressesExactly(const loop::AccessMap &M) {
  if (M.rank() != 3)
    return false;
  for (unsigned K = 0; K < 3; ++K)
    if (M.Axes[K].Axis != static_cast<int>(K) || M.Axes[K].Gathered)
      return false;
  return true;
}

/// The merged nest of a product nest P (matching an int8 product) and the
/// nest S that sums its temporary, or std::nullopt when they do not fit.
std::optional<Nest> merge(const loop::Program &Prog, unsigned Step) {
  const Function &F = *Prog.F;
  const Nest &P = Prog.Nests[Prog.Steps[Step].Nest];
  const Nest &S = Prog.Nests[Prog.Steps[Step + 1].Nest];
  if (P.Grouped || P.Attention || S.Attention || S.Grouped ||
      !loop::matchInt8Product(F, P))
    return std::nullopt;
  // The product's one store: its term into a temporary at [g, m, n].
  std::optional<unsigned> Store;
  for (unsigned I = 0; I < P.Body.size(); ++I)
    if (P.Body[I].K == Stmt::Store) {
      if (Store)
        return std::nullopt;
      Store = I;
    }
  if (!Store)
    return std::nullopt;
  const Stmt &St = P.Body[*Store];
  const unsigned Temp = St.Param;
  if (!F.Params[Temp].isTemp() || rootOf(F, Temp) != Temp ||
      !addressesExactly(St.Map) || P.Body[St.Args[0]].Type != DType::F32 ||
      F.Params[Temp].Type != DType::F32)
    return std::nullopt;
  // The sum: over axis 0 of [1, m, n], of the one load of the temporary.
  if (S.Domain.size() != 3 || S.ReduceAxes != std::vector<unsigned>{0})
    return std::nullopt;
  std::optional<unsigned> Load, Sum;
  for (unsigned I = 0; I < S.Body.size(); ++I) {
    const Stmt &X = S.Body[I];
    if (X.K == Stmt::Load && rootOf(F, X.Param) == Temp) {
      if (Load || X.Param != Temp || !addressesExactly(X.Map))
        return std::nullopt;
      Load = I;
    }
    if (X.K == Stmt::Reduce) {
      if (Sum)
        return std::nullopt;
      Sum = I;
    }
  }
  if (!Load || !Sum)
    return std::nullopt;
  const Stmt &R = S.Body[*Sum];
  if (R.Reduction != ReduceKind::Sum || R.Type != DType::F32 ||
      R.Args[0] != *Load || R.LoopExtents.size() != 1)
    return std::nullopt;
  for (unsigned I = 0; I < S.Body.size(); ++I) {
    const Stmt &X = S.Body[I];
    if (I == *Load || I == *Sum)
      continue;
    // Nothing else varies along the groups: it runs once per (m, n).
    if (X.Inner || (X.K == Stmt::Index && X.Axis == 0) ||
        llvm::is_contained(X.Args, *Load))
      return std::nullopt;
    if (X.K == Stmt::Load || X.K == Stmt::Store)
      for (const loop::AxisAccess &A : X.Map.Axes)
        if (A.Axis == 0 || A.Gathered)
          return std::nullopt;
  }
  // The temporary is theirs alone; the product reads nothing the sum's nest
  // writes.
  for (unsigned N = 0; N < Prog.Nests.size(); ++N) {
    if (N == Prog.Steps[Step].Nest || N == Prog.Steps[Step + 1].Nest)
      continue;
    std::set<unsigned> Loaded, Stored;
    refsOf(F, Prog.Nests[N], Loaded, Stored);
    if (Loaded.count(Temp) || Stored.count(Temp))
      return std::nullopt;
  }
  std::set<unsigned> PLoaded, PStored, SLoaded, SStored;
  refsOf(F, P, PLoaded, PStored);
  refsOf(F, S, SLoaded, SStored);
  for (unsigned Ref : SStored)
    if (PLoaded.count(Ref))
      return std::nullopt;
  // `index` along m or n would see the new extents: keep such nests apart.
  for (const Stmt &X : P.Body)
    if (X.K == Stmt::Index && (X.Axis == 1 || X.Axis == 2))
      return std::nullopt;

  Nest M;
  M.Group = P.Group;
  M.Indexed = true;
  M.Domain = {P.Domain[0], S.Domain[1], S.Domain[2], P.Domain[3]};
  M.ReduceAxes = {0, 3};
  M.Lines = S.Lines;
  // The product's statements but its store, then the sum's but its load.
  std::vector<unsigned> PIndex(P.Body.size()), SIndex(S.Body.size());
  for (unsigned I = 0; I < P.Body.size(); ++I) {
    if (I == *Store)
      continue;
    Stmt X = P.Body[I];
    for (unsigned &A : X.Args)
      A = PIndex[A];
    if (X.K == Stmt::Load)
      for (size_t K = 0; K < X.Map.rank(); ++K) {
        loop::AxisAccess &A = X.Map.Axes[K];
        if ((A.Axis == 1 || A.Axis == 2) &&
            refExtent(F, X.Param, K) != M.Domain[A.Axis])
          A.MayBroadcast = true;
      }
    PIndex[I] = M.Body.size();
    M.Body.push_back(std::move(X));
  }
  loop::GroupedSum G;
  G.Term = PIndex[St.Args[0]];
  G.Split = M.Body.size();
  for (unsigned I = 0; I < S.Body.size(); ++I) {
    if (I == *Load)
      continue;
    Stmt X = S.Body[I];
    if (I == *Sum) {
      X.Args[0] = G.Term;
      X.Phase = 1;
    } else {
      for (unsigned &A : X.Args)
        A = SIndex[A];
      X.Phase = 2;
    }
    SIndex[I] = M.Body.size();
    M.Body.push_back(std::move(X));
  }
  G.Sum = SIndex[*Sum];
  M.Grouped = G;
  return M;
}

} // namespace

unsigned pk::fuseGroupedSums(loop::Program &P) {
  unsigned Merged = 0;
  for (unsigned Step = 0; Step + 1 < P.Steps.size(); ++Step) {
    if (P.Steps[Step].isConditional() || P.Steps[Step + 1].isConditional())
      continue;
    std::optional<Nest> M = merge(P, Step);
    if (!M)
      continue;
    // Nest Step + 1 goes; the nests after it (later steps' and the
    // alternatives') move down by one.
    P.Nests[Step] = std::move(*M);
    P.Nests.erase(P.Nests.begin() + Step + 1);
    P.Steps.erase(P.Steps.begin() + Step + 1);
    for (unsigned I = 0; I < P.Steps.size(); ++I) {
      P.Steps[I].Nest = I;
      for (unsigned &N : P.Steps[I].Otherwise)
        if (N > Step + 1)
          --N;
    }
    ++Merged;
  }
  return Merged;
}
