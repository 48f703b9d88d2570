// sum_all: a full reduction to a rank-0 output.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void sum_all(In<float, 2> x, Out<float, 0> total) {
  total[_] = sum(x[_]);
}
