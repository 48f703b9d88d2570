//===- Pipeline.cpp - The passes of pkc, in order -------------------------===//
//
// The table of contents of the compiler: each step is one pass from
// lib/Transforms or one emitter from lib/Target, in the order they run.
// `--pk-print-after-all` shows the Graph IR after each Graph IR pass;
// `--emit=<stage>` prints one stage's result.
//
//===----------------------------------------------------------------------===//

#include "Driver/Pipeline.h"
#include "Driver/Explain.h"
#include "IR/GpuTileIR.h"
#include "IR/KernelIR.h"
#include "IR/LoopIR.h"
#include "IR/TileIR.h"
#include "Target/CPU/EmitCpp.h"
#include "Target/CUDA/LowerToKernels.h"
#include "Transforms/Passes.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace pk;
using namespace pk::driver;

namespace {

/// Invariants are compiler bugs, not user errors: stop loudly.
void checkGraph(const ir::Function &F, const char *After) {
  std::string Problem = ir::verify(F);
  if (!Problem.empty())
    llvm::report_fatal_error(llvm::Twine("pkc internal error: invalid Graph "
                                         "IR after ") +
                             After + ": " + Problem);
}

void logAfter(const PipelineOptions &Opts, const ir::Function &F,
              const char *Pass) {
  if (!Opts.PrintAfterAll || !Opts.Log)
    return;
  *Opts.Log << "// ----- Graph IR after " << Pass << " -----\n";
  ir::print(F, *Opts.Log);
  // An internal error aborts without flushing: the last IR printed is what
  // shows the bug.
  Opts.Log->flush();
}

/// The layers below Graph IR: check the program a pass made (a failure is a
/// compiler bug) and, under --pk-print-after-all, print it.
template <typename ProgramT>
void checkAndLog(const PipelineOptions &Opts, const ProgramT &P,
                 const char *Layer, const char *Pass) {
  std::string Problem = verify(P);
  if (!Problem.empty())
    llvm::report_fatal_error(llvm::Twine("pkc internal error: invalid ") +
                             Layer + " after " + Pass + ": " + Problem);
  if (!Opts.PrintAfterAll || !Opts.Log)
    return;
  *Opts.Log << "// ----- " << Layer << " after " << Pass << " -----\n";
  print(P, *Opts.Log);
}

/// Times the enclosing scope as `Stage` under `-v` (a no-op otherwise).
class StageScope {
public:
  StageScope(const PipelineOptions &Opts, llvm::StringRef Stage)
      : Region(Opts.Timers ? &Opts.Timers->get(Stage) : nullptr) {}

private:
  llvm::TimeRegion Region;
};

} // namespace

llvm::Timer &StageTimers::get(llvm::StringRef Stage) {
  for (const std::unique_ptr<llvm::Timer> &T : Timers)
    if (T->getName() == Stage)
      return *T;
  Timers.push_back(std::make_unique<llvm::Timer>(Stage, Stage, Group));
  return *Timers.back();
}

