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
#include "IR/LoopIR.h"
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
}

} // namespace

KernelArtifacts pk::driver::compileKernel(ir::Function &F,
                                          const PipelineOptions &Opts) {
  KernelArtifacts A;
  checkGraph(F, "the frontend");
  logAfter(Opts, F, "the frontend");

  A.Diags = inferShapes(F);
  if (!A.Diags.empty())
    return A;
  logAfter(Opts, F, "inferShapes");

  deriveGuards(F);
  logAfter(Opts, F, "deriveGuards");

  canonicalize(F);
  checkGraph(F, "canonicalize");
  logAfter(Opts, F, "canonicalize");

  FusionPlan Plan = fuse(F, A.Diags);
  if (!A.Diags.empty())
    return A;
  if (Opts.Emit == EmitStage::Graph)
    ir::print(F, *Opts.Out, &Plan.GroupOf);

  loop::Program Loops = lowerToLoops(F, Plan, A.Diags);
  if (!A.Diags.empty())
    return A;
  std::string Problem = loop::verify(Loops);
  if (!Problem.empty())
    llvm::report_fatal_error(
        llvm::Twine("pkc internal error: invalid Loop IR: ") + Problem);
  if (Opts.Emit == EmitStage::Loop)
    loop::print(Loops, *Opts.Out);

  tile::Program Schedule = scheduleForCpu(Loops);
  gpu::Program GpuSchedule = scheduleForGpu(Loops);
  if (Opts.Emit == EmitStage::Tile) {
    tile::print(Schedule, *Opts.Out);
    gpu::print(GpuSchedule, *Opts.Out);
  }
  if (Opts.Emit == EmitStage::Explain)
    explain(F, Plan, Schedule, GpuSchedule, *Opts.Out);

  A.CppBody = cpu::emitKernelBody(Schedule);
  if (Opts.Emit == EmitStage::Cpp)
    *Opts.Out << "// " << F.QualifiedName << "\n" << A.CppBody << "\n";

  kernel::Program Kernels = cuda::lowerToKernels(GpuSchedule);
  if (Opts.Emit == EmitStage::Kernel)
    kernel::print(Kernels, *Opts.Out);

  A.Cuda = cuda::emitCuda(Kernels);
  if (Opts.Emit == EmitStage::Cuda)
    *Opts.Out << A.Cuda.Kernels << "// launcher\n" << A.Cuda.Launcher;
  return A;
}
