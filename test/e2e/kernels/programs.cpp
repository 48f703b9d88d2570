// Kernels that are whole programs: each needs at least one value kept in a
// pk-managed buffer between two fused groups (lib/Transforms/Materialize.cpp),
// one per rule that makes pkc buffer a value, plus a cycle between InOut refs.
#include <pk/pk.h>
using namespace pk::lang;

// A matmul of a matmul: the inner product is buffered.
PK_KERNEL void chain(In<float, 2> a, In<float, 2> b, In<float, 2> c,
                     Out<float, 2> o) {
  o[_] = matmul(matmul(a[_], b[_]), c[_]);
}
// The hidden activation is also an output: stored from the first product's
// epilogue, next to its buffer.
PK_KERNEL void chain_keep_hidden(In<float, 2> a, In<float, 2> w1,
                                 In<float, 2> w2, Out<float, 2> h,
                                 Out<float, 2> o) {
  auto act = maximum(matmul(a[_], transpose(w1[_])), 0.0f);
  h[_] = act;
  o[_] = matmul(act, transpose(w2[_])) * 0.5f;
}
// A stored softmax of scores: the reduction is over the product's columns.
PK_KERNEL void softmax_of_scores(In<float, 2> q, In<float, 2> k,
                                 Out<float, 2> p) {
  auto s = matmul(q[_], transpose(k[_]));
  auto e = exp(s - max(s, -1, keepdims));
  p[_] = e / sum(e, -1, keepdims);
}
// A reduction over the product's rows.
PK_KERNEL void column_sums_of_product(In<float, 2> a, In<float, 2> b,
                                      Out<float, 1> o) {
  o[_] = sum(matmul(a[_], b[_]), 0);
}
// A transposed product.
PK_KERNEL void transposed_product(In<float, 2> a, In<float, 2> b,
                                  Out<float, 2> o) {
  o[_] = transpose(matmul(a[_], b[_])) + 1.0f;
}
// A product broadcast to a higher rank.
PK_KERNEL void product_plus_batch(In<float, 2> a, In<float, 2> b,
                                  In<float, 3> z, Out<float, 3> o) {
  o[_] = matmul(a[_], b[_]) + z[_];
}
// Two loop forms in one expression: a product plus a column mean.
PK_KERNEL void product_plus_column_mean(In<float, 2> a, In<float, 2> b,
                                        In<float, 2> c, Out<float, 2> o) {
  o[_] = matmul(a[_], b[_]) + mean(c[_], 0);
}
// Reductions over different axes, one of the other's result.
PK_KERNEL void centered_column_sums(In<float, 2> x, Out<float, 1> o) {
  o[_] = sum(x[_] - mean(x[_], -1, keepdims), 0);
}
// A row reduction stored into a ref of higher rank (broadcast).
PK_KERNEL void row_sums_broadcast(In<float, 2> x, Out<float, 2> o) {
  o[_] = sum(x[_], -1);
}
// A cycle: the product reads b's old contents and b's update reads c's old
// ones; pkc copies one of them first.
PK_KERNEL void cycle(InOut<float, 2> c, InOut<float, 2> b, In<float, 2> a) {
  auto c_old = c[_];
  c[_] = matmul(a[_], b[_]);
  b[_] = b[_] + c_old;
}
// Three products in a row: lifetimes that let two buffers share memory.
PK_KERNEL void three_layers(In<float, 2> x, In<float, 2> w1, In<float, 2> w2,
                            In<float, 2> w3, Out<float, 2> y) {
  auto h1 = tanh(matmul(x[_], w1[_]));
  auto h2 = tanh(matmul(h1, w2[_]));
  y[_] = matmul(h2, w3[_]);
}
// A Llama-style layer with one head and no rotary embedding: RMSNorm, q, k,
// v, causal attention, the output projection and its residual, RMSNorm, the
// SwiGLU MLP and its residual. Seven products plus attention's two; q, k, v
// and attention's output are buffered first, so attention is one fused
// group and its scores are never stored.
PK_KERNEL void llama_layer(In<float, 2> x, In<float, 1> g1, In<float, 2> wq,
                           In<float, 2> wk, In<float, 2> wv, In<float, 2> wo,
                           In<float, 1> g2, In<float, 2> wg, In<float, 2> wu,
                           In<float, 2> wd, Out<float, 2> y, float scale) {
  auto h = x[_] * rsqrt(mean(x[_] * x[_], -1, keepdims) + 1e-5f) * g1[_];
  auto q = matmul(h, transpose(wq[_]));
  auto k = matmul(h, transpose(wk[_]));
  auto v = matmul(h, transpose(wv[_]));
  auto s = matmul(q, transpose(k)) * scale;
  s = where(index(s, -1) <= index(s, -2), s, -INFINITY);
  auto e = exp(s - max(s, -1, keepdims));
  auto a = matmul(e / sum(e, -1, keepdims), v);
  auto r = x[_] + matmul(a, transpose(wo[_]));
  auto h2 = r * rsqrt(mean(r * r, -1, keepdims) + 1e-5f) * g2[_];
  auto gt = matmul(h2, transpose(wg[_]));
  auto up = matmul(h2, transpose(wu[_]));
  y[_] = r + matmul(gt * sigmoid(gt) * up, transpose(wd[_]));
}
// A product, then a row-statistics group with two outputs: fused when their
// rows agree at run time, one loop per output when they do not (NumPy
// broadcasts x's rows); shapes NumPy rejects raise at entry, before the
// product is written.
PK_KERNEL void product_then_stats(In<float, 2> x, In<float, 2> w,
                                  Out<float, 2> y, Out<float, 1> mean_out,
                                  Out<float, 1> max_out) {
  y[_] = matmul(x[_], w[_]);
  mean_out[_] = mean(x[_], -1);
  max_out[_] = max(x[_], -1);
}
// A row statistic under an elementwise chain that feeds a product: buffering
// the [rows] mean leaves the chain to the product's prologue, which runs it
// once per column tile. By cost (Materialize.cpp), a chain of two
// transcendentals is worth a buffer of the operand itself; one is not.
PK_KERNEL void centered_costly_linear(In<float, 2> x, In<float, 2> w,
                                      Out<float, 2> y) {
  auto c = x[_] - mean(x[_], -1, keepdims);
  y[_] = matmul(tanh(c) * exp(c), transpose(w[_]));
}
PK_KERNEL void centered_exp_linear(In<float, 2> x, In<float, 2> w,
                                   Out<float, 2> y) {
  y[_] = matmul(exp(x[_] - mean(x[_], -1, keepdims)), transpose(w[_]));
}
