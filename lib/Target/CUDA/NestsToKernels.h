//===- NestsToKernels.h - One nest's kernels, per strategy ------*- C++ -*-===//
//
// The class behind lowerToKernels (LowerToKernels.h). What every strategy
// shares (kernel parameters, index unravelling, reduction phases) is in
// LowerToKernels.cpp; each strategy of the GPU schedule is in a file of its
// own: GridStrideKernels.cpp, RowGroupKernels.cpp, ColumnKernels.cpp,
// TwoStageKernels.cpp, GemmKernels.cpp, AttentionKernels.cpp,
// GroupedProductKernels.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TARGET_CUDA_NESTSTOKERNELS_H
#define PK_TARGET_CUDA_NESTSTOKERNELS_H

#include "IR/GpuTileIR.h"
#include "IR/KernelIR.h"
#include "IR/LoopIR.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace pk::cuda::detail {

using gpu::NestPlan;
using ir::DType;
using ir::ExtentId;
using ir::Function;
using KStmt = kernel::Stmt;
using KStmts = std::vector<kernel::Stmt>;
using loop::Nest;
using LStmt = loop::Stmt;

/// `float4` / `double2`: the 16-byte vector type of a dtype.
std::string vectorType(DType T, int Width);
/// The parts joined by ` * ` ("1" for none).
std::string product(const std::vector<std::string> &Parts);

/// Turns each scheduled nest of a GPU Tile IR program into Kernel IR:
/// threads, shared memory, barriers, reductions and the launch plan.
class NestsToKernels {
public:
  explicit NestsToKernels(const gpu::Program &Plan)
      : Plan(Plan), F(*Plan.Loops->F), T(Plan.Target) {}

  kernel::Program run();

private:
  kernel::NestKernels lowerNest(const Nest &N, const NestPlan &P,
                                const std::string &Name);

  //===--------------------------------------------------------------------===//
  // Parameters and shared pieces
  //===--------------------------------------------------------------------===//

  /// Pointers of the refs a nest uses, every ref's extents and the scalars
  /// it uses, as kernel parameters and as the launcher's arguments.
  void addNestParams(const Nest &N, kernel::Kernel &K,
                     std::vector<std::string> &Args);

  /// A kernel of nest N: its comment (the group, the source line and
  /// Summary), the schedule's notes unless a kernel before it in the nest
  /// shows them (`WithNotes` false), and the nest's parameters
  /// (addNestParams), whose launch arguments are appended to Args.
  kernel::Kernel newKernel(const Nest &N, const NestPlan &P,
                           const std::string &Name, std::string Summary,
                           std::vector<std::string> &Args,
                           bool WithNotes = true);

  /// Lets for the domain indices `Axes` (outermost first) from the flat
  /// index `Flat` over their extents `Extents`. Each index is its own
  /// expression, so the printer can drop the ones a loop does not read.
  void unravel(const std::string &Flat, const std::vector<unsigned> &Axes,
               const std::vector<std::string> &Extents, KStmts &Out);

  void unravelRow(const Nest &N, const std::string &Row, KStmts &Out);

  std::string lenOf(const std::vector<ExtentId> &Key);

  //===--------------------------------------------------------------------===//
  // Elementwise
  //===--------------------------------------------------------------------===//

  void gridStride(const Nest &N, const NestPlan &P, const std::string &Name,
                  kernel::NestKernels &Out);

  /// `VW` elements per step: one vector load per ref read, the lanes
  /// computed by an unrolled loop, one vector store per ref written.
  KStmts vectorLoop(const Nest &N, int VW);

