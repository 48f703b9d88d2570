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
#include <set>
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
  /// Store -> the refs whose old contents its value is computed from.
  std::map<ir::NodeId, std::set<unsigned>> StoreReads;
};

/// Partitions the graph into groups, each one loop nest (CPU) or kernel
/// launch (GPU). Reports constructs no lowering handles yet.
FusionPlan fuse(const ir::Function &F, std::vector<ir::UserDiag> &Diags);

/// Turns each group into a loop nest with a scalar body. Reports the few
/// fusions the loop form cannot express yet.
loop::Program lowerToLoops(const ir::Function &F, const FusionPlan &Plan,
                           std::vector<ir::UserDiag> &Diags);

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
