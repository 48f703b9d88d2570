#include <pk/pk.h>
using namespace pk::lang;

// A product with a prologue (RMSNorm's scale, applied while A is packed)
// and an epilogue (bias and the tanh GELU): pk::rt::gemm calls both through
// adapters cloned per x86-64 level.
PK_KERNEL void norm_linear_gelu(In<float, 2> x, In<float, 1> g,
                                In<float, 2> w, In<float, 1> b,
                                Out<float, 2> y) {
  auto h = x[_] * rsqrt(mean(x[_] * x[_], -1, keepdims) + 1e-5f) * g[_];
  auto z = matmul(h, transpose(w[_])) + b[_];
  y[_] = 0.5f * z * (1.0f + tanh(0.7978845608f * (z + 0.044715f * z * z * z)));
}
