#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "add_rmsnorm.cpp"
}
// The compiled kernel, from add_rmsnorm.pk.cpp (pk_add_kernels).
void add_rmsnorm(pk::InOut<float, 2> h, pk::In<float, 2> x, pk::In<float> w,
                 pk::Out<float, 2> y, float eps);

int main() {
  const int64_t T = 2048, D = 4096;
  const auto H0 = sample::random(T * D, 1), X = sample::random(T * D, 2),
             W = sample::random(D, 3);
  std::vector<float> HE, HC, E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &H, std::vector<float> &Y) {
    Kernel({H.data(), {T, D}}, {X.data(), {T, D}}, W, {Y.data(), {T, D}},
           1e-6f);
  };
  double TE = sample::median_ms([&] { Run(eager::add_rmsnorm, HE, E); }, 7,
                                [&] { HE = H0; });
  double TC =
      sample::median_ms([&] { Run(add_rmsnorm, HC, C); }, 7, [&] { HC = H0; });
  sample::print_head("y", C);
  bool Ok =
      sample::agree("h", HE, HC, 0) & sample::agree_rel("y", E, C, 1e-4, 1e-6);
  sample::print_times("[2048, 4096]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
