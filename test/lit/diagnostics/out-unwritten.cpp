// Every Out must be written at least once.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void forgot(In<float> x, Out<float> o, Out<float> unused) { // expected-error {{the Out parameter 'unused' is never written [pk-out-unwritten]}} expected-note {{write 'unused[_] = ...', or make it In<float, 1>}}
  o[_] = x[_];
}

// A write in a branch that is never taken does not count.
PK_KERNEL void dead_branch(In<double, 2> x, Out<double, 2> o) { // expected-error {{the Out parameter 'o' is never written [pk-out-unwritten]}} expected-note {{write 'o[_] = ...', or make it In<double, 2>}}
  if constexpr (sizeof(double) == 4)
    o[_] = x[_];
}

// A write in a helper counts.
void store(Out<float> o, In<float> x) { o[_] = x[_] + 1.0f; }
PK_KERNEL void in_helper(In<float> x, Out<float> o) { store(o, x); }
