#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "rmsnorm_linear.cpp"
}
// The compiled kernel, from rmsnorm_linear.pk.cpp (pk_add_kernels).
void rmsnorm_linear(pk::In<float, 2> x, pk::In<float, 1> g, pk::In<float, 2> w,
                    pk::Out<float, 2> y, float eps);

int main() {
  // A Llama-style q projection: 64 tokens of 1024 features to 1024.
  const int64_t T = 64, D = 1024, N = 1024;
  const float A = 1 / std::sqrt(float(D));
  const auto X = sample::random(T * D, 1, -1, 1),
             G = sample::random(D, 2, 0.5f, 1.5f),
             W = sample::random(N * D, 3, -A, A);
  std::vector<float> E(T * N), C(T * N);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, G, {W.data(), {N, D}}, {Y.data(), {T, N}},
           1e-5f);
  };
  double TE = sample::median_ms([&] { Run(eager::rmsnorm_linear, E); });
  double TC = sample::median_ms([&] { Run(rmsnorm_linear, C); });
  sample::print_head("y", C);
  // The normalised row x * r * g has |.| <= 1.5 * sqrt(3) (rms of uniform
  // [-1, 1] is 1/sqrt(3)), and r is a float rsqrt (a few ulp) of a mean
  // summed in another order: relative error <= 1e-6 per element, so y moves
  // by <= 1e-6 * sum |x r g w| <= 1e-6 * D * 2.6 * A; plus the product's
  // rounding with operands scaled by 2.6 and A.
  bool Ok = sample::agree_rel(
      "y", E, C, 0, 1e-6 * D * 2.6 * A + 2.6 * A * sample::matmul_atol(D));
  sample::print_times("rmsnorm([64, 1024]) x [1024, 1024]^T", TE, TC);
  std::printf("  compiled: %.2f GFLOP/s (2*T*D*N / time); only the [64, 1] "
              "statistic is buffered\n",
              2.0 * T * D * N / (TC * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
