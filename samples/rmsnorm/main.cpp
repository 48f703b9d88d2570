#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "rmsnorm.cpp"
}
// The compiled kernel, from rmsnorm.pk.cpp (pk_add_kernels).
void rmsnorm(pk::In<float, 2> x, pk::In<float, 1> w, pk::Out<float, 2> y,
             float eps);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::random(T * D, 1), W = sample::random(D, 2);
  std::vector<float> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, W, {Y.data(), {T, D}}, 1e-6f);
  };
  double TE = sample::median_ms([&] { Run(eager::rmsnorm, E); });
  double TC = sample::median_ms([&] { Run(rmsnorm, C); });
  sample::print_head("y", C);
  bool Ok = sample::agree_rel("y", E, C, 1e-4, 1e-6);
  sample::print_times("[2048, 4096]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
