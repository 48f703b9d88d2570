//===- cuda_runtime.h - The CUDA host-execution shim's fake CUDA header ---===//
//
// Not NVIDIA's header: the shim's stand-in for it (test/cuda_shim, see
// docs/cuda-shim.md). With test/cuda_shim/include first on the include path,
// `#include <pk/cuda.h>` in a generated .pk.cu reaches this file, and g++
// compiles the unchanged CUDA text as C++:
//
// * the qualifiers (__global__, __device__, __shared__, ...) become plain C++
//   (`__shared__` is `static thread_local`: every block runs on one OS
//   thread, so a static shared array is per block);
// * threadIdx, blockIdx, blockDim, gridDim read the running fiber's values;
// * __syncthreads and the warp collectives are rendezvous between the
//   fibers of a block (pk_shim runtime, shim.cpp);
// * PK_LAUNCH runs the kernel: every block, every thread, on fibers;
// * the runtime API works on host memory.
//
// Only what CUDA offers is defined, with CUDA's names and signatures, so
// code that compiles here compiles with nvcc too (the reverse is not
// guaranteed: only the subset below exists).
//
//===----------------------------------------------------------------------===//
#ifndef PK_SHIM_CUDA_RUNTIME_H
#define PK_SHIM_CUDA_RUNTIME_H

#ifdef __CUDACC__
#error "the pk CUDA shim's cuda_runtime.h is for g++/clang++ as C++, not nvcc"
#endif

#ifndef PK_CUDA_SHIM
#define PK_CUDA_SHIM 1
#endif

// nvcc's `#pragma unroll` means nothing to the host compiler: no warning
// (clang; g++ 12 ignores this for pragmas, so pk_add_shim_kernels also
// passes -Wno-unknown-pragmas).
#pragma GCC diagnostic ignored "-Wunknown-pragmas"

#include <pk_shim/shim.h>

// Every standard header that code after this one may include comes first,
// before the qualifier macros below exist (libstdc++ spells attributes such
// as __attribute__((__noinline__)), which the macro `__noinline__` would
// break).
#include <algorithm>
#include <array>
#include <atomic>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <map>
#include <math.h>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

//===----------------------------------------------------------------------===//
// Built-in vector types.
//===----------------------------------------------------------------------===//

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int X = 1, unsigned int Y = 1, unsigned int Z = 1)
      : x(X), y(Y), z(Z) {}
  constexpr dim3(uint3 V) : x(V.x), y(V.y), z(V.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define PK_SHIM_VEC2(T, N, A)                                                  \
  struct alignas(A) N##2 {                                                     \
    T x, y;                                                                    \
  };                                                                           \
  inline N##2 make_##N##2(T X, T Y) { return N##2 {X, Y}; }
#define PK_SHIM_VEC3(T, N)                                                     \
  struct N##3 {                                                                \
    T x, y, z;                                                                 \
  };                                                                           \
  inline N##3 make_##N##3(T X, T Y, T Z) { return N##3 {X, Y, Z}; }
#define PK_SHIM_VEC4(T, N, A)                                                  \
  struct alignas(A) N##4 {                                                     \
    T x, y, z, w;                                                              \
  };                                                                           \
  inline N##4 make_##N##4(T X, T Y, T Z, T W) { return N##4 {X, Y, Z, W}; }

PK_SHIM_VEC2(float, float, 8)
PK_SHIM_VEC3(float, float)
PK_SHIM_VEC4(float, float, 16)
PK_SHIM_VEC2(double, double, 16)
PK_SHIM_VEC3(double, double)
PK_SHIM_VEC4(double, double, 16) // CUDA 13: double4 is 16-aligned (_16a)
PK_SHIM_VEC2(int, int, 8)
PK_SHIM_VEC3(int, int)
PK_SHIM_VEC4(int, int, 16)
PK_SHIM_VEC2(unsigned int, uint, 8)
PK_SHIM_VEC4(unsigned int, uint, 16)
PK_SHIM_VEC2(long long, longlong, 16)
PK_SHIM_VEC2(unsigned long long, ulonglong, 16)
PK_SHIM_VEC4(char, char, 4)
PK_SHIM_VEC4(unsigned char, uchar, 4)
inline uint3 make_uint3(unsigned int X, unsigned int Y, unsigned int Z) {
  return uint3{X, Y, Z};
}
#undef PK_SHIM_VEC2
#undef PK_SHIM_VEC3
#undef PK_SHIM_VEC4

