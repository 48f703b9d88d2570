//===- Gemm.cpp - Recognising a matrix product in a loop nest -------------===//

#include "IR/Gemm.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace pk;
using namespace pk::loop;

namespace {

/// The statements `Roots` need (themselves included), in body order, and
/// the domain axes they index. Stops at Reduce statements (included, but not
/// what they reduce).
struct Closure {
  std::vector<unsigned> Stmts;
  std::set<unsigned> Axes;
  bool HasReduce = false;
};

Closure closureOf(const Nest &N, llvm::ArrayRef<unsigned> Roots) {
  std::set<unsigned> Seen;
  Closure C;
  walkArgs(N, Roots, [&](unsigned I, const Stmt &S) {
    Seen.insert(I);
    if (S.K == Stmt::Reduce) {
      C.HasReduce = true;
      return false;
    }
    if (S.K == Stmt::Load || S.K == Stmt::Store)
      for (const AxisAccess &A : S.Map.Axes)
        if (A.Axis >= 0)
          C.Axes.insert(A.Axis);
    if (S.K == Stmt::Index)
      C.Axes.insert(S.Axis);
    return true;
  });
  C.Stmts.assign(Seen.begin(), Seen.end()); // std::set: body order
  return C;
}

} // namespace

/// The structure both matchers share: a sum over k of a product of two
/// operands, one free of n and the other of m, of the reduce's type
/// (float32/float64, or with `Integer` an integer sum of a product of any
/// integer type).
///
/// A grouped nest (Nest::Grouped) is matched on its product part: its first
/// Split statements, with the group's term in place of the stores.
static std::optional<GemmPattern> matchProduct(const Nest &N, bool Integer) {
  unsigned D = N.Domain.size();
  const unsigned Part = N.Grouped ? N.Grouped->Split : N.Body.size();
  const std::vector<unsigned> Axes = N.Grouped ? std::vector<unsigned>{0, D - 1}
                                               : std::vector<unsigned>{D - 1};
  if (!N.Indexed || N.ReduceAxes != Axes || (D != 3 && D != 4) ||
      (N.Grouped && D != 4))
    return std::nullopt;
  // A gathered load is an operand's element like any other when its index
  // is computed from the loop indices (repeat's: the index over the count,
  // or a scalar's): the operand's lambda computes it. take's indices read
  // from a ref would add loads of their own per element, so those nests stay
  // plain loops.
  for (const Stmt &S : llvm::ArrayRef(N.Body).take_front(Part))
    if (S.Map.isGather() &&
        llvm::any_of(closureOf(N, {S.Args[0]}).Stmts,
                     [&](unsigned I) { return N.Body[I].K == Stmt::Load; }))
      return std::nullopt;
  GemmPattern G;
  G.BatchAxis = D == 4 ? 0 : -1;
  G.MAxis = D - 3;
  G.NAxis = D - 2;
  G.KAxis = D - 1;
  std::vector<unsigned> Reduces;
  std::vector<unsigned> Stores;
  for (unsigned I = 0; I < Part; ++I) {
    const Stmt &S = N.Body[I];
    if (S.K == Stmt::Reduce)
      Reduces.push_back(I);
    if (S.K == Stmt::Store) {
      if (S.Inner)
        return std::nullopt;
      Stores.push_back(I);
    }
  }
  // Two sums are a dual product (float only, not a grouped nest).
  const size_t MaxReduces = Integer || N.Grouped ? 1 : 2;
  if (Reduces.empty() || Reduces.size() > MaxReduces ||
      (N.Grouped && !Stores.empty()))
    return std::nullopt;
  if (N.Grouped)
    Stores = {N.Grouped->Term};
  // Reduce statement I as a sum over k of a product of two operands: the
  // product's statement, or nothing.
  auto SumOfProduct = [&](unsigned I) -> std::optional<unsigned> {
    const Stmt &R = N.Body[I];
    const bool FloatSum = R.Type == ir::DType::F32 || R.Type == ir::DType::F64;
    if (R.Reduction != ir::ReduceKind::Sum || R.Phase != 0 ||
        (Integer ? isFloat(R.Type) || R.Type == ir::DType::Bool : !FloatSum) ||
        R.LoopExtents.size() != 1)
      return std::nullopt;
    const Stmt &P = N.Body[R.Args[0]];
    if (P.K != Stmt::Apply || P.Op != ir::OpCode::Mul || P.Args.size() != 2 ||
        (Integer ? isFloat(P.Type) || P.Type == ir::DType::Bool
                 : P.Type != R.Type))
      return std::nullopt;
    return R.Args[0];
  };
  auto Fits = [&](const Closure &C, unsigned Not) {
    return !C.Axes.count(Not);
  };
  std::optional<unsigned> Product = SumOfProduct(Reduces[0]);
  if (!Product)
    return std::nullopt;
  const Stmt &R = N.Body[Reduces[0]];
  const Stmt &P = N.Body[*Product];
  G.Reduce = Reduces[0];
  G.Product = *Product;
  G.K = R.LoopExtents[0];
  G.Type = R.Type;
  Closure L = closureOf(N, {P.Args[0]}), Rt = closureOf(N, {P.Args[1]});
  if (L.HasReduce || Rt.HasReduce)
    return std::nullopt;
  if (Fits(L, G.NAxis) && Fits(Rt, G.MAxis)) {
    G.A = P.Args[0];
    G.B = P.Args[1];
  } else if (Fits(Rt, G.NAxis) && Fits(L, G.MAxis)) {
    G.A = P.Args[1];
    G.B = P.Args[0];
    std::swap(L, Rt);
  } else {
    return std::nullopt;
  }
  // The second product: the same A statement, of the same type over the
  // same k; its other operand free of m.
  Closure Rt2;
  if (Reduces.size() == 2) {
    std::optional<unsigned> Product2 = SumOfProduct(Reduces[1]);
    if (!Product2)
      return std::nullopt;
    const Stmt &R2 = N.Body[Reduces[1]];
    const Stmt &P2 = N.Body[*Product2];
    if (R2.Type != G.Type || R2.LoopExtents[0] != G.K ||
        (P2.Args[0] != G.A && P2.Args[1] != G.A) || P2.Args[0] == P2.Args[1])
      return std::nullopt;
    GemmPattern::SecondProduct S2;
    S2.B = P2.Args[0] == G.A ? P2.Args[1] : P2.Args[0];
    S2.Product = *Product2;
    S2.Reduce = Reduces[1];
    Rt2 = closureOf(N, {S2.B});
    if (Rt2.HasReduce || !Fits(Rt2, G.MAxis))
      return std::nullopt;
    G.Dual = std::move(S2);
  }
  // Nothing else may run per k: every inner statement feeds a product.
  for (unsigned I = 0; I < Part; ++I)
    if (N.Body[I].Inner && I != G.Product &&
        !(G.Dual && I == G.Dual->Product) && !llvm::is_contained(L.Stmts, I) &&
        !llvm::is_contained(Rt.Stmts, I) && !llvm::is_contained(Rt2.Stmts, I))
      return std::nullopt;
  Closure E = closureOf(N, Stores);
  if (E.Axes.count(G.KAxis))
    return std::nullopt;
  if (G.Dual) {
    G.Dual->BStmts = std::move(Rt2.Stmts);
    G.Dual->BAxes = std::move(Rt2.Axes);
  }
  G.AStmts = std::move(L.Stmts);
  G.BStmts = std::move(Rt.Stmts);
  G.AAxes = std::move(L.Axes);
  G.BAxes = std::move(Rt.Axes);
  G.Epilogue = std::move(E.Stmts);
  G.EpilogueAxes = std::move(E.Axes);
  return G;
}

