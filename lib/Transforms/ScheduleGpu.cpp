//===- ScheduleGpu.cpp - Loop IR nests to a GPU schedule (GPU Tile IR) ----===//
//
// The decisions, per nest:
//  * Elementwise nests are grid-stride loops of 256-thread blocks. On the
//    flat path, when every ref has one 4- or 8-byte dtype, a thread moves 16
//    bytes per access (float4 / double2); the launcher takes that path only
//    when every pointer is 16-byte aligned, and a scalar loop does the tail.
//  * Row reductions (the last axis reduced) give each row to a group of
//    threads: a warp for rows up to 1024 elements (8 rows per block, only
//    shuffles), a block of 256 or 1024 threads for longer rows (shuffles,
//    then the warps' partials through shared memory). Every phase of a row
//    runs in the same kernel. Loads and transcendentals that later phases
//    need again stay in shared memory when the block's rows fit; otherwise
//    they are recomputed from global memory (L2) — the "chunked" case.
//  * Reductions along leading axes (the last axis kept) put consecutive
//    threads on consecutive kept elements (coalesced), and split the reduced
//    range over the block's y threads, combined in shared memory.
//  * A matrix product (loop::matchGemm) is tiled: a block of 256 threads
//    computes a BM x BN tile of C, stepping through K by 8: both operands'
//    tiles are staged in shared memory (prologues applied on the way, zeros
//    past the edges), each thread accumulates a TM x TN register tile, and
//    the epilogue runs on the registers before the only store. The launcher
//    takes 128 x 128 tiles (8 x 8 per thread) when they fill the SMs, else
//    64 x 64 or 32 x 32.
//  * A grouped product (Nest::Grouped: llama2.c runq's Q8_0 x Q8_0
//    product, merged with the sum of its terms) runs a thread per output
//    element: the groups in order, per group an integer dot product over k.
//  * Attention runs a warp per query row: an online softmax over the keys,
//    the lanes splitting each q . k and the output columns.
//  * Full reductions with one phase run in two stages: each block reduces a
//    grid-stride share to one partial, then one block reduces the partials
//    and runs the consumers. Deterministic, unlike float atomics. Full
//    reductions with several phases run as one row on one block.
//
//===----------------------------------------------------------------------===//

#include "IR/Gemm.h"
#include "Transforms/Passes.h"

#include <fmt/format.h>

#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;
using gpu::NestPlan;
using gpu::Strategy;
using loop::Nest;