//===----------------------------------------------------------------------===//
// Runtime API types.
//===----------------------------------------------------------------------===//

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorIllegalInstruction = 715,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};

/// The fields of NVIDIA's cudaDeviceProp that the shim models (a subset:
/// code reading other fields does not compile against the shim).
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor;
  size_t sharedMemPerBlockOptin;
  int maxBlocksPerMultiProcessor;
};

struct CUstream_st; // what generated headers forward-declare
typedef struct CUstream_st *cudaStream_t;
struct CUevent_st;
typedef struct CUevent_st *cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02

//===----------------------------------------------------------------------===//
// Runtime API (shim.cpp). Every call returns the sticky error, if one is
// recorded, as CUDA does after a failed kernel.
//===----------------------------------------------------------------------===//

cudaError_t cudaMalloc(void **DevPtr, size_t Size);
cudaError_t cudaMallocAsync(void **DevPtr, size_t Size, cudaStream_t Stream);
cudaError_t cudaMallocManaged(void **DevPtr, size_t Size,
                              unsigned int Flags = 1);
cudaError_t cudaMallocHost(void **Ptr, size_t Size);
cudaError_t cudaFree(void *DevPtr);
cudaError_t cudaFreeAsync(void *DevPtr, cudaStream_t Stream);
cudaError_t cudaFreeHost(void *Ptr);
template <class T> cudaError_t cudaMalloc(T **DevPtr, size_t Size) {
  return cudaMalloc(reinterpret_cast<void **>(DevPtr), Size);
}
template <class T>
cudaError_t cudaMallocAsync(T **DevPtr, size_t Size, cudaStream_t Stream) {
  return cudaMallocAsync(reinterpret_cast<void **>(DevPtr), Size, Stream);
}
template <class T>
cudaError_t cudaMallocManaged(T **DevPtr, size_t Size, unsigned int Flags = 1) {
  return cudaMallocManaged(reinterpret_cast<void **>(DevPtr), Size, Flags);
}
template <class T> cudaError_t cudaMallocHost(T **Ptr, size_t Size) {
  return cudaMallocHost(reinterpret_cast<void **>(Ptr), Size);
}

cudaError_t cudaMemcpy(void *Dst, const void *Src, size_t Count,
                       cudaMemcpyKind Kind);
cudaError_t cudaMemcpyAsync(void *Dst, const void *Src, size_t Count,
                            cudaMemcpyKind Kind, cudaStream_t Stream = 0);
cudaError_t cudaMemset(void *DevPtr, int Value, size_t Count);
cudaError_t cudaMemsetAsync(void *DevPtr, int Value, size_t Count,
                            cudaStream_t Stream = 0);
cudaError_t cudaMemGetInfo(size_t *Free, size_t *Total);

cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetDevice(int *Device);
cudaError_t cudaSetDevice(int Device);
cudaError_t cudaGetDeviceCount(int *Count);
cudaError_t cudaDeviceGetAttribute(int *Value, cudaDeviceAttr Attr, int Device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *Prop, int Device);

cudaError_t cudaStreamCreate(cudaStream_t *Stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *Stream, unsigned int Flags);
cudaError_t cudaStreamDestroy(cudaStream_t Stream);
cudaError_t cudaStreamSynchronize(cudaStream_t Stream);
cudaError_t cudaStreamQuery(cudaStream_t Stream);

