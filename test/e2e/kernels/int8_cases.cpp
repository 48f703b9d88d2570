// Kernels over int8_t and uint8_t refs for the differential tests
// (test/e2e/Int8Test.cpp, also run through the CUDA shim). The 8-bit types
// are storage types: a load gives int32_t values (C++'s integral promotion),
// a store converts back modulo 2^8, cast<int8_t>/cast<uint8_t> wrap a value
// to the type's range. Dequantising, mixed 8-bit arithmetic stored to every
// width, wrapping casts, an InOut, reading an 8-bit Out after writing it,
// row, column and full reductions, a per-row quantiser and matrix products
// of 8-bit weights.
#include <pk/pk.h>
using namespace pk::lang;

// Per-column dequantisation of int8 weights.
PK_KERNEL void q_dequant(In<int8_t, 2> q, In<float, 1> scale, Out<float, 2> w) {
  w[_] = cast<float>(q[_]) * scale[_];
}

// int8 + int8 is int32 (no wrap in the value); stores wrap; uint8 mixes
// with int32 and float as C++ promotes it.
PK_KERNEL void q_arith(In<int8_t> a, In<int8_t> b, In<uint8_t> u,
                       Out<int32_t> s, Out<int8_t> w, Out<uint8_t> v,
                       Out<float> f) {
  s[_] = a[_] * b[_] + u[_] - 300;
  w[_] = a[_] + b[_];
  v[_] = u[_] * 3 - a[_];
  f[_] = a[_] * 0.5f + u[_];
}

// cast<int8_t>/cast<uint8_t> of int32 values (any of them) and of floats
// in the range of int32_t.
PK_KERNEL void q_cast(In<int32_t> x, In<float> y, Out<int32_t> ci,
                      Out<int32_t> cu, Out<int8_t> yq) {
  ci[_] = cast<int8_t>(x[_]);
  cu[_] = cast<uint8_t>(x[_]) + cast<int8_t>(x[_] * 3);
  yq[_] = cast<int8_t>(y[_]) + cast<uint8_t>(y[_] * 2.0f);
}

// An 8-bit Out read back after its store sees the wrapped value (as the
// eager header does: it reads memory).
PK_KERNEL void q_read_back(In<int32_t> x, Out<int8_t> q, Out<int32_t> r) {
  q[_] = x[_] * 7;
  r[_] = q[_] - x[_] * 7;
}

// A row of int8 deltas broadcast into a uint8 image, updated in place.
PK_KERNEL void q_inout(InOut<uint8_t, 2> img, In<int8_t, 1> delta) {
  img[_] = img[_] + delta[_] * 2;
}

// Row reductions of 8-bit values: the integer rule (sums accumulate in
// int64_t and have the value type int32_t, means are double, max and min
// keep int32_t).
PK_KERNEL void q_row_reduce(In<int8_t, 2> x, In<uint8_t, 2> u,
                            Out<int32_t, 1> s, Out<int8_t, 1> mx,
                            Out<int32_t, 1> mn, Out<double, 1> m) {
  s[_] = sum(x[_] * u[_], -1);
  mx[_] = max(x[_], -1);
  mn[_] = min(u[_], -1);
  m[_] = mean(x[_], -1);
}

// A column sum and a full sum (rank-0 output) of 8-bit data.
PK_KERNEL void q_col_sum(In<int8_t, 2> x, Out<int32_t, 1> s) {
  s[_] = sum(x[_], 0);
}
PK_KERNEL void q_sum_all(In<uint8_t, 2> x, Out<int64_t, 0> total) {
  total[_] = sum(x[_]);
}

// Symmetric per-row quantisation of floats to int8: the row's absolute
// maximum maps to 127 (a zero row keeps scale 1), rounding half away from
// zero (cast<int32_t> truncates toward zero).
PK_KERNEL void q_quantize_rows(In<float, 2> x, Out<int8_t, 2> q,
                               Out<float, 1> scale) {
  auto amax = max(abs(x[_]), -1, keepdims);
  auto s = where(amax > 0.0f, amax / 127.0f, 1.0f);
  q[_] = cast<int32_t>(x[_] / s + where(x[_] < 0.0f, -0.5f, 0.5f));
  scale[_] = squeeze(s, -1);
}

// A linear layer with int8 weights [K, N] and a per-column scale: the
// weights are dequantised in the matmul's operand prologue.
PK_KERNEL void q_linear(In<float, 2> x, In<int8_t, 2> w, In<float, 1> scale,
                        Out<float, 2> y) {
  y[_] = matmul(x[_], cast<float>(w[_]) * scale[_]);
}

// Per-group scales (Q8_0): w [N, K] has one float scale per group of gs
// along its input axis, scale [N, K / gs]; repeat stretches the scales over
// their groups. Dequantised alone, and as nn.Linear's weights of a product
// (the operand's lambda reads the int8 weight and its group's scale).
PK_KERNEL void q_dequant_groups(In<int8_t, 2> q, In<float, 2> scale,
                                Out<float, 2> w) {
  auto gs = q.extent(1) / scale.extent(1);
  w[_] = cast<float>(q[_]) * repeat(scale[_], gs, -1);
}
PK_KERNEL void q_linear_groups(In<float, 2> x, In<int8_t, 2> w,
                               In<float, 2> scale, Out<float, 2> y) {
  auto gs = w.extent(1) / scale.extent(1);
  y[_] = matmul(x[_], transpose(cast<float>(w[_]) * repeat(scale[_], gs, -1)));
}

