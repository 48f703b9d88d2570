#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "broadcast_bias.cpp"
}
void broadcast_bias(pk::In<float, 2> x, pk::In<float, 1> b,
                    pk::Out<float, 2> y);

int main() {
  const int64_t T = 2048, D = 1024;
  const auto X = sample::random(T * D, 1), B = sample::random(D, 2);
  std::vector<float> Eager(T * D), Compiled(T * D);
  double TE = sample::median_ms([&] {
    eager::broadcast_bias({X.data(), {T, D}}, B, {Eager.data(), {T, D}});
  });
  double TC = sample::median_ms([&] {
    broadcast_bias({X.data(), {T, D}}, B, {Compiled.data(), {T, D}});
  });
  sample::print_head("y", Compiled);
  bool Ok = sample::agree("y", Eager, Compiled, 0);
  sample::print_times("[2048, 1024] + [1024]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
