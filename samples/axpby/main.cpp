#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "axpby.cpp"
}
void axpby(float alpha, pk::In<float> x, float beta, pk::InOut<float> y);

int main() {
  const int64_t N = 1 << 22;
  const auto X = sample::random(N, 1), Y0 = sample::random(N, 2);
  std::vector<float> Eager, Compiled;
  double TE = sample::median_ms([&] { eager::axpby(2.5f, X, -0.5f, Eager); }, 7,
                                [&] { Eager = Y0; });
  double TC = sample::median_ms([&] { axpby(2.5f, X, -0.5f, Compiled); }, 7,
                                [&] { Compiled = Y0; });
  sample::print_head("y", Compiled);
  bool Ok = sample::agree("y", Eager, Compiled, 0);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
