// Valid kernel-language constructs that pkc cannot compile yet.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void size(In<float> x, Out<float> o) {
  o[_] = x[_] * float(x.size()); // expected-error {{'x.size()' (a run-time extent in a kernel) is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{shapes are implicit}}
}

PK_KERNEL void range_for(In<float> x, Out<float> o) {
  auto t = x[_];
  for (int k : {1, 2, 3}) // expected-error {{a range-based 'for' loop is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{write a counted loop with a constant trip count}}
    t = t * float(k);
  o[_] = t;
}

PK_KERNEL void constant_switch(In<float> x, Out<float> o) {
  switch (2) { // expected-error {{'switch' is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{use if / if constexpr on the constant}}
  default:
    o[_] = x[_];
  }
}

PK_KERNEL void bitwise(In<int32_t> x, Out<int32_t> o, int k) {
  o[_] = x[_] * (k ^ 3); // expected-error {{the operator '^' is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{use + - * / % < <= > >= == != && || on scalars}}
}
