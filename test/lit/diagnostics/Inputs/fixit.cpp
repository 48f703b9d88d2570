#include <pk/pk.h>
using namespace pk::lang;
PK_KERNEL void element(In<float> x, Out<float> o) {
  o[_] = x[0] * 2.0f;
}
PK_KERNEL void call_operator(In<float, 2> x, Out<float> o) {
  auto t = x[_];
  o[_] = t(0, 1);
}
