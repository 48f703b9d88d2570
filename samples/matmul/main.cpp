#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "matmul.cpp"
}
// The compiled kernel, from matmul.pk.cpp (pk_add_kernels).
void sgemm(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c);

int main() {
  const int64_t M = 512, N = 512, K = 512;
  const auto A = sample::random(M * K, 1, -1, 1),
             B = sample::random(K * N, 2, -1, 1);
  std::vector<float> E(M * N), C(M * N);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({A.data(), {M, K}}, {B.data(), {K, N}}, {Y.data(), {M, N}});
  };
  double TE = sample::median_ms([&] { Run(eager::sgemm, E); });
  double TC = sample::median_ms([&] { Run(sgemm, C); });
  sample::print_head("c", C);
  // Eager sums in double, compiled in float: sample::matmul_atol says why
  // 1e-5 * sqrt(K).
  bool Ok = sample::agree_rel("c", E, C, 1e-6, sample::matmul_atol(K));
  sample::print_times("[512, 512] x [512, 512]", TE, TC);
  std::printf("  compiled: %.2f GFLOP/s (2*M*N*K / time)\n",
              2.0 * M * N * K / (TC * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
