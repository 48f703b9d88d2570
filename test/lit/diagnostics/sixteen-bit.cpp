// pk::half and pk::bfloat16 are storage types for refs; values compute in
// float, so a 16-bit scalar parameter is rejected with a note saying to take
// a float (language.md §1, docs/design.md "16-bit storage types").
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void hscale(In<pk::half> x, pk::half s, Out<pk::half> y) { // expected-error {{the scalar parameter 's' has the 16-bit type 'pk::half'; pk::half and pk::bfloat16 are storage types for refs, values compute in float [pk-param-kind]}} expected-note {{take the scalar as 'float s' (callers' 16-bit values convert to float implicitly)}}
  y[_] = x[_] * 2.0f;
}

PK_KERNEL void bscale(In<float> x, pk::bfloat16 s, Out<float> y) { // expected-error {{the scalar parameter 's' has the 16-bit type 'pk::bfloat16'}} expected-note {{take the scalar as 'float s'}}
  y[_] = x[_] * 2.0f;
}

// Refs of both types, cast<> to them and mixing them with float and double
// are fine.
PK_KERNEL void fine(In<pk::half> x, In<pk::bfloat16> w, In<double> d,
                    Out<pk::bfloat16> y, float s) {
  y[_] = cast<pk::half>(x[_] * s) * w[_] + cast<pk::bfloat16>(d[_]);
}
