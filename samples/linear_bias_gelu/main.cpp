#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "linear_bias_gelu.cpp"
}
// The compiled kernel, from linear_bias_gelu.pk.cpp (pk_add_kernels).
void linear_bias_gelu(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::In<float, 1> b, pk::Out<float, 2> y);

int main() {
  // A BERT-base-sized layer: 512 tokens, 768 features in and out.
  const int64_t M = 512, N = 768, K = 768;
  const auto X = sample::random(M * K, 1, -1, 1),
             W = sample::random(N * K, 2, -1, 1),
             B = sample::random(N, 3, -1, 1);
  std::vector<float> E(M * N), C(M * N);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {M, K}}, {W.data(), {N, K}}, B, {Y.data(), {M, N}});
  };
  double TE = sample::median_ms([&] { Run(eager::linear_bias_gelu, E); });
  double TC = sample::median_ms([&] { Run(linear_bias_gelu, C); });
  sample::print_head("y", C);
  // The product's error (sample::matmul_atol: eager sums in double, compiled
  // in float) passes through gelu, whose slope is at most 1.13; the relative
  // term covers the tanh (pk::vm::tanh against libm's, <= 3 ulp) and the
  // large outputs (|y| up to about 40).
  bool Ok = sample::agree_rel("y", E, C, 1e-5, 1.2 * sample::matmul_atol(K));
  sample::print_times("[512, 768] x [768, 768]^T + [768]", TE, TC);
  std::printf("  compiled: %.2f GFLOP/s (2*M*N*K / time)\n",
              2.0 * M * N * K / (TC * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
