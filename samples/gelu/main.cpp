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
  // The compiled tanh is pk::vm::tanh (<= 3 ulp), the eager one libm's;
  // 1 + tanh cancels for negative x, hence an absolute term (|x| <= 6).
  bool Ok = sample::agree_rel("y", Eager, Compiled, 1e-6, 1.2e-6);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
