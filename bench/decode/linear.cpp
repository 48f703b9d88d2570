// linear: y = x wᵀ, nn.Linear's product without a bias (w is [N, K]); the
// kernels of the decode benchmark (bench/kernels_decode.cpp), with float,
// bfloat16 and int8 (Q8_0: one float scale per group along K) weights.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void linear(In<float, 2> x, In<float, 2> w, Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

PK_KERNEL void linear_bf16(In<float, 2> x, In<pk::bfloat16, 2> w,
                           Out<float, 2> y) {
  y[_] = matmul(x[_], transpose(w[_]));
}

PK_KERNEL void linear_q8(In<float, 2> x, In<int8_t, 2> w, In<float, 2> scale,
                         Out<float, 2> y) {
  auto gs = w.extent(1) / scale.extent(1);
  y[_] = matmul(x[_], transpose(cast<float>(w[_]) * repeat(scale[_], gs, -1)));
}

// The same product of bfloat16 values: activations rounded to bfloat16 by
// the kernel, bfloat16 weights (pk::rt::gemm runs it on AMX where the CPU
// has it; bench/kernels_decode.cpp, linear_prefill_bf16*).
PK_KERNEL void linear_bf16_rounded(In<float, 2> x, In<pk::bfloat16, 2> w,
                                   Out<float, 2> y) {
  y[_] = matmul(cast<pk::bfloat16>(x[_]), transpose(w[_]));
}
