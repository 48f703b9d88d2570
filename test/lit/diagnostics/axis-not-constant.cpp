// Axes of reductions, expand_dims, squeeze and index are integer constant
// expressions.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void reduce_axis(In<float, 2> x, Out<float, 1> o, int axis) {
  o[_] = sum(x[_], axis); // expected-error {{the axis of 'sum' must be an integer constant expression [pk-axis-not-constant]}} expected-note {{write the axis as a literal or a constexpr value (negative counts from the end)}}
}

PK_KERNEL void expand_axis(In<float, 1> x, Out<float, 2> o, int64_t k) {
  o[_] = expand_dims(x[_], k + 1); // expected-error {{the axis of 'expand_dims' must be an integer constant expression [pk-axis-not-constant]}} expected-note {{write the axis as a literal}}
}

// Constant axes (literals, constexpr values, loop counters) are accepted:
// see ../frontend/frontend-ir.cpp.
