//===- common.h - The math llama.cpp and heads.cpp share ------------------===//
//
// The helpers of samples/llama's kernels, written the way the paper reads in
// NumPy (inlined into every kernel that calls them): RMSNorm, llama2.c's
// RoPE, the head split of the KV cache, causal grouped-query attention,
// SwiGLU's gate, and the Q8_0 product as llama2.c's runq computes it.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_COMMON_H
#define PK_SAMPLES_LLAMA_COMMON_H

#include <pk/pk.h>

// Kernel sources name pk's operations unqualified (language.md §1); this
// header is one of them.
using namespace pk::lang;

/// RMSNorm over the last axis: x / sqrt(mean(x²) + eps) * w.
auto rmsnorm(auto x, auto w, float eps) {
  return x * rsqrt(mean(x * x, -1, keepdims) + eps) * w;
}

/// llama2.c's RoPE angles of positions 0..seq_len-1, computed once per
/// model (as Hugging Face's rotary embeddings cache them) instead of in
/// every layer of every step: angle[pos, i] = pos * theta^(-2i / hs) in
/// float, as llama2.c's run.c computes it, for the pairs i < hs / 2 of a
/// head ([seq_len, hs / 2], `shape` gives the extents).
auto rope_angles(auto shape, float theta) {
  auto pos = cast<float>(index(shape, 0));
  auto i = cast<float>(index(shape, 1));
  auto hs = cast<float>(2 * shape.extent(1));
  return pos * (1.0f / pow(theta, 2.0f * i / hs));
}

/// RoPE on x [T, heads * hs] at positions pos..pos+T-1, given the rows
/// pos..pos+T-1 of the cos and sin tables ([T, hs / 2]): the pair
/// (2i, 2i+1) of each head is turned by the angle of its position and i.
auto rope(auto x, auto cos_rows, auto sin_rows, int64_t heads) {
  auto T = x.extent(0), hs = x.extent(1) / heads;
  auto pairs = reshape(x, {T, heads, hs / 2, 2});
  auto re = slice(pairs, 3, 0, 1), im = slice(pairs, 3, 1, 2); // [T,H,hs/2,1]
  auto c = reshape(cos_rows, {T, 1, hs / 2, 1});
  auto s = reshape(sin_rows, {T, 1, hs / 2, 1});
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

#endif // PK_SAMPLES_LLAMA_COMMON_H
