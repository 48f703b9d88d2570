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

/// How a load or store addresses one axis of its buffer.
struct AxisAccess {
  /// The domain axis whose loop index addresses this axis; -1 when the
  /// buffer's extent there is the constant 1 (index 0).
  int Axis = -1;
  /// The extent may be 1 at run time where the loop runs longer (NumPy
  /// broadcasting): the index is then 0. Always correct to assume (an axis
  /// of extent 1 has only index 0); false lets an emitter skip the check.
  bool MayBroadcast = false;
  /// take's gathered axis (Axis is then -1): the index is the value of the
  /// load's argument (Stmt::Args[0], an integer checked at entry).
  bool Gathered = false;
  bool operator==(const AxisAccess &O) const {
    return Axis == O.Axis && MayBroadcast == O.MayBroadcast &&
           Gathered == O.Gathered;
  }
};

/// The access map of a load or store: one entry per axis of the buffer.
/// The element addressed is the sum over the axes of the index times the
/// buffer's stride there. ([views] adds offsets and steps per axis for
/// slices, and composes reshapes into the map.)
struct AccessMap {
  std::vector<AxisAccess> Axes;

  unsigned rank() const { return Axes.size(); }
  /// The buffer axis that domain axis `A` addresses, or -1.
  int axisOf(int A) const;
  /// True when every buffer axis k is addressed by domain axis
  /// DomainRank - rank() + k (NumPy's right alignment) or is index 0.
  bool isRightAligned(unsigned DomainRank) const;
  /// True when an axis is take's (AxisAccess::Gathered).
  bool isGather() const;
  bool operator==(const AccessMap &O) const { return Axes == O.Axes; }
  bool operator!=(const AccessMap &O) const { return !(*this == O); }
};

/// One scalar statement. Every kind but Store defines the value `Name`.
struct Stmt {
  enum Kind : uint8_t {
    /// element of ref `Param` at the current domain index (and, along a
    /// Gathered axis, at the value of Args[0])
    Load,
    Scalar, ///< the scalar parameter `Param`
    Const,  ///< literal
    Apply,  ///< `Op` of `Args`
    Cast,   ///< Args[0] converted to `Type`
    Store,  ///< write Args[0] (converted to the ref's dtype) to ref `Param`
    Reduce, ///< `Reduction` of Args[0] over the nest's reduce axes
    Index,  ///< the loop index of domain axis `Axis` (as int64)
    Extent, ///< the run-time value of extent `Ext` (as int64)
  };
  Kind K;
  DType Type = DType::F32;
  std::string Name; ///< C++ identifier, unique in the kernel
  unsigned Param = 0;
  ir::OpCode Op = ir::OpCode::Add;
  std::vector<unsigned> Args; ///< indices of earlier statements
  double FloatValue = 0;
  int64_t IntValue = 0;
  ExtentId Ext = 0; ///< Extent
  /// Load/Store: how the element is addressed.
  AccessMap Map;
  unsigned Line = 0; ///< source line, for comments
  /// The Graph IR node this statement computes (or stores); none for the
  /// statements a matrix product or attention adds (their products).
  std::optional<ir::NodeId> Node;

  // Reduction nests only (Nest::ReduceAxes not empty).
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
/// the domain is [batch..., t, j, s, d]; rows are (batch..., t, j), reduced are
/// the keys s and the head dimension d. The body holds the math as written
/// (qk, m = max, e, l = sum, acc = sum of e v, out = acc / l); the emitters
/// run it as an online softmax per query row, so no [t, s] value is stored.
struct AttentionParts {
  /// The batch axes (0..t-1: heads, and grouped-query attention's group),
  /// along which q, k and v may broadcast.
  std::vector<unsigned> BatchAxes;
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
  /// A scalar the query's index is offset by (`index(s, -2) + pos`: queries
  /// at positions pos.. of a KV cache): a Scalar or Const statement.
  std::optional<unsigned> CausalOffset;
  bool CausalInclusive = true;
};

/// A grouped product (fuseGroupedSums): a nest over [g, m, n, k] whose
/// first `Split` statements compute, per (g, m, n), a reduction over k and
/// from it `Term`; `Sum` adds the terms over g (in order) and the statements
/// from `Split` on (Sum among them) run once per (m, n) after it. This is
/// the product nest of llama2.c runq's Q8_0 x Q8_0 product and the nest
/// that summed its per-group terms, merged, so that no [g, m, n] buffer is
/// stored. ReduceAxes is [0, 3].
struct GroupedSum {
  unsigned Term = 0, Sum = 0, Split = 0;
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
  /// A reduction nest, or one whose access maps are not all right-aligned
  /// to the domain (views that move axes) or that uses `index`: the
  /// emitters address every axis through its stride instead of one flat or
  /// right-aligned loop. Derived from the body (lowerToLoops).
  bool Indexed = false;
  std::vector<Stmt> Body;
  std::vector<unsigned> Lines; ///< source lines of the stores, for comments
  /// Set for an attention nest.
  std::optional<AttentionParts> Attention;
  /// Set for a grouped product.
  std::optional<GroupedSum> Grouped;

