// rmsnorm_linear: RMSNorm feeding a projection, y = (x / rms(x) * g) W^T, as
// a Llama block starts. pkc keeps only the per-row statistic rsqrt(mean(x^2)
// + eps) ([T, 1]) in a buffer and applies it to x while the product packs
// its rows: no normalised copy of x is ever written.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void rmsnorm_linear(In<float, 2> x, In<float, 1> g, In<float, 2> w,
                              Out<float, 2> y, float eps) {
  auto r = rsqrt(mean(x[_] * x[_], -1, keepdims) + eps); // [T, 1]
  y[_] = matmul(x[_] * r * g[_], transpose(w[_]));       // [T, N]
}
