// linear_bias_gelu: a transformer MLP's first half, y = gelu(x W^T + b), with
// the weight in PyTorch's nn.Linear layout: w is [N, K] (out_features,
// in_features), so x [M, K] is multiplied by transpose(w) [K, N]; the bias b
// [N] broadcasts over the rows, and the tanh GELU (the helper of
// samples/gelu) is applied to every element of the product.
#include <pk/pk.h>
using namespace pk::lang;

auto gelu_tanh(auto x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

PK_KERNEL void linear_bias_gelu(In<float, 2> x, In<float, 2> w, In<float, 1> b,
                                Out<float, 2> y) {
  y[_] = gelu_tanh(matmul(x[_], transpose(w[_])) + b[_]);
}
