#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "causal_softmax.cpp"
}
// The compiled kernel, from causal_softmax.pk.cpp (pk_add_kernels).
void causal_softmax(pk::In<float, 2> scores, pk::Out<float, 2> probs);

int main() {
  const int64_t T = 1024;
  const auto S = sample::random(T * T, 1, -8, 8);
  std::vector<float> E(T * T), C(T * T);
  auto Run = [&](auto Kernel, std::vector<float> &P) {
    Kernel({S.data(), {T, T}}, {P.data(), {T, T}});
  };
  double TE = sample::median_ms([&] { Run(eager::causal_softmax, E); });
  double TC = sample::median_ms([&] { Run(causal_softmax, C); });
  sample::print_head("probs", C);
  bool Ok = sample::agree_rel("probs", E, C, 1e-4, 1e-9);
  sample::print_times("[1024, 1024]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
