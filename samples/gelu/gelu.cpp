// gelu: the tanh approximation of GELU, written once as a helper that works
// on any value (pkc inlines it).
#include <pk/pk.h>
using namespace pk::lang;

auto gelu_tanh(auto x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

PK_KERNEL void gelu(In<float> x, Out<float> y) { y[_] = gelu_tanh(x[_]); }
