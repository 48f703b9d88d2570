// logsumexp over the last axis: a row output [T] from two reductions.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void logsumexp(In<float, 2> x, Out<float> out) {
  auto m = max(x[_], -1, keepdims);
  out[_] = squeeze(log(sum(exp(x[_] - m), -1, keepdims)) + m, -1);
}
