//===- pk/cuda.h - Helpers called by pkc-generated CUDA code --------------===//
//
// The generated .pk.cu launches every kernel through PK_LAUNCH and checks
// every launch through pk::cuda::detail::check_launch. Test builds that run
// the emitted CUDA on the CPU (the [cuda] shim) define their own PK_LAUNCH
// before including this header.
//
//===----------------------------------------------------------------------===//
#ifndef PK_CUDA_H
#define PK_CUDA_H

#include <pk/runtime.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#ifndef PK_LAUNCH
#define PK_LAUNCH(Kernel, Grid, Block, Smem, Stream, ...)                      \
  Kernel<<<(Grid), (Block), (Smem), (Stream)>>>(__VA_ARGS__)
#endif

namespace pk::cuda::detail {

/// Threads per block of the elementwise kernels.
inline constexpr int kBlock = 256;

/// Blocks for a grid-stride loop over N elements: enough to fill the GPU,
/// capped so the launch itself stays valid (grid.x < 2^31).
inline unsigned grid_for(int64_t N) {
  int64_t Blocks = (N + kBlock - 1) / kBlock;
  return static_cast<unsigned>(std::min<int64_t>(Blocks, int64_t(1) << 20));
}

/// Throws when the last launch failed, naming the kernel.
inline void check_launch(const char *Kernel) {
  cudaError_t Err = cudaGetLastError();
  if (Err != cudaSuccess)
    throw std::runtime_error(std::string("pk::cuda::") + Kernel +
                             ": launch failed: " + cudaGetErrorString(Err));
}

} // namespace pk::cuda::detail

#endif // PK_CUDA_H
