#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "relu_where.cpp"
}
void relu_where(pk::In<float> x, pk::Out<float> y);

int main() {
  const int64_t N = 1 << 22;
  const auto X = sample::random(N, 7);
  std::vector<float> Eager(N), Compiled(N);
  double TE = sample::median_ms([&] { eager::relu_where(X, Eager); });
  double TC = sample::median_ms([&] { relu_where(X, Compiled); });
  sample::print_head("y", Compiled);
  bool Ok = sample::agree("y", Eager, Compiled, 0);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
