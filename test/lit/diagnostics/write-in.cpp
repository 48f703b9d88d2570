// Writing an In is an error; the note says to declare it Out or InOut.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void scale(In<float, 2> x, // expected-note {{declare 'x' as Out<float, 2> to write it, or InOut<float, 2> to read and write it}}
                     Out<float, 2> y) {
  y[_] = x[_];
  x[_] = x[_] * 2.0f; // expected-error {{cannot write to 'x': it is an In<float, 2> (read-only) [pk-write-in]}}
}

template <class R> void helper(R r) {
  r[_] = r[_] + 1; // expected-error {{cannot write to 'a': it is an In<int32_t, 1> (read-only) [pk-write-in]}}
}

PK_KERNEL void through_helper(In<int32_t> a, // expected-note {{declare 'a' as Out<int32_t, 1> to write it, or InOut<int32_t, 1> to read and write it}}
                              Out<int32_t> o) {
  o[_] = a[_];
  helper(a);
}

// `x[_] += v` writes x too (the eager header rejects it with a
// static_assert; pkc reports the kernel's rule).
PK_KERNEL void add_to_in(In<float> x, // expected-note {{declare 'x' as Out<float, 1> to write it, or InOut<float, 1> to read and write it}}
                         Out<float> o) {
  x[_] += 1.0f; // expected-error {{cannot write to 'x': it is an In<float, 1> (read-only) [pk-write-in]}}
  o[_] = x[_];
}
