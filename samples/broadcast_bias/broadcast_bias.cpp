// broadcast_bias: y[T, D] = x[T, D] + b[D], the rank-1 bias broadcast over
// the rows as NumPy would.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void broadcast_bias(In<float, 2> x, In<float, 1> b, Out<float, 2> y) {
  y[_] = x[_] + b[_];
}
