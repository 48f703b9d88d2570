// A file with one good kernel.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void scale(In<float> x, float s, Out<float> y) {
  y[_] = x[_] * s;
}
int not_a_kernel(int v) { return v * 2; } // untouched
