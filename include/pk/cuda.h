//===- pk/cuda.h - Helpers called by pkc-generated CUDA code --------------===//
//
// The generated .pk.cu launches every kernel through PK_LAUNCH, declares
// dynamic shared memory through PK_DYNAMIC_SHARED and checks every launch
// through pk::cuda::detail::check_launch. Test builds that run the emitted
// CUDA on the CPU (test/cuda_shim) define their own PK_LAUNCH and
// PK_DYNAMIC_SHARED before including this header.
//
//===----------------------------------------------------------------------===//
#ifndef PK_CUDA_H
#define PK_CUDA_H

#include <pk/runtime.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#ifndef PK_LAUNCH
#define PK_LAUNCH(Kernel, Grid, Block, Smem, Stream, ...)                      \
  Kernel<<<(Grid), (Block), (Smem), (Stream)>>>(__VA_ARGS__)
#endif

/// `Type *Name` pointing at the block's dynamic shared memory (16-byte
/// aligned; its size is the launch's shared-memory argument).
#ifndef PK_DYNAMIC_SHARED
#define PK_DYNAMIC_SHARED(Type, Name)                                          \
  extern __shared__ __align__(16) unsigned char pk_dynamic_smem[];             \
  Type *Name = reinterpret_cast<Type *>(pk_dynamic_smem)
#endif

namespace pk::cuda::detail {

/// Blocks for `Items` work items, `PerBlock` per block and step. Kernels
/// loop grid-stride, so the grid is capped: 2^16 blocks of 256 threads
/// fill any current GPU many times over.
inline unsigned grid_for(int64_t Items, int64_t PerBlock) {
  int64_t Blocks = (Items + PerBlock - 1) / PerBlock;
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(Blocks, int64_t(1) << 16)));
}

/// The multiprocessor count of the current device (132 when it cannot be
/// queried): matmul launchers take the largest tiles that give every SM a
/// block.
inline int64_t sm_count() {
  int Device = 0, SMs = 0;
  if (cudaGetDevice(&Device) != cudaSuccess ||
      cudaDeviceGetAttribute(&SMs, cudaDevAttrMultiProcessorCount, Device) !=
          cudaSuccess ||
      SMs < 1) {
    cudaGetLastError(); // not sticky: clear it for check_launch
    return 132;
  }
  return SMs;
}

/// Copies N consecutive elements from shared memory at P into Out with
/// 128-bit (float4, double2) or 64-bit (float2) loads where N allows: the
/// register-tile reads of the matmul kernels. P must be aligned to the
/// chunk (16 bytes when N floats are a multiple of 4, ...): the kernels'
/// tile layouts guarantee it.
template <int N, class T>
__device__ inline void load_lanes(const T *P, T *Out) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "the matmul kernels are float or double");
  if constexpr (std::is_same_v<T, float> && N % 4 == 0) {
#pragma unroll
    for (int I = 0; I < N; I += 4) {
      const float4 V = *reinterpret_cast<const float4 *>(P + I);
      Out[I] = V.x;
      Out[I + 1] = V.y;
      Out[I + 2] = V.z;
      Out[I + 3] = V.w;
    }
  } else if constexpr (std::is_same_v<T, float> && N % 2 == 0) {
#pragma unroll
    for (int I = 0; I < N; I += 2) {
      const float2 V = *reinterpret_cast<const float2 *>(P + I);
      Out[I] = V.x;
      Out[I + 1] = V.y;
    }
  } else if constexpr (std::is_same_v<T, double> && N % 2 == 0) {
#pragma unroll
    for (int I = 0; I < N; I += 2) {
      const double2 V = *reinterpret_cast<const double2 *>(P + I);
      Out[I] = V.x;
      Out[I + 1] = V.y;
    }
  } else {
#pragma unroll
    for (int I = 0; I < N; ++I)
      Out[I] = P[I];
  }
}

/// Blocks along y of a column reduction over `Reduced` elements per kept
/// element: enough column tiles times slices to give each of ~132 SMs
/// about four blocks, while every thread of a `BlockY`-high block still
/// folds at least 16 elements; 1 means one pass, no partials.
inline int64_t column_slices(int64_t Kept, int64_t Reduced, int BlockX,
                             int BlockY, int MaxSlices) {
  int64_t Tiles = std::max<int64_t>(1, (Kept + BlockX - 1) / BlockX);
  int64_t Want = (528 + Tiles - 1) / Tiles;
  int64_t Enough = Reduced / (int64_t(BlockY) * 16);
  return std::max<int64_t>(
      1, std::min<int64_t>(std::min(Want, Enough), MaxSlices));
}

/// True when every pointer is a multiple of `Bytes` (the vector path's
/// float4 / double2 accesses need 16).
template <class... Ptrs> bool aligned(unsigned Bytes, const Ptrs *...P) {
  return ((reinterpret_cast<std::uintptr_t>(P) % Bytes == 0) && ...);
}

/// Device scratch memory for one launcher call, allocated and freed on the
/// launch stream (stream-ordered, so no synchronisation). None for a count
/// of 0 (every temporary in its output ref, or empty extents): get() is
/// then null and the CUDA runtime is not asked for 0 bytes.
template <class T> class DeviceScratch {
public:
  DeviceScratch(int64_t Count, cudaStream_t Stream, const char *Kernel)
      : Stream(Stream) {
    if (Count <= 0)
      return;
    cudaError_t Err = cudaMallocAsync(reinterpret_cast<void **>(&Ptr),
                                      sizeof(T) * Count, Stream);
    if (Err != cudaSuccess)
      throw std::runtime_error(
          std::string("pk::cuda::") + Kernel +
          ": scratch allocation failed: " + cudaGetErrorString(Err));
  }
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;
  ~DeviceScratch() {
    if (Ptr)
      cudaFreeAsync(Ptr, Stream);
  }
  T *get() const { return Ptr; }

private:
  T *Ptr = nullptr;
  cudaStream_t Stream;
};

/// Throws std::invalid_argument: the caller's workspace is smaller than
/// the bytes the kernel's temporaries need (or null).
[[noreturn]] inline void workspace_fail(const char *Kernel, int64_t Given,
                                        int64_t Needed) {
  throw std::invalid_argument(
      std::string("pk::cuda::") + Kernel + ": the workspace has " +
      std::to_string(Given) + " bytes, the temporaries need " +
      std::to_string(Needed) + " (" + Kernel + "_workspace_bytes)");
}

/// take's indices in device memory, checked before any launch: the launcher
/// copies them to the host after the work already queued on `Stream` (a
/// synchronising copy of the index ref; a decode step's token ids are a few
/// bytes) and checks them there, so no thread ever reads outside the table.
template <class I>
inline void check_take_device(const char *Kernel, const char *Table,
                              std::initializer_list<int64_t> TableShape,
                              int Axis, const char *Label, const I *Indices,
                              int64_t Count, cudaStream_t Stream) {
  std::vector<I> Host(static_cast<size_t>(Count));
  if (Count > 0 &&
      (cudaMemcpyAsync(Host.data(), Indices, Host.size() * sizeof(I),
                       cudaMemcpyDeviceToHost, Stream) != cudaSuccess ||
       cudaStreamSynchronize(Stream) != cudaSuccess))
    throw std::runtime_error(std::string("pk::cuda::") + Kernel +
                             ": cannot read take's indices " + Label + ": " +
                             cudaGetErrorString(cudaGetLastError()));
  pk::rt::check_take(Kernel, Table, TableShape, Axis, Label, Host.data(),
                     Count);
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
