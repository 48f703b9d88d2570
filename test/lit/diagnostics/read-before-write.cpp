// An Out has no initial contents: reading it before writing it is an error
// (declare it InOut to read the caller's values). After a write, a read sees
// the written value.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void accumulate(In<float> x, Out<float> acc) { // expected-note {{declare 'acc' as InOut<float, 1> to read the caller's values}}
  acc[_] = acc[_] + x[_]; // expected-error {{'acc' is read before it is written; an Out<float, 1> has no initial contents [pk-read-before-write]}}
}

PK_KERNEL void snapshot(In<float, 2> x, Out<float, 2> o) { // expected-note {{declare 'o' as InOut<float, 2> to read the caller's values}}
  auto before = o[_]; // expected-error {{'o' is read before it is written; an Out<float, 2> has no initial contents [pk-read-before-write]}}
  o[_] = x[_] + before;
}

// Reading after a write, and reading an InOut, are fine.
PK_KERNEL void fine(In<float> x, Out<float> o, InOut<float> io) {
  o[_] = x[_];
  o[_] = o[_] * 2.0f;
  io[_] = io[_] + o[_];
}
