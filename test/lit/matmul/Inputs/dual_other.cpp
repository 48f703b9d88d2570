// Two products of different left operands, combined elementwise: not a dual
// product (dual.test): one product is kept in a buffer.
#include <pk/pk.h>
using namespace pk::lang;
PK_KERNEL void two_lefts(In<float, 2> x, In<float, 2> z, In<float, 2> w1,
                         In<float, 2> w2, Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w1[_])) * matmul(z[_], transpose(w2[_]));
}
