//===- ScheduleCpu.cpp - Loop IR nests to a CPU schedule (Tile IR) --------===//
//
// The decisions, per nest:
//  * Elementwise nests are one flat loop when every load has the output's
//    shape; when that depends on run-time extents (an extent that may be 1)
//    the flat loop is guarded and a strided nest is the fallback; a nest
//    with lower-rank operands is strided. The flat loop (or the outermost
//    strided loop) is threaded, the flat loop (or innermost) vectorised.
//  * Reduction nests run rows: threads take rows; each phase of a row is a
//    vectorised loop over the reduced axes, so a row (D floats) is read from
//    L1/L2 by every phase after the first as long as it fits (noted when it
//    does not: recomputation then re-reads memory).
//  * A column reduction (every axis but the last reduced) runs blocks of
//    columns with the columns inside: contiguous reads, one accumulator per
//    column; the block keeps the accumulators in L1.
//  * A matrix product (loop::matchGemm) runs as pk::rt::gemm: C tiles on
//    threads, packed operand blocks, a register-tiled micro-kernel, the
//    epilogue applied to each tile after its last K block. The micro-kernel
//    and the blocking are picked at run time (include/pk/gemm.h).
//  * An integer product of int8 values in groups (loop::matchInt8Product:
//    Q8_0 activations times Q8_0 weights, llama2.c's runq) runs as
//    pk::rt::int8_product: the operand a computed once per element, the
//    weights read in place, exact int32 dot products with VNNI or AVX2 when
//    the CPU has them; blocks of 16 columns on threads.
//  * Attention (Nest::Attention) runs query rows on threads, each one pass
//    over the keys with an online softmax.
//  * A full reduction is one row: vectorised, on the calling thread.
//  * A row nest's pure outputs (stored along the reduced axis by a loop
//    without a reduction, never loaded) are marked for streaming stores,
//    which the generated code uses when a call's outputs are larger than the
//    cache (pk/stream.h).
//  * Threads only when the work reaches the target's threshold.
//
//===----------------------------------------------------------------------===//

#include "IR/Gemm.h"
#include "Transforms/Passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;
using loop::Nest;
using tile::LoopKind;
using tile::NestSchedule;

