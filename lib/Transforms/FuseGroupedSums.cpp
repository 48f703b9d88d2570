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
// temporary once, at [g, m, n] (or at index 0 along an axis where its
// extent is the constant 1), sums it over axis 0 and nothing else varies
// along axis 0; no other nest addresses the temporary; neither step is
// conditional; and the product reads no ref the sum's nest writes (the
// merged nest writes outputs while later blocks still compute terms).
//
// The merged nest runs over the sum's extents for m and n, which equal the
// product's or broadcast it (a value of extent 1 stored into a larger
// output): the product's loads along m and n are marked as broadcasting
// wherever their extents are not the new loop's.
//
// Several products whose sums Fusion put in one nest (a decoder layer's q,
// k and v projections read the same activations; their sums are fused
// under a shape condition, with one unfused nest per sum as the step's
// alternatives): when every alternative is the sum of an earlier
// unconditional step's product, as above, each merges into its product's
// step, and the conditional step goes (fused nest and alternatives). Each
// sum then runs earlier than it did, so it must not conflict with the
// steps it moves across: none of them reads or writes what it writes, or
// writes what it reads.
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

/// Whether map M addresses a [g, m, n] temporary at [g, m, n]; with
/// UnitAxes, an axis may also be index 0 where the temporary's extent is
/// the constant 1 (Axis -1): the same element, as the sum of head_q8's one
/// row (samples/llama/heads.cpp) loads it.
bool addressesExactly(const loop::AccessMap &M, bool UnitAxes = false) {
  if (M.rank() != 3)
    return false;
  for (unsigned K = 0; K < 3; ++K) {
    const loop::AxisAccess &A = M.Axes[K];
    if (A.Gathered ||
        (A.Axis != static_cast<int>(K) && !(UnitAxes && A.Axis == -1)))
      return false;
  }
  return true;
}

