#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void negative(In<float, 2> x, Out<float, 2> y) {
  y[_] = reshape(x[_], {-2, 3});
}
PK_KERNEL void ranks(In<float, 2> a, In<float> b, Out<float, 2> y) {
  y[_] = concat({a[_], b[_]}, 0);
}
PK_KERNEL void remainder(In<float, 2> x, Out<float, 2> y, int64_t n) {
  y[_] = reshape(x[_], {n % 4, -1});
}
PK_KERNEL void computed(In<float, 2> x, Out<float, 2> y) {
  y[_] = slice(x[_] * 2.0f, 0, 0, x.extent(0) % 2);
}
