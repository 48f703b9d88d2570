// A kernel as a user writes it: each row divided by its largest magnitude.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void scale_rows(In<float, 2> x, Out<float, 2> y) {
  y[_] = x[_] / (max(abs(x[_]), -1, keepdims) + 1e-6f);
}
