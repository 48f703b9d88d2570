// llama: a Llama 2 decoder (llama2.c's model) as three pk kernels, written
// the way the paper reads in NumPy. Activations are [T, dim]: the T new
// tokens at positions pos..pos+T-1 (prefill: the prompt, decode: T = 1).
// Weights are nn.Linear's [out, in], so a projection is x wᵀ. Each layer's KV
// cache is head-major, [n_kv_heads, seq_len, head_size]: the attention reads
// a head's keys 0..pos+T-1 as one window, and the [T, n_kv_heads, head_size]
// -> [n_kv_heads, T, head_size] permutation happens on the T new rows only.
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

/// x[T, dim] = the rows of the token embedding table for `tokens`.
PK_KERNEL void embed(In<int32_t> tokens, In<float, 2> token_embedding,
                     Out<float, 2> x) {
  x[_] = take(token_embedding[_], tokens[_], 0);
}

/// One decoder layer on the residual stream x [T, dim] for the tokens at
/// positions pos..pos+T-1: writes their keys and values into the caches
/// [n_kv_heads, seq_len, head_size] at pos, attends causally over 0..pos+T-1
/// (query head h uses kv head h / (n_heads / n_kv_heads)), then the SwiGLU
/// FFN; both blocks are pre-norm and residual.
PK_KERNEL void layer(InOut<float, 2> x, In<float> rms_att, In<float, 2> wq,
                     In<float, 2> wk, In<float, 2> wv, In<float, 2> wo,
                     In<float> rms_ffn, In<float, 2> w1, In<float, 2> w2,
                     In<float, 2> w3, InOut<float, 3> key_cache,
                     InOut<float, 3> value_cache, int64_t pos, float eps,
                     float theta) {
  auto T = x.extent(0), dim = x.extent(1);
  auto kv_heads = key_cache.extent(0), hs = key_cache.extent(2);
  auto heads = dim / hs, group = heads / kv_heads;

  auto h = rmsnorm(x[_], rms_att[_], eps);
  auto q = rope(matmul(h, transpose(wq[_])), pos, heads, theta);
  auto k = rope(matmul(h, transpose(wk[_])), pos, kv_heads, theta);
  auto v = matmul(h, transpose(wv[_]));
  key_cache.slice(1, pos, pos + T)[_] =
      permute_dims(reshape(k, {T, kv_heads, hs}), {1, 0, 2});
  value_cache.slice(1, pos, pos + T)[_] =
      permute_dims(reshape(v, {T, kv_heads, hs}), {1, 0, 2});

  // Grouped-query attention: q [kv_heads, group, T, hs] against the cached
  // keys and values [kv_heads, 1, pos+T, hs], broadcast over the group.
  auto qg = permute_dims(reshape(q, {T, kv_heads, group, hs}), {1, 2, 0, 3});
  auto keys = expand_dims(key_cache.slice(1, 0, pos + T)[_], 1);
  auto values = expand_dims(value_cache.slice(1, 0, pos + T)[_], 1);
  auto s = matmul(qg, transpose(keys)) * rsqrt(cast<float>(hs));
  s = where(index(s, -1) <= index(s, -2) + pos, s, -INFINITY); // key <= query
  auto e = exp(s - max(s, -1, keepdims));
  auto o = matmul(e / sum(e, -1, keepdims), values); // [kv_heads, group, T, hs]
  auto a = x[_] + matmul(reshape(permute_dims(o, {2, 0, 1, 3}), {T, dim}),
                         transpose(wo[_]));

  auto f = rmsnorm(a, rms_ffn[_], eps);
  auto g = matmul(f, transpose(w1[_]));
  x[_] = a +
         matmul(g * sigmoid(g) * matmul(f, transpose(w3[_])), transpose(w2[_]));
}

/// logits[vocab] of the last token: its final RMSNorm times the classifier.
PK_KERNEL void head(In<float, 2> x, In<float> rms_final, In<float, 2> wcls,
                    Out<float> logits, float eps) {
  auto T = x.extent(0);
  auto last = rmsnorm(x.slice(0, T - 1, T)[_], rms_final[_], eps); // [1, dim]
  logits[_] = reshape(matmul(last, transpose(wcls[_])), {-1});
}
