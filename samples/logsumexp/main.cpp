#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "logsumexp.cpp"
}
// The compiled kernel, from logsumexp.pk.cpp (pk_add_kernels).
void logsumexp(pk::In<float, 2> x, pk::Out<float> out);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::random(T * D, 1, -8, 8);
  std::vector<float> E(T), C(T);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({X.data(), {T, D}}, Y);
  };
  double TE = sample::median_ms([&] { Run(eager::logsumexp, E); });
  double TC = sample::median_ms([&] { Run(logsumexp, C); });
  sample::print_head("out", C);
  bool Ok = sample::agree_rel("out", E, C, 1e-5, 1e-6);
  sample::print_times("[2048, 4096]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