std::optional<GemmPattern> loop::matchGemm(const Nest &N) {
  return matchProduct(N, /*Integer=*/false);
}

std::optional<Int8ProductPattern> loop::matchInt8Product(const ir::Function &F,
                                                         const Nest &N) {
  std::optional<GemmPattern> G = matchProduct(N, /*Integer=*/true);
  if (!G || G->BatchAxis != 0 || N.Body[G->Reduce].Type != ir::DType::I32)
    return std::nullopt;
  // An operand's value as an int32: itself, or what a widening cast (to
  // the product's type) widens.
  auto Narrow = [&](unsigned I) -> std::optional<unsigned> {
    const Stmt &S = N.Body[I];
    auto Fits = [](ir::DType T) {
      return T == ir::DType::I8 || T == ir::DType::U8 || T == ir::DType::I32;
    };
    if (S.K == Stmt::Cast && Fits(N.Body[S.Args[0]].Type))
      return S.Args[0];
    if (Fits(S.Type))
      return I;
    return std::nullopt;
  };
  std::optional<unsigned> A = Narrow(G->A), B = Narrow(G->B);
  if (!A || !B)
    return std::nullopt;
  // B: int8 values loaded from memory as they are (no prologue), along the
  // groups, n and k only.
  const Stmt &L = N.Body[*B];
  if (L.K != Stmt::Load || F.Params[L.Param].Type != ir::DType::I8 ||
      L.Map.isGather() || G->BStmts.size() > 2)
    return std::nullopt;
  for (const AxisAccess &Ax : L.Map.Axes)
    if (Ax.Axis == static_cast<int>(G->MAxis))
      return std::nullopt;
  Int8ProductPattern R;
  R.Product = std::move(*G);
  R.AValue = *A;
  R.BLoad = *B;
  return R;
}

