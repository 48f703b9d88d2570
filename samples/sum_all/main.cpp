#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "sum_all.cpp"
}
// The compiled kernel, from sum_all.pk.cpp (pk_add_kernels).
void sum_all(pk::In<float, 2> x, pk::Out<float, 0> total);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::random(T * D, 1, 0, 1);
  std::vector<float> E(1), C(1);
  auto Run = [&](auto Kernel, std::vector<float> &Total) {
    Kernel({X.data(), {T, D}}, {Total.data(), {}});
  };
  double TE = sample::median_ms([&] { Run(eager::sum_all, E); });
  double TC = sample::median_ms([&] { Run(sum_all, C); });
  sample::print_head("total", C);
  // 8M float additions in float: the compiled sum's error grows with the
  // count (the eager one accumulates in double).
  bool Ok = sample::agree_rel("total", E, C, 1e-4, 0);
  sample::print_times("[2048, 4096]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
