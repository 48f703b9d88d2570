// Timings of the CUDA shim for docs/cuda-shim.md (not a test):
//   pk-cuda-shim-bench
// prints the cost of a fiber switch, a 1M-element block reduction and a
// 256-row RMSNorm-like kernel (block per row, shuffles + shared memory), in
// the forward and a random schedule.
#include <boost/context/detail/fcontext.hpp>

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <time.h>
#include <vector>

namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void syncwarp_loop(int Iterations) {
  for (int I = 0; I < Iterations; ++I)
    __syncwarp();
}

__device__ __forceinline__ float warp_sum(float V) {
  for (int O = 16; O > 0; O /= 2)
    V += __shfl_xor_sync(kFull, V, O);
  return V;
}

/// The sum of a block's threads' values, in every thread.
__device__ float block_sum(float V) {
  __shared__ float Partial[32];
  V = warp_sum(V);
  const int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Partial[Warp] = V;
  __syncthreads();
  V = Lane < int(blockDim.x / 32) ? Partial[Lane] : 0.0f;
  V = warp_sum(V);
  __syncthreads(); // Partial is reused by the next call
  return V;
}

__global__ void reduce(const float *__restrict__ X, int64_t N,
                       float *__restrict__ Out) {
  float V = 0;
  for (int64_t I = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; I < N;
       I += int64_t(gridDim.x) * blockDim.x)
    V += X[I];
  V = block_sum(V);
  if (threadIdx.x == 0)
    atomicAdd(Out, V);
}

/// One block per row: mean of squares, then y = x * rsqrt(ms + eps) * w,
/// float4 loads.
__global__ void rmsnorm_rows(const float *__restrict__ X,
                             const float *__restrict__ W, float *__restrict__ Y,
                             int D, float Eps) {
  const float4 *Row =
      reinterpret_cast<const float4 *>(X + int64_t(blockIdx.x) * D);
  float S = 0;
  for (int I = threadIdx.x; I < D / 4; I += blockDim.x) {
    const float4 V = Row[I];
    S += V.x * V.x + V.y * V.y + V.z * V.z + V.w * V.w;
  }
  const float R = rsqrtf(block_sum(S) / float(D) + Eps);
  float4 *Out = reinterpret_cast<float4 *>(Y + int64_t(blockIdx.x) * D);
  const float4 *W4 = reinterpret_cast<const float4 *>(W);
  for (int I = threadIdx.x; I < D / 4; I += blockDim.x) {
    const float4 V = Row[I], G = W4[I];
    Out[I] =
        make_float4(V.x * R * G.x, V.y * R * G.y, V.z * R * G.z, V.w * R * G.w);
  }
}

/// Median wall and process-CPU milliseconds of Runs calls (CPU time is the
/// better measure on a loaded machine: the shim runs on one core).
struct Ms {
  double Wall, Cpu;
};
Ms median_ms(const std::function<void()> &Body, int Runs = 5) {
  std::vector<double> W, C;
  for (int R = 0; R < Runs; ++R) {
    timespec C0, C1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &C0);
    auto T0 = std::chrono::steady_clock::now();
    Body();
    auto T1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &C1);
    W.push_back(std::chrono::duration<double, std::milli>(T1 - T0).count());
    C.push_back((C1.tv_sec - C0.tv_sec) * 1e3 +
                (C1.tv_nsec - C0.tv_nsec) / 1e6);
  }
  std::sort(W.begin(), W.end());
  std::sort(C.begin(), C.end());
  return {W[W.size() / 2], C[C.size() / 2]};
}

namespace fctx = boost::context::detail;

/// A fiber that jumps straight back, forever: the bare cost of a switch.
void ping(fctx::transfer_t T) {
  for (;;)
    T = fctx::jump_fcontext(T.fctx, nullptr);
}

} // namespace

