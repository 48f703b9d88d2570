// Self-tests of the CUDA host-execution shim: hand-written CUDA-style kernels
// compiled as C++ against the shim's <cuda_runtime.h>, one test per construct
// the generated code may use, and the bugs the shim must catch (a missing
// __syncthreads, a deadlocked warp, a refused launch, uninitialised memory).
// Built in every mode (plain, ASan+UBSan, TSan): correct kernels must give
// the right results, and no sanitizer report, in each.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <pk/cuda.h>
#include <pk_shim/shim.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

constexpr unsigned kFull = 0xffffffffu;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A cudaMalloc'd buffer of N elements.
template <class T> class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t N) : N(N) {
    EXPECT_EQ(cudaMalloc(&P, N * sizeof(T)), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T> &H) : DeviceBuffer(H.size()) {
    set(H);
  }
  ~DeviceBuffer() { cudaFree(P); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  T *get() const { return P; }
  void set(const std::vector<T> &H) {
    ASSERT_EQ(H.size(), N);
    EXPECT_EQ(cudaMemcpy(P, H.data(), N * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<T> host() const {
    std::vector<T> H(N);
    EXPECT_EQ(cudaMemcpy(H.data(), P, N * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return H;
  }

private:
  T *P = nullptr;
  size_t N;
};

/// Every test starts with no recorded error and the forward schedule.
class Shim : public ::testing::Test {
protected:
  void SetUp() override {
    pk::shim::reset();
    pk::shim::set_schedule(pk::shim::Schedule::Forward);
  }
  void TearDown() override { pk::shim::reset(); }
};

struct ScheduleCase {
  pk::shim::Schedule S;
  uint64_t Seed;
  std::string name() const {
    return S == pk::shim::Schedule::Forward ? "forward"
                                            : "random:" + std::to_string(Seed);
  }
};
std::vector<ScheduleCase> schedules(int RandomSeeds) {
  std::vector<ScheduleCase> V = {{pk::shim::Schedule::Forward, 0}};
  for (int I = 1; I <= RandomSeeds; ++I)
    V.push_back({pk::shim::Schedule::Random, uint64_t(I)});
  return V;
}

/// Small integers: every float sum of them is exact in any order.
std::vector<float> small_ints(size_t N) {
  std::vector<float> V(N);
  for (size_t I = 0; I < N; ++I)
    V[I] = float((I * 7919) % 8);
  return V;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float warp_sum(float V) {
  for (int O = 16; O > 0; O /= 2)
    V += __shfl_down_sync(kFull, V, O);
  return V;
}

/// A correct block reduction: grid-stride accumulation, warp shuffles, one
/// partial per warp in static shared memory, one barrier, the first warp
/// reduces the partials.
__global__ void block_sum(const float *__restrict__ X, int64_t N,
                          float *__restrict__ Partial) {
  __shared__ float WarpSums[32];
  float V = 0;
  for (int64_t I = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; I < N;
       I += int64_t(gridDim.x) * blockDim.x)
    V += X[I];
  V = warp_sum(V);
  const int Lane = threadIdx.x % warpSize, Warp = threadIdx.x / warpSize;
  if (Lane == 0)
    WarpSums[Warp] = V;
  __syncthreads();
  if (Warp == 0) {
    V = Lane < int(blockDim.x + 31) / 32 ? WarpSums[Lane] : 0.0f;
    V = warp_sum(V);
    if (Lane == 0)
      Partial[blockIdx.x] = V;
  }
}

/// A shared-memory tree reduction; without the first barrier (the planted
/// bug) a thread adds a slot that its owner has not written yet.
template <bool FirstBarrier>
__global__ void tree_sum(const float *__restrict__ X, int64_t N,
                         float *__restrict__ Partial) {
  __shared__ float S[256];
  const int T = threadIdx.x;
  float V = 0;
  for (int64_t I = int64_t(blockIdx.x) * blockDim.x + T; I < N;
       I += int64_t(gridDim.x) * blockDim.x)
    V += X[I];
  S[T] = V;
  if (FirstBarrier)
    __syncthreads();
  for (int O = blockDim.x / 2; O > 0; O /= 2) {
    if (T < O)
      S[T] += S[T + O];
    __syncthreads();
  }
  if (T == 0)
    Partial[blockIdx.x] = S[0];
}

/// Each thread publishes a value and reads its lower neighbour's; without
/// the barrier, a forward schedule still reads the right value (the
/// neighbour ran first), a random one does not.
template <bool Barrier>
__global__ void lower_neighbour(const float *__restrict__ X,
                                float *__restrict__ Y) {
  __shared__ float S[256];
  const int T = threadIdx.x;
  const int64_t I = int64_t(blockIdx.x) * blockDim.x + T;
  S[T] = X[I];
  if (Barrier)
    __syncthreads();
  Y[I] = T > 0 ? S[T - 1] : 0.0f;
}

float run_sum(void (*Kernel)(const float *, int64_t, float *), const char *Name,
              const std::vector<float> &X, int Grid) {
  DeviceBuffer<float> DX(X), DP(Grid);
  ::pk::shim::detail::launch(Name, Kernel, Grid, 256, 0, nullptr, DX.get(),
                             int64_t(X.size()), DP.get());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  auto P = DP.host();
  return std::accumulate(P.begin(), P.end(), 0.0f);
}

/// Grids of at most 8 blocks under the sanitizers (TSan: one OS thread each).
int grid(int Plain) {
  return pk::shim::mode() == pk::shim::Mode::Plain ? Plain : 8;
}

TEST_F(Shim, BlockReductionWithShufflesAndSharedMemory) {
  const auto X = small_ints(100003);
  const float Want = std::accumulate(X.begin(), X.end(), 0.0f);
  for (const ScheduleCase &C : schedules(3)) {
    pk::shim::set_schedule(C.S, C.Seed);
    const int G = grid(37);
    DeviceBuffer<float> DX(X), DP(G);
    PK_LAUNCH(block_sum, G, 256, 0, nullptr, DX.get(), int64_t(X.size()),
              DP.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << C.name();
    auto P = DP.host();
    EXPECT_EQ(std::accumulate(P.begin(), P.end(), 0.0f), Want) << C.name();
    EXPECT_EQ(run_sum(tree_sum<true>, "tree_sum<true>", X, grid(29)), Want)
        << C.name();
  }
}

TEST_F(Shim, ASwitchBudgetStopsALaunchBetweenBlocksTheSameWayEveryRun) {
  // The fuzz driver's cap on a run's cost (set_switch_budget): once spent,
  // the blocks not started yet are counted, not run, and the next launch
  // after the budget is lifted runs whole again.
  if (pk::shim::mode() == pk::shim::Mode::ThreadSanitizer)
    GTEST_SKIP() << "several workers: where the launch stops may vary";
  const auto X = small_ints(100003);
  const int G = 37;
  std::vector<uint64_t> Skipped;
  for (int Run = 0; Run < 2; ++Run) {
    DeviceBuffer<float> DX(X), DP(std::vector<float>(G, -1.0f));
    const pk::shim::Stats S0 = pk::shim::stats();
    pk::shim::set_switch_budget(3000); // a block of 256 threads: ~1500
    PK_LAUNCH(block_sum, G, 256, 0, nullptr, DX.get(), int64_t(X.size()),
              DP.get());
    pk::shim::set_switch_budget(0);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    const pk::shim::Stats S1 = pk::shim::stats();
    const uint64_t Over = S1.BlocksOverBudget - S0.BlocksOverBudget;
    const uint64_t Ran = S1.Blocks - S0.Blocks;
    EXPECT_GT(Over, 0u);
    EXPECT_EQ(Ran + Over, uint64_t(G));
    auto P = DP.host();
    EXPECT_EQ(uint64_t(std::count(P.begin(), P.end(), -1.0f)), Over)
        << "the blocks over the budget wrote nothing";
    Skipped.push_back(Over);
  }
  EXPECT_EQ(Skipped[0], Skipped[1]);
  DeviceBuffer<float> DX(X), DP(G);
  const pk::shim::Stats S0 = pk::shim::stats();
  PK_LAUNCH(block_sum, G, 256, 0, nullptr, DX.get(), int64_t(X.size()),
            DP.get());
  EXPECT_EQ(pk::shim::stats().BlocksOverBudget, S0.BlocksOverBudget);
  auto P = DP.host();
  EXPECT_EQ(std::accumulate(P.begin(), P.end(), 0.0f),
            std::accumulate(X.begin(), X.end(), 0.0f));
}

TEST_F(Shim, MissingSyncthreadsIsCaught) {
  if (pk::shim::mode() == pk::shim::Mode::ThreadSanitizer)
    GTEST_SKIP() << "a planted race, which TSan reports as one (see "
                    "shim.tsan.planted.missing_barrier)";
  const auto X = small_ints(50021);
  const float Want = std::accumulate(X.begin(), X.end(), 0.0f);
  int Caught = 0;
  std::string Which;
  for (const ScheduleCase &C : schedules(4)) {
    pk::shim::set_schedule(C.S, C.Seed);
    if (run_sum(tree_sum<false>, "tree_sum<false>", X, grid(29)) != Want) {
      ++Caught;
      Which += " " + C.name();
    }
  }
  EXPECT_GT(Caught, 0) << "the planted missing __syncthreads went unnoticed";
  std::printf("missing __syncthreads caught by:%s\n", Which.c_str());
}

TEST_F(Shim, MissingBarrierBeforeALowerNeighbourNeedsRandomOrder) {
  if (pk::shim::mode() == pk::shim::Mode::ThreadSanitizer)
    GTEST_SKIP() << "a planted race, which TSan reports as one (see "
                    "shim.tsan.planted.missing_barrier)";
  std::vector<float> X(4 * 256);
  std::iota(X.begin(), X.end(), 1.0f);
  auto Run = [&](bool Barrier) {
    DeviceBuffer<float> DX(X), DY(X.size());
    if (Barrier)
      PK_LAUNCH(lower_neighbour<true>, 4, 256, 0, nullptr, DX.get(), DY.get());
    else
      PK_LAUNCH(lower_neighbour<false>, 4, 256, 0, nullptr, DX.get(), DY.get());
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    auto Y = DY.host();
    for (size_t I = 0; I < Y.size(); ++I)
      if (Y[I] != (I % 256 ? X[I - 1] : 0.0f))
        return false;
    return true;
  };
  EXPECT_TRUE(Run(false)) << "forward order reads the neighbour after it "
                             "wrote: the race is invisible";
  int Wrong = 0;
  for (uint64_t Seed = 1; Seed <= 3; ++Seed) {
    pk::shim::set_schedule(pk::shim::Schedule::Random, Seed);
    EXPECT_TRUE(Run(true)) << "seed " << Seed;
    Wrong += !Run(false);
  }
  EXPECT_GT(Wrong, 0) << "random orders must expose the missing barrier";
}

//===----------------------------------------------------------------------===//
// Deadlocks and misused collectives: reported, never a hang.
//===----------------------------------------------------------------------===//

__global__ void half_warp_shuffle(float *Out) {
  float V = float(threadIdx.x);
  if (threadIdx.x % 32 < 16)
    V = __shfl_xor_sync(kFull, V, 1);
  else
    __syncthreads();
  Out[threadIdx.x] = V;
}

TEST_F(Shim, HalfAWarpInAFullMaskShuffleIsADeadlock) {
  DeviceBuffer<float> Out(64);
  PK_LAUNCH(half_warp_shuffle, 1, 64, 0, nullptr, Out.get());
  cudaError_t E = cudaGetLastError();
  ASSERT_EQ(E, cudaErrorLaunchTimeout);
  const std::string Msg = cudaGetErrorString(E);
  EXPECT_NE(Msg.find("deadlock in kernel half_warp_shuffle, block (0, 0, 0)"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("threads 0-15, 32-47 wait at "
                     "__shfl_xor_sync(mask 0xffffffff)"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("for lanes 16-31 of their warp"), std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("threads 16-31, 48-63 wait at __syncthreads"),
            std::string::npos)
      << Msg;
  EXPECT_EQ(pk::shim::last_error_message(), Msg);
  // Sticky, like a failed kernel on a GPU: every later call fails too.
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchTimeout);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchTimeout);
  void *P = nullptr;
  EXPECT_EQ(cudaMalloc(&P, 16), cudaErrorLaunchTimeout);
  pk::shim::reset();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

__global__ void early_return_then_syncthreads(float *Out) {
  if (threadIdx.x >= 40)
    return;
  Out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
  __syncthreads();
}

TEST_F(Shim, ThreadsThatReturnBeforeASyncthreadsAreReported) {
  DeviceBuffer<float> Out(128);
  PK_LAUNCH(early_return_then_syncthreads, 2, 64, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaErrorLaunchTimeout);
  const std::string Msg = pk::shim::last_error_message();
  EXPECT_NE(Msg.find("threads 0-39 wait at __syncthreads"), std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("threads 40-63 have returned"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("a thread that returned never arrives"), std::string::npos)
      << Msg;
}

__global__ void mismatched_collectives(float *Out) {
  float V = float(threadIdx.x);
  if (threadIdx.x < 16)
    V = __shfl_sync(kFull, V, 0);
  else
    __syncwarp(kFull);
  Out[threadIdx.x] = V;
}

TEST_F(Shim, LanesAtDifferentCollectivesAreReported) {
  DeviceBuffer<float> Out(32);
  PK_LAUNCH(mismatched_collectives, 1, 32, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaErrorLaunchTimeout);
  const std::string Msg = pk::shim::last_error_message();
  EXPECT_NE(Msg.find("threads 0-15 wait at __shfl_sync(mask 0xffffffff)"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("threads 16-31 wait at __syncwarp(mask 0xffffffff)"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("same collective with the same mask"), std::string::npos)
      << Msg;
}

__global__ void own_lane_not_in_mask(float *Out) {
  Out[threadIdx.x] = __shfl_sync(0x1u, 1.0f, 0);
}

TEST_F(Shim, ACallerOutsideItsMaskIsReported) {
  DeviceBuffer<float> Out(32);
  PK_LAUNCH(own_lane_not_in_mask, 1, 32, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(pk::shim::last_error_message().find(
                "thread 1 (lane 1 of warp 0) calls __shfl_sync(mask "
                "0x00000001)"),
            std::string::npos)
      << pk::shim::last_error_message();
}

__global__ void bad_width(float *Out) {
  Out[threadIdx.x] = __shfl_down_sync(kFull, 1.0f, 1, 12);
}

TEST_F(Shim, AShuffleWidthThatIsNotAPowerOfTwoIsReported) {
  DeviceBuffer<float> Out(32);
  PK_LAUNCH(bad_width, 1, 32, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(pk::shim::last_error_message().find("with width 12"),
            std::string::npos);
}

/// Lanes 16-31 return; lanes 0-15 go on with full-mask collectives, which
/// wait only for non-exited lanes (CUDA's rule). Reading an exited lane is
/// undefined: the shim returns all bits set (NaN) and counts it.
__global__ void half_warp_returns(float *Out) {
  const int Lane = threadIdx.x % 32;
  if (Lane >= 16)
    return;
  float V = float(Lane);
  const float Pair = __shfl_xor_sync(kFull, V, 1); // lanes 0-15: defined
  const float Far = __shfl_xor_sync(kFull, V, 16); // reads exited lanes
  const unsigned Ballot = __ballot_sync(kFull, 1); // exited lanes: 0
  Out[3 * Lane] = Pair;
  Out[3 * Lane + 1] = Far;
  Out[3 * Lane + 2] = float(Ballot == 0xffffu);
}

TEST_F(Shim, ExitedLanesLeaveFullMaskCollectivesAndReadAsUndefined) {
  DeviceBuffer<float> Out(48);
  const auto Before = pk::shim::stats();
  PK_LAUNCH(half_warp_returns, 1, 32, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << pk::shim::last_error_message();
  auto O = Out.host();
  for (int Lane = 0; Lane < 16; ++Lane) {
    EXPECT_EQ(O[3 * Lane], float(Lane ^ 1));
    EXPECT_TRUE(std::isnan(O[3 * Lane + 1])) << Lane;
    EXPECT_EQ(O[3 * Lane + 2], 1.0f);
  }
  EXPECT_EQ(pk::shim::stats().UndefinedShuffleReads -
                Before.UndefinedShuffleReads,
            16u);
}

//===----------------------------------------------------------------------===//
// Launch configuration limits.
//===----------------------------------------------------------------------===//

__global__ void write_one(float *Out) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    Out[0] = 1;
}

__global__ void use_dynamic_smem(float *Out, int N) {
  PK_DYNAMIC_SHARED(float, Buf);
  for (int I = threadIdx.x; I < N; I += blockDim.x)
    Buf[I] = 1;
  __syncthreads();
  if (threadIdx.x == 0)
    Out[blockIdx.x] = Buf[N - 1];
}

TEST_F(Shim, LaunchesBeyondTheLimitsAreRefused) {
  DeviceBuffer<float> Out(4);
  PK_LAUNCH(write_one, 1, 1025, 0, nullptr, Out.get());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_NE(pk::shim::last_error_message().find(
                "kernel write_one: launch refused: blockDim.x = 1025"),
            std::string::npos)
      << pk::shim::last_error_message();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky";
  PK_LAUNCH(write_one, 1, dim3(32, 32, 2), 0, nullptr, Out.get());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_NE(pk::shim::last_error_message().find("2048 threads"),
            std::string::npos);
  PK_LAUNCH(write_one, dim3(1, 70000), 32, 0, nullptr, Out.get());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  PK_LAUNCH(write_one, 0, 32, 0, nullptr, Out.get());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  PK_LAUNCH(write_one, int64_t(1) << 33, 32, 0, nullptr, Out.get());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_TRUE(std::isnan(Out.host()[0])) << "no refused kernel ran";

  // Dynamic shared memory: 48 KiB unless raised, at most 227 KiB.
  const int Floats = 48 * 1024 / 4;
  PK_LAUNCH(use_dynamic_smem, 2, 128, Floats * 4, nullptr, Out.get(), Floats);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(Out.host()[1], 1.0f);
  PK_LAUNCH(use_dynamic_smem, 2, 128, Floats * 4 + 4, nullptr, Out.get(),
            Floats + 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_NE(pk::shim::last_error_message().find("limit of 49152"),
            std::string::npos);
  EXPECT_EQ(cudaFuncSetAttribute(use_dynamic_smem,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 227 * 1024 + 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(use_dynamic_smem,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 100 * 1024),
            cudaSuccess);
  PK_LAUNCH(use_dynamic_smem, 2, 128, 100 * 1024, nullptr, Out.get(),
            100 * 256);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  PK_LAUNCH(use_dynamic_smem, 2, 128, 100 * 1024 + 4, nullptr, Out.get(),
            100 * 256 + 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);

  // pk's launch check turns the error into an exception naming the kernel.
  PK_LAUNCH(write_one, 1, 2000, 0, nullptr, Out.get());
  try {
    pk::cuda::detail::check_launch("my_kernel");
    ADD_FAILURE() << "check_launch did not throw";
  } catch (const std::runtime_error &E) {
    EXPECT_NE(std::string(E.what()).find(
                  "pk::cuda::my_kernel: launch failed: kernel write_one: "
                  "launch refused"),
              std::string::npos)
        << E.what();
  }
}

//===----------------------------------------------------------------------===//
// Memory.
//===----------------------------------------------------------------------===//

__global__ void copy_kernel(const float *X, float *Y, int N) {
  const int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N)
    Y[I] = X[I] * 2;
}

TEST_F(Shim, UninitialisedDeviceMemoryReadsAsNaN) {
  DeviceBuffer<float> X(100), Y(100);
  for (float V : X.host())
    EXPECT_TRUE(std::isnan(V));
  PK_LAUNCH(copy_kernel, 1, 128, 0, nullptr, X.get(), Y.get(), 100);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (float V : Y.host())
    EXPECT_TRUE(std::isnan(V));
  DeviceBuffer<int> I(3);
  for (int V : I.host())
    EXPECT_EQ(V, -1);
}

TEST_F(Shim, RuntimeApiOnHostMemory) {
  cudaStream_t S = nullptr;
  ASSERT_EQ(cudaStreamCreate(&S), cudaSuccess);
  float *A = nullptr, *B = nullptr;
  ASSERT_EQ(cudaMallocAsync(&A, 64 * sizeof(float), S), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&B, 64 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A) % 256, 0u);
  std::vector<float> H(64), R(64);
  std::iota(H.begin(), H.end(), 0.0f);
  EXPECT_EQ(cudaMemcpyAsync(A, H.data(), 256, cudaMemcpyHostToDevice, S),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpy(B, A, 256, cudaMemcpyDeviceToDevice), cudaSuccess);
  PK_LAUNCH(copy_kernel, 2, 32, 0, S, B, A, 64);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(R.data(), A, 256, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(R[63], 126.0f);
  EXPECT_EQ(cudaMemsetAsync(A, 0, 256, S), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(R.data(), A, 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(R[17], 0.0f);
  EXPECT_EQ(cudaMemset(B, 0, 256), cudaSuccess);

  // Misuse is an error (not sticky), as on a GPU.
  EXPECT_EQ(cudaMemcpy(A, H.data(), 260, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue)
      << "one float past the allocation";
  EXPECT_EQ(cudaMemcpy(H.data(), R.data(), 4, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue)
      << "host memory as the device source";
  EXPECT_EQ(cudaFree(A + 1), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  PK_LAUNCH(write_one, 1, 32, 0, reinterpret_cast<cudaStream_t>(0x1234), A);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);

  EXPECT_EQ(cudaFreeAsync(A, S), cudaSuccess);
  EXPECT_EQ(cudaFree(B), cudaSuccess);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaErrorInvalidResourceHandle);
  void *Zero = reinterpret_cast<void *>(1);
  EXPECT_EQ(cudaMalloc(&Zero, 0), cudaSuccess);
  EXPECT_EQ(Zero, nullptr);
  pk::shim::reset();

  cudaEvent_t E0, E1;
  ASSERT_EQ(cudaEventCreate(&E0), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&E1), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(E0), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(E1), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(E1), cudaSuccess);
  float Ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&Ms, E0, E1), cudaSuccess);
  EXPECT_GE(Ms, 0.0f);
  EXPECT_EQ(cudaEventDestroy(E0), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(E1), cudaSuccess);
}

TEST_F(Shim, DeviceLooksLikeAnH100) {
  int V = 0, Dev = -1;
  EXPECT_EQ(cudaGetDevice(&Dev), cudaSuccess);
  EXPECT_EQ(Dev, 0);
  auto Attr = [&](cudaDeviceAttr A) {
    EXPECT_EQ(cudaDeviceGetAttribute(&V, A, 0), cudaSuccess);
    return V;
  };
  EXPECT_EQ(Attr(cudaDevAttrMultiProcessorCount), 132);
  EXPECT_EQ(Attr(cudaDevAttrMaxSharedMemoryPerBlock), 48 * 1024);
  EXPECT_EQ(Attr(cudaDevAttrMaxSharedMemoryPerBlockOptin), 227 * 1024);
  EXPECT_EQ(Attr(cudaDevAttrWarpSize), 32);
  EXPECT_EQ(Attr(cudaDevAttrMaxThreadsPerBlock), 1024);
  EXPECT_EQ(Attr(cudaDevAttrComputeCapabilityMajor), 9);
  EXPECT_EQ(cudaDeviceGetAttribute(&V, cudaDevAttrWarpSize, 1),
            cudaErrorInvalidDevice);
  cudaDeviceProp P;
  EXPECT_EQ(cudaGetDeviceProperties(&P, 0), cudaSuccess);
  EXPECT_EQ(P.multiProcessorCount, 132);
  int Blocks = 0;
  EXPECT_EQ(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&Blocks, write_one, 256, 0),
      cudaSuccess);
  EXPECT_EQ(Blocks, 8);
  pk::shim::reset();
}

//===----------------------------------------------------------------------===//
// Shared memory.
//===----------------------------------------------------------------------===//

__device__ float *dynamic_buffer() {
  PK_DYNAMIC_SHARED(float, Buf);
  return Buf;
}

/// Each block: every slot reads as 0xFF bytes before the block writes it,
/// the buffer is 16-byte aligned, neighbours' values arrive after a barrier.
__global__ void dynamic_smem_roundtrip(const float *X, float *Y,
                                       unsigned *Bad) {
  float *Buf = dynamic_buffer();
  const int T = threadIdx.x, N = blockDim.x;
  if (reinterpret_cast<uintptr_t>(Buf) % 16 != 0)
    atomicAdd(Bad, 1u);
  if (__float_as_uint(Buf[T]) != 0xffffffffu)
    atomicAdd(Bad, 1u);
  __syncthreads();
  Buf[T] = X[blockIdx.x * N + T];
  __syncthreads();
  Y[blockIdx.x * N + T] = Buf[(T + 1) % N];
}

TEST_F(Shim, DynamicSharedMemoryIsPerBlockAlignedAndPoisoned) {
  const int Blocks = 5, N = 96;
  std::vector<float> X(Blocks * N);
  std::iota(X.begin(), X.end(), 0.0f);
  for (const ScheduleCase &C : schedules(2)) {
    pk::shim::set_schedule(C.S, C.Seed);
    DeviceBuffer<float> DX(X), DY(X.size());
    DeviceBuffer<unsigned> Bad(std::vector<unsigned>{0});
    // An odd size: the buffer is exactly that long (ASan sees its end).
    PK_LAUNCH(dynamic_smem_roundtrip, Blocks, N, N * 4 + 3, nullptr, DX.get(),
              DY.get(), Bad.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(Bad.host()[0], 0u) << C.name();
    auto Y = DY.host();
    for (int B = 0; B < Blocks; ++B)
      for (int T = 0; T < N; ++T)
        ASSERT_EQ(Y[B * N + T], X[B * N + (T + 1) % N]) << C.name();
  }
}

__device__ int block_tag() {
  __shared__ int Tag; // static shared memory in a __device__ function
  if (threadIdx.x == 0)
    Tag = int(blockIdx.x) + 1000;
  __syncthreads();
  return Tag;
}

/// Out[2b]: what block b's static shared int held before the block wrote
/// it; Bad counts threads that did not see their own block's value.
__global__ void static_shared_per_block(int *Out, unsigned *Bad) {
  __shared__ int Before;
  if (threadIdx.x == 0)
    Out[2 * blockIdx.x] = Before;
  __syncthreads();
  if (threadIdx.x == 0)
    Before = -int(blockIdx.x) - 1;
  const int Tag = block_tag();
  if (Tag != int(blockIdx.x) + 1000 || Before != -int(blockIdx.x) - 1)
    atomicAdd(Bad, 1u);
  __syncthreads();
  if (threadIdx.x == 0)
    Out[2 * blockIdx.x + 1] = Tag;
}

TEST_F(Shim, StaticSharedMemoryIsPerBlockAndZeroAtEachLaunch) {
  const int Blocks = 12;
  for (int Launch = 0; Launch < 2; ++Launch) {
    DeviceBuffer<int> Out(2 * Blocks);
    DeviceBuffer<unsigned> Bad(std::vector<unsigned>{0});
    PK_LAUNCH(static_shared_per_block, Blocks, 64, 0, nullptr, Out.get(),
              Bad.get());
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ(Bad.host()[0], 0u);
    auto O = Out.host();
    int SawZero = 0;
    for (int B = 0; B < Blocks; ++B) {
      EXPECT_EQ(O[2 * B + 1], B + 1000);
      SawZero += O[2 * B] == 0;
    }
    // Block 0 runs first on a fresh OS thread (in TSan mode every worker's
    // first block does): it sees zeros, not an earlier launch's values.
    if (pk::shim::concurrent_blocks() == 1) {
      EXPECT_EQ(O[0], 0);
    }
    EXPECT_GE(SawZero, 1);
  }
}

//===----------------------------------------------------------------------===//
// Warp collectives.
//===----------------------------------------------------------------------===//

constexpr int kWidths[] = {32, 16, 8, 4, 2, 1};

/// Out[(Variant * 6 + WidthIndex) * 32 + Lane] for 4 shuffle variants.
__global__ void all_shuffles(int *Out, int Delta, int SrcLane, int LaneMask) {
  const int Lane = threadIdx.x;
  const int V = Lane * 10 + 1;
  for (int W = 0; W < 6; ++W) {
    const int Width = kWidths[W];
    Out[(0 * 6 + W) * 32 + Lane] = __shfl_sync(kFull, V, SrcLane, Width);
    Out[(1 * 6 + W) * 32 + Lane] = __shfl_up_sync(kFull, V, Delta, Width);
    Out[(2 * 6 + W) * 32 + Lane] = __shfl_down_sync(kFull, V, Delta, Width);
    Out[(3 * 6 + W) * 32 + Lane] = __shfl_xor_sync(kFull, V, LaneMask, Width);
  }
}

TEST_F(Shim, ShufflesFollowCudaSemanticsForEveryWidth) {
  // The reference: CUDA C++ Programming Guide, warp shuffle functions.
  struct Args {
    int Delta, Src, Mask;
  } Cases[] = {{1, 0, 1}, {3, 5, 6}, {8, 13, 16}, {17, 31, 9}, {0, 40, 0}};
  for (Args A : Cases) {
    DeviceBuffer<int> Out(4 * 6 * 32);
    PK_LAUNCH(all_shuffles, 1, 32, 0, nullptr, Out.get(), A.Delta, A.Src,
              A.Mask);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    auto O = Out.host();
    for (int W = 0; W < 6; ++W) {
      const int Width = kWidths[W];
      for (int Lane = 0; Lane < 32; ++Lane) {
        auto Val = [](int L) { return L * 10 + 1; };
        const int Base = Lane / Width * Width;
        const int Idx = Base + A.Src % Width;
        const int Up = Lane % Width >= A.Delta ? Lane - A.Delta : Lane;
        const int Down = Lane % Width + A.Delta < Width ? Lane + A.Delta : Lane;
        const int X = Lane ^ A.Mask;
        const int Xor = X < Base + Width ? X : Lane; // later groups: own
        const std::string What =
            "width " + std::to_string(Width) + " lane " + std::to_string(Lane);
        EXPECT_EQ(O[(0 * 6 + W) * 32 + Lane], Val(Idx)) << "idx " << What;
        EXPECT_EQ(O[(1 * 6 + W) * 32 + Lane], Val(Up)) << "up " << What;
        EXPECT_EQ(O[(2 * 6 + W) * 32 + Lane], Val(Down)) << "down " << What;
        EXPECT_EQ(O[(3 * 6 + W) * 32 + Lane], Val(Xor)) << "xor " << What;
      }
    }
  }
}

__global__ void wide_shuffles(double *D, long long *L, int *B) {
  const int Lane = threadIdx.x;
  D[Lane] = __shfl_xor_sync(kFull, 0.25 + Lane, 3);
  L[Lane] = __shfl_down_sync(kFull, (1ll << 40) + Lane, 2);
  B[Lane] = __shfl_sync(kFull, Lane % 2 == 1, 1); // bool is shuffled as int
}

TEST_F(Shim, ShufflesMoveEightByteValues) {
  DeviceBuffer<double> D(32);
  DeviceBuffer<long long> L(32);
  DeviceBuffer<int> B(32);
  PK_LAUNCH(wide_shuffles, 1, 32, 0, nullptr, D.get(), L.get(), B.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  auto DH = D.host();
  auto LH = L.host();
  auto BH = B.host();
  for (int Lane = 0; Lane < 32; ++Lane) {
    EXPECT_EQ(DH[Lane], 0.25 + (Lane ^ 3));
    EXPECT_EQ(LH[Lane], (1ll << 40) + (Lane + 2 < 32 ? Lane + 2 : Lane));
    EXPECT_EQ(BH[Lane], 1);
  }
}

/// Votes over two warps, then a vote and a warp barrier over the even lanes
/// only (the odd lanes take no part).
__global__ void votes(unsigned *Out) {
  const int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  unsigned *O = Out + 8 * (32 * Warp + Lane);
  O[0] = __ballot_sync(kFull, Lane % 3 == 0);
  O[1] = __any_sync(kFull, Lane == 5 && Warp == 1);
  O[2] = __all_sync(kFull, 1);
  O[3] = __all_sync(kFull, Lane < 31);
  O[4] = __activemask();
  if (Lane % 2 == 0) {
    O[5] = __ballot_sync(0x55555555u, Lane % 4 == 0);
    __syncwarp(0x55555555u);
  } else {
    O[5] = 7;
  }
  __syncwarp();
  O[6] = __syncthreads_count(Lane < 10);
  O[7] = __syncthreads_and(Lane < 31) +
         2 * __syncthreads_or(Lane == 31 && Warp == 0);
}

TEST_F(Shim, VotesAndWarpBarriers) {
  DeviceBuffer<unsigned> Out(64 * 8);
  PK_LAUNCH(votes, 1, 64, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << pk::shim::last_error_message();
  auto O = Out.host();
  for (int T = 0; T < 64; ++T) {
    const int Lane = T % 32, Warp = T / 32;
    const unsigned *R = O.data() + 8 * T;
    EXPECT_EQ(R[0], 0x49249249u) << T;
    EXPECT_EQ(R[1], unsigned(Warp == 1)) << T;
    EXPECT_EQ(R[2], 1u);
    EXPECT_EQ(R[3], 0u);
    EXPECT_EQ(R[4], 1u << Lane) << "a lane is only sure of itself";
    EXPECT_EQ(R[5], Lane % 2 == 0 ? 0x11111111u : 7u) << T;
    EXPECT_EQ(R[6], 20u);
    EXPECT_EQ(R[7], 0u + 2u);
  }
}

/// A block of 100 threads: the last warp has 4 lanes, and full-mask
/// collectives there wait only for the lanes that exist.
__global__ void partial_warp(int *Out) {
  const int T = threadIdx.x, Lane = T % 32;
  Out[T] = __shfl_xor_sync(kFull, T, 1) + 1000 * __syncthreads_count(Lane < 2) +
           100000 * __popc(__ballot_sync(kFull, 1));
}

TEST_F(Shim, PartialWarpsAndSyncthreadsCount) {
  DeviceBuffer<int> Out(100);
  PK_LAUNCH(partial_warp, 1, 100, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << pk::shim::last_error_message();
  auto O = Out.host();
  for (int T = 0; T < 100; ++T)
    EXPECT_EQ(O[T], (T ^ 1) + 1000 * 8 + 100000 * (T < 96 ? 32 : 4)) << T;
}

//===----------------------------------------------------------------------===//
// Atomics, vector types, math, built-in variables.
//===----------------------------------------------------------------------===//

struct AtomicsOut {
  int I;
  unsigned U;
  unsigned long long ULL;
  float F;
  double D;
  int MaxI, MinI;
  unsigned MaxU;
  long long MaxLL;
  unsigned long long MinULL;
  int CasCount;
  unsigned Inc;
  int And, Or, Xor;
};

__global__ void atomics(AtomicsOut *O) {
  const int G = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&O->I, 1);
  atomicAdd(&O->U, 2u);
  atomicAdd(&O->ULL, 3ull);
  atomicAdd(&O->F, 0.5f);
  atomicAdd(&O->D, 0.25);
  atomicMax(&O->MaxI, G);
  atomicMin(&O->MinI, -G);
  atomicMax(&O->MaxU, unsigned(G) * 3);
  atomicMax(&O->MaxLL, (1ll << 40) + G);
  atomicMin(&O->MinULL, 1000ull + G);
  int Old = atomicAdd(&O->CasCount, 0), Seen;
  while ((Seen = atomicCAS(&O->CasCount, Old, Old + 1)) != Old)
    Old = Seen;
  atomicInc(&O->Inc, 99u);
  atomicAnd(&O->And, ~(1 << (G % 8)));
  atomicOr(&O->Or, 1 << (G % 16));
  atomicXor(&O->Xor, 1);
  __threadfence();
}

TEST_F(Shim, AtomicsAcrossBlocks) {
  AtomicsOut Init{};
  Init.MinI = 0;
  Init.MinULL = ~0ull;
  Init.And = -1;
  auto *D = static_cast<AtomicsOut *>(nullptr);
  ASSERT_EQ(cudaMalloc(&D, sizeof(AtomicsOut)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(D, &Init, sizeof Init, cudaMemcpyHostToDevice),
            cudaSuccess);
  PK_LAUNCH(atomics, 9, 128, 0, nullptr, D);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  AtomicsOut O{};
  ASSERT_EQ(cudaMemcpy(&O, D, sizeof O, cudaMemcpyDeviceToHost), cudaSuccess);
  const int N = 9 * 128;
  EXPECT_EQ(O.I, N);
  EXPECT_EQ(O.U, 2u * N);
  EXPECT_EQ(O.ULL, 3ull * N);
  EXPECT_EQ(O.F, 0.5f * N);
  EXPECT_EQ(O.D, 0.25 * N);
  EXPECT_EQ(O.MaxI, N - 1);
  EXPECT_EQ(O.MinI, -(N - 1));
  EXPECT_EQ(O.MaxU, 3u * (N - 1));
  EXPECT_EQ(O.MaxLL, (1ll << 40) + N - 1);
  EXPECT_EQ(O.MinULL, 1000ull);
  EXPECT_EQ(O.CasCount, N);
  EXPECT_EQ(O.Inc, unsigned(N % 100));
  EXPECT_EQ(O.And, ~0xff);
  EXPECT_EQ(O.Or, 0xffff);
  EXPECT_EQ(O.Xor, N % 2);
  cudaFree(D);
}

static_assert(alignof(float4) == 16 && sizeof(float4) == 16);
static_assert(alignof(float2) == 8 && alignof(double2) == 16);
static_assert(alignof(int4) == 16 && sizeof(int4) == 16);

__global__ void vectors(const float *__restrict__ X, float *__restrict__ Y,
                        int N4) {
  const int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I >= N4)
    return;
  const float4 V = __ldg(reinterpret_cast<const float4 *>(X) + I);
  const float S = __ldg(X + 4 * I);
  const float2 A = make_float2(V.x + V.y, V.z + V.w);
  const double2 D = make_double2(A.x, A.y);
  const int4 K = make_int4(1, 2, 3, 4);
  reinterpret_cast<float4 *>(Y)[I] =
      make_float4(S, float(D.x + D.y), float(K.w), V.w);
}

TEST_F(Shim, VectorTypesAndLdg) {
  const int N4 = 77;
  std::vector<float> X(4 * N4);
  std::iota(X.begin(), X.end(), 0.0f);
  DeviceBuffer<float> DX(X), DY(X.size());
  PK_LAUNCH(vectors, 3, 32, 0, nullptr, DX.get(), DY.get(), N4);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  auto Y = DY.host();
  for (int I = 0; I < N4; ++I) {
    EXPECT_EQ(Y[4 * I], X[4 * I]);
    EXPECT_EQ(Y[4 * I + 1],
              X[4 * I] + X[4 * I + 1] + X[4 * I + 2] + X[4 * I + 3]);
    EXPECT_EQ(Y[4 * I + 2], 4.0f);
    EXPECT_EQ(Y[4 * I + 3], X[4 * I + 3]);
  }
}

constexpr int kFloatFns = 24, kDoubleFns = 19;

__global__ void math_fns(const float *X, float *F, const double *XD,
                         double *D) {
  const int I = threadIdx.x;
  const float x = X[I], y = X[(I + 1) % blockDim.x];
  float *f = F + I * kFloatFns;
  int k = 0;
  f[k++] = expf(x);
  f[k++] = exp2f(x);
  f[k++] = logf(fabsf(x) + 1);
  f[k++] = log2f(fabsf(x) + 1);
  f[k++] = log1pf(fabsf(x));
  f[k++] = expm1f(x);
  f[k++] = sqrtf(fabsf(x));
  f[k++] = rsqrtf(fabsf(x) + 1);
  f[k++] = sinf(x);
  f[k++] = cosf(x);
  f[k++] = tanhf(x);
  f[k++] = erff(x);
  f[k++] = powf(fabsf(x), y);
  f[k++] = floorf(x);
  f[k++] = ceilf(x);
  f[k++] = fmaxf(x, y);
  f[k++] = fminf(x, y);
  f[k++] = fabsf(x);
  f[k++] = __expf(x);
  f[k++] = __fdividef(x, y);
  f[k++] = pk::scalar::maximum(x, y); // PK_HD helpers run on the device
  f[k++] = pk::scalar::rsqrt(fabsf(x) + 1);
  f[k++] = pk::scalar::sigmoid(x);
  f[k++] = max(x, y) - min(x, y);
  const double a = XD[I], b = XD[(I + 1) % blockDim.x];
  double *d = D + I * kDoubleFns;
  k = 0;
  d[k++] = exp(a);
  d[k++] = exp2(a);
  d[k++] = log(fabs(a) + 1);
  d[k++] = log2(fabs(a) + 1);
  d[k++] = log1p(fabs(a));
  d[k++] = expm1(a);
  d[k++] = sqrt(fabs(a));
  d[k++] = rsqrt(fabs(a) + 1);
  d[k++] = sin(a);
  d[k++] = cos(a);
  d[k++] = tanh(a);
  d[k++] = erf(a);
  d[k++] = pow(fabs(a), b);
  d[k++] = floor(a);
  d[k++] = ceil(a);
  d[k++] = fmax(a, b);
  d[k++] = fmin(a, b);
  d[k++] = fabs(a);
  d[k++] = pk::scalar::minimum(a, b);
}

TEST_F(Shim, DeviceMathMapsToLibm) {
  const int N = 33;
  std::vector<float> X(N);
  std::vector<double> XD(N);
  for (int I = 0; I < N; ++I) {
    X[I] = -3.7f + 0.23f * float(I);
    XD[I] = -2.9 + 0.19 * I;
  }
  DeviceBuffer<float> DX(X), F(N * kFloatFns);
  DeviceBuffer<double> DXD(XD), D(N * kDoubleFns);
  PK_LAUNCH(math_fns, 1, N, 0, nullptr, DX.get(), F.get(), DXD.get(), D.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  auto FH = F.host();
  auto DH = D.host();
  for (int I = 0; I < N; ++I) {
    const float x = X[I], y = X[(I + 1) % N];
    const float *f = FH.data() + I * kFloatFns;
    EXPECT_EQ(f[0], std::exp(x));
    EXPECT_EQ(f[7], 1.0f / std::sqrt(std::fabs(x) + 1));
    EXPECT_EQ(f[10], std::tanh(x));
    EXPECT_EQ(f[11], std::erf(x));
    EXPECT_EQ(f[12], std::pow(std::fabs(x), y));
    EXPECT_EQ(f[18], std::exp(x));
    EXPECT_EQ(f[19], x / y);
    EXPECT_EQ(f[20], std::max(x, y));
    EXPECT_EQ(f[23], std::fabs(x - y));
    const double a = XD[I];
    const double *d = DH.data() + I * kDoubleFns;
    EXPECT_EQ(d[0], std::exp(a));
    EXPECT_EQ(d[7], 1.0 / std::sqrt(std::fabs(a) + 1));
    EXPECT_EQ(d[11], std::erf(a));
    for (int K = 0; K < kFloatFns; ++K)
      EXPECT_FALSE(std::isnan(f[K])) << "float fn " << K << " lane " << I;
    for (int K = 0; K < kDoubleFns; ++K)
      EXPECT_FALSE(std::isnan(d[K])) << "double fn " << K << " lane " << I;
  }
}

__global__ void float_to_int(const float *X, int *Rz, int *Rn, int N) {
  const int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N) {
    Rz[I] = __float2int_rz(X[I]);
    Rn[I] = __float2int_rn(X[I]);
  }
}

TEST_F(Shim, FloatToIntConvertsAsTheDeviceDoes) {
  // PTX cvt.rzi / cvt.rni .s32.f32: NaN gives 0, out of range saturates
  // (a host static_cast is undefined there); rn rounds halves to even.
  const float Inf = std::numeric_limits<float>::infinity();
  const float NaN = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> X = {
      NaN,           Inf,  -Inf,  3e9f, -3e9f, 2147483648.0f, -2147483648.0f,
      2147483520.0f, 2.5f, -2.5f, 3.5f, -1.7f, 1.7f,          -0.0f,
      0.49999997f};
  const std::vector<int> WantRz = {0,         INT32_MAX, INT32_MIN, INT32_MAX,
                                   INT32_MIN, INT32_MAX, INT32_MIN, 2147483520,
                                   2,         -2,        3,         -1,
                                   1,         0,         0};
  const std::vector<int> WantRn = {0,         INT32_MAX, INT32_MIN, INT32_MAX,
                                   INT32_MIN, INT32_MAX, INT32_MIN, 2147483520,
                                   2,         -2,        4,         -2,
                                   2,         0,         0};
  const int N = static_cast<int>(X.size());
  DeviceBuffer<float> DX(X);
  DeviceBuffer<int> Rz(N), Rn(N);
  PK_LAUNCH(float_to_int, 1, 32, 0, nullptr, DX.get(), Rz.get(), Rn.get(), N);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(Rz.host(), WantRz);
  EXPECT_EQ(Rn.host(), WantRn);
}

/// Writes every thread's built-in variables; a template kernel launched
/// through PK_LAUNCH with dim3 grid and block.
template <int Tag> __global__ void __launch_bounds__(256) coords(uint3 *Out) {
  const unsigned B =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned T =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned G = B * (blockDim.x * blockDim.y * blockDim.z) + T;
  Out[3 * G] = threadIdx;
  Out[3 * G + 1] = blockIdx;
  Out[3 * G + 2] =
      make_uint3(blockDim.x * 100 + gridDim.x, blockDim.y * 100 + gridDim.y,
                 blockDim.z * 100 + gridDim.z + Tag);
}

__global__ void no_arguments() { __syncthreads(); }

TEST_F(Shim, BuiltInVariablesWithDim3GridsAndTemplateKernels) {
  const dim3 Grid(3, 2, 2), Block(8, 4, 2);
  const int N = 12 * 64;
  DeviceBuffer<uint3> Out(3 * N);
  PK_LAUNCH(coords<7>, Grid, Block, 0, nullptr, Out.get());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  auto O = Out.host();
  int G = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 4; ++ty)
            for (unsigned tx = 0; tx < 8; ++tx, ++G) {
              EXPECT_EQ(O[3 * G].x, tx);
              EXPECT_EQ(O[3 * G].y, ty);
              EXPECT_EQ(O[3 * G].z, tz);
              EXPECT_EQ(O[3 * G + 1].x, bx);
              EXPECT_EQ(O[3 * G + 1].y, by);
              EXPECT_EQ(O[3 * G + 1].z, bz);
              EXPECT_EQ(O[3 * G + 2].x, 803u);
              EXPECT_EQ(O[3 * G + 2].y, 402u);
              EXPECT_EQ(O[3 * G + 2].z, 209u);
            }
  PK_LAUNCH(no_arguments, 2, 64, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

//===----------------------------------------------------------------------===//
// Schedules and counters.
//===----------------------------------------------------------------------===//

__global__ void record_order(int *Order, int *Counter) {
  Order[atomicAdd(Counter, 1)] = int(threadIdx.x);
}

std::vector<int> order_of_one_block(int N) {
  DeviceBuffer<int> Order(N), Counter(std::vector<int>{0});
  PK_LAUNCH(record_order, 1, N, 0, nullptr, Order.get(), Counter.get());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return Order.host();
}

TEST_F(Shim, SchedulesAreForwardOrSeededRandom) {
  std::vector<int> Identity(128);
  std::iota(Identity.begin(), Identity.end(), 0);
  EXPECT_EQ(order_of_one_block(128), Identity);
  pk::shim::set_schedule(pk::shim::Schedule::Random, 7);
  EXPECT_EQ(pk::shim::schedule(), pk::shim::Schedule::Random);
  EXPECT_EQ(pk::shim::schedule_seed(), 7u);
  const auto A = order_of_one_block(128);
  EXPECT_NE(A, Identity);
  EXPECT_TRUE(std::is_permutation(A.begin(), A.end(), Identity.begin()));
  const auto A2 = order_of_one_block(128);
  EXPECT_NE(A2, A) << "each launch draws its own order";
  pk::shim::set_schedule(pk::shim::Schedule::Random, 7);
  EXPECT_EQ(order_of_one_block(128), A) << "same seed, same orders";
  pk::shim::set_schedule(pk::shim::Schedule::Random, 8);
  EXPECT_NE(order_of_one_block(128), A);
}

TEST_F(Shim, CountersCountLaunchesBlocksThreadsAndSwitches) {
  pk::shim::reset_stats();
  DeviceBuffer<float> X(small_ints(1000)), P(4);
  PK_LAUNCH(block_sum, 4, 64, 0, nullptr, X.get(), int64_t(1000), P.get());
  PK_LAUNCH(write_one, 1, 4096, 0, nullptr, P.get()); // refused
  pk::shim::reset();
  const auto S = pk::shim::stats();
  EXPECT_EQ(S.Launches, 1u);
  EXPECT_EQ(S.RefusedLaunches, 1u);
  EXPECT_EQ(S.Blocks, 4u);
  EXPECT_EQ(S.Threads, 4u * 64);
  EXPECT_EQ(S.Barriers, 4u);
  // Per warp: 5 shuffles, then 5 more in warp 0.
  EXPECT_EQ(S.WarpCollectives, 4u * (2 * 5 + 5));
  // Each thread: in and out at the start, at each rendezvous, at the end.
  EXPECT_GE(S.FiberSwitches, 2u * 4 * 64 * 7);
  EXPECT_EQ(S.Errors, 0u);
  EXPECT_STREQ(pk::shim::mode_name(),
               pk::shim::mode() == pk::shim::Mode::Plain              ? "plain"
               : pk::shim::mode() == pk::shim::Mode::AddressSanitizer ? "asan"
                                                                      : "tsan");
}

} // namespace
