// layernorm_backward: the gradients of LayerNorm as llm.c computes them
// (layernorm_backward in train_gpt2.c), for N rows of C channels: from the
// upstream gradient dout, the input and the forward pass's mean and rstd,
// accumulate dinp, dweight and dbias. One kernel: pkc runs the column sums
// (over the rows) and the row means (over the channels) as two groups.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void layernorm_backward(InOut<float, 2> dinp, InOut<float, 1> dweight,
                                  InOut<float, 1> dbias, In<float, 2> dout,
                                  In<float, 2> inp, In<float, 1> weight,
                                  In<float, 1> mean_, In<float, 1> rstd) {
  auto r = expand_dims(rstd[_], -1);                   // [N, 1]
  auto norm = (inp[_] - expand_dims(mean_[_], -1)) * r; // [N, C]
  auto dnorm = dout[_] * weight[_];
  dbias[_] += sum(dout[_], 0);
  dweight[_] += sum(norm * dout[_], 0);
  dinp[_] += (dnorm - mean(dnorm, -1, keepdims) -
              norm * mean(dnorm * norm, -1, keepdims)) *
             r;
}
