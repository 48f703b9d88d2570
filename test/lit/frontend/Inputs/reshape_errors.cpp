#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void two_inferred(In<float, 2> x, Out<float, 2> y) {
  y[_] = reshape(x[_], {-1, -1});
}