int main() {
  std::printf("pk CUDA shim (%s mode), fiber stacks of %zu KiB\n",
              pk::shim::mode_name(), pk::shim::fiber_stack_bytes() / 1024);
  const int64_t N = int64_t(1) << 20;
  std::vector<float> H(N);
  for (int64_t I = 0; I < N; ++I)
    H[I] = float(I % 7);
  float *X = nullptr, *Sum = nullptr, *W = nullptr, *Y = nullptr;
  cudaMalloc(&X, N * sizeof(float));
  cudaMalloc(&Sum, sizeof(float));
  cudaMemcpy(X, H.data(), N * sizeof(float), cudaMemcpyHostToDevice);
  const int Rows = 256, D = 4096;
  cudaMalloc(&W, D * sizeof(float));
  cudaMalloc(&Y, int64_t(Rows) * D * sizeof(float));
  cudaMemcpy(W, H.data(), D * sizeof(float), cudaMemcpyHostToDevice);

  {
    std::vector<char> Stack(64 * 1024);
    fctx::fcontext_t F =
        fctx::make_fcontext(Stack.data() + Stack.size(), Stack.size(), ping);
    const int Trips = 1000000;
    Ms T = median_ms([&] {
      for (int I = 0; I < Trips; ++I)
        F = fctx::jump_fcontext(F, nullptr).fctx;
    });
    std::printf("bare jump_fcontext: %.1f ns (cpu) per switch\n",
                T.Cpu * 1e6 / (2.0 * Trips));
  }
  for (auto [S, Name] : {std::pair{pk::shim::Schedule::Forward, "forward"},
                         std::pair{pk::shim::Schedule::Random, "random:1"}}) {
    pk::shim::set_schedule(S, 1);
    std::printf("schedule %s\n", Name);

    pk::shim::reset_stats();
    const int Iterations = 20000;
    Ms T = median_ms(
        [&] { PK_LAUNCH(syncwarp_loop, 1, 32, 0, nullptr, Iterations); });
    uint64_t Switches = pk::shim::stats().FiberSwitches / 5;
    std::printf("  __syncwarp loop, 1 warp x %d: %.2f ms (cpu %.2f ms), %llu "
                "switches, %.1f ns (cpu) per switch with the rendezvous\n",
                Iterations, T.Wall, T.Cpu, (unsigned long long)Switches,
                T.Cpu * 1e6 / double(Switches));

    for (int Grid : {1024, 132 * 4}) {
      pk::shim::reset_stats();
      T = median_ms([&] {
        cudaMemset(Sum, 0, sizeof(float));
        PK_LAUNCH(reduce, Grid, 256, 0, nullptr, X, N, Sum);
      });
      float Got = 0;
      cudaMemcpy(&Got, Sum, sizeof Got, cudaMemcpyDeviceToHost);
      const auto St = pk::shim::stats();
      std::printf("  block reduction of 2^20 floats, grid %d x 256: %.2f ms "
                  "(cpu %.2f ms; %llu fibers, %llu switches per run; sum "
                  "%.0f)\n",
                  Grid, T.Wall, T.Cpu, (unsigned long long)(St.Threads / 5),
                  (unsigned long long)(St.FiberSwitches / 5), double(Got));
    }

    pk::shim::reset_stats();
    T = median_ms([&] {
      PK_LAUNCH(rmsnorm_rows, Rows, 256, 0, nullptr, X, W, Y, D, 1e-6f);
    });
    std::printf("  rmsnorm, %d rows x %d, block of 256 per row: %.2f ms "
                "(cpu %.2f ms; %llu switches per run)\n",
                Rows, D, T.Wall, T.Cpu,
                (unsigned long long)(pk::shim::stats().FiberSwitches / 5));
  }
  if (cudaError_t E = cudaGetLastError()) {
    std::printf("error: %s\n", cudaGetErrorString(E));
    return 1;
  }
  cudaFree(X);
  cudaFree(Sum);
  cudaFree(W);
  cudaFree(Y);
  return 0;
}
