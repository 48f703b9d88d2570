// llama: a Llama 2 decoder (llama2.c's model) as pk kernels, written the way
// the paper reads in NumPy. Activations are [T, dim]: the T new tokens at
// positions pos..pos+T-1 (prefill: the prompt, decode: T = 1). Weights are
// nn.Linear's [out, in], so a projection is x wᵀ. Each layer's KV cache is
// head-major, [n_kv_heads, seq_len, head_size]: the attention reads a head's
// keys 0..pos+T-1 as one window, and the [T, n_kv_heads, head_size] ->
// [n_kv_heads, T, head_size] permutation happens on the T new rows only.
//
// Two families of kernels, one per kind of weights:
// - embed, layer, head: templates over the matrices' element type W, float
//   (fp32 checkpoints) or pk::bfloat16 (stored in 16 bits, loaded as float:
//   pk-llama --dtype bf16). Norm weights, activations and the KV cache are
//   fp32 either way.
// - dequantize, layer_q8, head_q8: int8 (Q8_0) checkpoints computed as
//   llama2.c's runq does (linear_q8): every matrix is int8 values with one
//   fp32 scale per group of group_size along its input axis, and each
//   product quantises the activations to Q8_0 in the same groups.
#include <pk/pk.h>
using namespace pk::lang;

/// RMSNorm over the last axis: x / sqrt(mean(x²) + eps) * w.
auto rmsnorm(auto x, auto w, float eps) {
  return x * rsqrt(mean(x * x, -1, keepdims) + eps) * w;
}

/// llama2.c's RoPE on x [T, heads * hs] at positions pos..pos+T-1: the pair
/// (2i, 2i+1) of each head is turned by (pos + t) * theta^(-2i / hs).
auto rope(auto x, int64_t pos, int64_t heads, float theta) {
  auto T = x.extent(0), hs = x.extent(1) / heads;
  auto pairs = reshape(x, {T, heads, hs / 2, 2});
  auto re = slice(pairs, 3, 0, 1), im = slice(pairs, 3, 1, 2); // [T,H,hs/2,1]
  auto t = cast<float>(index(re, 0) + pos);
  auto i = cast<float>(index(re, 2));
  auto angle = t * (1.0f / pow(theta, 2.0f * i / hs));
  auto c = cos(angle), s = sin(angle);
  return reshape(concat({re * c - im * s, re * s + im * c}, 3), {T, -1});
}

/// x [T, heads * hs] as the cache lays it out: [heads, T, hs].
auto heads_first(auto x, int64_t heads) {
  return permute_dims(reshape(x, {x.extent(0), heads, -1}), {1, 0, 2});
}

/// Causal grouped-query attention of the queries q [T, heads * hs] of the
/// tokens at pos..pos+T-1 over keys and values [kv_heads, pos + T, hs]:
/// query head h reads kv head h / (heads / kv_heads). Returns [T, heads*hs].
auto attention(auto q, auto keys, auto values, int64_t pos) {
  auto T = q.extent(0), dim = q.extent(1);
  auto kv_heads = keys.extent(0), hs = keys.extent(2);
  auto group = dim / hs / kv_heads;
  // q [kv_heads, group, T, hs] against [kv_heads, 1, pos+T, hs], broadcast
  // over the group.
  auto qg = permute_dims(reshape(q, {T, kv_heads, group, hs}), {1, 2, 0, 3});
  auto s = matmul(qg, transpose(expand_dims(keys, 1))) * rsqrt(cast<float>(hs));
  s = where(index(s, -1) <= index(s, -2) + pos, s, -INFINITY); // key <= query
  auto e = exp(s - max(s, -1, keepdims));
  auto o = matmul(e / sum(e, -1, keepdims), expand_dims(values, 1));
  return reshape(permute_dims(o, {2, 0, 1, 3}), {T, dim}); // o: [Hkv,G,T,hs]
}

/// SwiGLU's gate: silu(g) * u.
auto swiglu(auto g, auto u) { return g * sigmoid(g) * u; }

//===----------------------------------------------------------------------===//
// fp32 and bf16 weights
//===----------------------------------------------------------------------===//

