// take (language.md §3), NumPy's take, compiled by pkc: a load of the table
// whose gathered axis is indexed by the value of the indices (an In ref or a
// scalar parameter), every index checked against the table's extent at
// entry, before any write.
#include <pk/pk.h>
using namespace pk::lang;

/// The rows of a table for `ids`: an embedding lookup.
PK_KERNEL void gather_rows(In<float, 2> table, In<int32_t> ids,
                           Out<float, 2> x) {
  x[_] = take(table[_], ids[_], 0);
}

/// Columns by a 2-D int64 index along the last axis ([R, I, J]), with an
/// epilogue.
PK_KERNEL void gather_columns(In<float, 2> m, In<int64_t, 2> idx,
                              Out<float, 3> y) {
  y[_] = take(m[_], idx[_], -1) * 2.0f + 1.0f;
}

/// One row by a scalar parameter (a rank-0 index removes the axis).
PK_KERNEL void gather_one(In<float, 2> table, Out<float> y, int64_t row) {
  y[_] = take(table[_], row, 0);
}

/// The middle axis of a rank-3 table.
PK_KERNEL void gather_middle(In<float, 3> t, In<int32_t> ids, Out<float, 3> y) {
  y[_] = take(t[_], ids[_], 1);
}

/// Gathered rows, normalised: take inside a reduction's loops.
PK_KERNEL void gathered_softmax(In<float, 2> table, In<int32_t> ids,
                                Out<float, 2> y) {
  auto r = take(table[_], ids[_], 0);
  auto e = exp(r - max(r, -1, keepdims));
  y[_] = e / sum(e, -1, keepdims);
}

/// A bf16 table read into float (samples/llama's embed<pk::bfloat16>).
PK_KERNEL void gather_bf16(In<pk::bfloat16, 2> table, In<int32_t> ids,
                           Out<float, 2> x) {
  x[_] = take(table[_], ids[_], 0);
}

/// Gathered rows as a matmul's operand.
PK_KERNEL void embed_project(In<float, 2> table, In<int32_t> ids,
                             In<float, 2> w, Out<float, 2> y) {
  y[_] = matmul(take(table[_], ids[_], 0), transpose(w[_]));
}
