//===- LoopIR.h - Loop nests with scalar bodies -----------------*- C++ -*-===//
//
// Loop IR is what a fused group becomes: a loop nest over an iteration domain
// (the shape of the refs the group writes) with a scalar body in
// three-address form. It is target independent: the CPU and CUDA emitters
// both print it. Loads carry how each of their axes maps onto the domain, so
// broadcasting is index arithmetic, never a copy.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_LOOPIR_H
#define PK_IR_LOOPIR_H

#include "IR/GraphIR.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pk::loop {

using ir::DType;
using ir::ExtentId;

/// How one axis of a loaded ref is indexed by the domain.
enum class AxisMap : uint8_t {
  Same,      ///< the ref's extent is the domain's: index with the domain index
  Broadcast, ///< the extent is the constant 1: stride 0
  Runtime,   ///< only known at run time (extent 1 broadcasts, else same)
};

/// One scalar statement. Every kind but Store defines the value `Name`.
struct Stmt {
  enum Kind : uint8_t {
    Load,   ///< element of ref `Param` at the current domain index
    Scalar, ///< the scalar parameter `Param`
    Const,  ///< literal
    Apply,  ///< `Op` of `Args`
    Cast,   ///< Args[0] converted to `Type`
    Store,  ///< write Args[0] (converted to the ref's dtype) to ref `Param`
    Reduce, ///< `Reduction` of Args[0] over the nest's reduce axes
    Index,  ///< the loop index of domain axis `Axis` (as int64)
  };
  Kind K;
  DType Type = DType::F32;
  std::string Name; ///< C++ identifier, unique in the kernel
  unsigned Param = 0;
  ir::OpCode Op = ir::OpCode::Add;
  std::vector<unsigned> Args; ///< indices of earlier statements
  double FloatValue = 0;
  int64_t IntValue = 0;
  /// Load: one entry per axis of the ref (right-aligned to the domain).
  std::vector<AxisMap> Axes;
  unsigned Line = 0; ///< source line, for comments

  // Reduction nests only (Nest::ReduceAxes not empty).
  /// Load/Store: the domain axis each axis of the ref is indexed by (-1: the
  /// ref's extent there is 1 by construction, index 0).
  std::vector<int> Dims;
  /// Index: the domain axis.
  int Axis = -1;
  /// True when the value varies along a reduce axis: computed inside an
  /// inner loop. Otherwise it is a row value, computed once per row.
  bool Inner = false;
  /// The inner loop this statement belongs to (or, for a row value, the
  /// number of inner loops that must finish before it can be computed).
  unsigned Phase = 0;
  ir::ReduceKind Reduction = ir::ReduceKind::Sum;
  /// Reduce: the extents the reduced axes run over (the operand's).
  /// Store of an inner value: the ref's extents along the reduce axes.
  /// Index: the value's extent along its axis when it may be 1 (broadcast)
  /// where the loop runs longer: the coordinate is then 0, as in NumPy.
  std::vector<ExtentId> LoopExtents;
};

/// The parts of an attention nest (softmax(s) v with s a function of q kᵀ):
/// the domain is [batch?, t, j, s, d]; rows are (batch, t, j), reduced are
/// the keys s and the head dimension d. The body holds the math as written
/// (qk, m = max, e, l = sum, acc = sum of e v, out = acc / l); the emitters
/// run it as an online softmax per query row, so no [t, s] value is stored.
struct AttentionParts {
  int BatchAxis = -1;
  unsigned TAxis = 0, JAxis = 0, SAxis = 0, DAxis = 0;
  /// Statement indices: q kᵀ's reduce over d, the score s, the max over s,
  /// e = exp(s - max), the sum of e, the value v, and acc = the sum of e v.
  unsigned QK = 0, Score = 0, Max = 0, Exp = 0, Sum = 0, Value = 0, Acc = 0;
  /// What each loop computes, in body order: per (s, d) the product of q
  /// and k (ending with it); per (t, s) the score (ending with it); per (s,
  /// j) the value; per (t, j) after the keys: the output and its store.
  std::vector<unsigned> Dot, ScoreStmts, ValueStmts, Epilogue;
  ExtentId Keys = 0, HeadDim = 0; ///< the extents of s and d
  /// A causal mask (the score is where(s <= t, x, -inf), or s < t): the
  /// Index statement of t, and whether key t itself is visible. The key loop
  /// then stops after the last visible key instead of masking the rest.
  std::optional<unsigned> CausalIndex;
  bool CausalInclusive = true;
};