std::optional<Int8ScaledTerm>
loop::matchInt8ScaledTerm(const ir::Function &F, const Nest &N,
                          const Int8ProductPattern &P, unsigned Term) {
  const GemmPattern &G = P.Product;
  // A float load addressed by the groups and one of m or n (or by the
  // groups alone): the factor, and whether it goes with the rows.
  auto Factor = [&](unsigned I) -> std::optional<Int8ScaledTerm::Factor> {
    const Stmt &S = N.Body[I];
    if (S.K != Stmt::Load || S.Type != ir::DType::F32 ||
        F.Params[S.Param].Type != ir::DType::F32 || S.Map.isGather())
      return std::nullopt;
    bool Rows = false, Columns = false;
    for (const AxisAccess &A : S.Map.Axes) {
      if (A.Axis == static_cast<int>(G.MAxis))
        Rows = true;
      else if (A.Axis == static_cast<int>(G.NAxis))
        Columns = true;
      else if (A.Axis != 0 && A.Axis != -1)
        return std::nullopt;
    }
    if (Rows && Columns)
      return std::nullopt;
    return Int8ScaledTerm::Factor{I, Rows};
  };
  Int8ScaledTerm R;
  unsigned Cur = Term;
  while (true) {
    const Stmt &S = N.Body[Cur];
    if (S.Type != ir::DType::F32)
      return std::nullopt;
    if (S.K == Stmt::Cast && S.Args[0] == G.Reduce)
      break;
    if (S.K != Stmt::Apply || S.Op != ir::OpCode::Mul || S.Args.size() != 2 ||
        R.Factors.size() == 2)
      return std::nullopt;
    // The product commutes: either operand may be the factor.
    if (std::optional<Int8ScaledTerm::Factor> B = Factor(S.Args[1])) {
      R.Factors.push_back(*B);
      Cur = S.Args[0];
    } else if (std::optional<Int8ScaledTerm::Factor> A = Factor(S.Args[0])) {
      R.Factors.push_back(*A);
      Cur = S.Args[1];
    } else {
      return std::nullopt;
    }
  }
  std::reverse(R.Factors.begin(), R.Factors.end());
  return R;
}
