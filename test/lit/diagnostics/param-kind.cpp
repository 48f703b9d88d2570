// Parameters are refs (In/Out/InOut<T, R>, T in float, double, int32_t,
// int64_t, bool, pk::half, pk::bfloat16, int8_t, uint8_t) or arithmetic
// scalars, all passed by value.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
#include <vector>
using namespace pk::lang;

PK_KERNEL void pointer(float *p, Out<float> o) { // expected-error {{parameter 'p' is a pointer [pk-param-kind]}} expected-note {{use In<T, R>, Out<T, R> or InOut<T, R> for arrays, or an arithmetic scalar (float, int64_t, ...) by value}}
  o[_] = 1.0f;
}

PK_KERNEL void byref(const In<float> &x, Out<float> o) { // expected-error {{parameter 'x' is passed by reference [pk-param-kind]}} expected-note {{pass refs and scalars by value: 'In<float> x'}}
  o[_] = 1.0f;
}

PK_KERNEL void scalarref(float &s, Out<float> o) { // expected-error {{parameter 's' is passed by reference [pk-param-kind]}} expected-note {{pass refs and scalars by value: 'float s'}}
  o[_] = 1.0f;
}

PK_KERNEL void vec(std::vector<float> v, Out<float> o) { // expected-error {{parameter 'v' of type 'std::vector<float>' is not a ref or a scalar [pk-param-kind]}} expected-note {{use In<T, R>, Out<T, R> or InOut<T, R> for arrays}}
  o[_] = 1.0f;
}

PK_KERNEL void elem(In<unsigned> x, Out<float> o) { // expected-error {{the element type 'unsigned int' of parameter 'x' is not supported [pk-param-kind]}} expected-note {{use float, double, int32_t, int64_t, bool, pk::half, pk::bfloat16, int8_t or uint8_t}}
  o[_] = 1.0f;
}

PK_KERNEL void ldouble(long double s, Out<float> o) { // expected-error {{the scalar parameter 's' has the unsupported type 'long double' [pk-param-kind]}} expected-note {{use float, double, int32_t, int64_t or bool}}
  o[_] = 1.0f;
}

// Every supported kind is accepted.
PK_KERNEL void fine(In<float, 0> a, In<double, 3> b, InOut<int32_t> c, Out<int64_t, 3> d, Out<bool> e,
                    float f, double g, int h, int64_t i, bool j) {
  c[_] = c[_] + h;
  d[_] = cast<int64_t>(a[_] * f) + i + cast<int64_t>(b[_] * g);
  e[_] = where(a[_] > f, j, false);
}
