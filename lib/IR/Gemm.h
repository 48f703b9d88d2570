//===- Gemm.h - Recognising a matrix product in a loop nest -----*- C++ -*-===//
//
// A matmul reaches Loop IR as a reduction nest over [batch?, m, n, k] that
// sums a product over k. Both schedules (CPU and GPU) run such a nest as a
// tiled matrix product instead of one dot product per output element when
// the nest has exactly that form: the statements split into the left
// operand (A: depends on batch, m, k), the right operand (B: batch, k, n),
// the product and its sum, and the epilogue (everything after the sum).
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_GEMM_H
#define PK_IR_GEMM_H

#include "IR/LoopIR.h"

#include <optional>
#include <set>
#include <vector>

namespace pk::loop {

struct GemmPattern {
  /// Domain axes. BatchAxis is -1 for a rank-2 product.
  int BatchAxis = -1;
  unsigned MAxis = 0, NAxis = 0, KAxis = 0;
  /// Statement indices: the two operands of the product, the product and
  /// the sum over k.
  unsigned A = 0, B = 0, Product = 0, Reduce = 0;
  /// The statements each part needs, in body order. AStmts and BStmts end
  /// with A and B; Epilogue holds the row statements the stores need (the
  /// sum among them) and the stores.
  std::vector<unsigned> AStmts, BStmts, Epilogue;
  /// The domain axes each operand reads (for naming lambda parameters).
  std::set<unsigned> AAxes, BAxes, EpilogueAxes;
  /// The extent k runs over.
  ExtentId K = 0;
  ir::DType Type = ir::DType::F32;
  /// A second product of the same A over the same k (a dual product:
  /// SwiGLU's x W1ᵀ and x W3ᵀ meeting in one store): its right operand,
  /// product and sum, and the statements of that operand. The epilogue holds
  /// both sums.
  struct SecondProduct {
    unsigned B = 0, Product = 0, Reduce = 0;
    std::vector<unsigned> BStmts;
    std::set<unsigned> BAxes;
  };
  std::optional<SecondProduct> Dual;
};

/// The pattern when `N` is a float32/float64 matrix product with elementwise
/// prologues and epilogues only, or two such products of the same left
/// operand (GemmPattern::Dual); std::nullopt otherwise (the nest then runs
/// as a reduction, one dot product per output element).
std::optional<GemmPattern> matchGemm(const Nest &N);

/// A batched integer product of int8 values in groups, as a Q8_0 x Q8_0
/// product (llama2.c's runq; samples/llama/common.h's linear_q8) lowers:
/// over [g, m, n, k], the int32 sum over k of a(g, m, k) * b(g, n, k), where
/// a is any value of at most 32 bits (widened for the product) and b is an
/// int8 ref loaded as it is. pk::rt::int8_product (<pk/int8_product.h>) runs
/// it on the CPU: a computed once per element, b read in place.
struct Int8ProductPattern {
  /// The product's parts, as matchGemm describes them (BatchAxis is g).
  GemmPattern Product;
  /// The statements of a's int32 value and of b's load.
  unsigned AValue = 0, BLoad = 0;
};

/// The pattern when `N` is such a product; std::nullopt otherwise.
std::optional<Int8ProductPattern> matchInt8Product(const ir::Function &F,
                                                   const Nest &N);

/// The term of a grouped int8 product (GroupedSum::Term) when it is the
/// float of the dot product times at most two float loads, each addressed by
/// the groups and the rows (m) or by the groups and the columns (n) only:
/// runq's `cast<float>(dot) * ws * xs`. The CPU emitter passes the factors
/// to pk::rt::int8_product (Int8TermScales), which then computes the terms
/// itself, vectorised, and may use AMX tiles for the dots.
struct Int8ScaledTerm {
  struct Factor {
    unsigned Load = 0; ///< the load statement
    bool PerRow = false;
  };
  /// In the order they multiply the dot.
  std::vector<Factor> Factors;
};

/// The scaled term of `P` ending at statement `Term`; std::nullopt when the
/// term has any other form.
std::optional<Int8ScaledTerm> matchInt8ScaledTerm(const ir::Function &F,
                                                  const Nest &N,
                                                  const Int8ProductPattern &P,
                                                  unsigned Term);

} // namespace pk::loop

#endif // PK_IR_GEMM_H
