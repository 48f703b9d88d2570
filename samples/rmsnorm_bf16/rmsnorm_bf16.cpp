// rmsnorm with bfloat16 storage: x, w and y hold 16-bit elements, the mean of
// squares, the scaling and the products compute in float (the accumulator
// too), and the store rounds y to bfloat16. One fused pass per row.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void rmsnorm_bf16(In<pk::bfloat16, 2> x, In<pk::bfloat16, 1> w,
                            Out<pk::bfloat16, 2> y, float eps) {
  auto ms = mean(x[_] * x[_], -1, keepdims); // float [T, 1]
  y[_] = x[_] * rsqrt(ms + eps) * w[_];      // rounded to bfloat16 once
}
