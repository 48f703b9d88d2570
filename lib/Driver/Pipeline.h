//===- Pipeline.h - The passes of pkc, in order -----------------*- C++ -*-===//
#ifndef PK_DRIVER_PIPELINE_H
#define PK_DRIVER_PIPELINE_H

#include "IR/GraphIR.h"
#include "Target/CUDA/EmitCuda.h"

#include "llvm/Support/Timer.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace pk::driver {

/// What `--emit=` prints instead of writing files.
enum class EmitStage { None, Graph, Loop, Tile, Kernel, Cpp, Cuda, Explain };

/// The time of each stage over a pkc run (`pkc -v`), summed over kernels
/// and files; LLVM's TimerGroup prints the table to stderr when this is
/// destroyed (wall, user and system time per stage, as `-ftime-report`).
class StageTimers {
public:
  StageTimers() : Group("pkc", "pkc: time per stage") {}
  /// The timer of `Stage`, created on first use (stages print in the order
  /// LLVM sorts them: by time).
  llvm::Timer &get(llvm::StringRef Stage);

private:
  llvm::TimerGroup Group;
  std::vector<std::unique_ptr<llvm::Timer>> Timers;
};

struct PipelineOptions {
  EmitStage Emit = EmitStage::None;
  /// Print the Graph IR after every pass (to `Log`).
  bool PrintAfterAll = false;
  llvm::raw_ostream *Out = nullptr; ///< where --emit output goes
  llvm::raw_ostream *Log = nullptr; ///< where --print-after-all goes
  StageTimers *Timers = nullptr;    ///< `-v`: time each stage
};

/// Everything pkc produces for one kernel.
struct KernelArtifacts {
  /// The .pk.cpp's text for the kernel (cpu::KernelCpp): the compiled body
  /// as a template, inserted before the kernel, and the kernel's new body.
  std::string CppTemplate;
  std::string CppBody;
  cuda::KernelText Cuda;
  /// Errors in the user's kernel; when not empty nothing else is valid.
  std::vector<ir::UserDiag> Diags;
};

/// Runs every pass on `F`: shape inference, guards, canonicalisation,
/// materialisation, fusion, lowering to loops, the CPU schedule and C++, the
/// GPU schedule, Kernel IR and CUDA.
KernelArtifacts compileKernel(ir::Function &F, const PipelineOptions &Opts);

} // namespace pk::driver

#endif // PK_DRIVER_PIPELINE_H
