//===- Explain.h - pkc --explain: what pkc did with a kernel, and why -*- C++
//-*-===//
#ifndef PK_DRIVER_EXPLAIN_H
#define PK_DRIVER_EXPLAIN_H

#include "IR/GpuTileIR.h"
#include "IR/KernelIR.h"
#include "IR/TileIR.h"
#include "Transforms/Passes.h"

namespace llvm {
class raw_ostream;
}

namespace pk::driver {

/// Prints, for one kernel: its fusion groups and why each is a group of its
/// own, the buffers pkc keeps between them, the CPU and GPU schedules of
/// each group and its CUDA launches per call, and a memory-traffic table
/// (how many times each ref is read or written per call: the minimum
/// against what the generated C++ and CUDA issue).
void explain(const ir::Function &F, const FusionPlan &Plan,
             const tile::Program &Cpu, const gpu::Program &Gpu,
             const kernel::Program &Kernels, llvm::raw_ostream &OS);

} // namespace pk::driver

#endif // PK_DRIVER_EXPLAIN_H
