// Calls must be to pk operations or to functions whose definition is
// visible (they are inlined). Library math on C++ scalars (std::exp(eps))
// is the same elementwise op and is fine.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
#include <cmath>
#include <cstdio>
using namespace pk::lang;

float undefined_helper(float);

PK_KERNEL void io(In<float> x, Out<float> o, float s) {
  printf("%f\n", s); // expected-error {{call to the library function 'printf' cannot be compiled [pk-opaque-call]}} expected-note {{kernels may call pk operations and functions whose definition is visible (they are inlined)}}
  o[_] = x[_];
}

PK_KERNEL void hidden(In<float> x, Out<float> o, float s) {
  o[_] = x[_] * undefined_helper(s); // expected-error {{call to 'undefined_helper' cannot be compiled: its definition is not visible [pk-opaque-call]}} expected-note {{define 'undefined_helper' in this file or in a header it includes; helpers are inlined}}
}

PK_KERNEL void fmax_scalar(In<float> x, Out<float> o, float s) {
  o[_] = x[_] * std::fmax(s, 1.0f); // expected-error {{call to the library function 'std::fmax' cannot be compiled [pk-opaque-call]}} expected-note {{use pk's maximum(a, b), which works elementwise on arrays}}
}

PK_KERNEL void hypot_scalar(In<float> x, Out<float> o, float s) {
  o[_] = x[_] * std::hypot(s, 2.0f); // expected-error {{call to the library function 'std::hypot' cannot be compiled [pk-opaque-call]}} expected-note {{kernels may call pk operations}}
}

// Library math on scalars maps to the op table; std::max/min on scalars too.
PK_KERNEL void fine(In<float> x, Out<float> o, float s, int k) {
  o[_] = x[_] * std::exp(s) + std::sqrt(std::max(s, 0.0f)) + expf(s) + std::abs(k);
}
