#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "softmax.cpp"
}
// The compiled kernel, from softmax.pk.cpp (pk_add_kernels).
void softmax(pk::In<float, 2> x, pk::Out<float, 2> y);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::random(T * D, 1, -8, 8);
  std::vector<float> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, {Y.data(), {T, D}});
  };
  double TE = sample::median_ms([&] { Run(eager::softmax, E); });
  double TC = sample::median_ms([&] { Run(softmax, C); });
  sample::print_head("y", C);
  bool Ok = sample::agree_rel("y", E, C, 1e-4, 1e-9);
  sample::print_times("[2048, 4096]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
