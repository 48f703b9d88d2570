// A kernel returns void; results go through Out/InOut refs.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL float total(In<float> x) { // expected-error {{the kernel 'total' must return void, not 'float' [pk-return-type]}} expected-note {{return results through Out<T, R> or InOut<T, R> parameters}}
  return 0.0f;
}

PK_KERNEL auto twice(In<float> x, Out<float> o) { // expected-error {{the kernel 'twice' must return void, not 'int' [pk-return-type]}} expected-note {{return results through Out<T, R> or InOut<T, R> parameters}}
  o[_] = x[_] * 2.0f;
  return 1;
}

PK_KERNEL void ok(In<float> x, Out<float> o) { o[_] = x[_]; }