cudaError_t cudaEventCreate(cudaEvent_t *Event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *Event, unsigned int Flags);
cudaError_t cudaEventDestroy(cudaEvent_t Event);
cudaError_t cudaEventRecord(cudaEvent_t Event, cudaStream_t Stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t Event);
cudaError_t cudaEventQuery(cudaEvent_t Event);
cudaError_t cudaEventElapsedTime(float *Ms, cudaEvent_t Start, cudaEvent_t End);

cudaError_t cudaFuncSetAttribute(const void *Func, cudaFuncAttribute Attr,
                                 int Value);
template <class T>
cudaError_t cudaFuncSetAttribute(T *Entry, cudaFuncAttribute Attr, int Value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void *>(Entry), Attr,
                              Value);
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *NumBlocks,
                                                          const void *Func,
                                                          int BlockSize,
                                                          size_t DynSmem);
template <class T>
cudaError_t
cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *NumBlocks, T *Func,
                                              int BlockSize, size_t DynSmem) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      NumBlocks, reinterpret_cast<const void *>(Func), BlockSize, DynSmem);
}

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char *cudaGetErrorString(cudaError_t Error);
const char *cudaGetErrorName(cudaError_t Error);

template <class T>
cudaError_t cudaMemcpyToSymbol(T &Symbol, const void *Src, size_t Count,
                               size_t Offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  if (Offset + Count > sizeof(T))
    return cudaErrorInvalidValue;
  std::memcpy(reinterpret_cast<char *>(&Symbol) + Offset, Src, Count);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void *Dst, const T &Symbol, size_t Count,
                                 size_t Offset = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  if (Offset + Count > sizeof(T))
    return cudaErrorInvalidValue;
  std::memcpy(Dst, reinterpret_cast<const char *>(&Symbol) + Offset, Count);
  return cudaSuccess;
}

//===----------------------------------------------------------------------===//
// The runtime's entry points for device code (shim.cpp).
//===----------------------------------------------------------------------===//

namespace pk::shim::detail {

/// What the built-in variables read: the running fiber's values.
struct Coords {
  uint3 ThreadIdx;
  uint3 BlockIdx;
  dim3 BlockDim;
  dim3 GridDim;
};
/// The running fiber's coordinates (null outside a kernel) and its block's
/// dynamic shared memory. Plain __thread: no TLS wrapper call on access.
extern __thread const Coords *t_coords;
extern __thread unsigned char *t_dynamic_smem;

enum class BarrierKind : int { Sync, Count, And, Or };
enum class WarpOp : int {
  SyncWarp,
  Ballot,
  Any,
  All,
  ShflIdx,
  ShflUp,
  ShflDown,
  ShflXor
};

/// __syncthreads and its variants: returns the variant's result.
int block_barrier(BarrierKind Kind, int Predicate, const char *File, int Line);
/// A warp collective over the lanes of Mask: Value holds the calling lane's
/// operand (the predicate for votes), Bytes its size (for the undefined
/// value of a shuffle that reads a lane that did not take part).
uint64_t warp_collective(WarpOp Op, unsigned Mask, uint64_t Value, int Bytes,
                         int Arg, int Width, const char *File, int Line);
/// The calling lane's bit: the shim runs every thread independently, so no
/// other lane is guaranteed to be converged with it.
unsigned active_mask();

/// A kernel launch as the runtime sees it.
struct LaunchDesc {
  const char *Name;
  const void *Func;
  dim3 Grid, Block;
  size_t Smem;
  cudaStream_t Stream;
  void (*Thunk)(void *);
  void *Context;
  const char *ConfigError; // set when a grid/block value did not fit
};
void launch_kernel(const LaunchDesc &D);

/// Grid and block arguments: dim3, uint3 or an integer (checked to fit,
/// unlike CUDA's silent conversion).
struct DimArg {
  dim3 D;
  const char *Error = nullptr;
};
inline DimArg dim_arg(dim3 D) { return {D}; }
inline DimArg dim_arg(uint3 D) { return {dim3(D)}; }
template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
DimArg dim_arg(I V) {
  bool Negative = false;
  if constexpr (std::is_signed_v<I>)
    Negative = V < 0;
  if (Negative ||
      static_cast<unsigned long long>(V) > std::numeric_limits<unsigned>::max())
    return {dim3(1), "a grid or block extent does not fit in unsigned int"};
  return {dim3(static_cast<unsigned>(V))};
}

template <class... P, class G, class B, class... A>
void launch(const char *Name, void (*Kernel)(P...), G Grid, B Block,
            size_t Smem, cudaStream_t Stream, A &&...Args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "kernel launched with the wrong number of arguments");
  struct Context {
    void (*K)(P...);
    std::tuple<std::decay_t<P>...> Params;
  } Ctx{Kernel, std::tuple<std::decay_t<P>...>(std::forward<A>(Args)...)};
  DimArg GD = dim_arg(Grid), BD = dim_arg(Block);
  LaunchDesc D{Name,
               reinterpret_cast<const void *>(Kernel),
               GD.D,
               BD.D,
               Smem,
               Stream,
               [](void *C) {
                 auto *X = static_cast<Context *>(C);
                 std::apply(X->K, X->Params);
               },
               &Ctx,
               GD.Error ? GD.Error : BD.Error};
  launch_kernel(D);
}

