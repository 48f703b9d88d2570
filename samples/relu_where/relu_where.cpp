// relu_where: a ReLU written with where(), the only per-element choice.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void relu_where(In<float> x, Out<float> y) {
  y[_] = where(x[_] > 0.0f, x[_], 0.0f);
}
