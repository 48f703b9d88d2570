// axpby: y = alpha * x + beta * y, with two scalar parameters and an InOut.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void axpby(float alpha, In<float> x, float beta, InOut<float> y) {
  y[_] = alpha * x[_] + beta * y[_];
}