// repeat of computed values, with a count from a scalar: an 8-bit row
// repeated along axis 0, and a keepdims statistic ([M, 1], kept in a
// temporary of rank 1) stretched back over its row.
PK_KERNEL void q_repeat_computed(In<int8_t, 2> x, Out<int32_t, 2> rows,
                                 Out<int32_t, 2> centred, int64_t r) {
  rows[_] = repeat(x[_] * 2 + 1, r, 0);
  centred[_] = x[_] - repeat(max(x[_], -1, keepdims), x.extent(1), -1);
}

// int8 x int8 into int32: one dot product per element, products and sums in
// int64_t, the result converted to int32_t.
PK_KERNEL void q_matmul_i32(In<int8_t, 2> a, In<int8_t, 2> b,
                            Out<int32_t, 2> c) {
  c[_] = matmul(a[_], b[_]);
}

// llama2.c runq's product (samples/llama/common.h's linear_q8): x quantised
// to Q8_0 per group of gs along k (scale max|x| / 127, values rounded half
// away from zero), an int32 dot product per group with the int8 weights,
// float(dot) * w_scale * x_scale summed over the groups. pkc runs the dot
// products through pk::rt::int8_product.
PK_KERNEL void q_linear_runq(In<float, 2> x, In<int8_t, 2> w,
                             In<float, 2> scale, Out<float, 2> y) {
  auto T = x.extent(0), N = w.extent(0), G = scale.extent(1);
  auto xg = permute_dims(reshape(x[_], {T, G, -1}), {1, 0, 2}); // [G, T, gs]
  auto wg = permute_dims(reshape(w[_], {N, G, -1}), {1, 0, 2}); // [G, N, gs]
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;
  auto v = xg / xs;
  auto a = abs(v), whole = floor(a);
  auto r = whole + where(a - whole >= 0.5f, 1.0f, 0.0f);
  auto xq = cast<int32_t>(where(xs > 0.0f, where(v < 0.0f, -r, r), 0.0f));
  auto dot = matmul(xq, transpose(wg)); // [G, T, N]
  y[_] = sum(cast<float>(dot) * expand_dims(transpose(scale[_]), 1) * xs, 0);
}

// Integer / and % never trap (language.md §3): by zero they give 0, and the
// most negative value over -1 wraps (its remainder is 0), in int32 and int64.
PK_KERNEL void q_divide(In<int32_t> a, In<int32_t> b, In<int64_t> c,
                        In<int64_t> d, Out<int32_t> q, Out<int32_t> r,
                        Out<int64_t> q64, Out<int64_t> r64) {
  q[_] = a[_] / b[_];
  r[_] = a[_] % b[_];
  q64[_] = c[_] / d[_];
  r64[_] = c[_] % d[_];
}

// Signed integer + - * and unary - wrap around (language.md §3), in int32
// and int64, elementwise and through abs (abs of the minimum is itself).
PK_KERNEL void q_wrap(In<int32_t> a, In<int32_t> b, In<int64_t> c,
                      In<int64_t> d, Out<int32_t> s, Out<int32_t> p,
                      Out<int32_t> n, Out<int64_t> s64, Out<int64_t> p64,
                      Out<int64_t> n64) {
  s[_] = a[_] + b[_] - (b[_] - a[_]);
  p[_] = a[_] * b[_];
  n[_] = -abs(a[_]);
  s64[_] = c[_] + d[_] - (d[_] - c[_]);
  p64[_] = c[_] * d[_];
  n64[_] = -abs(c[_]);
}

// Integer sums and products wrap too (language.md §3): int64 row, column
// and full sums, int32 rows (summed in int64, then wrapped to int32) and an
// int64 matmul (one dot product per element).
PK_KERNEL void q_wrap_sum(In<int64_t, 2> c, In<int64_t, 2> d, In<int32_t, 2> a,
                          Out<int64_t, 1> rows, Out<int64_t, 1> cols,
                          Out<int64_t, 0> all, Out<int32_t, 1> rows32,
                          Out<int64_t, 2> prod) {
  rows[_] = sum(c[_], 1);
  cols[_] = sum(c[_], 0);
  all[_] = sum(c[_]);
  rows32[_] = sum(a[_], 1);
  prod[_] = matmul(c[_], transpose(d[_]));
}

// Float -> integer conversions are defined for every value (language.md §3):
// NaN gives 0, values beyond the type's range saturate to its limits, the
// rest truncate toward zero; as a cast, as the store of a float value into
// an integer ref, and before the 8-bit wrap of cast<int8_t>.
PK_KERNEL void q_float_to_int(In<float> x, In<double> y, Out<int32_t> ci,
                              Out<int64_t> cl, Out<int32_t> di, Out<int64_t> sl,
                              Out<int32_t> c8) {
  ci[_] = cast<int32_t>(x[_]);
  cl[_] = cast<int64_t>(x[_]);
  di[_] = cast<int32_t>(y[_]);
  sl[_] = y[_];
  c8[_] = cast<int8_t>(x[_]);
}
