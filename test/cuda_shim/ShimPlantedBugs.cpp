// Planted bugs that a sanitizer build of the shim must report. Run as
// `pk-cuda-shim-planted-<mode> <bug>`; the ctest passes when the sanitizer's
// report is in the output (test/cuda_shim/CMakeLists.txt).
//
//   oob-float4         (ASan) a float4 load one vector past the allocation
//   misaligned-float4  (UBSan) a float4 load from an address that is not
//                      16-byte aligned (a GPU faults on it)
//   cross-block-race   (TSan) every block adds to one float without atomics
//   missing-barrier    (TSan) a shared-memory tree reduction without the
//                      __syncthreads between the writes and the first reads
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

/// The guard should be I < N4: the last thread reads X[4 N4 .. 4 N4 + 3].
__global__ void oob_float4(const float *__restrict__ X, float *__restrict__ Y,
                           int N4) {
  const int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= N4)
    reinterpret_cast<float4 *>(Y)[I % N4] =
        reinterpret_cast<const float4 *>(X)[I];
}

/// X + 1 is only 4-byte aligned.
__global__ void misaligned_float4(const float *__restrict__ X,
                                  float *__restrict__ Y, int N4) {
  const int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N4 - 1)
    reinterpret_cast<float4 *>(Y)[I] =
        reinterpret_cast<const float4 *>(X + 1)[I];
}

__global__ void cross_block_race(const float *__restrict__ X, float *Total) {
  if (threadIdx.x == 0)
    *Total += X[blockIdx.x]; // should be atomicAdd(Total, X[blockIdx.x])
}

__global__ void missing_barrier(const float *__restrict__ X, float *Out) {
  __shared__ float S[64];
  const int T = threadIdx.x;
  S[T] = X[T];
  // __syncthreads();   <- the planted bug
  for (int O = 32; O > 0; O /= 2) {
    if (T < O)
      S[T] += S[T + O];
    __syncthreads();
  }
  if (T == 0)
    *Out = S[0];
}

float *device(const std::vector<float> &H) {
  float *P = nullptr;
  cudaMalloc(&P, H.size() * sizeof(float));
  cudaMemcpy(P, H.data(), H.size() * sizeof(float), cudaMemcpyHostToDevice);
  return P;
}

} // namespace

int main(int Argc, char **Argv) {
  const char *Bug = Argc > 1 ? Argv[1] : "";
  std::vector<float> H(256, 1.0f);
  float *X = device(H), *Y = device(H);
  if (!std::strcmp(Bug, "oob-float4")) {
    PK_LAUNCH(oob_float4, 1, 128, 0, nullptr, X, Y, 64);
  } else if (!std::strcmp(Bug, "misaligned-float4")) {
    PK_LAUNCH(misaligned_float4, 1, 64, 0, nullptr, X, Y, 64);
  } else if (!std::strcmp(Bug, "cross-block-race")) {
    PK_LAUNCH(cross_block_race, 8, 32, 0, nullptr, X, Y);
  } else if (!std::strcmp(Bug, "missing-barrier")) {
    PK_LAUNCH(missing_barrier, 1, 64, 0, nullptr, X, Y);
  } else {
    std::fprintf(stderr,
                 "usage: %s oob-float4|misaligned-float4|cross-block-race|"
                 "missing-barrier\n",
                 Argv[0]);
    return 2;
  }
  const cudaError_t E = cudaDeviceSynchronize();
  float Out = 0;
  cudaMemcpy(&Out, Y, sizeof Out, cudaMemcpyDeviceToHost);
  std::printf("%s: ran (%s), Y[0] = %g; no sanitizer report means the bug "
              "went unnoticed\n",
              Bug, cudaGetErrorName(E), Out);
  cudaFree(X);
  cudaFree(Y);
  return 0;
}
