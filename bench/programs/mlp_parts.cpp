// The products of samples/mlp, samples/swiglu_mlp and samples/rmsnorm_linear
// as separate kernels, for bench/kernels_programs.cpp's "separate" peer: what
// a user writes without whole-program kernels, with buffers they allocate
// themselves.
#include <pk/pk.h>
using namespace pk::lang;

auto gelu_tanh_part(auto x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

// h = gelu(x w1ᵀ + b1)
PK_KERNEL void part_linear_gelu(In<float, 2> x, In<float, 2> w, In<float, 1> b,
                                Out<float, 2> y) {
  y[_] = gelu_tanh_part(matmul(x[_], transpose(w[_])) + b[_]);
}
// y = x wᵀ + b
PK_KERNEL void part_linear_bias(In<float, 2> x, In<float, 2> w, In<float, 1> b,
                                Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_])) + b[_];
}
// y = x wᵀ
PK_KERNEL void part_linear(In<float, 2> x, In<float, 2> w, Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}
// y = silu(x wᵀ) * u: the gate product with the up product as its epilogue
PK_KERNEL void part_gate(In<float, 2> x, In<float, 2> w, In<float, 2> u,
                         Out<float, 2> y) {
  auto g = matmul(x[_], transpose(w[_]));
  y[_] = g * sigmoid(g) * u[_];
}
// y = x / rms(x) * g: RMSNorm on its own, writing the normalised copy of x
// that rmsnorm_linear never writes
PK_KERNEL void part_rmsnorm(In<float, 2> x, In<float, 1> g, Out<float, 2> y,
                            float eps) {
  y[_] = x[_] * rsqrt(mean(x[_] * x[_], -1, keepdims) + eps) * g[_];
}
