// llama: a Llama 2 decoder (llama2.c's model) as pk kernels, written the way
// the paper reads in NumPy. Activations are [T, dim]: the T new tokens at
// positions pos..pos+T-1 (prefill: the prompt, decode: T = 1). Weights are
// nn.Linear's [out, in], so a projection is x wᵀ. Each layer's KV cache is
// head-major, [n_kv_heads, seq_len, head_size]: the attention reads a head's
// keys 0..pos+T-1 as one window, and the [T, n_kv_heads, head_size] ->
// [n_kv_heads, T, head_size] permutation happens on the T new rows only.
//
// Two families of kernels, one per kind of weights:
// - embed, layer (in layers.cpp) and head (in heads.cpp): templates over the
//   matrices' element type W, float (fp32 checkpoints) or pk::bfloat16
//   (stored in 16 bits, loaded as float: pk-llama --dtype bf16). Norm
//   weights, activations and the KV cache are fp32 either way. pkc compiles
//   them (pk_add_kernels).
// - dequantize, layer_q8 (here) and head_q8 (in heads.cpp): int8 (Q8_0)
//   checkpoints computed as llama2.c's runq does (linear_q8): every matrix is
//   int8 values with one fp32 scale per group of group_size along its input
//   axis, and each product quantises the activations to Q8_0 in the same
//   groups. pkc compiles them too (pk::rt::int8_product).
// The helpers they share are in common.h.
#include "common.h"

//===----------------------------------------------------------------------===//
// int8 (Q8_0) weights, as llama2.c's runq computes with them
//===----------------------------------------------------------------------===//

/// w [N, K] = the Q8_0 matrix q [N, K] with scales [N, G] in fp32: q * its
/// group's scale (runq dequantizes the token embedding table so at load).
PK_KERNEL void dequantize(In<int8_t, 2> q, In<float, 2> scale,
                          Out<float, 2> w) {
  auto N = q.extent(0), G = scale.extent(1);
  auto groups = cast<float>(reshape(q[_], {N, G, -1})); // [N, G, gs]
  w[_] = reshape(groups * expand_dims(scale[_], -1), {N, -1});
}

/// layer with Q8_0 matrices (each one int8 values and its scales
/// [out, in / group_size]): every projection is linear_q8; the q/k/v biases
/// stay fp32.
PK_KERNEL void layer_q8(InOut<float, 2> x, In<float> rms_att, In<int8_t, 2> wq,
                        In<float, 2> wq_scale, In<int8_t, 2> wk,
                        In<float, 2> wk_scale, In<int8_t, 2> wv,
                        In<float, 2> wv_scale, In<float> bq, In<float> bk,
                        In<float> bv, In<int8_t, 2> wo, In<float, 2> wo_scale,
                        In<float> rms_ffn, In<int8_t, 2> w1,
                        In<float, 2> w1_scale, In<int8_t, 2> w2,
                        In<float, 2> w2_scale, In<int8_t, 2> w3,
                        In<float, 2> w3_scale, InOut<float, 3> key_cache,
                        InOut<float, 3> value_cache, In<float, 2> rope_cos,
                        In<float, 2> rope_sin, int64_t pos, float eps) {
  auto T = x.extent(0), kv_heads = key_cache.extent(0);
  auto heads = x.extent(1) / key_cache.extent(2);

  auto h = rmsnorm(x[_], rms_att[_], eps);
  auto c = rope_cos.slice(0, pos, pos + T)[_];
  auto s = rope_sin.slice(0, pos, pos + T)[_];
  auto q = rope(linear_q8(h, wq[_], wq_scale[_]) + bq[_], c, s, heads);
  auto k = rope(linear_q8(h, wk[_], wk_scale[_]) + bk[_], c, s, kv_heads);
  auto v = linear_q8(h, wv[_], wv_scale[_]) + bv[_];
  key_cache.slice(1, pos, pos + T)[_] = heads_first(k, kv_heads);
  value_cache.slice(1, pos, pos + T)[_] = heads_first(v, kv_heads);
  auto o = attention(q, key_cache.slice(1, 0, pos + T)[_],
                     value_cache.slice(1, 0, pos + T)[_], pos);
  auto a = x[_] + linear_q8(o, wo[_], wo_scale[_]);

  auto f = rmsnorm(a, rms_ffn[_], eps);
  auto g = swiglu(linear_q8(f, w1[_], w1_scale[_]),
                  linear_q8(f, w3[_], w3_scale[_]));
  x[_] = a + linear_q8(g, w2[_], w2_scale[_]);
}
