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

// `out[_] += v` reads the Out: an error before its first write, fine after.
PK_KERNEL void add_to_out(In<float> x, Out<float> o) { // expected-note {{write 'o[_] = ...' first, or declare 'o' as InOut<float, 1> to update the caller's values}}
  o[_] += x[_]; // expected-error {{'o[_] += ...' reads 'o' before it is written; an Out<float, 1> has no initial contents [pk-read-before-write]}}
}
PK_KERNEL void scale_out(In<float, 2> x, Out<float, 2> o) { // expected-note {{write 'o[_] = ...' first, or declare 'o' as InOut<float, 2> to update the caller's values}}
  o[_] *= 2.0f; // expected-error {{'o[_] *= ...' reads 'o' before it is written; an Out<float, 2> has no initial contents [pk-read-before-write]}}
  o[_] = x[_];
}
PK_KERNEL void compound_fine(In<float> x, Out<float> o, InOut<int32_t> k) {
  o[_] = x[_];
  o[_] += x[_];
  k[_] %= 3;
}
