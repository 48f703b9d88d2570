// fma: o = a * b + c, one fused pass over four arrays.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void fma(In<float> a, In<float> b, In<float> c, Out<float> o) {
  o[_] = a[_] * b[_] + c[_];
}
