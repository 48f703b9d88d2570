// The C++ library's math on a pk value (language.md §3) is one pk error at
// the call, whose note names the pk::lang function (with a fix-it, see
// std-math-output.test), instead of Clang's failed overload resolution and
// its libm candidates, or an error inside <algorithm>'s std::max. -verify
// checks that no other diagnostic (no candidate note) remains. Library math
// on C++ scalars is fine.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
#include <algorithm>
#include <cmath>
using namespace pk::lang;

PK_KERNEL void unary(In<float> x, Out<float> o) {
  o[_] = std::exp(x[_]); // expected-error {{'std::exp' is called on the pk array 'x[_]'; the C++ library's math functions take scalars [pk-std-math]}} expected-note {{use pk's 'exp', which works elementwise on arrays and on scalars}}
}

PK_KERNEL void several(In<float, 2> x, Out<float, 2> o, float s) {
  o[_] = std::sqrt(x[_] * s) // expected-error {{'std::sqrt' is called on the pk array 'x[_] * s'}} expected-note {{use pk's 'sqrt'}}
       + std::pow(x[_], 2)   // expected-error {{'std::pow' is called}} expected-note {{use pk's 'pow'}}
       + std::fabs(x[_])     // expected-error {{'std::fabs' is called}} expected-note {{use pk's 'abs'}}
       + tanhf(x[_])         // expected-error {{'tanhf' is called}} expected-note {{use pk's 'tanh'}}
       + std::exp(s);        // a scalar: fine
}

// std::max of two arrays of one type instantiates <algorithm>'s template,
// which fails inside the header; of two types, overload resolution fails.
PK_KERNEL void two_operands(In<float> x, In<float> y, Out<float> o) {
  o[_] = std::max(x[_], y[_]) // expected-error {{'std::max' is called on the pk array 'x[_]'}} expected-note {{use pk's 'maximum', which works elementwise on arrays and on scalars}}
       + std::min(x[_], 0.0f) // expected-error {{'std::min' is called on the pk array 'x[_]'}} expected-note {{use pk's 'minimum'}}
       + std::clamp(x[_], y[_], x[_]); // expected-error {{'std::clamp' is called on the pk array 'x[_]'}} expected-note {{use pk's 'clamp'}}
}

// The outer call of nested library math is on a pk value too; std::max of
// one array (an initializer list) is pk's reduction.
PK_KERNEL void nested(In<float> x, Out<float> o, Out<float, 0> m) {
  o[_] = std::exp(std::abs(x[_])); // expected-error {{'std::exp' is called on the pk array 'std::abs(x[_])'}} expected-note {{use pk's 'exp'}} expected-error {{'std::abs' is called on the pk array 'x[_]'}} expected-note {{use pk's 'abs'}}
  m[_] = std::max({x[_]}); // expected-error {{'std::max' is called on the pk array '{x[_]}'}} expected-note {{use pk's reduction 'max'}}
}

// In a helper template instantiated with a pk value, the error is at the
// helper's call, once, however many kernels use it.
auto gelu_tanh(auto v) {
  return 0.5f * v * (1.0f + std::tanh(0.79788456f * v)); // expected-error {{'std::tanh' is called on the pk array '0.79788456f * v'}} expected-note {{use pk's 'tanh'}}
}
template <class X> X twice_exp(X v) {
  return std::exp(v) * 2.0f; // expected-error {{'std::exp' is called on the pk array 'v'}} expected-note {{use pk's 'exp'}}
}
PK_KERNEL void helpers(In<float> x, Out<float> o, Out<float> p) {
  o[_] = gelu_tanh(x[_]);
  p[_] = twice_exp(x[_]) + gelu_tanh(x[_] * 2.0f);
}

// Other Clang errors stay as they are.
PK_KERNEL void others(In<float> x, Out<float> o) {
  o[_] = x[_] * undeclared; // expected-error {{use of undeclared identifier 'undeclared'}}
}
