#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void negative_count(In<float, 2> s, Out<float, 2> y) {
  y[_] = repeat(s[_], -2, 1);
}
PK_KERNEL void bad_axis(In<float, 2> s, Out<float, 2> y) {
  y[_] = repeat(s[_], 2, 2);
}
PK_KERNEL void float_count(In<float, 2> s, float f, Out<float, 2> y) {
  y[_] = repeat(s[_], int64_t(f), 1);
}
