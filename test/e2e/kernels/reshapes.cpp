// reshape, slice of computed values and concat compiled by pkc
// (lib/Transforms/BufferViews.cpp): a reshape of a ref is an alias of its
// memory, one of a computed value reads it back from a temporary; slices of
// values are windows; concat stores its parts into windows of a temporary.
#include <pk/pk.h>
using namespace pk::lang;

/// x [T, 2 * D] as [T, 2, D]: an alias, no copy.
PK_KERNEL void split_last(In<float, 2> x, Out<float, 3> y) {
  y[_] = reshape(x[_], {x.extent(0), 2, -1});
}

/// The sum of each of `heads` groups of columns of x [T, heads * hs].
PK_KERNEL void head_sums(In<float, 2> x, Out<float, 2> s, int64_t heads) {
  s[_] = sum(reshape(x[_], {x.extent(0), heads, x.extent(1) / heads}), -1);
}

/// Pairs (2i, 2i + 1) of each row of 2x turned into (re - im, re + im):
/// reshape and slice of a computed value, concat, reshape back.
PK_KERNEL void pair_mix(In<float, 2> x, Out<float, 2> y) {
  auto T = x.extent(0);
  auto p = reshape(x[_] * 2.0f, {T, -1, 2});
  auto re = slice(p, 2, 0, 1), im = slice(p, 2, -1, 2);
  y[_] = reshape(concat({re - im, re + im}, 2), {T, -1});
}

/// Heads [H, T, D] merged to [T, H * D] (a reshape of a permuted value: a
/// copy) and projected.
PK_KERNEL void merge_project(In<float, 3> o, In<float, 2> w, Out<float, 2> y) {
  auto T = o.extent(1);
  y[_] =
      matmul(reshape(permute_dims(o[_], {1, 0, 2}), {T, -1}), transpose(w[_]));
}

/// a [M, D] above 2b [N, D].
PK_KERNEL void stack_rows(In<float, 2> a, In<float, 2> b, Out<float, 2> y) {
  y[_] = concat({a[_], b[_] * 2.0f}, 0);
}

/// The product x w [T, N] read as y's own extents (as many elements: the
/// reshape checks that): the product is computed in y's memory, always,
/// with no temporary and no copy (lib/Transforms/PlanBuffers.cpp).
PK_KERNEL void product_in_place(In<float, 2> x, In<float, 2> w,
                                Out<float, 2> y) {
  y[_] = reshape(matmul(x[_], w[_]), {y.extent(0), y.extent(1)});
}

/// The columns [n, 2n) of x twice, plus x's: the slice of a computed value
/// whose bounds the caller gives, once stored and once never used. Both
/// are checked as eager code checks them (fuzz finding
/// accepted-bad-shapes-105-k27: the unused one was dropped with its check).
PK_KERNEL void window_of_sum(In<float, 2> x, Out<float, 2> y, int64_t n) {
  auto twice = x[_] + x[_];
  auto unused = slice(twice, 1, 2 * n, 3 * n) * 3.0f;
  y[_] = slice(twice, 1, n, 2 * n) + 1.0f;
}

/// Every element of x [A, B, C] in one row, plus one.
PK_KERNEL void flatten(In<float, 3> x, Out<float> y) {
  y[_] = reshape(x[_], {-1}) + 1.0f;
}

/// A language model's head: the last row of x [T, D] normalised (RMSNorm),
/// times the classifier w [V, D], as a vector of V logits.
PK_KERNEL void last_logits(In<float, 2> x, In<float> g, In<float, 2> w,
                           Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = x.slice(0, T - 1, T)[_];
  auto h = last * rsqrt(mean(last * last, -1, keepdims) + eps) * g[_];
  logits[_] = reshape(matmul(h, transpose(w[_])), {-1});
}

/// The scores of grouped-query attention: queries q [H, G, T, D] against
/// keys k [H, 1 or G, S, D]: matmul of rank 4, whose batch axes broadcast as
/// NumPy's do (k's second axis may be 1 at run time).
PK_KERNEL void grouped_scores(In<float, 4> q, In<float, 4> k, Out<float, 4> s) {
  s[_] = matmul(q[_], transpose(k[_]));
}

/// A rank-4 product with a rank-3 operand, aligned on the right (its batch
/// axis meets a's second one), and an epilogue.
PK_KERNEL void batch_broadcast(In<float, 4> a, In<float, 3> b,
                               Out<float, 4> y) {
  y[_] = matmul(a[_], b[_]) * 0.5f + 1.0f;
}

// llama2.c's RoPE as samples/llama writes it (rope: the pair (2i, 2i+1) of
// each head turned by the angle of its position and i, whose cos and sin are
// the rows pos..pos+T-1 of tables [L, hs/2]): extents of a computed value,
// reshape, slices, a window of a ref broadcast over the heads, and concat.
#include "../../../samples/llama/common.h"

/// The rotated projection x wᵀ, as a decoder layer computes q and k.
PK_KERNEL void rope_projection(In<float, 2> x, In<float, 2> w,
                               In<float, 2> rope_cos, In<float, 2> rope_sin,
                               Out<float, 2> q, int64_t pos, int64_t heads) {
  auto T = x.extent(0);
  q[_] = rope(matmul(x[_], transpose(w[_])), rope_cos.slice(0, pos, pos + T)[_],
              rope_sin.slice(0, pos, pos + T)[_], heads);
}

/// samples/llama's grouped-query attention of the queries q [T, heads * hs]
/// at positions pos..pos+T-1 over the cache prefix [0, pos + T) of keys and
/// values [kv_heads, L, hs]: rank-4 products with a broadcast group axis,
/// a causal mask and the softmax between them.
PK_KERNEL void cached_attention(In<float, 2> q, In<float, 3> keys,
                                In<float, 3> values, Out<float, 2> o,
                                int64_t pos) {
  auto P = pos + q.extent(0);
  o[_] = attention(q[_], keys.slice(1, 0, P)[_], values.slice(1, 0, P)[_], pos);
}
