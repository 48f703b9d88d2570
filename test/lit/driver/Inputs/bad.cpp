// A kernel that writes its input.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void bad(In<float> x, Out<float> y) {
  x[_] = x[_] * 2.0f;
  y[_] = x[_];
}
