#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "gelu.cpp"
}
void gelu(pk::In<float> x, pk::Out<float> y);

int main() {
  const int64_t N = 1 << 22;
  const auto X = sample::random(N, 1, -6, 6);
  std::vector<float> Eager(N), Compiled(N);
  double TE = sample::median_ms([&] { eager::gelu(X, Eager); });
  double TC = sample::median_ms([&] { gelu(X, Compiled); });
  sample::print_head("y", Compiled);
  // Both call the same float tanh; 2 ulp leaves room for the compiler
  // keeping intermediates in different registers.
  bool Ok = sample::agree("y", Eager, Compiled, 2);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