/// The merged nest of product nest PNest (matching an int8 product) and the
/// nest S that sums its temporary, or std::nullopt when they do not fit.
/// The nests of `Alike` (S's step: its nest and alternatives) may address
/// the temporary too.
std::optional<Nest> merge(const loop::Program &Prog, unsigned PNest,
                          const Nest &S, const std::set<unsigned> &Alike) {
  const Function &F = *Prog.F;
  const Nest &P = Prog.Nests[PNest];
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
      if (Load || X.Param != Temp || !addressesExactly(X.Map, true))
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
    if (N == PNest || Alike.count(N))
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

/// The unconditional step before `Before` whose nest stores the temporary
/// nest S loads (the first temporary it loads), if any.
std::optional<unsigned> producerOf(const loop::Program &P, const Nest &S,
                                   unsigned Before) {
  const Function &F = *P.F;
  std::optional<unsigned> Temp;
  for (const Stmt &X : S.Body)
    if (X.K == Stmt::Load && F.Params[X.Param].isTemp()) {
      Temp = rootOf(F, X.Param);
      break;
    }
  if (!Temp)
    return std::nullopt;
  for (unsigned Step = Before; Step-- > 0;) {
    if (P.Steps[Step].isConditional())
      continue;
    for (const Stmt &X : P.Nests[P.Steps[Step].Nest].Body)
      if (X.K == Stmt::Store && rootOf(F, X.Param) == *Temp)
        return Step;
  }
  return std::nullopt;
}

/// Whether nest M may run at step To instead of step From > To: no step
/// strictly between (nor its alternatives) reads or writes what M writes,
/// or writes what M reads.
bool canMoveUp(const loop::Program &P, const Nest &M, unsigned To,
               unsigned From) {
  const Function &F = *P.F;
  std::set<unsigned> Loads, Stores;
  refsOf(F, M, Loads, Stores);
  for (unsigned T = To + 1; T < From; ++T) {
    std::set<unsigned> Loaded, Stored;
    refsOf(F, P.Nests[P.Steps[T].Nest], Loaded, Stored);
    for (unsigned N : P.Steps[T].Otherwise)
      refsOf(F, P.Nests[N], Loaded, Stored);
    for (unsigned Ref : Stores)
      if (Loaded.count(Ref) || Stored.count(Ref))
        return false;
    for (unsigned Ref : Loads)
      if (Stored.count(Ref))
        return false;
  }
  return true;
}

/// Merges each alternative of conditional step `Step` into the step of the
/// product whose temporary it sums, when every one of them can be, and
/// removes the step. The products' steps must come in the alternatives'
/// order, so the sums keep theirs. Returns the number merged.
unsigned mergeAlternatives(loop::Program &P, unsigned Step) {
  const loop::Step &St = P.Steps[Step];
  if (!St.isConditional() || St.Otherwise.empty())
    return 0;
  std::set<unsigned> Alike(St.Otherwise.begin(), St.Otherwise.end());
  Alike.insert(St.Nest);
  // Per alternative: its product's step and the merged nest.
  std::vector<std::pair<unsigned, Nest>> Merged;
  for (unsigned A : St.Otherwise) {
    std::optional<unsigned> Prod = producerOf(P, P.Nests[A], Step);
    if (!Prod || (!Merged.empty() && *Prod <= Merged.back().first) ||
        !canMoveUp(P, P.Nests[A], *Prod, Step))
      return 0;
    std::optional<Nest> M = merge(P, P.Steps[*Prod].Nest, P.Nests[A], Alike);
    if (!M)
      return 0;
    Merged.emplace_back(*Prod, std::move(*M));
  }
  for (auto &[Prod, M] : Merged)
    P.Nests[P.Steps[Prod].Nest] = std::move(M);
  loop::removeStep(P, Step);
  return Merged.size();
}

/// Removes statement I, which nothing uses, from N.
void eraseStmt(Nest &N, unsigned I) {
  N.Body.erase(N.Body.begin() + I);
  for (Stmt &S : N.Body)
    for (unsigned &A : S.Args)
      if (A > I)
        --A;
}

/// A nest whose two sums over axis 0 each read a temporary of an earlier
/// product and meet in its one store into a float temporary at [m, n]
/// (SwiGLU's gate and up: g = silu(sum1) * sum2): split in two, the first
/// sum stored into that temporary, the rest reading it back where the sum
/// was, and each merged into its product's step (the first product's step
/// comes first, so the value is stored before it is read back).
unsigned mergeTwoSums(loop::Program &P, unsigned Step) {
  const Function &F = *P.F;
  if (P.Steps[Step].isConditional())
    return 0;
  const Nest &S = P.Nests[P.Steps[Step].Nest];
  if (S.Grouped || S.Attention || S.Domain.size() != 3 ||
      S.ReduceAxes != std::vector<unsigned>{0})
    return 0;
  std::vector<unsigned> Sums;
  std::optional<unsigned> Store;
  for (unsigned I = 0; I < S.Body.size(); ++I) {
    const Stmt &X = S.Body[I];
    if (X.K == Stmt::Reduce)
      Sums.push_back(I);
    if (X.K == Stmt::Store) {
      if (Store)
        return 0;
      Store = I;
    }
  }
  if (Sums.size() != 2 || !Store)
    return 0;
  const Stmt &St = S.Body[*Store];
  const unsigned Out = St.Param;
  if (!F.Params[Out].isTemp() || rootOf(F, Out) != Out ||
      F.Params[Out].Type != DType::F32 || St.Map.rank() != 2 ||
      St.Map.Axes[0].Axis != 1 || St.Map.Axes[1].Axis != 2 || St.Map.isGather())
    return 0;
  for (const Stmt &X : S.Body)
    if (X.K == Stmt::Load && rootOf(F, X.Param) == Out)
      return 0;
  // Each sum's product: the step storing the temporary the sum reads.
  std::optional<unsigned> Prods[2];
  for (unsigned J = 0; J < 2; ++J) {
    const Stmt &R = S.Body[Sums[J]];
    if (R.Reduction != ReduceKind::Sum || R.Type != DType::F32 ||
        S.Body[R.Args[0]].K != Stmt::Load)
      return 0;
    Nest One;
    One.Body = {S.Body[R.Args[0]]};
    Prods[J] = producerOf(P, One, Step);
    if (!Prods[J])
      return 0;
  }
  if (*Prods[0] == *Prods[1])
    return 0;
  const unsigned First = *Prods[0] < *Prods[1] ? 0 : 1;
  const unsigned R1 = Sums[First], Load1 = S.Body[R1].Args[0];
  // The first sum's nest: its load, the sum, the store.
  Nest S1;
  S1.Group = S.Group;
  S1.Domain = S.Domain;
  S1.ReduceAxes = S.ReduceAxes;
  S1.Indexed = true;
  S1.Lines = S.Lines;
  S1.Body = {S.Body[Load1], S.Body[R1], St};
  S1.Body[1].Args = {0};
  S1.Body[2].Args = {1};
  S1.Body[2].Phase = S1.Body[1].Phase + 1;
  // The rest: the first sum read back from the temporary.
  Nest S2 = S;
  Stmt Back;
  Back.K = Stmt::Load;
  Back.Type = DType::F32;
  Back.Name = S.Body[R1].Name;
  Back.Param = Out;
  Back.Map = St.Map;
  Back.Line = S.Body[R1].Line;
  Back.Phase = 0;
  S2.Body[R1] = Back;
  for (unsigned I = 0; I < S2.Body.size(); ++I)
    if (I != Load1 && llvm::is_contained(S2.Body[I].Args, Load1))
      return 0; // the first sum's operand has another use
  eraseStmt(S2, Load1);
  const unsigned P1 = *Prods[First], P2 = *Prods[1 - First];
  const std::set<unsigned> Alike = {P.Steps[Step].Nest};
  if (!canMoveUp(P, S1, P1, Step) || !canMoveUp(P, S2, P2, Step))
    return 0;
  std::optional<Nest> M1 = merge(P, P.Steps[P1].Nest, S1, Alike);
  std::optional<Nest> M2 = merge(P, P.Steps[P2].Nest, S2, Alike);
  if (!M1 || !M2)
    return 0;
  P.Nests[P.Steps[P1].Nest] = std::move(*M1);
  P.Nests[P.Steps[P2].Nest] = std::move(*M2);
  loop::removeStep(P, Step);
  return 2;
}

} // namespace

unsigned pk::fuseGroupedSums(loop::Program &P) {
  unsigned Merged = 0;
  for (unsigned Step = 0; Step + 1 < P.Steps.size(); ++Step) {
    if (P.Steps[Step].isConditional() || P.Steps[Step + 1].isConditional())
      continue;
    std::optional<Nest> M =
        merge(P, P.Steps[Step].Nest, P.Nests[P.Steps[Step + 1].Nest],
              {P.Steps[Step + 1].Nest});
    if (!M)
      continue;
    P.Nests[Step] = std::move(*M);
    loop::removeStep(P, Step + 1);
    ++Merged;
  }
  // Sums fused under a condition (their alternatives merge one by one),
  // and two sums in one nest.
  for (unsigned Step = 0; Step < P.Steps.size();) {
    unsigned Count = mergeAlternatives(P, Step);
    if (Count == 0)
      Count = mergeTwoSums(P, Step);
    Merged += Count;
    if (Count == 0)
      ++Step;
  }
  return Merged;
}
