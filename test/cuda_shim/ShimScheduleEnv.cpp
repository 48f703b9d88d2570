// Checks that PK_SHIM_SCHEDULE selects the schedule at the first launch
// (ctest shim.env_schedule runs it with PK_SHIM_SCHEDULE=random:42): prints
// the schedule and whether one block's threads ran in a shuffled order.
#include <cuda_runtime.h>
#include <pk_shim/shim.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

namespace {
__global__ void record_order(int *Order, int *Counter) {
  Order[atomicAdd(Counter, 1)] = int(threadIdx.x);
}
} // namespace

int main() {
  const int N = 64;
  int *Order = nullptr, *Counter = nullptr;
  cudaMalloc(&Order, N * sizeof(int));
  cudaMalloc(&Counter, sizeof(int));
  cudaMemset(Counter, 0, sizeof(int));
  PK_LAUNCH(record_order, 1, N, 0, nullptr, Order, Counter);
  std::vector<int> H(N), Identity(N);
  cudaMemcpy(H.data(), Order, N * sizeof(int), cudaMemcpyDeviceToHost);
  std::iota(Identity.begin(), Identity.end(), 0);
  const bool Permutation =
      std::is_permutation(H.begin(), H.end(), Identity.begin());
  std::printf("schedule %s:%llu, %s\n",
              pk::shim::schedule() == pk::shim::Schedule::Random ? "random"
                                                                 : "forward",
              static_cast<unsigned long long>(pk::shim::schedule_seed()),
              !Permutation    ? "threads lost"
              : H == Identity ? "forward order"
                              : "shuffled order");
  cudaFree(Order);
  cudaFree(Counter);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
