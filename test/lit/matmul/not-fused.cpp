// What pkc does not fuse with a matmul yet: a matmul of a matmul, a
// reduction over other axes of its result, a transposed result. Each gets a
// diagnostic at the matmul with a note saying what to write instead.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void chain(In<float, 2> a, In<float, 2> b, In<float, 2> c,
                     Out<float, 2> o) {
  o[_] = matmul(matmul(a[_], b[_]), c[_]); // expected-error {{pkc cannot compile this use of a matmul yet: its result feeds another matmul or a reduction, or is broadcast along other axes than its own [pk-not-supported-yet]}} expected-note {{write the matmul to an Out ref and use it in a second kernel}}
}

PK_KERNEL void softmax_of_scores(In<float, 2> q, In<float, 2> k,
                                 Out<float, 2> p) {
  auto s = matmul(q[_], transpose(k[_])); // expected-error {{pkc cannot fuse a matmul with a reduction over other axes (or another matmul's result) into one output yet [pk-not-supported-yet]}} expected-note {{write the intermediate result to an Out ref and reduce it in a second kernel}}
  p[_] = s / sum(s, -1, keepdims);
}

PK_KERNEL void transposed_result(In<float, 2> a, In<float, 2> b,
                                 Out<float, 2> o) {
  o[_] = transpose(matmul(a[_], b[_])); // expected-error {{pkc cannot compile this use of a matmul yet}} expected-note {{write the matmul to an Out ref}}
}