namespace {

bool isColumnReduction(const Nest &N) {
  if (!N.isReduction() || N.Domain.size() < 2 ||
      llvm::is_contained(N.ReduceAxes, N.Domain.size() - 1) ||
      N.ReduceAxes.size() + 1 != N.Domain.size())
    return false;
  // One loop over the reduced axes serves every column: the reductions
  // must all run over the same extents (min(x1, 0) over [1, n] and
  // min(x2, 0) over [67, n] do not; found by the random tests).
  const std::vector<ExtentId> *Key = nullptr;
  for (const loop::Stmt &S : N.Body) {
    if (S.K == loop::Stmt::Reduce) {
      if (Key && *Key != S.LoopExtents)
        return false;
      Key = &S.LoopExtents;
    }
    if (S.K == loop::Stmt::Reduce && S.Phase != 0)
      return false;
    if (S.K == loop::Stmt::Store && S.Inner)
      return false;
    if (!S.Inner && S.K != loop::Stmt::Reduce && S.Phase > 1)
      return false;
  }
  return true;
}

/// Whether a flat loop is valid: never, always, or after a run-time check.
enum class Flatness { Never, Always, AtRunTime };

Flatness flatness(const Nest &N) {
  if (!N.canFlatten())
    return Flatness::Never;
  for (const loop::Stmt &S : N.Body)
    if (S.K == loop::Stmt::Load)
      for (const loop::AxisAccess &A : S.Map.Axes)
        if (A.MayBroadcast)
          return Flatness::AtRunTime;
  return Flatness::Always;
}

/// The stores of a row nest that can stream: along the nest's one reduced
/// axis, the last (so a row of the output is contiguous where the loads are),
/// in a loop with no reduction (the phase loop only stores), to a ref the
/// nest never loads (no line of it needs to be read: a loaded one is in the
/// cache already) and stores only here.
std::vector<unsigned> streamableStores(const ir::Function &F, const Nest &N) {
  std::vector<unsigned> Stores;
  if (N.ReduceAxes.size() != 1 || N.ReduceAxes[0] + 1 != N.Domain.size() ||
      N.Domain.size() < 2)
    return Stores;
  const int Axis = static_cast<int>(N.ReduceAxes[0]);
  for (unsigned I = 0; I < N.Body.size(); ++I) {
    const loop::Stmt &S = N.Body[I];
    // Not into a window or another view of a ref: its rows are parts of
    // the ref's (a KV cache's new positions), not whole lines, and the
    // threshold is on the bytes a call writes, which a view's ref does not
    // give.
    if (S.K != loop::Stmt::Store || !S.Inner || S.LoopExtents.size() != 1 ||
        S.Map.axisOf(Axis) < 0 || F.Params[S.Param].isView())
      continue;
    bool Excluded = llvm::any_of(N.Body, [&](const loop::Stmt &O) {
      bool SameRef = (O.K == loop::Stmt::Load || O.K == loop::Stmt::Store) &&
                     O.Param == S.Param && &O != &S;
      bool ReducedInItsLoop = O.K == loop::Stmt::Reduce && O.Phase == S.Phase &&
                              O.LoopExtents == S.LoopExtents;
      return SameRef || ReducedInItsLoop;
    });
    if (!Excluded)
      Stores.push_back(I);
  }
  return Stores;
}

/// The inner statements to keep in a per-row buffer: expensive ones needed
/// by the loops of two or more phases. Only for one reduce axis (the buffer
/// is indexed by that axis' loop; a later loop over a longer extent reads it
/// with stride 0, which the guards allow only when it has one element).
std::vector<unsigned> rowBuffers(const Nest &N) {
  std::vector<unsigned> Buffers;
  if (N.ReduceAxes.size() != 1)
    return Buffers;
  std::map<unsigned, std::set<unsigned>> PhasesUsing;
  for (unsigned R = 0; R < N.Body.size(); ++R) {
    const loop::Stmt &Root = N.Body[R];
    if (!(Root.K == loop::Stmt::Reduce ||
          (Root.K == loop::Stmt::Store && Root.Inner)))
      continue;
    for (unsigned I : loop::innerCone(N, {R}))
      PhasesUsing[I].insert(Root.Phase);
  }
  for (auto &[I, Phases] : PhasesUsing) {
    const loop::Stmt &S = N.Body[I];
    if (Phases.size() >= 2 && S.K == loop::Stmt::Apply &&
        opInfo(S.Op).Cost == OpCost::Costly)
      Buffers.push_back(I);
  }
  return Buffers;
}

/// A matrix product's notes. Its micro-kernel and cache blocking are chosen
/// when it runs, for the CPU it runs on (include/pk/gemm.h): the build
/// machine's caches and -march say nothing about the user's.
void gemmNotes(NestSchedule &S) {
  S.Notes.push_back(
      "matrix product: C tiles on threads, K in blocks; micro-kernel (avx512, "
      "avx2 or baseline) and blocking chosen at run time from the CPU and its "
      "cache sizes (pk::rt::gemm_isa, pk::rt::gemm_blocking)");
  S.Notes.push_back("epilogue applied to each C tile after its last K block; "
                    "operands (transposed, broadcast, with prologues) read "
                    "once per tile while packing");
}

/// How many plain elements' time one element of N takes: 1, plus
/// kCostlyWeight for each transcendental (OpCost::Costly) in its body (a
/// vectorised exp is a dozen or so vector instructions, a scalar libm sin or
/// pow ~10 ns). With the elementwise threshold alone, RoPE's nest (pow, sin
/// and cos per pair) ran the 49152 pairs of a 128-token stories110M prefill
/// on one thread, ~1 ms a layer; weighted, its 2-thread prefill runs 6%
/// (T = 32) and 8-9% (T = 128) faster (pk-llama-bench, Xeon, AVX-512).
constexpr int64_t kCostlyWeight = 4;
int64_t elementCost(const Nest &N) {
  int64_t Cost = 1;
  for (const loop::Stmt &S : N.Body)
    if (S.K == loop::Stmt::Apply && opInfo(S.Op).Cost == OpCost::Costly)
      Cost += kCostlyWeight;
  return Cost;
}

NestSchedule schedule(const ir::Function &F, const Nest &N,
                      const tile::CpuTarget &T) {
  NestSchedule S;
  const int64_t Cost = elementCost(N);
  S.MinWorkForThreads = std::max<int64_t>(1, T.ParallelMinWork / Cost);
  S.Notes.push_back(
      Cost == 1
          ? fmt::format("threads above {} elements: a libgomp region costs "
                        "~1.5 us to enter",
                        T.ParallelMinWork)
          : fmt::format("threads above {} elements ({} / {}: each element "
                        "runs {} transcendental{}): a libgomp region costs "
                        "~1.5 us to enter",
                        S.MinWorkForThreads, T.ParallelMinWork, Cost,
                        (Cost - 1) / kCostlyWeight,
                        Cost - 1 == kCostlyWeight ? "" : "s"));
  if (!N.Indexed) {
    switch (flatness(N)) {
    case Flatness::Always:
      S.Kind = LoopKind::Flat;
      S.Vector = "flat";
      S.Notes.push_back("every operand has the output's shape");
      break;
    case Flatness::AtRunTime:
      S.Kind = LoopKind::FlatOrStrided;
      S.Vector = "flat, else innermost";
      S.Notes.push_back("flat unless an operand's extent is 1 at run time "
                        "(NumPy broadcasting), checked once at entry");
      break;
    case Flatness::Never:
      S.Kind = LoopKind::Strided;
      S.Vector = "innermost";
      S.Notes.push_back("an operand of lower rank broadcasts: strided "
                        "indexing, stride 0 on its missing axes");
      break;
    }
    if (N.Domain.empty()) {
      S.MinWorkForThreads = 0;
      S.Vector = "none (one element)";
    }
    return S;
  }
  unsigned RowAxes = N.Domain.size() - N.ReduceAxes.size();
  if (!N.isReduction()) {
    S.Kind = LoopKind::Strided;
    S.Vector = "innermost";
    S.Notes.push_back("axes move (expand_dims/squeeze/index): strided "
                      "indexing per axis");
    return S;
  }
  if (RowAxes == 0) {
    S.Kind = LoopKind::Single;
    S.MinWorkForThreads = 0;
    S.Vector = "phases";
    S.Notes.clear();
    S.Notes.push_back("full reduction: one row, vectorised, on the calling "
                      "thread");
    return S;
  }
  if (N.Attention) {
    S.Kind = LoopKind::Attention;
    S.ThreadedLoops = RowAxes - 1;
    S.Vector = "the head dimension (q . k) and the output columns (acc)";
    S.Notes.push_back(
        "attention: threads take query rows; per row one pass over the keys "
        "with an online softmax (running max, rescaled sum and output row), "
        "so the [t, s] scores are never stored; k and v rows are re-read "
        "from cache by every query row");
    return S;
  }
  if (loop::matchInt8Product(F, N)) {
    S.Kind = LoopKind::Int8Product;
    S.ThreadedLoops = RowAxes - 1;
    // Work counts multiply-adds. One row of a (decode) reads a weight byte
    // per multiply-add at ~12 GB/s a core (docs/design.md, "Q8_0 times
    // Q8_0"), so the elementwise threshold is ~5 us of one core there: a
    // [768, 768] projection (~50 us) is worth both threads. (16x this, the
    // first threshold, left stories110M's q/k/v/wo products on one thread.)
    S.MinWorkForThreads = T.ParallelMinWork;
    S.Notes.front() = fmt::format(
        "threads above {} multiply-adds: a libgomp region costs ~1.5 us to "
        "enter",
        S.MinWorkForThreads);
    S.Vector = "the int8 dot products (vpdpbusd or vpmaddwd, picked at run "
               "time)";
    S.Notes.push_back(
        "int8 product in groups: a(g, m, k) computed once per element "
        "(int8 or int16 where every value fits), the int8 weights read in "
        "place, one exact int32 dot product per group; the product's "
        "epilogue runs on each block of 16 columns (pk::rt::int8_product)");
    return S;
  }
  if (auto G = loop::matchGemm(N)) {
    S.Kind = LoopKind::Gemm;
    S.ThreadedLoops = RowAxes - 1;
    // Work counts multiply-adds, which the micro-kernel runs ~16-32 per
    // cycle: 4x the threshold is ~5 us of one core, past which a region
    // (~1.5 us to enter) pays off.
    S.MinWorkForThreads = T.ParallelMinWork * 4;
    S.Notes.front() = fmt::format(
        "threads above {} multiply-adds (~5 us of one core's micro-kernel): "
        "a libgomp region costs ~1.5 us to enter",
        S.MinWorkForThreads);
    S.Vector = "micro-kernel (MR x NR accumulators in vector registers)";
    gemmNotes(S);
    return S;
  }
  if (isColumnReduction(N)) {
    S.Kind = LoopKind::Columns;
    S.Vector = "columns";
    // The accumulators of a block (up to 8 bytes each) fill at most L1;
    // the block is as wide as that allows, so each row is read in long
    // contiguous segments.
    S.ColumnBlock = T.L1Bytes / 8;
    S.Notes.push_back("reduction along the leading axes: columns inside for "
                      "contiguous reads, one accumulator per column");
    return S;
  }
  S.Kind = LoopKind::Rows;
  S.ThreadedLoops = RowAxes;
  S.Vector = "phases";
  S.RowBuffers = rowBuffers(N);
  if (S.MinWorkForThreads > 0)
    S.StreamedStores = streamableStores(F, N);
  if (!S.StreamedStores.empty())
    S.Notes.push_back("outputs the nest never reads are written with "
                      "streaming stores (whole lines to memory, none read "
                      "first) when a call's outputs are at least 3/4 of the "
                      "last-level cache");
  if (!S.RowBuffers.empty())
    S.Notes.push_back("values with a transcendental that several phases "
                      "need are buffered per row: one exp and an L1 load "
                      "beat two exps");
  S.Notes.push_back(fmt::format(
      "{} phase{} per row; values needed by several phases are recomputed "
      "from the row, which stays in L2 when it is under {} KiB",
      N.numPhases(), N.numPhases() == 1 ? "" : "s", T.L2Bytes / 1024 / 2));
  return S;
}

} // namespace

tile::Program pk::scheduleForCpu(const loop::Program &P,
                                 const tile::CpuTarget &T) {
  tile::Program S;
  S.Loops = &P;
  for (const Nest &N : P.Nests)
    S.Nests.push_back(schedule(*P.F, N, T));
  return S;
}
