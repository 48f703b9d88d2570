// int8_t and uint8_t are element types of refs (storage types: values
// compute in int32_t, language.md §1); the other narrow integers are not:
// plain char (its signedness is the platform's), int16_t, uint16_t and the
// unsigned 32- and 64-bit types are rejected with the list of element types.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void chars(In<char> x, Out<float> o) { // expected-error {{the element type 'char' of parameter 'x' is not supported [pk-param-kind]}} expected-note {{use float, double, int32_t, int64_t, bool, pk::half, pk::bfloat16, int8_t or uint8_t}}
  o[_] = 1.0f;
}

PK_KERNEL void shorts(In<int16_t> x, In<uint16_t> y, Out<float> o) { // expected-error {{the element type 'short' of parameter 'x' is not supported [pk-param-kind]}} expected-note {{use float, double, int32_t, int64_t, bool, pk::half, pk::bfloat16, int8_t or uint8_t}} expected-error {{the element type 'unsigned short' of parameter 'y' is not supported [pk-param-kind]}} expected-note {{use float}}
  o[_] = 1.0f;
}

PK_KERNEL void unsigned64(In<uint64_t> x, Out<float> o) { // expected-error {{the element type 'unsigned long' of parameter 'x' is not supported [pk-param-kind]}} expected-note {{use float}}
  o[_] = 1.0f;
}

// 8-bit refs of every kind, mixed with other types, cast<> to them, and an
// 8-bit scalar (a scalar computes in int32_t, as C++ promotes it) are fine.
PK_KERNEL void fine(In<int8_t, 2> q, In<uint8_t> u, In<float> s,
                    InOut<int8_t> acc, Out<uint8_t, 2> o, Out<float, 2> f,
                    int8_t k) {
  acc[_] = acc[_] + cast<int8_t>(u[_]) * k;
  o[_] = q[_] + u[_];
  f[_] = cast<float>(q[_]) * s[_] + cast<uint8_t>(q[_] * 2);
}
