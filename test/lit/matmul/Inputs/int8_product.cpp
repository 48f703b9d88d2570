#include <pk/pk.h>
using namespace pk::lang;

// llama2.c runq's product (samples/llama/common.h's linear_q8): the batched
// int32 product of the quantised activations and the int8 weights, per
// group, runs as pk::rt::int8_product.
auto runq(auto x, auto w, auto scale) {
  auto T = x.extent(0), N = w.extent(0), G = scale.extent(1);
  auto xg = permute_dims(reshape(x, {T, G, -1}), {1, 0, 2});
  auto wg = permute_dims(reshape(w, {N, G, -1}), {1, 0, 2});
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;
  auto xq = cast<int32_t>(where(xs > 0.0f, floor(xg / xs + 0.5f), 0.0f));
  auto dot = matmul(xq, transpose(wg));
  return sum(cast<float>(dot) * expand_dims(transpose(scale), 1) * xs, 0);
}

PK_KERNEL void runq_linear(In<float, 2> x, In<int8_t, 2> w, In<float, 2> scale,
                           Out<float, 2> y) {
  y[_] = runq(x[_], w[_], scale[_]);
}

// Any batched product of int8 values: a read as it is, an epilogue.
PK_KERNEL void int8_batched(In<int8_t, 3> a, In<int8_t, 3> b, Out<float, 3> c) {
  c[_] = cast<float>(matmul(a[_], transpose(b[_]))) * 0.5f;
}

// Not an int8 product: int32 weights, and int8 weights under a prologue.
PK_KERNEL void int32_weights(In<int8_t, 3> a, In<int32_t, 3> b,
                             Out<int32_t, 3> c) {
  c[_] = matmul(a[_], transpose(b[_]));
}
PK_KERNEL void int8_prologue(In<int8_t, 3> a, In<int8_t, 3> b,
                             Out<int32_t, 3> c) {
  c[_] = matmul(a[_], transpose(b[_] * 2));
}

// The residual update of the same ref the product reads: the product and the
// sum of its terms stay two nests (the merged one would overwrite x while
// later columns still read it).
PK_KERNEL void runq_residual(InOut<float, 2> x, In<int8_t, 2> w,
                             In<float, 2> scale) {
  x[_] = x[_] + runq(x[_], w[_], scale[_]);
}
