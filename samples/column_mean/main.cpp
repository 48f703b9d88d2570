#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "column_mean.cpp"
}
// The compiled kernel, from column_mean.pk.cpp (pk_add_kernels).
void column_mean(pk::In<float, 2> x, pk::Out<float> m);

int main() {
  const int64_t T = 4096, D = 768;
  const auto X = sample::random(T * D, 1);
  std::vector<float> E(D), C(D);
  auto Run = [&](auto Kernel, std::vector<float> &M) {
    Kernel({X.data(), {T, D}}, M);
  };
  double TE = sample::median_ms([&] { Run(eager::column_mean, E); });
  double TC = sample::median_ms([&] { Run(column_mean, C); });
  sample::print_head("m", C);
  bool Ok = sample::agree_rel("m", E, C, 1e-4, 1e-6);
  sample::print_times("[4096, 768] over axis 0", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
