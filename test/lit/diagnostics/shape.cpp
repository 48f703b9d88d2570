// Shape errors certain at compile time are diagnostics at the operation
// (reductions with bad axes, stores of values of higher rank, shape ops out
// of range); those that depend on run-time extents become entry guards.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void bad_axis(In<float, 2> x, Out<float, 1> o) {
  o[_] = sum(x[_], 2); // expected-error {{axis 2 is out of range for a value of rank 2 [pk-shape]}} expected-note {{valid axes are -2..1 (negative counts from the end)}}
}

PK_KERNEL void bad_negative_axis(In<float, 2> x, Out<float, 2> o) {
  o[_] = x[_] / max(x[_], -3, keepdims); // expected-error {{axis -3 is out of range for a value of rank 2 [pk-shape]}} expected-note {{valid axes are -2..1}}
}

PK_KERNEL void too_many_axes(In<float, 2> x, Out<float, 1> o) {
  o[_] = x[_] * 2.0f; // expected-error {{cannot store (x[_] * 2.0f)[x.0, x.1] (rank 2) into o of rank 1 [pk-shape]}} expected-note {{reduce the value (sum, mean, ...) or declare the ref with a higher rank}}
}

PK_KERNEL void expand_out_of_range(In<float, 1> x, Out<float, 2> o) {
  o[_] = expand_dims(x[_], 3); // expected-error {{axis 3 is out of range for a value of rank 2 [pk-shape]}} expected-note {{valid axes are -2..1}}
}

PK_KERNEL void squeeze_of_rank_0(In<float, 0> x, Out<float, 0> o) {
  o[_] = squeeze(x[_], 0); // expected-error {{axis 0 is out of range for a value of rank 0 [pk-shape]}} expected-note {{a rank-0 value has no axes}}
}

PK_KERNEL void keepdims_into_lower_rank(In<float, 2> x, Out<float, 1> o) {
  o[_] = mean(x[_], -1, keepdims); // expected-error {{(rank 2) into o of rank 1 [pk-shape]}} expected-note {{reduce the value}}
}
