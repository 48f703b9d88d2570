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

// llama2.c runq's product (samples/llama/common.h's linear_q8): activations
// quantised to Q8_0 per group as well, exact int32 dots per group, their
// float terms summed over the groups (pk::rt::int8_product; AMX-INT8 tiles
// from 16 rows where the CPU has them; bench/kernels_decode.cpp,
// runq_prefill*).
PK_KERNEL void runq_linear(In<float, 2> x, In<int8_t, 2> w, In<float, 2> scale,
                           Out<float, 2> y) {
  auto T = x.extent(0), N = w.extent(0), G = scale.extent(1);
  auto xg = permute_dims(reshape(x[_], {T, G, -1}), {1, 0, 2}); // [G, T, gs]
  auto wg = permute_dims(reshape(w[_], {N, G, -1}), {1, 0, 2}); // [G, N, gs]
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;                // [G, T, 1]
  auto v = xg / xs, a = abs(v), whole = floor(a); // C's round(), as runq
  auto r = whole + where(a - whole >= 0.5f, 1.0f, 0.0f);
  auto xq = cast<int32_t>(where(xs > 0.0f, where(v < 0.0f, -r, r), 0.0f));
  auto ws = expand_dims(transpose(scale[_]), 1); // [G, 1, N]
  y[_] = sum(cast<float>(matmul(xq, transpose(wg))) * ws * xs, 0);
}
