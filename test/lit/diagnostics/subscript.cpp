// Only ref[_] (the whole array) can be indexed.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void element(In<float> x, Out<float> o) {
  o[_] = x[0]; // expected-error {{only 'ref[_]' (the whole array) can be indexed, not 'x[0]' [pk-subscript]}} expected-note {{index the whole array with ref[_]}}
}

PK_KERNEL void loop_index(In<float> x, Out<float> o) {
  for (int i = 0; i < 4; ++i)
    o[i] = x[_]; // expected-error {{only 'ref[_]' (the whole array) can be indexed, not 'o[i]' [pk-subscript]}} expected-note {{index the whole array with ref[_]}}
}

PK_KERNEL void value_element(In<float, 2> x, Out<float> o) {
  auto t = x[_];
  o[_] = t(0, 1); // expected-error {{only 'ref[_]' (the whole array) can be indexed, not 't(0, 1)' [pk-subscript]}} expected-note {{index the whole array with ref[_]}}
}

PK_KERNEL void item(In<float> x, Out<float> o) {
  o[_] = x[_].item(); // expected-error {{only 'ref[_]' (the whole array) can be indexed, not 'x[_].item()' [pk-subscript]}} expected-note {{index the whole array with ref[_]}}
}