template <class T> uint64_t to_bits(T V) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move values of at most 8 bytes");
  uint64_t Bits = 0;
  std::memcpy(&Bits, &V, sizeof(T));
  return Bits;
}
template <class T> T from_bits(uint64_t Bits) {
  T V;
  std::memcpy(&V, &Bits, sizeof(T));
  return V;
}
/// CUDA shuffles take int, unsigned, long long, float, double, ...: smaller
/// integers (bool, char, short) are promoted to int first.
template <class T>
using ShflT =
    std::conditional_t<std::is_integral_v<T> && (sizeof(T) < 4), int, T>;

template <class T>
ShflT<T> shuffle(WarpOp Op, unsigned Mask, T Var, int Arg, int Width,
                 const char *File, int Line) {
  using U = ShflT<T>;
  return from_bits<U>(warp_collective(Op, Mask, to_bits(U(Var)), sizeof(U), Arg,
                                      Width, File, Line));
}

} // namespace pk::shim::detail

//===----------------------------------------------------------------------===//
// Qualifiers and built-in variables.
//===----------------------------------------------------------------------===//

#define __global__
#define __device__
#define __host__
#define __constant__
#define __device_builtin__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(N) __attribute__((aligned(N)))
#define __launch_bounds__(...)
// Per block: every block runs on one OS thread (and in ThreadSanitizer mode
// each concurrently running block has its own). Not refilled between blocks
// (the shim cannot find them): a block sees what the previous block on its
// OS thread left, the first block of a launch sees zeros.
#define __shared__ static thread_local

#define threadIdx (::pk::shim::detail::t_coords->ThreadIdx)
#define blockIdx (::pk::shim::detail::t_coords->BlockIdx)
#define blockDim (::pk::shim::detail::t_coords->BlockDim)
#define gridDim (::pk::shim::detail::t_coords->GridDim)
inline constexpr int warpSize = 32;

/// pk's spelling of the block's dynamic shared memory (nvcc: `extern
/// __shared__ __align__(16) unsigned char pk_smem_raw[]`): 16-byte aligned,
/// exactly the launch's size, 0xFF-filled before every block.
#define PK_DYNAMIC_SHARED(Type, Name)                                          \
  Type *Name = reinterpret_cast<Type *>(::pk::shim::detail::t_dynamic_smem)

/// pk's launch macro (pk/cuda.h keeps this definition).
#define PK_LAUNCH(Kernel, Grid, Block, Smem, Stream, ...)                      \
  ::pk::shim::detail::launch(#Kernel, Kernel, (Grid), (Block), (Smem),         \
                             (Stream)__VA_OPT__(, ) __VA_ARGS__)

