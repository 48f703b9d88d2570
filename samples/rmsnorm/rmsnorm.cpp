// rmsnorm: y = x / sqrt(mean(x^2) + eps) * w, one fused pass per row.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void rmsnorm(In<float, 2> x, In<float, 1> w, Out<float, 2> y,
                       float eps) {
  auto ms = mean(x[_] * x[_], -1, keepdims); // [T, 1]
  y[_] = x[_] * rsqrt(ms + eps) * w[_];      // [T, D] * [T, 1] * [D]
}
