#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void negative(In<float, 2> x, Out<float, 2> y) {
  y[_] = x.slice(0, -1, 2)[_];
}
PK_KERNEL void reversed(In<float, 2> x, Out<float, 2> y, int64_t pos) {
  y[_] = x.slice(1, pos + 2, pos + 1)[_];
}
PK_KERNEL void halved(In<float, 2> x, Out<float, 2> y, int64_t n) {
  y[_] = x.slice(0, 0, n % 3)[_];
}
PK_KERNEL void axis(In<float, 2> x, Out<float, 2> y) {
  y[_] = x.slice(2, 0, 1)[_];
}
PK_KERNEL void unwritten(Out<float, 2> y, Out<float, 2> z) {
  z[_] = y.slice(0, 0, 1)[_];
}
