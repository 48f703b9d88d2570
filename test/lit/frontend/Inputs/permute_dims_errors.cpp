// permute-dims.test: bad axes of permute_dims.
#include <pk/pk.h>
using namespace pk::lang;
PK_KERNEL void count(In<float, 3> x, Out<float, 3> y) {
  y[_] = permute_dims(x[_], {1, 0});
}
PK_KERNEL void twice(In<float, 3> x, Out<float, 3> y) {
  // -1 is axis 2 again.
  y[_] = permute_dims(x[_], {0, 2, -1});
}
PK_KERNEL void range(In<float, 2> x, Out<float, 2> y) {
  // A rank-2 value has axes -2..1.
  y[_] = permute_dims(x[_], {0, 2});
}
PK_KERNEL void runtime(In<float, 2> x, Out<float, 2> y, int a) {
  y[_] = permute_dims(x[_], {a, 0});
}