//===----------------------------------------------------------------------===//
// Barriers and warp collectives. The trailing File/Line parameters are
// filled at the call site (they name it in deadlock reports); never pass
// them.
//===----------------------------------------------------------------------===//

inline void __syncthreads(const char *File = __builtin_FILE(),
                          int Line = __builtin_LINE()) {
  ::pk::shim::detail::block_barrier(::pk::shim::detail::BarrierKind::Sync, 1,
                                    File, Line);
}
inline int __syncthreads_count(int Predicate,
                               const char *File = __builtin_FILE(),
                               int Line = __builtin_LINE()) {
  return ::pk::shim::detail::block_barrier(
      ::pk::shim::detail::BarrierKind::Count, Predicate, File, Line);
}
inline int __syncthreads_and(int Predicate, const char *File = __builtin_FILE(),
                             int Line = __builtin_LINE()) {
  return ::pk::shim::detail::block_barrier(::pk::shim::detail::BarrierKind::And,
                                           Predicate, File, Line);
}
inline int __syncthreads_or(int Predicate, const char *File = __builtin_FILE(),
                            int Line = __builtin_LINE()) {
  return ::pk::shim::detail::block_barrier(::pk::shim::detail::BarrierKind::Or,
                                           Predicate, File, Line);
}

inline void __syncwarp(unsigned Mask = 0xffffffffu,
                       const char *File = __builtin_FILE(),
                       int Line = __builtin_LINE()) {
  ::pk::shim::detail::warp_collective(::pk::shim::detail::WarpOp::SyncWarp,
                                      Mask, 0, 4, 0, 32, File, Line);
}
inline unsigned __ballot_sync(unsigned Mask, int Predicate,
                              const char *File = __builtin_FILE(),
                              int Line = __builtin_LINE()) {
  return static_cast<unsigned>(::pk::shim::detail::warp_collective(
      ::pk::shim::detail::WarpOp::Ballot, Mask, Predicate != 0, 4, 0, 32, File,
      Line));
}
inline int __any_sync(unsigned Mask, int Predicate,
                      const char *File = __builtin_FILE(),
                      int Line = __builtin_LINE()) {
  return static_cast<int>(::pk::shim::detail::warp_collective(
      ::pk::shim::detail::WarpOp::Any, Mask, Predicate != 0, 4, 0, 32, File,
      Line));
}
inline int __all_sync(unsigned Mask, int Predicate,
                      const char *File = __builtin_FILE(),
                      int Line = __builtin_LINE()) {
  return static_cast<int>(::pk::shim::detail::warp_collective(
      ::pk::shim::detail::WarpOp::All, Mask, Predicate != 0, 4, 0, 32, File,
      Line));
}
inline unsigned __activemask() { return ::pk::shim::detail::active_mask(); }

template <class T>
::pk::shim::detail::ShflT<T>
__shfl_sync(unsigned Mask, T Var, int SrcLane, int Width = warpSize,
            const char *File = __builtin_FILE(), int Line = __builtin_LINE()) {
  return ::pk::shim::detail::shuffle(::pk::shim::detail::WarpOp::ShflIdx, Mask,
                                     Var, SrcLane, Width, File, Line);
}
template <class T>
::pk::shim::detail::ShflT<T>
__shfl_up_sync(unsigned Mask, T Var, unsigned Delta, int Width = warpSize,
               const char *File = __builtin_FILE(),
               int Line = __builtin_LINE()) {
  return ::pk::shim::detail::shuffle(::pk::shim::detail::WarpOp::ShflUp, Mask,
                                     Var, static_cast<int>(Delta), Width, File,
                                     Line);
}
template <class T>
::pk::shim::detail::ShflT<T>
__shfl_down_sync(unsigned Mask, T Var, unsigned Delta, int Width = warpSize,
                 const char *File = __builtin_FILE(),
                 int Line = __builtin_LINE()) {
  return ::pk::shim::detail::shuffle(::pk::shim::detail::WarpOp::ShflDown, Mask,
                                     Var, static_cast<int>(Delta), Width, File,
                                     Line);
}
template <class T>
::pk::shim::detail::ShflT<T>
__shfl_xor_sync(unsigned Mask, T Var, int LaneMask, int Width = warpSize,
                const char *File = __builtin_FILE(),
                int Line = __builtin_LINE()) {
  return ::pk::shim::detail::shuffle(::pk::shim::detail::WarpOp::ShflXor, Mask,
                                     Var, LaneMask, Width, File, Line);
}

