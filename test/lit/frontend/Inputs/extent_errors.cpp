#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void past_rank(In<float, 2> x, Out<float, 2> y) {
  y[_] = x[_] * cast<float>(x.extent(2));
}
PK_KERNEL void negative(In<float, 2> x, Out<float, 2> y) {
  y[_] = x[_] * cast<float>(x.extent(-1));
}
PK_KERNEL void run_time_axis(In<float, 2> x, Out<float, 2> y, int64_t a) {
  y[_] = x[_] * cast<float>(x.extent(a));
}
