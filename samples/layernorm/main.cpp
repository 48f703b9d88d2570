#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "layernorm.cpp"
}
// The compiled kernel, from layernorm.pk.cpp (pk_add_kernels).
void layernorm(pk::In<float, 2> x, pk::In<float> w, pk::In<float> b,
               pk::Out<float, 2> out, pk::Out<float> mean_out,
               pk::Out<float> rstd_out, float eps);

int main() {
  const int64_t T = 4096, D = 768;
  const auto X = sample::random(T * D, 1), W = sample::random(D, 2),
             B = sample::random(D, 3);
  std::vector<float> E(T * D), C(T * D), ME(T), MC(T), RE(T), RC(T);
  auto Run = [&](auto Kernel, std::vector<float> &Y, std::vector<float> &M,
                 std::vector<float> &R) {
    Kernel({X.data(), {T, D}}, W, B, {Y.data(), {T, D}}, M, R, 1e-5f);
  };
  double TE = sample::median_ms([&] { Run(eager::layernorm, E, ME, RE); });
  double TC = sample::median_ms([&] { Run(layernorm, C, MC, RC); });
  sample::print_head("out", C);
  sample::print_head("mean", MC);
  bool Ok = sample::agree_rel("out", E, C, 1e-4, 1e-5) &
            sample::agree_rel("mean", ME, MC, 1e-4, 1e-6) &
            sample::agree_rel("rstd", RE, RC, 1e-4, 1e-6);
  sample::print_times("[4096, 768]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
