#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "rmsnorm_bf16.cpp"
}
// The compiled kernel, from rmsnorm_bf16.pk.cpp (pk_add_kernels).
void rmsnorm_bf16(pk::In<pk::bfloat16, 2> x, pk::In<pk::bfloat16, 1> w,
                  pk::Out<pk::bfloat16, 2> y, float eps);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto X = sample::to16<pk::bfloat16>(sample::random(T * D, 1));
  const auto W = sample::to16<pk::bfloat16>(sample::random(D, 2));
  std::vector<pk::bfloat16> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<pk::bfloat16> &Y) {
    Kernel({X.data(), {T, D}}, W, {Y.data(), {T, D}}, 1e-6f);
  };
  double TE = sample::median_ms([&] { Run(eager::rmsnorm_bf16, E); });
  double TC = sample::median_ms([&] { Run(rmsnorm_bf16, C); });
  sample::print_head("y", sample::to_floats(C));
  bool Ok = sample::agree16("y (bfloat16)", E, C, 1);
  sample::print_times("[2048, 4096] bfloat16", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
