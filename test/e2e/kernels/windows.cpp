// Windows of refs, `ref.slice(axis, begin, end)` (language.md §2), compiled
// by pkc: bounds from scalar parameters and extents, reads and writes, a
// window of a window, windows feeding a reduction, a matrix product and an
// attention over a KV cache written in the same kernel.
#include <pk/pk.h>
using namespace pk::lang;

/// The last row of x [T, D] (a window along axis 0: contiguous), doubled.
PK_KERNEL void last_row(In<float, 2> x, Out<float, 2> y) {
  auto T = x.extent(0);
  y[_] = x.slice(0, T - 1, T)[_] * 2.0f;
}

/// Columns [lo, hi) of x [N, C] plus b (broadcast along the rows).
PK_KERNEL void column_window(In<float, 2> x, In<float> b, Out<float, 2> y,
                             int64_t lo, int64_t hi) {
  y[_] = x.slice(1, lo, hi)[_] + b[_];
}

/// Adds 1 to the n x n block of x at (r0, c0): a window of a window,
/// read and written in place.
PK_KERNEL void bump_block(InOut<float, 2> x, int64_t r0, int64_t c0,
                          int64_t n) {
  auto rows = x.slice(0, r0, r0 + n);
  rows.slice(1, c0, c0 + n)[_] += 1.0f;
}

/// Appends k [H, T, D] to the cache [H, S, D] at pos, then sums each
/// head's positions 0..pos+T-1: the sum must see what was just written.
PK_KERNEL void append_sum(InOut<float, 3> cache, In<float, 3> k,
                          Out<float, 2> total, int64_t pos) {
  auto T = k.extent(1);
  cache.slice(1, pos, pos + T)[_] = k[_];
  total[_] = sum(cache.slice(1, 0, pos + T)[_], 1);
}

/// q [T, D] against the first n keys of keys [S, D].
PK_KERNEL void prefix_scores(In<float, 2> q, In<float, 2> keys, Out<float, 2> s,
                             int64_t n) {
  s[_] = matmul(q[_], transpose(keys.slice(0, 0, n)[_]));
}

/// One attention step with a KV cache [S, D]: the T new keys and values go
/// to positions pos..pos+T-1, then the T queries attend causally over keys
/// 0..pos+T-1.
PK_KERNEL void cached_attention(In<float, 2> q, In<float, 2> k, In<float, 2> v,
                                InOut<float, 2> kc, InOut<float, 2> vc,
                                Out<float, 2> o, int64_t pos) {
  auto T = q.extent(0);
  kc.slice(0, pos, pos + T)[_] = k[_];
  vc.slice(0, pos, pos + T)[_] = v[_];
  auto keys = kc.slice(0, 0, pos + T)[_];
  auto values = vc.slice(0, 0, pos + T)[_];
  auto s = matmul(q[_], transpose(keys)) * 0.125f;
  s = where(index(s, 1) <= index(s, 0) + pos, s, -INFINITY);
  auto e = exp(s - max(s, 1, keepdims));
  o[_] = matmul(e / sum(e, 1, keepdims), values);
}

/// slice() of ref reads is a window too; a negative constant bound counts
/// from the end: the rows after the first, and the last two columns.
PK_KERNEL void slices_of_reads(In<float, 2> x, Out<float, 2> rest,
                               Out<float, 2> last2) {
  rest[_] = slice(x[_], 0, 1, x.extent(0)) - slice(x[_], 0, 0, -1);
  last2[_] = slice(x[_], -1, -2, x.extent(1)) * 2.0f;
}

/// Extents of ref reads held by a local or a helper's parameter bound
/// window slices of them: the back half of x's rows, and x without its
/// first column.
auto drop_first_column(auto a) { return slice(a, 1, 1, a.extent(1)); }
PK_KERNEL void extents_of_reads(In<float, 2> x, Out<float, 2> back,
                                Out<float, 2> rest) {
  auto t = x[_];
  back[_] = slice(t, 0, t.extent(0) / 2, t.extent(0));
  rest[_] = drop_first_column(x[_]);
}

/// Rows [0, n) moved down one row, in place: the window written overlaps
/// the one read, which eager reads whole first (pkc copies it first).
PK_KERNEL void shift_rows(InOut<float, 2> x, int64_t n) {
  x.slice(0, 1, n + 1)[_] = x.slice(0, 0, n)[_];
}

/// Every row of h plus h's old first row: the store reads a window of the
/// ref it overwrites (fuzz regression store_reads_own_window).
PK_KERNEL void add_first_row(InOut<float, 2> h, In<float, 2> x) {
  h[_] = x[_] + h.slice(0, 0, 1)[_];
}

/// Two whole stores, then a window update that reads the second: the
/// first store is dead, the window sees the second (fuzz regression
/// window_update_cycle).
PK_KERNEL void update_after_stores(InOut<float, 1> h, In<float, 1> x,
                                   In<float, 1> y) {
  h[_] = h[_] * 2.0f;
  h[_] = h[_] - x[_];
  h.slice(0, 0, 1)[_] += y[_];
}
