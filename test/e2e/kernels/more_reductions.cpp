// Reductions beyond the samples: a middle axis of a rank-3 array, axis 0 with
// keepdims broadcast back, a full reduction broadcast back, integer and bool
// reductions, two full reductions into a rank-0 output, broadcast_to of a
// row value, an InOut row accumulated from a matrix, an elementwise
// output beside a column reduction (two groups), and softmax over the last
// axis of a rank-3 array (threads over two row axes; its output streams).
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void middle_axis(In<float, 3> x, Out<float, 3> o) {
  o[_] = x[_] - max(x[_], 1, keepdims);
}
PK_KERNEL void scaled_and_column_sums(In<float, 2> x, Out<float, 2> o,
                                      Out<float, 1> r) {
  o[_] = x[_] * 2.0f;
  r[_] = sum(x[_], 0);
}
PK_KERNEL void column_normalise(In<float, 2> x, Out<float, 2> o) {
  o[_] = x[_] / sum(x[_], 0, keepdims);
}
PK_KERNEL void whole_normalise(In<float, 2> x, Out<float, 2> o) {
  o[_] = x[_] / sum(x[_]);
}
PK_KERNEL void int_reductions(In<int32_t, 2> x, Out<int32_t, 1> o,
                              Out<bool, 1> all_positive) {
  o[_] = max(x[_], -1);
  all_positive[_] = min(x[_] > 0, -1);
}
PK_KERNEL void two_full(In<float, 1> x, Out<float, 0> o) {
  o[_] = mean(x[_]) + max(x[_]);
}
PK_KERNEL void row_sums_everywhere(In<float, 2> x, Out<float, 2> o) {
  o[_] = broadcast_to(sum(x[_], -1, keepdims), x[_]);
}
PK_KERNEL void accumulate_rows(InOut<float, 1> r, In<float, 2> x) {
  r[_] = r[_] + sum(x[_], -1);
}
// Two column reductions over different heights (a's rows broadcast against
// b's): one loop over the reduced axis cannot serve both (found by the
// random tests, test/fuzz).
PK_KERNEL void column_mins_of_two_heights(In<float, 2> a, In<float, 2> b,
                                          Out<float, 1> o) {
  o[_] = minimum(min(a[_], 0), min(b[_], 0));
}
// Reductions of a rank-0 value reduce one element (found by libFuzzer:
// pkc reached an unreachable in the loop lowering).
PK_KERNEL void rank0_reductions(In<float, 0> x, In<int32_t, 0> k,
                                Out<float, 0> s, Out<float, 0> m,
                                Out<int64_t, 0> ks) {
  s[_] = sum(x[_]) + max(x[_]);
  m[_] = mean(x[_]) * min(x[_]);
  ks[_] = sum(k[_]);
}
PK_KERNEL void softmax_rank3(In<float, 3> x, Out<float, 3> y) {
  auto e = exp(x[_] - max(x[_], -1, keepdims));
  y[_] = e / sum(e, -1, keepdims);
}
// A value of one row (t [1, n]) kept per column in a buffer by one loop
// over the rows and read by another of a different height: y's rows read
// row 0 of it (the fuzz tests' seed 10018 k24 read rows the first loop never
// stored: stored over 3, read over 5). The sum's loop stores t over x's
// rows, y's loop reads it over y's.
PK_KERNEL void broadcast_row_two_heights(In<float, 2> t_row, In<float, 2> x,
                                         Out<float, 2> y, Out<float, 2> z) {
  auto t = exp(t_row[_]);
  z[_] = t;
  y[_] = t + sum(t * x[_], 0, keepdims);
}