/// One loop nest: for every index of `Domain`, run `Body`.
///
/// A reduction nest (ReduceAxes not empty) loops over the other axes (the
/// rows) and, inside, runs one inner loop over the reduce axes per phase:
/// phase 0 accumulates the reductions that need no other reduction, phase
/// 1 those that need phase 0's results, and so on; inner stores run in the
/// phase after the reductions they need. Row values are computed between
/// the inner loops. Inner values are recomputed in every phase that needs
/// them rather than kept in a buffer: the row is in cache by then.
struct Nest {
  unsigned Group = 0;
  /// Elementwise: the iteration space. Reduction nest: the extents of the
  /// row axes are the loop bounds; those of the reduce axes are nominal
  /// (each inner loop has its own, see Stmt::LoopExtents).
  std::vector<ExtentId> Domain;
  std::vector<unsigned> ReduceAxes;
  /// Loads and stores are indexed through Stmt::Dims (reduction nests, and
  /// elementwise nests with expand_dims/squeeze/index) instead of AxisMaps.
  bool Indexed = false;
  std::vector<Stmt> Body;
  std::vector<unsigned> Lines; ///< source lines of the stores, for comments
  /// Pairs of extents that must be equal at run time for this nest to be
  /// valid as one loop (stores to refs whose extents are different symbols).
  std::vector<std::pair<ExtentId, ExtentId>> FuseConds;
  /// What to run when FuseConds fail: one nest per store, in an order that
  /// reads every ref before it is overwritten. Empty when FuseConds is empty.
  std::vector<Nest> Unfused;
  /// Set when FuseConds can fail and no safe unfused order exists: the
  /// emitted code raises this as a ShapeError.
  std::string UnfusedError;
  /// Set for an attention nest.
  std::optional<AttentionParts> Attention;

  /// True when every load has the domain's rank and no Broadcast axis: then
  /// one flat loop over all elements is valid whenever the Runtime axes turn
  /// out to equal the domain (the emitters test that at entry).
  bool canFlatten() const;
  bool isReduction() const { return !ReduceAxes.empty(); }
  /// Number of inner-loop phases of a reduction nest.
  unsigned numPhases() const;
};

/// A kernel in Loop IR: the nests in execution order.
struct Program {
  const ir::Function *F = nullptr;
  std::vector<Nest> Nests;
};

/// Visits every statement `Roots` are computed from (the roots included)
/// once, depth first through Args; `Visit` says whether to walk on into
/// each statement's arguments.
void walkArgs(const Nest &N, llvm::ArrayRef<unsigned> Roots,
              llvm::function_ref<bool(unsigned, const Stmt &)> Visit);

/// The inner statements (Stmt::Inner, not reductions) the arguments of
/// `Roots` are computed from: what an inner loop that ends with the roots
/// recomputes. A statement `Kept` holds for (in a per-row buffer by an
/// earlier loop) is in the set but not walked through: it is read back.
std::set<unsigned> innerCone(const Nest &N, llvm::ArrayRef<unsigned> Roots,
                             llvm::function_ref<bool(unsigned)> Kept = nullptr);

void print(const Program &P, llvm::raw_ostream &OS);
/// One statement as `print` shows it: `t_2 = mul x_v, x_v : f32`.
std::string describe(const ir::Function &F, const Nest &N, const Stmt &S);
/// Structural checks (argument order, store targets). "" when valid.
std::string verify(const Program &P);

} // namespace pk::loop

#endif // PK_IR_LOOPIR_H
