//===- LowerToKernels.h - GPU Tile IR to Kernel IR --------------*- C++ -*-===//
#ifndef PK_TARGET_CUDA_LOWERTOKERNELS_H
#define PK_TARGET_CUDA_LOWERTOKERNELS_H

#include "IR/GpuTileIR.h"
#include "IR/KernelIR.h"

namespace pk::cuda {

/// Builds the kernels and launch plan of every nest, following the GPU
/// schedule: grid-stride loops (float4 on the aligned flat path), a warp or
/// block per row with shuffle and shared-memory reductions, column tiles,
/// and two-stage full reductions.
kernel::Program lowerToKernels(const gpu::Program &Plan);

} // namespace pk::cuda

#endif // PK_TARGET_CUDA_LOWERTOKERNELS_H
