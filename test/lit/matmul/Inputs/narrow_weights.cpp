#include <pk/pk.h>
using namespace pk::lang;

// nn.Linear with bfloat16 weights: read in place, widened by the GEMV kernels.
PK_KERNEL void linear_bf16(In<float, 2> x, In<pk::bfloat16, 2> w,
                           Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

// A [K, N] bfloat16 weight: read in place along j.
PK_KERNEL void matmul_bf16_kn(In<float, 2> x, In<pk::bfloat16, 2> w,
                              Out<float, 2> y) {
  y[_] = matmul(x[_], w[_]);
}

// half weights: converted while packed (a lambda), at every M.
PK_KERNEL void linear_half(In<float, 2> x, In<pk::half, 2> w,
                           Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

// bfloat16 weights under a prologue are a lambda too.
PK_KERNEL void linear_bf16_scaled(In<float, 2> x, In<pk::bfloat16, 2> w,
                                  Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_] * 2.0f));
}

// int8 weights with a scale per group of gs along k (Q8_0): a
// pk::rt::GroupScaledB, read in place by the GEMV kernels for a few rows.
PK_KERNEL void linear_q8(In<float, 2> x, In<int8_t, 2> w, In<float, 2> scale,
                         Out<float, 2> y) {
  auto gs = w.extent(1) / scale.extent(1);
  y[_] = matmul(x[_], transpose(cast<float>(w[_]) * repeat(scale[_], gs, -1)));
}