  /// True when every load has the domain's rank and no index-0 axis: then
  /// one flat loop over all elements is valid whenever the MayBroadcast
  /// axes turn out to equal the domain (the emitters test that at entry).
  bool canFlatten() const;
  bool isReduction() const { return !ReduceAxes.empty(); }
  /// Number of inner-loop phases of a reduction nest.
  unsigned numPhases() const;
};

/// A buffer the program addresses: a ref parameter or a temporary (an
/// ir::Param either way; its dtype and symbolic shape are the param's).
struct Buffer {
  unsigned Param = 0;
  /// Temporaries: the first step that writes the buffer and the last that
  /// reads it, and the workspace slot it shares with temporaries whose
  /// lifetimes do not overlap (planBuffers). -1 for refs.
  unsigned FirstStep = 0, LastStep = 0;
  int Slot = -1;
  /// A temporary whose elements end up copied whole into ref `Home`, which
  /// nothing else writes or reads (`q[_] = concat(...)`, a reshaped
  /// product stored): it is computed in the ref's memory instead whenever
  /// each pair of extents in `HomeWhen` is equal at run time (the two then
  /// have one row-major layout), and the copy is skipped. With `HomeWhen`
  /// empty it always is: the copy's step is gone and the temporary has no
  /// slot.
  std::optional<unsigned> Home;
  std::vector<std::pair<ExtentId, ExtentId>> HomeWhen;
  /// The buffer the copy reads: the temporary or an alias of it (whose
  /// extents are the ones compared with the ref's).
  unsigned HomeVia = 0;

  /// Always computed in its home ref: no slot, no copy, no run-time test.
  bool alwaysHome() const { return Home && HomeWhen.empty(); }
  /// In its home ref only when the extents in HomeWhen agree at run time.
  bool homeWhenFits() const { return Home && !HomeWhen.empty(); }
};

/// One step of the program: run nest `Nest` when every pair of extents in
/// `When` is equal at run time; otherwise run the nests `Otherwise` in
/// order, or, when there are none, raise `OtherwiseError` as a ShapeError.
/// (Elementwise stores to refs whose extents are other symbols fuse into
/// one nest; NumPy broadcasting allows them to differ.) The error is a
/// condition on extents only, checked at entry before any write.
struct Step {
  unsigned Nest = 0;
  std::vector<std::pair<ExtentId, ExtentId>> When;
  std::vector<unsigned> Otherwise;
  std::string OtherwiseError;
  /// The temporary (a param) this step copies into its home ref: the step
  /// is skipped when the temporary was computed there (Buffer::Home).
  std::optional<unsigned> CopiesHomedTemp;
  bool isConditional() const { return !When.empty(); }
  /// True when the step has no alternative: the call raises when `When`
  /// fails.
  bool failsOtherwise() const { return isConditional() && Otherwise.empty(); }
};

/// A kernel in Loop IR: the buffers it addresses, every nest (those of the
/// steps' alternatives too, after the steps' own), and the steps in
/// execution order. Nest I < Steps.size() is step I's and group I's.
struct Program {
  const ir::Function *F = nullptr;
  std::vector<Buffer> Buffers; ///< ref and temporary params, in order
  std::vector<Nest> Nests;
  std::vector<Step> Steps;
  /// Number of workspace slots (planBuffers).
  unsigned NumSlots = 0;
  /// The step whose alternatives include nest `I` (or whose nest it is).
  unsigned stepOf(unsigned I) const;
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

/// The index in P.Buffers of param `Param`'s buffer (P.Buffers.size() when
/// it has none).
unsigned bufferOf(const Program &P, unsigned Param);

/// Removes step `Step`, its nest and its alternatives' nests; the other
/// nests keep their order (Nests[I] stays step I's).
void removeStep(Program &P, unsigned Step);

void print(const Program &P, llvm::raw_ostream &OS);
/// One statement as `print` shows it: `t_2 = mul x_v, x_v : f32`.
std::string describe(const ir::Function &F, const Nest &N, const Stmt &S);
/// Structural checks (argument order, store targets). "" when valid.
std::string verify(const Program &P);

} // namespace pk::loop

#endif // PK_IR_LOOPIR_H
