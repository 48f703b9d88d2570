// linear: y = x wᵀ, nn.Linear's product without a bias (w is [N, K]); the
// kernels of the decode benchmark (bench/kernels_decode.cpp), with float and
// with bfloat16 weights.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void linear(In<float, 2> x, In<float, 2> w, Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

PK_KERNEL void linear_bf16(In<float, 2> x, In<pk::bfloat16, 2> w,
                           Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}
