// floor, ceil and `where` on floats: C's round() written with them (as the
// llama sample's int8 quantisation does), a ceil, and a select of two
// computed values. Each loop must vectorise at the baseline (SSE2): with
// std::floor (SSE4.1 and -fno-trapping-math only) and `c ? a : b` (g++ sinks
// the arms into branches) none did.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void round_to_int(In<float, 1> x, In<float, 1> scale,
                            Out<int32_t, 1> q) {
  auto v = x[_] / scale[_];
  auto a = abs(v), whole = floor(a);
  auto r = whole + where(a - whole >= 0.5f, 1.0f, 0.0f);
  q[_] = cast<int32_t>(where(v < 0.0f, -r, r));
}

PK_KERNEL void ceil_or_twice(In<float, 2> x, Out<float, 2> y) {
  y[_] = where(x[_] > 1.0f, ceil(x[_] * 0.5f), x[_] * 2.0f);
}
