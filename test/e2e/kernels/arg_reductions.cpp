// argmax and argmin (language.md §3) compiled by pkc: the int64 position of
// the first extreme along one axis, a NaN counting as the extreme (NumPy).
// pkc rewrites each into a max (or min) and a min of the positions that
// hold it, two phases of one fused nest (ExpandArgReductions.cpp).
#include <pk/pk.h>
using namespace pk::lang;

/// Along the last axis: greedy decoding's argmax over a vocabulary.
PK_KERNEL void argmax_rows(In<float, 2> x, Out<int64_t, 1> i) {
  i[_] = argmax(x[_], -1);
}

/// Along the first axis, keeping it: a column reduction.
PK_KERNEL void argmin_columns(In<float, 2> x, Out<int64_t, 2> i) {
  i[_] = argmin(x[_], 0, keepdims);
}

/// The middle axis of a rank-3 value.
PK_KERNEL void argmax_middle(In<float, 3> x, Out<int64_t, 2> i) {
  i[_] = argmax(x[_], 1);
}

/// Of a computed value (a weight broadcast over the rows), both extremes.
PK_KERNEL void arg_extremes_scaled(In<float, 2> x, In<float> w,
                                   Out<int64_t, 1> hi, Out<int64_t, 1> lo) {
  auto s = x[_] * w[_];
  hi[_] = argmax(s, -1);
  lo[_] = argmin(s, -1);
}

/// Integers compare as integers; a bool value's first true is its argmax.
PK_KERNEL void argmax_int(In<int32_t, 2> x, Out<int64_t, 1> i,
                          Out<int64_t, 1> first_above, int32_t t) {
  i[_] = argmax(x[_], -1);
  first_above[_] = argmax(x[_] > t, -1);
}

/// 16-bit storage: the values compare as float.
PK_KERNEL void argmax_bf16(In<pk::bfloat16, 2> x, Out<int64_t, 1> i) {
  i[_] = argmax(x[_], -1);
}

/// With the maximum itself and a softmax over the same rows: the max is
/// computed once (canonicalize merges argmax's with the user's).
PK_KERNEL void argmax_and_softmax(In<float, 2> x, Out<int64_t, 1> i,
                                  Out<float, 2> p) {
  auto m = max(x[_], -1, keepdims);
  auto e = exp(x[_] - m);
  p[_] = e / sum(e, -1, keepdims);
  i[_] = argmax(x[_], -1);
}
