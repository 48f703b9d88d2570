// Kernels over pk::half and pk::bfloat16 refs for the differential tests
// (test/e2e/SixteenBitTest.cpp, also run through the CUDA shim): elementwise
// with mixed storage types, a transcendental, cast<pk::half>, broadcasting,
// an InOut, reading a 16-bit Out after writing it, row, column and full
// reductions, softmax and rmsnorm-like rows (the samples cover those too).
#include <pk/pk.h>
using namespace pk::lang;

// Mixed storage types: half and bfloat16 inputs, a float input, outputs of
// each storage type; the product is rounded to half once in the middle.
PK_KERNEL void h_mixed(In<pk::half> a, In<pk::bfloat16> b, In<float> c,
                       Out<pk::half> o, Out<pk::bfloat16> p, Out<float> q) {
  auto t = a[_] * b[_] + c[_];
  o[_] = t;
  p[_] = tanh(t) * 3.0f;
  q[_] = cast<pk::half>(t) - t; // the rounding error of half, as a float
}

// A row broadcast into a bfloat16 matrix, updated in place.
PK_KERNEL void h_bias_inout(InOut<pk::bfloat16, 2> y, In<pk::half, 1> b) {
  y[_] = y[_] + b[_] * 0.5f;
}

// A 16-bit Out read back after its store sees the rounded value (as the
// eager header does: it reads memory).
PK_KERNEL void h_read_back(In<float> x, Out<pk::half> h, Out<float> err) {
  h[_] = x[_] * 3.0f;
  err[_] = h[_] - x[_] * 3.0f;
}

// `auto old = y[_];` of a 16-bit ref is a float snapshot of what it holds
// (pk.h's WholeProxy; found by the random kernels: pkc refused the local);
// the update is rounded when stored, and reading y back sees that rounding:
// y ends as the rounded increment, times 64.
PK_KERNEL void h_snapshot(InOut<pk::bfloat16> y, In<float> x) {
  auto old = y[_];
  y[_] = old + x[_];
  y[_] = (y[_] - old) * 64.0f;
}

// Row reductions accumulate in float: sum and max per row, to 16-bit rows.
PK_KERNEL void h_row_sum_max(In<pk::half, 2> x, Out<pk::bfloat16, 1> s,
                             Out<pk::half, 1> m) {
  s[_] = sum(x[_], -1);
  m[_] = max(x[_], -1);
}

// A column mean and a full sum (rank-0 output) of bfloat16 data.
PK_KERNEL void h_col_mean(In<pk::bfloat16, 2> x, Out<pk::half, 1> m) {
  m[_] = mean(x[_], 0);
}
PK_KERNEL void h_sum_all(In<pk::bfloat16, 2> x, Out<float, 0> total) {
  total[_] = sum(x[_]);
}

// layernorm with half storage and float statistics as outputs.
PK_KERNEL void h_layernorm(In<pk::half, 2> x, In<pk::bfloat16> w,
                           In<pk::bfloat16> b, Out<pk::half, 2> y,
                           Out<float> mu_out, float eps) {
  auto mu = mean(x[_], -1, keepdims);
  auto d = x[_] - mu;
  auto var = mean(d * d, -1, keepdims);
  y[_] = d * rsqrt(var + eps) * w[_] + b[_];
  mu_out[_] = squeeze(mu, -1);
}

// A matrix product of half and bfloat16 operands (converted while packed or
// staged; the products are summed in float) with a bias epilogue.
PK_KERNEL void h_matmul_bias(In<pk::half, 2> a, In<pk::bfloat16, 2> b,
                             In<pk::half, 1> bias, Out<pk::half, 2> c) {
  c[_] = matmul(a[_], b[_]) + bias[_];
}

// nn.Linear with bfloat16 weights w[N, K]: for a few rows of x the GEMV
// kernels read w in place and widen it as they load it (half the bytes of
// float weights); above kGemvMaxRows it is converted while packed.
PK_KERNEL void bf16_linear(In<float, 2> x, In<pk::bfloat16, 2> w,
                           Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

// Products of bfloat16 values: bfloat16 weights times activations the
// kernel rounds to bfloat16, with a bias; and a dual product (SwiGLU's gate
// and up) of a bfloat16 ref. pkc marks both GemmOptions::ABf16, so they run
// on AMX where the CPU and kernel allow it.
PK_KERNEL void bf16_bf16_linear(In<float, 2> x, In<pk::bfloat16, 2> w,
                                In<float> b, Out<float, 2> y) {
  y[_] = matmul(cast<pk::bfloat16>(x[_]), transpose(w[_])) + b[_];
}

PK_KERNEL void bf16_swiglu(In<pk::bfloat16, 2> x, In<pk::bfloat16, 2> w1,
                           In<pk::bfloat16, 2> w3, Out<float, 2> y) {
  auto g = matmul(x[_], transpose(w1[_]));
  y[_] = g * sigmoid(g) * matmul(x[_], transpose(w3[_]));
}

// An MLP of bfloat16 values: its hidden activation, rounded to bfloat16, is
// a pk-managed buffer of bfloat16, which the second product reads.
PK_KERNEL void bf16_mlp(In<float, 2> x, In<pk::bfloat16, 2> w1,
                        In<pk::bfloat16, 2> w2, Out<float, 2> y) {
  auto h = cast<pk::bfloat16>(
      maximum(matmul(cast<pk::bfloat16>(x[_]), transpose(w1[_])), 0.0f));
  y[_] = matmul(h, transpose(w2[_]));
}
