// mlp: a transformer's feed-forward block, y = gelu(x W1^T + b1) W2^T + b2,
// with the weights in PyTorch's nn.Linear layout ([out, in]). One kernel:
// pkc keeps the hidden activation h in a buffer it allocates per call (its
// consumer is another matrix product, which cannot recompute it), computes
// bias and GELU in the first product's epilogue and the second bias in the
// second's. `pkc --emit=explain` lists the buffer and why it exists.
#include <pk/pk.h>
using namespace pk::lang;

auto gelu_tanh(auto x) {
  const float k = 0.7978845608f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
}

PK_KERNEL void mlp(In<float, 2> x, In<float, 2> w1, In<float, 1> b1,
                   In<float, 2> w2, In<float, 1> b2, Out<float, 2> y) {
  auto h = gelu_tanh(matmul(x[_], transpose(w1[_])) + b1[_]); // [T, F]
  y[_] = matmul(h, transpose(w2[_])) + b2[_];                  // [T, D]
}
