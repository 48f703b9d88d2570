// if / ?: / switch on a run-time value (a scalar parameter, array data) is
// an error: choose per element with where(mask, a, b).
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void relu_if(In<float> x, Out<float> o, float t) {
  if (t > 0.0f) // expected-error {{'if' condition depends on the scalar parameter 't' [pk-data-dependent-control]}} expected-note {{use where(mask, a, b) to choose per element}}
    o[_] = x[_];
  else
    o[_] = -x[_];
}

PK_KERNEL void select(In<float> x, Out<float> o, bool neg) {
  o[_] = neg ? -x[_] : x[_]; // expected-error {{'?:' condition depends on the scalar parameter 'neg' [pk-data-dependent-control]}} expected-note {{use where(mask, a, b) to choose per element}}
}

PK_KERNEL void sw(In<float> x, Out<float> o, int mode) {
  switch (mode) { // expected-error {{'switch' condition depends on the scalar parameter 'mode' [pk-data-dependent-control]}} expected-note {{use where(mask, a, b) to choose per element}}
  default:
    o[_] = x[_];
  }
}

// Derived from a scalar parameter is still run-time.
PK_KERNEL void derived(In<float> x, Out<float> o, int n) {
  int m = n * 2 + 1;
  if (m % 2 == 1) // expected-error {{'if' condition depends on the scalar parameter 'n' [pk-data-dependent-control]}} expected-note {{use where(mask, a, b) to choose per element}}
    o[_] = x[_];
}

// Constant conditions are resolved at compile time.
constexpr bool kUseSquare = true;
PK_KERNEL void fine(In<float> x, Out<float> o, float t) {
  if (kUseSquare)
    o[_] = where(x[_] > t, x[_] * x[_], 0.0f);
  else
    o[_] = x[_];
}
