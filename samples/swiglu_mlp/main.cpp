#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "swiglu_mlp.cpp"
}
// The compiled kernel, from swiglu_mlp.pk.cpp (pk_add_kernels).
void swiglu_mlp(pk::In<float, 2> x, pk::In<float, 2> w_gate,
                pk::In<float, 2> w_up, pk::In<float, 2> w_down,
                pk::Out<float, 2> y);

int main() {
  // A small Llama MLP (512 -> 1376 -> 512, TinyLlama's ratio) over 32 tokens.
  const int64_t T = 32, D = 512, F = 1376;
  const float A1 = 1 / std::sqrt(float(D)), A2 = 1 / std::sqrt(float(F));
  const auto X = sample::random(T * D, 1, -1, 1),
             Wg = sample::random(F * D, 2, -A1, A1),
             Wu = sample::random(F * D, 3, -A1, A1),
             Wd = sample::random(D * F, 4, -A2, A2);
  std::vector<float> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, {Wg.data(), {F, D}}, {Wu.data(), {F, D}},
           {Wd.data(), {D, F}}, {Y.data(), {T, D}});
  };
  double TE = sample::median_ms([&] { Run(eager::swiglu_mlp, E); });
  double TC = sample::median_ms([&] { Run(swiglu_mlp, C); });
  sample::print_head("y", C);
  // g and u are products over D with weights <= A1: each differs from eager
  // by e = A1 * matmul_atol(D); with |g|, |u| <= about 2 (|x| <= 1, sums of
  // D terms of size <= A1, a few sqrt(D) A1 at most), silu(g) * u moves by at
  // most (1.1 |u| + |silu(g)|) e <= 5 e; y sums F of those times |w_down| <=
  // A2, plus its own rounding.
  const double ErrA = 5 * A1 * sample::matmul_atol(D);
  bool Ok = sample::agree_rel("y", E, C, 0,
                              F * A2 * ErrA + 4 * A2 * sample::matmul_atol(F));
  sample::print_times("[32, 512] -> 2 x [32, 1376] -> [32, 512]", TE, TC);
  std::printf("  compiled: %.2f GFLOP/s (6*T*D*F / time)\n",
              6.0 * T * D * F / (TC * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