//===----------------------------------------------------------------------===//
// Memory fences and atomics. Atomics are relaxed, as CUDA's are; a fence is
// a sequentially consistent fence. ThreadSanitizer does not model
// stand-alone fences, so under it the atomics are acquire-release instead
// (no false race for the "last block" pattern of fence + atomic counter).
//===----------------------------------------------------------------------===//

#if defined(__SANITIZE_THREAD__)
#define PK_SHIM_FENCE() ((void)0) // the atomics are acquire-release instead
#else
#define PK_SHIM_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
inline void __threadfence() { PK_SHIM_FENCE(); }
inline void __threadfence_block() { PK_SHIM_FENCE(); }
inline void __threadfence_system() { PK_SHIM_FENCE(); }
#undef PK_SHIM_FENCE

namespace pk::shim::detail {
#if defined(__SANITIZE_THREAD__)
inline constexpr int kAtomicOrder = __ATOMIC_ACQ_REL;
inline constexpr int kAtomicLoadOrder = __ATOMIC_ACQUIRE;
#else
inline constexpr int kAtomicOrder = __ATOMIC_RELAXED;
inline constexpr int kAtomicLoadOrder = __ATOMIC_RELAXED;
#endif
template <class T, class F> T atomic_update(T *Address, F Update) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits *P = reinterpret_cast<Bits *>(Address);
  Bits Old = __atomic_load_n(P, kAtomicLoadOrder);
  for (;;) {
    T OldV = from_bits<T>(Old);
    Bits New = static_cast<Bits>(to_bits(static_cast<T>(Update(OldV))));
    if (__atomic_compare_exchange_n(P, &Old, New, true, kAtomicOrder,
                                    kAtomicLoadOrder))
      return OldV;
  }
}
} // namespace pk::shim::detail

#define PK_SHIM_ATOMIC_INT(T)                                                  \
  inline T atomicAdd(T *A, T V) {                                              \
    return __atomic_fetch_add(A, V, ::pk::shim::detail::kAtomicOrder);         \
  }                                                                            \
  inline T atomicExch(T *A, T V) {                                             \
    return __atomic_exchange_n(A, V, ::pk::shim::detail::kAtomicOrder);        \
  }                                                                            \
  inline T atomicMin(T *A, T V) {                                              \
    return ::pk::shim::detail::atomic_update(                                  \
        A, [V](T O) { return V < O ? V : O; });                                \
  }                                                                            \
  inline T atomicMax(T *A, T V) {                                              \
    return ::pk::shim::detail::atomic_update(                                  \
        A, [V](T O) { return V > O ? V : O; });                                \
  }                                                                            \
  inline T atomicCAS(T *A, T Compare, T V) {                                   \
    __atomic_compare_exchange_n(A, &Compare, V, false,                         \
                                ::pk::shim::detail::kAtomicOrder,              \
                                ::pk::shim::detail::kAtomicLoadOrder);         \
    return Compare;                                                            \
  }                                                                            \
  inline T atomicAnd(T *A, T V) {                                              \
    return __atomic_fetch_and(A, V, ::pk::shim::detail::kAtomicOrder);         \
  }                                                                            \
  inline T atomicOr(T *A, T V) {                                               \
    return __atomic_fetch_or(A, V, ::pk::shim::detail::kAtomicOrder);          \
  }                                                                            \
  inline T atomicXor(T *A, T V) {                                              \
    return __atomic_fetch_xor(A, V, ::pk::shim::detail::kAtomicOrder);         \
  }
