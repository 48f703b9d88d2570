// heads: the classifier kernels of samples/llama (llama.cpp has the rest),
// in a file of their own because pkc compiles them (pk_add_kernels) while
// the others still run eagerly: the last row's final RMSNorm (a window of x),
// the product with the classifier and the logits as a vector (a reshape).
// model.cpp runs these compiled ones; the eager ones stay the reference of
// the tests.
#include "common.h"

/// logits[vocab] of the last token: its final RMSNorm times the classifier.
template <class W>
PK_KERNEL void head(In<float, 2> x, In<float> rms_final, In<W, 2> wcls,
                    Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = rmsnorm(x.slice(0, T - 1, T)[_], rms_final[_], eps); // [1, dim]
  logits[_] = reshape(matmul(last, transpose(wcls[_])), {-1});
}

template void head<float>(In<float, 2>, In<float>, In<float, 2>, Out<float>,
                          float);
template void head<pk::bfloat16>(In<float, 2>, In<float>, In<pk::bfloat16, 2>,
                                 Out<float>, float);

/// head with a Q8_0 classifier.
PK_KERNEL void head_q8(In<float, 2> x, In<float> rms_final, In<int8_t, 2> wcls,
                       In<float, 2> wcls_scale, Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = rmsnorm(x.slice(0, T - 1, T)[_], rms_final[_], eps); // [1, dim]
  logits[_] = reshape(linear_q8(last, wcls[_], wcls_scale[_]), {-1});
}
