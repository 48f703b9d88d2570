#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "mlp.cpp"
}
// The compiled kernel, from mlp.pk.cpp (pk_add_kernels).
void mlp(pk::In<float, 2> x, pk::In<float, 2> w1, pk::In<float, 1> b1,
         pk::In<float, 2> w2, pk::In<float, 1> b2, pk::Out<float, 2> y);

int main() {
  // GPT-2 small's MLP (768 -> 3072 -> 768) over 32 tokens; weights uniform
  // in [-1/sqrt(in), 1/sqrt(in)] as nn.Linear initialises them.
  const int64_t T = 32, D = 768, F = 3072;
  const float A1 = 1 / std::sqrt(float(D)), A2 = 1 / std::sqrt(float(F));
  const auto X = sample::random(T * D, 1, -1, 1),
             W1 = sample::random(F * D, 2, -A1, A1),
             B1 = sample::random(F, 3, -A1, A1),
             W2 = sample::random(D * F, 4, -A2, A2),
             B2 = sample::random(D, 5, -A2, A2);
  std::vector<float> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, {W1.data(), {F, D}}, B1, {W2.data(), {D, F}}, B2,
           {Y.data(), {T, D}});
  };
  double TE = sample::median_ms([&] { Run(eager::mlp, E); });
  double TC = sample::median_ms([&] { Run(mlp, C); });
  sample::print_head("y", C);
  // h = gelu(x W1^T + b1) differs from eager by at most A1 *
  // matmul_atol(D) (the first product, its weights scaled by A1; GELU's
  // slope is at most 1.13); y sums F of those errors times |w2| <= A2 (worst
  // case, all of one sign), plus the second product's own rounding over F
  // terms of size <= 2 * A2. Dropping one term of y moves it by about
  // |h| * A2 / 2 ~ 3e-3, 5x the bound.
  const double ErrH = 1.13 * A1 * sample::matmul_atol(D);
  bool Ok = sample::agree_rel("y", E, C, 0,
                              F * A2 * ErrH + 2 * A2 * sample::matmul_atol(F));
  sample::print_times("[32, 768] -> [32, 3072] -> [32, 768]", TE, TC);
  std::printf("  compiled: %.2f GFLOP/s (4*T*D*F / time); the [32, 3072] "
              "activation lives in a pk-managed buffer\n",
              4.0 * T * D * F / (TC * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
