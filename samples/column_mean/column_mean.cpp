// column_mean: the mean of each column, a reduction along axis 0.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void column_mean(In<float, 2> x, Out<float> m) {
  m[_] = mean(x[_], 0);
}