PK_SHIM_ATOMIC_INT(int)
PK_SHIM_ATOMIC_INT(unsigned int)
PK_SHIM_ATOMIC_INT(unsigned long long)
#undef PK_SHIM_ATOMIC_INT
// CUDA has atomicMin/Max on long long but no atomicAdd/Exch/CAS on it.
inline long long atomicMin(long long *A, long long V) {
  return ::pk::shim::detail::atomic_update(
      A, [V](long long O) { return V < O ? V : O; });
}
inline long long atomicMax(long long *A, long long V) {
  return ::pk::shim::detail::atomic_update(
      A, [V](long long O) { return V > O ? V : O; });
}
inline int atomicSub(int *A, int V) {
  return __atomic_fetch_sub(A, V, ::pk::shim::detail::kAtomicOrder);
}
inline unsigned int atomicSub(unsigned int *A, unsigned int V) {
  return __atomic_fetch_sub(A, V, ::pk::shim::detail::kAtomicOrder);
}
inline unsigned int atomicInc(unsigned int *A, unsigned int V) {
  return ::pk::shim::detail::atomic_update(
      A, [V](unsigned int O) { return O >= V ? 0u : O + 1; });
}
inline unsigned int atomicDec(unsigned int *A, unsigned int V) {
  return ::pk::shim::detail::atomic_update(
      A, [V](unsigned int O) { return (O == 0 || O > V) ? V : O - 1; });
}
inline unsigned short atomicCAS(unsigned short *A, unsigned short Compare,
                                unsigned short V) {
  __atomic_compare_exchange_n(A, &Compare, V, false,
                              ::pk::shim::detail::kAtomicOrder,
                              ::pk::shim::detail::kAtomicLoadOrder);
  return Compare;
}
inline float atomicAdd(float *A, float V) {
  return ::pk::shim::detail::atomic_update(A, [V](float O) { return O + V; });
}
inline double atomicAdd(double *A, double V) {
  return ::pk::shim::detail::atomic_update(A, [V](double O) { return O + V; });
}
inline float atomicExch(float *A, float V) {
  return ::pk::shim::detail::atomic_update(A, [V](float) { return V; });
}

/// Read-only data cache load: a plain load here.
template <class T> inline T __ldg(const T *P) { return *P; }

//===----------------------------------------------------------------------===//
// Device math that C++ does not spell the same way. The rest (expf, tanhf,
// erff, fmaxf, exp, log1p, ...) is <math.h>'s, which libstdc++ overloads for
// float and double in the global namespace as CUDA does. On the shim these
// are libm's results; on a GPU, expf/tanhf/erff/rsqrtf are within 2 ulp.
//===----------------------------------------------------------------------===//