  void gridStrideIndexed(const Nest &N, const NestPlan &P,
                         const std::string &Name, kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Phases of a reduction nest, shared by row-groups and columns
  //===--------------------------------------------------------------------===//

  /// How the threads of a group cooperate on one row.
  struct Cooperation {
    std::string Start, Step; ///< the reduced range, strided over threads
    /// Appends the statements that combine the threads' accumulators of
    /// reduce `R` so that every thread of the group holds the result.
    std::function<void(unsigned R, KStmts &)> Combine;
    std::string RowStoreGuard;   ///< who makes row stores
    std::string InnerStoreGuard; ///< "" = every thread
    /// Values kept in shared memory under `kShared` (row-groups only).
    std::vector<unsigned> Shared;
  };

  /// The inner statements the roots need; a value in `Materialised` is read
  /// back from shared memory instead of being recomputed.
  std::set<unsigned> needed(const Nest &N, const std::vector<unsigned> &Roots,
                            const std::set<unsigned> &Materialised);

  static void guarded(const std::string &Guard, KStmt S, KStmts &Out);

  /// One loop over the reduced range for `Roots`.
  KStmts phaseLoop(const Nest &N, const std::vector<ExtentId> &Key,
                   const std::vector<unsigned> &Roots, const Cooperation &C,
                   const std::set<unsigned> &Materialised, bool StoreShared);

  /// Every phase of a row: row values, the loops over the reduced range,
  /// the combines, the finals and the stores.
  KStmts phases(const Nest &N, const Cooperation &C);

  std::vector<unsigned> reduces(const Nest &N);

  std::string accType(const Nest &N, unsigned R);

  //===--------------------------------------------------------------------===//
  // Row groups: a warp or a block per row
  //===--------------------------------------------------------------------===//

  void rowGroups(const Nest &N, const NestPlan &P, const std::string &Name,
                 kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Columns: the last axis kept
  //===--------------------------------------------------------------------===//

  void columns(const Nest &N, const NestPlan &P, const std::string &Name,
               kernel::NestKernels &Out);

  /// A one-phase column reduction over a long reduced range: blocks along y
  /// take slices of it and write partials per kept element; a second kernel
  /// folds the slices, finalises and stores. Taken by the launcher when the
  /// column tiles alone would leave SMs idle.
  void columnSlices(const Nest &N, const NestPlan &P, const std::string &Name,
                    const std::function<void(unsigned, KStmts &)> &Combine,
                    kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Gemm: shared-memory tiles, register tiles
  //===--------------------------------------------------------------------===//

  /// B's columns per vector read of a register tile: as many as fit 16
  /// bytes and divide TN.
  static int vectorColumns(DType T, int TN);

  /// The domain axis along which the first load among `Stmts` reads
  /// consecutive elements (the one indexing its ref's last axis), -1 when
  /// there is none.
  static int contiguousAxis(const Nest &N, const std::vector<unsigned> &Stmts);

  /// A BM x BN tile of C per block (grid-stride over the tiles of every
  /// batch), K in steps of BK: the block stages A[BM x BK] (transposed, so
  /// a thread's TM rows are contiguous) and B[BK x BN] in shared memory,
  /// each row padded by 4 elements so that the staging stores of a warp hit
  /// 32 different banks; every thread then accumulates its TM x TN register
  /// tile: TM consecutive rows, and TN columns strided by BN / TN, so that
  /// the 16 threads of a row read 16 consecutive banks of pk_bs and store
  /// consecutive elements. The epilogue runs on the registers and stores
  /// each element once.
  void gemm(const Nest &N, const NestPlan &P, const std::string &Name,
            kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Attention: a warp per query row, online softmax over the keys
  //===--------------------------------------------------------------------===//

  /// Per query row (batch, t) one warp runs the keys in order: the lanes
  /// split q . k over the head dimension (a butterfly leaves the sum in
  /// every lane, so all lanes take the same branches), update the running
  /// max pk_m and sum pk_l, and rescale their kCols output columns. Outputs
  /// wider than 32 kCols run in chunks, each recomputing the scores.
  void attention(const Nest &N, const NestPlan &P, const std::string &Name,
                 kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Grouped product: a thread per output element
  //===--------------------------------------------------------------------===//

  /// A grouped nest (Nest::Grouped) with one thread per (m, n) and step of
  /// the grid: per group g in order, the integer dot product over k (its
  /// operands recomputed per k), the group's term added to the sum; then the
  /// statements after the sum.
  void groupedProduct(const Nest &N, const NestPlan &P, const std::string &Name,
                      kernel::NestKernels &Out);

  //===--------------------------------------------------------------------===//
  // Two stages: a full reduction
  //===--------------------------------------------------------------------===//

  void twoStage(const Nest &N, const NestPlan &P, const std::string &Name,
                kernel::NestKernels &Out);

  const gpu::Program &Plan;
  const Function &F;
  const gpu::GpuTarget &T;
};

} // namespace pk::cuda::detail

#endif // PK_TARGET_CUDA_NESTSTOKERNELS_H