KernelArtifacts pk::driver::compileKernel(ir::Function &F,
                                          const PipelineOptions &Opts) {
  KernelArtifacts A;
  checkGraph(F, "the frontend");
  logAfter(Opts, F, "the frontend");

  {
    StageScope T(Opts, "inferShapes");
    A.Diags = inferShapes(F);
  }
  if (!A.Diags.empty())
    return A;
  logAfter(Opts, F, "inferShapes");

  {
    StageScope T(Opts, "deriveGuards");
    deriveGuards(F);
  }
  logAfter(Opts, F, "deriveGuards");

  {
    StageScope T(Opts, "expandArgReductions");
    expandArgReductions(F);
  }
  checkGraph(F, "expandArgReductions");
  logAfter(Opts, F, "expandArgReductions");

  {
    StageScope T(Opts, "canonicalize");
    canonicalize(F);
  }
  checkGraph(F, "canonicalize");
  logAfter(Opts, F, "canonicalize");

  {
    StageScope T(Opts, "bufferViews");
    bufferViews(F);
  }
  checkGraph(F, "bufferViews");
  logAfter(Opts, F, "bufferViews");

  {
    StageScope T(Opts, "materialize");
    materialize(F);
  }
  checkGraph(F, "materialize");
  logAfter(Opts, F, "materialize");

  // Partition and lower; a group that cannot be one nest as planned asks
  // for a buffer (or a copy of a ref) and everything is partitioned again.
  // Each round adds a buffer, so the rounds are bounded by the nodes.
  FusionPlan Plan;
  loop::Program Loops;
  const size_t MaxRounds = F.Nodes.size() + F.Params.size() + 1;
  for (size_t Round = 0;; ++Round) {
    if (Round == MaxRounds)
      llvm::report_fatal_error(llvm::Twine("pkc internal error: no "
                                           "partition of ") +
                               F.Name + " lowers to loops");
    {
      StageScope T(Opts, "fuse");
      Plan = fuse(F);
    }
    if (Plan.Snapshot) {
      // A cycle between groups: copy one ref's old contents first.
      snapshotRef(F, *Plan.Snapshot);
      checkGraph(F, "snapshotRef");
      logAfter(Opts, F, "snapshotRef");
      continue;
    }
    if (Plan.Buffer) {
      // A store reads what it overwrites: buffer that value first.
      materializeValue(F, *Plan.Buffer, Plan.BufferStores, Plan.BufferWhy);
      checkGraph(F, "materializeValue");
      logAfter(Opts, F, "materializeValue");
      continue;
    }
    std::optional<LoopRetry> Retry;
    {
      StageScope T(Opts, "lowerToLoops");
      Loops = lowerToLoops(F, Plan, A.Diags, &Retry);
    }
    if (!A.Diags.empty())
      return A;
    if (!Retry)
      break;
    if (Retry->Snapshot)
      snapshotRef(F, *Retry->Snapshot);
    else
      materializeValue(F, *Retry->Buffer, Retry->Redirect, Retry->Why);
    checkGraph(F, "materializeValue");
    logAfter(Opts, F, "materializeValue");
  }
  if (Opts.Emit == EmitStage::Graph)
    ir::print(F, *Opts.Out, &Plan.GroupOf);

  {
    StageScope T(Opts, "fuseGroupedSums, planBuffers");
    fuseGroupedSums(Loops);
    planBuffers(Loops);
  }
  checkAndLog(Opts, Loops, "Loop IR",
              "lowerToLoops, fuseGroupedSums, planBuffers");
  if (Opts.Emit == EmitStage::Loop)
    loop::print(Loops, *Opts.Out);

  tile::Program Schedule;
  gpu::Program GpuSchedule;
  {
    StageScope T(Opts, "scheduleForCpu, scheduleForGpu");
    Schedule = scheduleForCpu(Loops);
    GpuSchedule = scheduleForGpu(Loops);
  }
  checkAndLog(Opts, Schedule, "Tile IR", "scheduleForCpu");
  checkAndLog(Opts, GpuSchedule, "GPU Tile IR", "scheduleForGpu");
  if (Opts.Emit == EmitStage::Tile) {
    tile::print(Schedule, *Opts.Out);
    gpu::print(GpuSchedule, *Opts.Out);
  }

  {
    StageScope T(Opts, "emitCpp");
    cpu::KernelCpp Cpp = cpu::emitKernel(Schedule);
    A.CppTemplate = std::move(Cpp.Template);
    A.CppBody = std::move(Cpp.Body);
  }
  if (Opts.Emit == EmitStage::Cpp)
    *Opts.Out << "// " << F.QualifiedName << "\n"
              << A.CppTemplate << "// the body of " << F.Name << "\n"
              << A.CppBody << "\n";

  kernel::Program Kernels;
  {
    StageScope T(Opts, "lowerToKernels");
    Kernels = cuda::lowerToKernels(GpuSchedule);
  }
  checkAndLog(Opts, Kernels, "Kernel IR", "lowerToKernels");
  if (Opts.Emit == EmitStage::Kernel)
    kernel::print(Kernels, *Opts.Out);
  if (Opts.Emit == EmitStage::Explain)
    explain(F, Plan, Schedule, GpuSchedule, Kernels, *Opts.Out);

  {
    StageScope T(Opts, "emitCuda");
    A.Cuda = cuda::emitCuda(Kernels);
  }
  if (Opts.Emit == EmitStage::Cuda)
    *Opts.Out << A.Cuda.Kernels << "// launcher\n" << A.Cuda.Launcher;
  return A;
}