inline float rsqrtf(float X) { return 1.0f / sqrtf(X); }
inline double rsqrt(double X) { return 1.0 / sqrt(X); }
inline float rsqrt(float X) { return rsqrtf(X); }
inline float rcbrtf(float X) { return 1.0f / cbrtf(X); }
inline double rcbrt(double X) { return 1.0 / cbrt(X); }
inline float __expf(float X) { return expf(X); }
inline float __exp10f(float X) { return exp10f(X); }
inline float __logf(float X) { return logf(X); }
inline float __log2f(float X) { return log2f(X); }
inline float __log10f(float X) { return log10f(X); }
inline float __sinf(float X) { return sinf(X); }
inline float __cosf(float X) { return cosf(X); }
inline float __tanf(float X) { return tanf(X); }
inline float __powf(float X, float Y) { return powf(X, Y); }
inline float __fdividef(float X, float Y) { return X / Y; }
inline float __frcp_rn(float X) { return 1.0f / X; }
inline float __fsqrt_rn(float X) { return sqrtf(X); }
inline float __fadd_rn(float X, float Y) { return X + Y; }
inline float __fsub_rn(float X, float Y) { return X - Y; }
inline float __fmul_rn(float X, float Y) { return X * Y; }
inline float __fdiv_rn(float X, float Y) { return X / Y; }
inline float __fmaf_rn(float X, float Y, float Z) { return fmaf(X, Y, Z); }
inline double __dadd_rn(double X, double Y) { return X + Y; }
inline double __dmul_rn(double X, double Y) { return X * Y; }
inline double __fma_rn(double X, double Y, double Z) { return fma(X, Y, Z); }
inline float __saturatef(float X) {
  return X != X ? 0.0f : (X < 0.0f ? 0.0f : (X > 1.0f ? 1.0f : X));
}
inline int __float_as_int(float X) {
  return ::pk::shim::detail::from_bits<int>(::pk::shim::detail::to_bits(X));
}
inline unsigned int __float_as_uint(float X) {
  return ::pk::shim::detail::from_bits<unsigned>(
      ::pk::shim::detail::to_bits(X));
}
inline float __int_as_float(int X) {
  return ::pk::shim::detail::from_bits<float>(::pk::shim::detail::to_bits(X));
}
inline float __uint_as_float(unsigned int X) {
  return ::pk::shim::detail::from_bits<float>(::pk::shim::detail::to_bits(X));
}
inline long long __double_as_longlong(double X) {
  return ::pk::shim::detail::from_bits<long long>(
      ::pk::shim::detail::to_bits(X));
}
inline double __longlong_as_double(long long X) {
  return ::pk::shim::detail::from_bits<double>(::pk::shim::detail::to_bits(X));
}
inline int __popc(unsigned int X) { return __builtin_popcount(X); }
inline int __popcll(unsigned long long X) { return __builtin_popcountll(X); }
inline int __clz(int X) {
  return X == 0 ? 32 : __builtin_clz(static_cast<unsigned>(X));
}
inline int __clzll(long long X) {
  return X == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(X));
}
inline int __ffs(int X) { return __builtin_ffs(X); }
inline int __ffsll(long long X) { return __builtin_ffsll(X); }
inline unsigned int __brev(unsigned int X) {
  unsigned int R = 0;
  for (int I = 0; I < 32; ++I, X >>= 1)
    R = (R << 1) | (X & 1u);
  return R;
}
inline float __int2float_rn(int X) { return static_cast<float>(X); }
// The device's float -> int conversions (PTX cvt.rzi / cvt.rni .s32.f32)
// give 0 for NaN and saturate out of range; a host static_cast is undefined
// there (x86 gives INT_MIN), so the shim models the device, not the host.
// Comparisons are with 2^31 (exact in float); `X` is rounded first.
inline int pk_shim_float_to_int_sat(float X) {
  if (X != X)
    return 0;
  if (X >= 2147483648.0f)
    return 2147483647;
  if (X < -2147483648.0f)
    return -2147483647 - 1;
  return static_cast<int>(X);
}
inline int __float2int_rz(float X) {
  return pk_shim_float_to_int_sat(truncf(X));
}
inline int __float2int_rn(float X) {
  return pk_shim_float_to_int_sat(nearbyintf(X));
}

// CUDA's global min/max overloads for device code.
#define PK_SHIM_MINMAX(T)                                                      \
  inline T min(T A, T B) { return A < B ? A : B; }                             \
  inline T max(T A, T B) { return A > B ? A : B; }
PK_SHIM_MINMAX(int)
PK_SHIM_MINMAX(unsigned int)
PK_SHIM_MINMAX(long)
PK_SHIM_MINMAX(unsigned long)
PK_SHIM_MINMAX(long long)
PK_SHIM_MINMAX(unsigned long long)
#undef PK_SHIM_MINMAX
inline float min(float A, float B) { return fminf(A, B); }
inline float max(float A, float B) { return fmaxf(A, B); }
inline double min(double A, double B) { return fmin(A, B); }
inline double max(double A, double B) { return fmax(A, B); }

#endif // PK_SHIM_CUDA_RUNTIME_H
