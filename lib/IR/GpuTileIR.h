//===- GpuTileIR.h - The GPU schedule of each loop nest ---------*- C++ -*-===//
//
// GPU Tile IR records how each Loop IR nest maps onto CUDA's hierarchy:
// which loops go to blocks, warps and threads, how many elements a thread
// handles per access (float4), which row values stay in shared memory
// between the phases of a row, and why. The schedule pass
// (lib/Transforms/ScheduleGpu.cpp) decides from a small target model;
// Kernel IR lowering (lib/Target/CUDA) only follows it. `pkc --emit=tile`
// prints it after the CPU schedule.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_GPUTILEIR_H
#define PK_IR_GPUTILEIR_H

#include "IR/LoopIR.h"

#include <string>
#include <vector>

namespace pk::gpu {

/// What the GPU schedule knows about the device. The values hold from sm_80
/// (A100) to sm_90 (H100/H200); none of them is queried at run time.
struct GpuTarget {
  int WarpSize = 32;
  int MaxThreadsPerBlock = 1024;
  /// Dynamic shared memory a block gets without opting in
  /// (cudaFuncAttributeMaxDynamicSharedMemorySize).
  int64_t SharedBytesPerBlock = 48 << 10;
  /// Widest global load or store of one thread.
  int VectorBytes = 16;
  /// Threads per block of grid-stride kernels: 8 warps keep enough loads in
  /// flight per SM with several resident blocks.
  int ElementwiseBlock = 256;
  /// Blocks of a grid-stride launch: enough to fill 132 SMs many times over.
  int64_t MaxGrid = int64_t(1) << 16;
};

enum class Strategy : uint8_t {
  GridStride,        ///< one element per thread-iteration, flat or strided
  GridStrideIndexed, ///< the same through Stmt::Dims (axes move)
  RowGroups,         ///< a warp or a block per row, phases with reductions
  Columns,           ///< threads over the kept axes, slices of the reduction
  TwoStage,          ///< full reduction: per-block partials, then one block
  Gemm,              ///< matrix product: shared-memory tiles, register tiles
  Attention,         ///< a warp per query row, online softmax over the keys
  GroupedProduct,    ///< a thread per output, integer dots per group summed
};

/// One tile shape of a matmul kernel: a block computes BM x BN outputs,
/// each of its (BM / TM) * (BN / TN) threads a TM x TN register tile.
struct GemmTile {
  int BM, BN, TM, TN;
};

llvm::StringRef strategyName(Strategy S);

/// How many threads share a row, by row length: the first entry whose
/// `UpTo` covers the row (the last covers everything).
struct RowThreads {
  int Threads;
  int64_t UpTo;
};

struct NestPlan {
  Strategy Kind = Strategy::GridStride;
  /// GridStride: elements per vector access on the flat path (4 floats or
  /// 2 doubles in 16 bytes); 1 when the nest cannot use vector accesses.
  int VectorWidth = 1;
  /// RowGroups: the thread counts the launcher picks from.
  std::vector<RowThreads> Rows;
  /// RowGroups: inner values (Loop IR statement indices) the first phase
  /// that computes them keeps in shared memory for later phases, when the
  /// launcher finds the rows of a block fit `SharedBytesPerBlock`.
  std::vector<unsigned> SharedRowValues;
  /// Columns: threads along the kept axes (x) and slices of the reduced
  /// range (y); TwoStage: threads of each block.
  int BlockX = 0, BlockY = 1;
  /// TwoStage: most blocks of the first stage (one partial each).
  int MaxPartials = 0;
  /// Gemm: the tile shapes the launcher picks from (largest first; the
  /// first whose tile count fills the SMs), and the depth of a K step.
  std::vector<GemmTile> GemmTiles;
  int GemmBK = 0;
  /// Attention: the output columns per lane the launcher picks from
  /// (ceil(j / 32) rounded up to one of them; the largest loops over
  /// chunks of 32 times it).
  std::vector<int> ColumnsPerLane;
  std::vector<std::string> Notes;
};

struct Program {
  const loop::Program *Loops = nullptr;
  GpuTarget Target;
  std::vector<NestPlan> Nests; ///< one per Loop IR nest, same order
};

void print(const Program &P, llvm::raw_ostream &OS);
/// Structural checks of a GPU schedule against its Loop IR and target (one
/// plan per nest and fallback nest, a strategy the nest can run as, block
/// shapes within the device's limits). "" when valid.
std::string verify(const Program &P);

} // namespace pk::gpu

#endif // PK_IR_GPUTILEIR_H
