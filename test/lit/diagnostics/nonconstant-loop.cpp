// Loops are unrolled: their trip count must be a compile-time constant (and
// at most 4096).
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void by_param(In<float> x, Out<float> o, int n) {
  auto t = x[_];
  for (int i = 0; i < n; ++i) // expected-error {{the trip count of this loop is not a compile-time constant: its condition depends on the scalar parameter 'n' [pk-nonconstant-loop]}} expected-note {{pkc unrolls loops; bound them by a constant expression (a literal, a constexpr variable or a template argument)}}
    t = t * 2.0f;
  o[_] = t;
}

PK_KERNEL void while_param(In<float> x, Out<float> o, float eps) {
  auto t = x[_];
  while (eps < 1.0f) { // expected-error {{the trip count of this loop is not a compile-time constant: its condition depends on the scalar parameter 'eps' [pk-nonconstant-loop]}} expected-note {{pkc unrolls loops}}
    t = t * 2.0f;
    eps = eps * 2.0f;
  }
  o[_] = t;
}

PK_KERNEL void too_long(In<float> x, Out<float> o) {
  auto t = x[_];
  for (int i = 0; i < 5000; ++i) // expected-error {{this loop runs more than 4096 iterations; pkc unrolls every loop [pk-nonconstant-loop]}} expected-note {{keep unrolled loops short and express per-element work with array operations}}
    t = t + 1.0f;
  o[_] = t;
}

PK_KERNEL void forever(In<float> x, Out<float> o) {
  o[_] = x[_];
  for (;;) { // expected-error {{this loop runs more than 4096 iterations; pkc unrolls every loop [pk-nonconstant-loop]}} expected-note {{keep unrolled loops short}}
  }
}

// Constant trip counts are fine, with break and continue on constants.
template <int N> void repeat(Out<float> o, In<float> x) {
  auto t = x[_];
  for (int i = 0; i < N; ++i) {
    if (i % 2 == 1)
      continue;
    if (i == 6)
      break;
    t = t + float(i);
  }
  o[_] = t;
}
PK_KERNEL void fine(In<float> x, Out<float> o) { repeat<10>(o, x); }