/// x[T, dim] = the rows of the token embedding table for `tokens`.
template <class W>
PK_KERNEL void embed(In<int32_t> tokens, In<W, 2> token_embedding,
                     Out<float, 2> x) {
  x[_] = take(token_embedding[_], tokens[_], 0);
}

/// One decoder layer on the residual stream x [T, dim] for the tokens at
/// positions pos..pos+T-1: writes their keys and values into the caches
/// [n_kv_heads, seq_len, head_size] at pos, attends causally over 0..pos+T-1
/// (query head h uses kv head h / (n_heads / n_kv_heads)), then the SwiGLU
/// FFN; both blocks are pre-norm and residual.
template <class W>
PK_KERNEL void layer(InOut<float, 2> x, In<float> rms_att, In<W, 2> wq,
                     In<W, 2> wk, In<W, 2> wv, In<W, 2> wo, In<float> rms_ffn,
                     In<W, 2> w1, In<W, 2> w2, In<W, 2> w3,
                     InOut<float, 3> key_cache, InOut<float, 3> value_cache,
                     int64_t pos, float eps, float theta) {
  auto T = x.extent(0), kv_heads = key_cache.extent(0);
  auto heads = x.extent(1) / key_cache.extent(2);

  auto h = rmsnorm(x[_], rms_att[_], eps);
  auto q = rope(matmul(h, transpose(wq[_])), pos, heads, theta);
  auto k = rope(matmul(h, transpose(wk[_])), pos, kv_heads, theta);
  auto v = matmul(h, transpose(wv[_]));
  key_cache.slice(1, pos, pos + T)[_] = heads_first(k, kv_heads);
  value_cache.slice(1, pos, pos + T)[_] = heads_first(v, kv_heads);
  auto o = attention(q, key_cache.slice(1, 0, pos + T)[_],
                     value_cache.slice(1, 0, pos + T)[_], pos);
  auto a = x[_] + matmul(o, transpose(wo[_]));

  auto f = rmsnorm(a, rms_ffn[_], eps);
  auto g = swiglu(matmul(f, transpose(w1[_])), matmul(f, transpose(w3[_])));
  x[_] = a + matmul(g, transpose(w2[_]));
}

/// logits[vocab] of the last token: its final RMSNorm times the classifier.
template <class W>
PK_KERNEL void head(In<float, 2> x, In<float> rms_final, In<W, 2> wcls,
                    Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = rmsnorm(x.slice(0, T - 1, T)[_], rms_final[_], eps); // [1, dim]
  logits[_] = reshape(matmul(last, transpose(wcls[_])), {-1});
}

template void embed<float>(In<int32_t>, In<float, 2>, Out<float, 2>);
template void embed<pk::bfloat16>(In<int32_t>, In<pk::bfloat16, 2>,
                                  Out<float, 2>);
template void layer<float>(InOut<float, 2>, In<float>, In<float, 2>,
                           In<float, 2>, In<float, 2>, In<float, 2>, In<float>,
                           In<float, 2>, In<float, 2>, In<float, 2>,
                           InOut<float, 3>, InOut<float, 3>, int64_t, float,
                           float);
template void layer<pk::bfloat16>(InOut<float, 2>, In<float>,
                                  In<pk::bfloat16, 2>, In<pk::bfloat16, 2>,
                                  In<pk::bfloat16, 2>, In<pk::bfloat16, 2>,
                                  In<float>, In<pk::bfloat16, 2>,
                                  In<pk::bfloat16, 2>, In<pk::bfloat16, 2>,
                                  InOut<float, 3>, InOut<float, 3>, int64_t,
                                  float, float);
template void head<float>(In<float, 2>, In<float>, In<float, 2>, Out<float>,
                          float);
template void head<pk::bfloat16>(In<float, 2>, In<float>, In<pk::bfloat16, 2>,
                                 Out<float>, float);

//===----------------------------------------------------------------------===//
// int8 (Q8_0) weights, as llama2.c's runq computes with them
//===----------------------------------------------------------------------===//

