//===- TileIR.h - The CPU schedule of each loop nest ------------*- C++ -*-===//
//
// Tile IR records the decisions that turn a target-independent Loop IR nest
// into CPU loops: which loop runs on threads (and above how much work), which
// loop is vectorised, which loop order, block sizes, and why. The schedule
// pass (lib/Transforms/ScheduleCpu.cpp) makes them from a small model of the
// target; the C++ emitter only follows them. `pkc --emit=tile` prints it.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_TILEIR_H
#define PK_IR_TILEIR_H

#include "IR/LoopIR.h"

#include <string>
#include <vector>

namespace pk::tile {

/// What the CPU schedule knows about the machine. The defaults are those of
/// a current x86-64 core; the generated code follows the user's -march for
/// the vector width, so no decision here depends on it.
struct CpuTarget {
  /// Below this many elements of work a nest runs on the calling thread:
  /// entering a libgomp parallel region costs ~1.5 us even with one thread
  /// or an if(0) clause, more than 64K simple elements take.
  int64_t ParallelMinWork = int64_t(1) << 16;
  /// Per-core data cache sizes, bytes.
  int64_t L1Bytes = 32 << 10;
  int64_t L2Bytes = 1 << 20;
};

/// The loop structure of one nest.
enum class LoopKind : uint8_t {
  Flat,          ///< one loop over all elements, contiguous indexing
  FlatOrStrided, ///< Flat when no operand broadcasts at run time, else Strided
  Strided,       ///< one loop per domain axis, strided indexing
  Rows,          ///< loops over the row axes; per row, one loop per phase
  Columns,       ///< column blocks; reduced axes outside, columns inside
  Single,        ///< one row (a full reduction): no row loop
  Gemm,          ///< a matrix product: pk::rt::gemm with cache blocking
  Int8Product,   ///< int8 values in groups: pk::rt::int8_product
  Attention,     ///< per query row, an online softmax over the keys
};

llvm::StringRef loopKindName(LoopKind K);

struct NestSchedule {
  LoopKind Kind = LoopKind::Flat;
  /// Threads take iterations of the outermost loop (collapsed over this many
  /// loops) when the work reaches MinWorkForThreads; 0 = never threaded.
  unsigned ThreadedLoops = 1;
  int64_t MinWorkForThreads = 0;
  /// The loop under `#pragma omp simd`: "flat", "innermost", "phases" (each
  /// phase loop of a row) or "columns".
  std::string Vector;
  /// Columns: how many columns (accumulators) a block holds.
  int64_t ColumnBlock = 0;
  /// Rows: inner statements (indices into the nest's body) kept in a per-row
  /// buffer by the first phase that computes them and read back by later
  /// phases, instead of being recomputed (they cost more than a load).
  std::vector<unsigned> RowBuffers;
  /// Rows: stores (indices into the nest's body) written with streaming
  /// stores when a call's outputs are larger than the cache (pk/stream.h):
  /// stores along the one reduced axis, the last, in a loop with no
  /// reduction, to a ref the nest never loads and stores once.
  std::vector<unsigned> StreamedStores;
  /// Why: one line per decision, printed by --emit=tile.
  std::vector<std::string> Notes;
};

/// A kernel's CPU schedule: one entry per Loop IR nest, same order.
struct Program {
  const loop::Program *Loops = nullptr;
  std::vector<NestSchedule> Nests;
};

void print(const Program &P, llvm::raw_ostream &OS);
/// Structural checks of a schedule against its Loop IR (one schedule per
/// nest and fallback nest, a loop kind the nest can run as, statement
/// indices in range). "" when valid; the driver runs it after the pass.
std::string verify(const Program &P);

} // namespace pk::tile

#endif // PK_IR_TILEIR_H
