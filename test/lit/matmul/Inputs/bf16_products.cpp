#include <pk/pk.h>
using namespace pk::lang;

// Products of bfloat16 values: activations the kernel rounds to bfloat16,
// or a bfloat16 ref, times bfloat16 weights in place. pk::rt::gemm may run
// them on AMX (GemmOptions::ABf16).
PK_KERNEL void linear_bf16_rounded(In<float, 2> x, In<pk::bfloat16, 2> w,
                                   Out<float, 2> y) {
  y[_] = matmul(cast<pk::bfloat16>(x[_]), transpose(w[_]));
}

PK_KERNEL void linear_bf16_both(In<pk::bfloat16, 2> x, In<pk::bfloat16, 2> w,
                                Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

// Not products of bfloat16 values: float activations, x rounded to half, or
// float weights.
PK_KERNEL void linear_float_x(In<float, 2> x, In<pk::bfloat16, 2> w,
                              Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

PK_KERNEL void linear_half_rounded(In<float, 2> x, In<pk::bfloat16, 2> w,
                                   Out<float, 2> y) {
  y[_] = matmul(cast<pk::half>(x[_]), transpose(w[_]));
}

PK_KERNEL void linear_rounded_f32_weights(In<float, 2> x, In<float, 2> w,
                                          Out<float, 2> y) {
  y[_] = matmul(cast<pk::bfloat16>(x[_]), transpose(w[_]));
}

// An MLP of bfloat16 values: the hidden activation, rounded to bfloat16, is
// a pk-managed buffer of bfloat16 (half the bytes), and the second product
// reads bfloat16 values from it.
PK_KERNEL void mlp_bf16(In<float, 2> x, In<pk::bfloat16, 2> w1,
                        In<pk::bfloat16, 2> w2, Out<float, 2> y) {
  auto h = cast<pk::bfloat16>(
      maximum(matmul(cast<pk::bfloat16>(x[_]), transpose(w1[_])), 0.0f));
  y[_] = matmul(h, transpose(w2[_]));
}