namespace {

/// The size of the float dtype every ref of the nest shares, or 0 (CUDA's
/// float4 and double2 carry the vector accesses).
unsigned commonRefBytes(const Function &F, const Nest &N) {
  unsigned Bytes = 0;
  for (const loop::Stmt &S : N.Body) {
    if (S.K != loop::Stmt::Load && S.K != loop::Stmt::Store)
      continue;
    DType T = F.Params[S.Param].Type;
    if (!isFloat(T) || (Bytes && dtypeBytes(T) != Bytes))
      return 0;
    Bytes = dtypeBytes(T);
  }
  return Bytes;
}

/// Inner values worth keeping in shared memory: loads and transcendentals
/// that the loops of two or more phases need. (The loops may run over
/// extents that are different symbols; the launcher keeps them only when
/// the lengths are equal at run time.)
std::vector<unsigned> sharedRowValues(const Nest &N) {
  std::map<unsigned, std::set<unsigned>> PhasesUsing;
  for (unsigned R = 0; R < N.Body.size(); ++R) {
    const loop::Stmt &Root = N.Body[R];
    if (!(Root.K == loop::Stmt::Reduce ||
          (Root.K == loop::Stmt::Store && Root.Inner)))
      continue;
    for (unsigned I : loop::innerCone(N, {R}))
      PhasesUsing[I].insert(Root.Phase);
  }
  std::vector<unsigned> Values;
  for (auto &[I, Phases] : PhasesUsing) {
    const loop::Stmt &S = N.Body[I];
    bool Worth =
        S.K == loop::Stmt::Load ||
        (S.K == loop::Stmt::Apply && opInfo(S.Op).Cost == OpCost::Costly);
    if (Phases.size() >= 2 && Worth)
      Values.push_back(I);
  }
  return Values;
}

bool onePhaseRowStores(const Nest &N) {
  for (const loop::Stmt &S : N.Body) {
    if (S.K == loop::Stmt::Reduce && S.Phase != 0)
      return false;
    if (S.K == loop::Stmt::Store && S.Inner)
      return false;
  }
  return true;
}

/// Every reduction of the nest runs over the same extents (one loop).
bool sameLoopExtents(const Nest &N) {
  const std::vector<ExtentId> *Key = nullptr;
  for (const loop::Stmt &S : N.Body)
    if (S.K == loop::Stmt::Reduce) {
      if (Key && *Key != S.LoopExtents)
        return false;
      Key = &S.LoopExtents;
    }
  return true;
}

NestPlan schedule(const Function &F, const Nest &N, const gpu::GpuTarget &T) {
  NestPlan P;
  if (!N.Indexed) {
    P.Kind = Strategy::GridStride;
    P.BlockX = T.ElementwiseBlock;
    unsigned Bytes = commonRefBytes(F, N);
    if (N.canFlatten() && !N.Domain.empty() && (Bytes == 4 || Bytes == 8)) {
      P.VectorWidth = T.VectorBytes / Bytes;
      P.Notes.push_back(fmt::format(
          "{} bytes per access when every pointer is {}-byte aligned, "
          "scalar tail",
          T.VectorBytes, T.VectorBytes));
    } else if (!N.canFlatten()) {
      P.Notes.push_back("an operand broadcasts: strided index arithmetic");
    } else {
      P.Notes.push_back("refs of different sizes: scalar accesses");
    }
    return P;
  }
  if (!N.isReduction()) {
    P.Kind = Strategy::GridStrideIndexed;
    P.BlockX = T.ElementwiseBlock;
    P.Notes.push_back("axes move (expand_dims/squeeze/index): one thread "
                      "per element, strided indexing");
    return P;
  }
  if (N.Grouped) {
    P.Kind = Strategy::GroupedProduct;
    P.BlockX = T.ElementwiseBlock;
    P.Notes.push_back("grouped product: one thread per output element runs "
                      "the groups in order, each an exact integer dot product "
                      "over k and its term, summed in float");
    return P;
  }
  if (N.Attention) {
    P.Kind = Strategy::Attention;
    P.BlockX = 256;
    P.ColumnsPerLane = {1, 2, 4, 8};
    P.Notes.push_back(
        "attention: a warp per query row (8 per block); per key the lanes "
        "split q . k over the head dimension (butterfly sum), then update "
        "the online softmax and their output columns; no [t, s] buffer");
    return P;
  }
  if (loop::matchGemm(N)) {
    P.Kind = Strategy::Gemm;
    P.BlockX = 256;
    P.GemmBK = 8;
    P.GemmTiles = {{128, 128, 8, 8}, {64, 64, 4, 4}, {32, 32, 2, 2}};
    P.Notes.push_back(std::string(
        "matrix product: A and B tiles in shared memory (padded against bank "
        "conflicts), a register tile per thread, the epilogue on the "
        "registers; the launcher takes the largest tiles that give each of "
        "the device's SMs a block"));
    return P;
  }
  unsigned RowAxes = N.Domain.size() - N.ReduceAxes.size();
  if (RowAxes == 0 && onePhaseRowStores(N) && sameLoopExtents(N)) {
    P.Kind = Strategy::TwoStage;
    P.BlockX = 512;
    P.MaxPartials = 1024;
    P.Notes.push_back("full reduction: per-block partials in a scratch "
                      "buffer, then one block; deterministic, no atomics");
    return P;
  }
  if (RowAxes == 0) {
    P.Kind = Strategy::RowGroups;
    P.Rows = {{T.MaxThreadsPerBlock, 0}};
    P.SharedRowValues = sharedRowValues(N);
    P.Notes.push_back("full reduction with several phases: one row on one "
                      "block");
    return P;
  }
  if (!llvm::is_contained(N.ReduceAxes, N.Domain.size() - 1)) {
    P.Kind = Strategy::Columns;
    P.BlockX = T.WarpSize;
    P.BlockY = 16;
    P.Notes.push_back("last axis kept: a warp reads 32 consecutive kept "
                      "elements (coalesced), the block's y threads split the "
                      "reduced range and combine in shared memory");
    if (onePhaseRowStores(N) && sameLoopExtents(N)) {
      P.MaxPartials = 64;
      P.Notes.push_back("few column tiles and a long reduced range: blocks "
                        "along y take slices of it (up to 64), a second "
                        "kernel folds the partials");
    }
    return P;
  }
  P.Kind = Strategy::RowGroups;
  P.Rows = {{T.WarpSize, 1024}, {256, 16384}, {T.MaxThreadsPerBlock, 0}};
  P.SharedRowValues = sharedRowValues(N);
  P.Notes.push_back("a warp per row up to 1024 elements (shuffles only), "
                    "else a block per row (shuffles, then shared memory)");
  if (!P.SharedRowValues.empty())
    P.Notes.push_back(fmt::format(
        "values later phases need stay in shared memory when the block's "
        "rows fit in {} KiB, else they are recomputed from global memory",
        T.SharedBytesPerBlock / 1024));
  return P;
}

} // namespace

gpu::Program pk::scheduleForGpu(const loop::Program &P,
                                const gpu::GpuTarget &T) {
  gpu::Program S;
  S.Loops = &P;
  S.Target = T;
  for (const Nest &N : P.Nests)
    S.Nests.push_back(schedule(*P.F, N, T));
  return S;
}
