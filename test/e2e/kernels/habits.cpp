// What C++ programmers write by habit (language.md §2, §3): compound
// assignment on refs (`acc[_] += v`, a store of `acc[_] + v`) and on locals
// (`t += v`, a new value), and pk's math functions on uniform scalars
// (`rsqrt(cast<float>(n))`, `exp(eps)`), computed once.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void accumulate(InOut<float, 2> acc, In<float, 1> v, In<float, 2> w) {
  acc[_] += v[_]; // a row added to every row
  acc[_] *= w[_];
  acc[_] -= 0.5f;
}
PK_KERNEL void ratio(In<float, 2> x, Out<float, 2> y, float s) {
  y[_] = x[_];
  y[_] *= s; // an Out after its first write
  auto t = y[_];
  t += 4.0f; // a local: y is unchanged
  y[_] /= t;
}
PK_KERNEL void int_update(InOut<int32_t, 1> k, In<int32_t, 1> d) {
  k[_] %= 7;
  k[_] += d[_];
  k[_] *= 3;
}
PK_KERNEL void half_accumulate(InOut<pk::half, 1> h, In<float, 1> x) {
  h[_] += x[_];
}
PK_KERNEL void scale_by_width(In<float, 2> x, Out<float, 2> y, int64_t width,
                              float eps) {
  y[_] = x[_] * rsqrt(cast<float>(width)) + exp(eps) * sigmoid(eps) +
         maximum(eps, 0.25f);
}
PK_KERNEL void scalar_types(In<double, 1> x, Out<double, 1> y, int32_t n,
                            double t) {
  auto k = log1p(n) + pow(t, 2) + abs(n) + floor(t) + clamp(t, 0, 1);
  k -= sqrt(cast<double>(n)); // a uniform local, updated
  y[_] = x[_] * k + tanh(cast<float>(t));
}
