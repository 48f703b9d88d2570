#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "softmax_half.cpp"
}
// The compiled kernel, from softmax_half.pk.cpp (pk_add_kernels).
void softmax_half(pk::In<pk::half, 2> x, pk::Out<pk::half, 2> y);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::to16<pk::half>(sample::random(T * D, 1, -8, 8));
  std::vector<pk::half> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<pk::half> &Y) {
    Kernel({X.data(), {T, D}}, {Y.data(), {T, D}});
  };
  double TE = sample::median_ms([&] { Run(eager::softmax_half, E); });
  double TC = sample::median_ms([&] { Run(softmax_half, C); });
  sample::print_head("y", sample::to_floats(C));
  bool Ok = sample::agree16("y (half)", E, C, 1);
  sample::print_times("[2048, 4096] half", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
