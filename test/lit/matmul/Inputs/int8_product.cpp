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

// Terms the runtime is told about (pk::rt::Int8TermScales): float(dot) times
// one factor per row; and one it is not: a term plus a constant. (Groups of
// 16, the weights unscaled.)
PK_KERNEL void runq_row_scale(In<float, 2> x, In<int8_t, 2> w,
                              Out<float, 2> y) {
  auto xg = permute_dims(reshape(x[_], {x.extent(0), -1, 16}), {1, 0, 2});
  auto wg = permute_dims(reshape(w[_], {w.extent(0), -1, 16}), {1, 0, 2});
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;
  auto xq = cast<int32_t>(where(xs > 0.0f, floor(xg / xs + 0.5f), 0.0f));
  y[_] = sum(cast<float>(matmul(xq, transpose(wg))) * xs, 0);
}
PK_KERNEL void runq_offset_term(In<float, 2> x, In<int8_t, 2> w,
                                Out<float, 2> y) {
  auto xg = permute_dims(reshape(x[_], {x.extent(0), -1, 16}), {1, 0, 2});
  auto wg = permute_dims(reshape(w[_], {w.extent(0), -1, 16}), {1, 0, 2});
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;
  auto xq = cast<int32_t>(where(xs > 0.0f, floor(xg / xs + 0.5f), 0.0f));
  y[_] = sum(cast<float>(matmul(xq, transpose(wg))) * xs + 1.0f, 0);
}

// Two products of the same activations (a layer's q and k projections):
// Fusion fuses their sums under a shape condition, and each sum still merges
// into its own product (the conditional step goes).
PK_KERNEL void runq_two(In<float, 2> x, In<int8_t, 2> wq, In<float, 2> sq,
                        In<int8_t, 2> wk, In<float, 2> sk, Out<float, 2> q,
                        Out<float, 2> k) {
  q[_] = runq(x[_], wq[_], sq[_]);
  k[_] = runq(x[_], wk[_], sk[_]);
}

// SwiGLU's gate and up: their sums meet in one store into a buffer (the
// next product's operand). The nest splits in two, the gate's sum stored
// into that buffer and read back by the up's, each merged into its product.
PK_KERNEL void runq_swiglu(In<float, 2> x, In<int8_t, 2> w1, In<float, 2> s1,
                           In<int8_t, 2> w3, In<float, 2> s3, In<int8_t, 2> w2,
                           In<float, 2> s2, Out<float, 2> y) {
  auto g = runq(x[_], w1[_], s1[_]), u = runq(x[_], w3[_], s3[_]);
  y[_] = runq(g * sigmoid(g) * u, w2[_], s2[_]);
}

// The last row only (a classifier head, samples/llama/heads.cpp): the terms'
// temporary has extent 1 along m and the sum loads it at index 0 there; it
// merges all the same.
PK_KERNEL void runq_last_row(In<float, 2> x, In<int8_t, 2> w,
                             In<float, 2> scale, Out<float> y) {
  auto T = x.extent(0);
  y[_] = reshape(runq(x.slice(0, T - 1, T)[_], w[_], scale[_]), {-1});
}
