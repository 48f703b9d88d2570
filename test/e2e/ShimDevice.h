//===- ShimDevice.h - Device buffers for e2e tests run on the CUDA shim ---===//
//
// The e2e suites that also run their kernels' generated CUDA on the shim
// (SixteenBitTest.cpp with PK_HALF_WITH_CUDA, Int8Test.cpp with
// PK_INT8_WITH_CUDA; test/cuda_shim/CMakeLists.txt builds them so) share
// these: a device copy of a host vector, and the two thread schedules each
// launch is run in. Include after <cuda_runtime.h> and <pk_shim/shim.h>.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TEST_E2E_SHIMDEVICE_H
#define PK_TEST_E2E_SHIMDEVICE_H

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shimdev {

inline void check(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    throw std::runtime_error(std::string(What) + ": " + cudaGetErrorString(E));
}

/// A device copy of a host vector of any element type.
template <class T> class Dev {
public:
  explicit Dev(const std::vector<T> &H) : N(H.size()) {
    if (N)
      check(cudaMalloc(&P, N * sizeof(T)), "cudaMalloc");
    if (N)
      check(cudaMemcpy(P, H.data(), N * sizeof(T), cudaMemcpyHostToDevice),
            "cudaMemcpy");
  }
  /// N elements, each `Fill` (not 0: an element a kernel fails to write
  /// shows).
  Dev(int64_t N, T Fill) : Dev(std::vector<T>(size_t(N), Fill)) {}
  ~Dev() { cudaFree(P); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  T *get() const { return P; }
  std::vector<T> host() const {
    check(cudaDeviceSynchronize(), "the kernel");
    std::vector<T> H(N);
    if (N)
      check(cudaMemcpy(H.data(), P, N * sizeof(T), cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    return H;
  }

private:
  T *P = nullptr;
  size_t N;
};

/// Runs Body in the forward schedule and, for up to 70000 elements, in a
/// random thread order too.
inline void
forEachSchedule(int64_t Elements,
                const std::function<void(const std::string &)> &Body) {
  pk::shim::set_schedule(pk::shim::Schedule::Forward);
  Body("cuda forward");
  if (Elements <= 70000) {
    pk::shim::set_schedule(pk::shim::Schedule::Random, 1);
    Body("cuda random:1");
    pk::shim::set_schedule(pk::shim::Schedule::Forward);
  }
}

} // namespace shimdev

#endif // PK_TEST_E2E_SHIMDEVICE_H
