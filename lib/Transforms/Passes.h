//===- Passes.h - The Graph IR passes, in pipeline order --------*- C++ -*-===//
//
// Each pass lives in its own file and exposes one function here. The driver
// (lib/Driver/Pipeline.cpp) calls them in this order.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TRANSFORMS_PASSES_H
#define PK_TRANSFORMS_PASSES_H

#include "IR/AttentionPattern.h"
#include "IR/GpuTileIR.h"
#include "IR/GraphIR.h"
#include "IR/LoopIR.h"
#include "IR/TileIR.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pk {

/// Computes the symbolic shape of every node (NumPy broadcasting, reductions,
/// shape ops). Shape errors certain at compile time (rank mismatch,
/// constant extents that cannot broadcast, axis out of range) are returned.
std::vector<ir::UserDiag> inferShapes(ir::Function &F);

/// Constant folding, common-subexpression elimination and dead-code
/// elimination (values no store needs, stores overwritten by a later store
/// to the same ref).
void canonicalize(ir::Function &F);

/// Derives the run-time entry guards from the shapes: every extent that is
/// broadcast against another, and every value stored into a ref, must fit.
/// Guards that always hold are dropped, duplicates merged.
void deriveGuards(ir::Function &F);

/// Rewrites every argmax/argmin into a max/min with keepdims and a min of
/// the positions that hold it (ExpandArgReductions.cpp), after the guards
/// are derived. Returns the number rewritten.
unsigned expandArgReductions(ir::Function &F);

/// Gives reshape, slice of a computed value and concat buffers instead of
/// index maps (BufferViews.cpp): an alias of a contiguous buffer, a window,
/// or a temporary that the value is stored into first. Returns the number
/// of views lowered.
unsigned bufferViews(ir::Function &F);
/// Keeps in a pk-managed buffer (a Temp parameter) every value whose
/// consumer needs another loop form than its producer (see Materialize.cpp
/// for the rule): a matmul of a matmul, a reduction over a matmul's result,
/// a transposed product, ... Returns the number of buffers added.
unsigned materialize(ir::Function &F);

/// Keeps the value `V` in a new Temp: a store right after it, and a load
/// that every non-store use of V, and the stores `Redirect`, read instead.
/// Returns the temporary's parameter index.
unsigned materializeValue(ir::Function &F, ir::NodeId V,
                          llvm::ArrayRef<ir::NodeId> Redirect,
                          const std::string &Why);

/// Breaks a cycle between groups: the old contents of ref `Ref` are copied
/// into a new Temp first, and every read of them reads the copy. Returns the
/// temporary's parameter index.
unsigned snapshotRef(ir::Function &F, unsigned Ref);

/// The partition of a kernel's stores into fused groups (see Fusion.cpp for
/// the rule), in execution order.
struct FusionPlan {
  struct Group {
    std::vector<ir::NodeId> Stores; ///< in source order
    /// Reduction groups: the rank of the reduced values and the axes they
    /// are reduced over (normalised, sorted). Empty for elementwise groups.
    unsigned Rank = 0;
    std::vector<unsigned> ReduceAxes;
    /// A matmul's group (its reduction is a matmul's sum over k).
    bool MatMul = false;
    /// Attention (one store): the nest runs over [batch?, t, j] rows and
    /// the reduce axes [s, d] (ir/AttentionPattern.h).
    std::optional<ir::AttentionMatch> Attention;
  };
  std::vector<Group> Groups;
  /// Every live node -> the group that computes it (a node recomputed in
  /// several groups maps to the first). For `--emit=graph`.
  llvm::DenseMap<ir::NodeId, unsigned> GroupOf;
  /// Store -> the refs whose old contents its value is computed from (and
  /// the temporaries it reads).
  std::map<ir::NodeId, std::set<unsigned>> StoreReads;
  /// Set when the groups read each other's old values (a cycle): the ref
  /// to copy first (snapshotRef) before partitioning again. Groups is then
  /// empty.
  std::optional<unsigned> Snapshot;
  /// Set when a store reads its own ref's memory where another element
  /// writes it: the value to keep in a buffer first (materializeValue), and
  /// why. Groups is then empty.
  std::optional<ir::NodeId> Buffer;
  std::vector<ir::NodeId> BufferStores; ///< stores that read the buffer too
  std::string BufferWhy;
};

/// Partitions the graph into groups, each one loop nest (CPU) or kernel
/// launch (GPU), after materialize() has buffered what no group can
/// recompute.
FusionPlan fuse(const ir::Function &F);

/// What lowerToLoops asks the driver for when a group cannot be one nest as
/// planned (a value used through an embedding its nest cannot index): a
/// buffer for `Buffer` (materializeValue; the stores `Redirect` read it
/// too), or a copy of the ref `Snapshot` (snapshotRef). The driver applies
/// it and partitions again.
struct LoopRetry {
  std::optional<ir::NodeId> Buffer;
  std::vector<ir::NodeId> Redirect;
  std::optional<unsigned> Snapshot;
  std::string Why;
};

/// Turns each group into a loop nest with a scalar body. When `Retry` is
/// given, a group that needs a buffer sets it (the result is then not
/// valid); otherwise such a group is reported in `Diags`.
loop::Program lowerToLoops(const ir::Function &F, const FusionPlan &Plan,
                           std::vector<ir::UserDiag> &Diags,
                           std::optional<LoopRetry> *Retry = nullptr);

/// Merges each step whose nest is a batched int8 product (Q8_0 x Q8_0,
/// loop::matchInt8Product) storing its per-group terms into a temporary
/// with the next step's sum of that temporary over the groups: one grouped
/// nest (loop::GroupedSum), no temporary. Returns the number merged.
unsigned fuseGroupedSums(loop::Program &P);

/// Lists the buffers (refs and temporaries) of `P`, the lifetime of each
/// temporary in steps, and its workspace slot: temporaries whose lifetimes
/// do not overlap share one.
void planBuffers(loop::Program &P);

/// Decides the CPU schedule of every nest (Tile IR): threads, vector loop,
/// loop order, blocks.
tile::Program scheduleForCpu(const loop::Program &P,
                             const tile::CpuTarget &Target = {});

/// Decides the GPU schedule of every nest (GPU Tile IR): strategy, threads
/// per row, vector width, shared-memory row values.
gpu::Program scheduleForGpu(const loop::Program &P,
                            const gpu::GpuTarget &Target = {});

} // namespace pk

#endif // PK_TRANSFORMS_PASSES_H