/// C's round(): the nearest integer, halves away from zero (pk has floor but
/// no round). floor(|v| + 0.5) would not do: 0.49999997f + 0.5f rounds to
/// 1.0f. |v| - floor(|v|) is exact, so this is round() for every float.
auto round_half_away(auto v) {
  auto a = abs(v), whole = floor(a);
  auto r = whole + where(a - whole >= 0.5f, 1.0f, 0.0f);
  return where(v < 0.0f, -r, r);
}

/// x wᵀ for the Q8_0 matrix w [N, K] (int8) with scales [N, G]: w[n, k]
/// stands for w[n, k] * scale[n, k / gs], gs = K / G. Computed as runq's
/// quantize + matmul: x is quantised in the same groups of gs along k
/// (scale max|x| / 127, values x / scale rounded half away from zero; a
/// group of zeros gets zeros), each group's dot product of the int8 values
/// is exact in int32, the group's term is that times the weight's scale
/// times x's scale, in float and in that order, and the terms are summed
/// over the groups. Returns [T, N].
auto linear_q8(auto x, auto w, auto scale) {
  auto T = x.extent(0), N = w.extent(0), G = scale.extent(1);
  auto xg = permute_dims(reshape(x, {T, G, -1}), {1, 0, 2}); // [G, T, gs]
  auto wg = permute_dims(reshape(w, {N, G, -1}), {1, 0, 2}); // [G, N, gs]
  auto xs = max(abs(xg), -1, keepdims) / 127.0f;             // [G, T, 1]
  auto xq = cast<int32_t>(where(xs > 0.0f, round_half_away(xg / xs), 0.0f));
  auto dot = matmul(xq, transpose(wg));       // [G, T, N], int32
  auto ws = expand_dims(transpose(scale), 1); // [G, 1, N]
  return sum(cast<float>(dot) * ws * xs, 0);  // [T, N]
}

/// w [N, K] = the Q8_0 matrix q [N, K] with scales [N, G] in fp32: q * its
/// group's scale (runq dequantizes the token embedding table so at load).
PK_KERNEL void dequantize(In<int8_t, 2> q, In<float, 2> scale,
                          Out<float, 2> w) {
  auto N = q.extent(0), G = scale.extent(1);
  auto groups = cast<float>(reshape(q[_], {N, G, -1})); // [N, G, gs]
  w[_] = reshape(groups * expand_dims(scale[_], -1), {N, -1});
}

/// layer with Q8_0 matrices (each one int8 values and its scales
/// [out, in / group_size]): every projection is linear_q8.
PK_KERNEL void
layer_q8(InOut<float, 2> x, In<float> rms_att, In<int8_t, 2> wq,
         In<float, 2> wq_scale, In<int8_t, 2> wk, In<float, 2> wk_scale,
         In<int8_t, 2> wv, In<float, 2> wv_scale, In<int8_t, 2> wo,
         In<float, 2> wo_scale, In<float> rms_ffn, In<int8_t, 2> w1,
         In<float, 2> w1_scale, In<int8_t, 2> w2, In<float, 2> w2_scale,
         In<int8_t, 2> w3, In<float, 2> w3_scale, InOut<float, 3> key_cache,
         InOut<float, 3> value_cache, int64_t pos, float eps, float theta) {
  auto T = x.extent(0), kv_heads = key_cache.extent(0);
  auto heads = x.extent(1) / key_cache.extent(2);

  auto h = rmsnorm(x[_], rms_att[_], eps);
  auto q = rope(linear_q8(h, wq[_], wq_scale[_]), pos, heads, theta);
  auto k = rope(linear_q8(h, wk[_], wk_scale[_]), pos, kv_heads, theta);
  auto v = linear_q8(h, wv[_], wv_scale[_]);
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

/// head with a Q8_0 classifier.
PK_KERNEL void head_q8(In<float, 2> x, In<float> rms_final, In<int8_t, 2> wcls,
                       In<float, 2> wcls_scale, Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = rmsnorm(x.slice(0, T - 1, T)[_], rms_final[_], eps); // [1, dim]
  logits[_] = reshape(linear_q8(last, wcls[_], wcls_scale[_]), {-1});
}
