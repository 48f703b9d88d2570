//===- Pipeline.h - The passes of pkc, in order -----------------*- C++ -*-===//
#ifndef PK_DRIVER_PIPELINE_H
#define PK_DRIVER_PIPELINE_H

#include "IR/GraphIR.h"
#include "Target/CUDA/EmitCuda.h"

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace pk::driver {

/// What `--emit=` prints instead of writing files.
enum class EmitStage { None, Graph, Loop, Tile, Kernel, Cpp, Cuda, Explain };

struct PipelineOptions {
  EmitStage Emit = EmitStage::None;
  /// Print the Graph IR after every pass (to `Log`).
  bool PrintAfterAll = false;
  llvm::raw_ostream *Out = nullptr; ///< where --emit output goes
  llvm::raw_ostream *Log = nullptr; ///< where --print-after-all goes
};

/// Everything pkc produces for one kernel.
struct KernelArtifacts {
  std::string CppBody;
  cuda::KernelText Cuda;
  /// Errors in the user's kernel; when not empty nothing else is valid.
  std::vector<ir::UserDiag> Diags;
};

/// Runs every pass on `F`: shape inference, guards, canonicalisation,
/// fusion, lowering to loops, the CPU schedule and C++, the GPU schedule,
/// Kernel IR and CUDA.
KernelArtifacts compileKernel(ir::Function &F, const PipelineOptions &Opts);

} // namespace pk::driver

#endif // PK_DRIVER_PIPELINE_H
