#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "fma.cpp"
}
// The compiled kernel, from fma.pk.cpp (pk_add_kernels).
void fma(pk::In<float> a, pk::In<float> b, pk::In<float> c, pk::Out<float> o);

int main() {
  const int64_t N = 1 << 22;
  auto A = sample::random(N, 1), B = sample::random(N, 2),
       C = sample::random(N, 3);
  std::vector<float> Eager(N), Compiled(N);
  double TE = sample::median_ms([&] { eager::fma(A, B, C, Eager); });
  double TC = sample::median_ms([&] { fma(A, B, C, Compiled); });
  sample::print_head("o", Compiled);
  bool Ok = sample::agree("o", Eager, Compiled, 0);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
