// A shape error is reported once, at the operation that is wrong: the values
// computed from its result have no shape either, and pkc says nothing more
// about them (no "axis -1 is out of range for a value of rank 0" at every
// later use). -verify fails on any diagnostic not listed here.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void softmax_of_a_bad_product(In<float> v, In<float, 2> w,
                                        Out<float, 2> y) {
  auto p = matmul(v[_], w[_]); // expected-error {{matmul takes values of rank 2 or more, not v[v.0] and w[w.0, w.1] [pk-shape]}}
  auto e = exp(p - max(p, -1, keepdims));
  y[_] = e / sum(e, -1, keepdims);
}

// A product of rank 4 compiles (its batch axes broadcast as NumPy's do).
PK_KERNEL void scores(In<float, 4> q, In<float, 4> k, Out<float, 4> s) {
  s[_] = matmul(q[_], transpose(k[_]));
}
