// kv_cache_attention: one decode (or prefill) step of grouped-query
// attention over a KV cache, as a decoder layer runs it. The keys and values
// of the T new tokens (k, v: [kv_heads, T, hs]) are written into the caches
// [kv_heads, L, hs] at positions pos..pos+T-1 (windows of the caches), then
// the queries q [kv_heads, group, T, hs] attend causally over the cache
// prefix [0, pos + T): query head (h, g) reads kv head h, broadcast over the
// group. pkc writes the windows in place and runs the attention as one
// online-softmax pass per query row whose key loop stops at pos + t + 1, so a
// step reads only the prefix it needs whatever the cache's length.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void kv_cache_attention(In<float, 4> q, In<float, 3> k,
                                  In<float, 3> v, InOut<float, 3> key_cache,
                                  InOut<float, 3> value_cache, Out<float, 4> o,
                                  int64_t pos) {
  auto T = q.extent(2), hs = q.extent(3);
  key_cache.slice(1, pos, pos + T)[_] = k[_];
  value_cache.slice(1, pos, pos + T)[_] = v[_];
  auto keys = expand_dims(key_cache.slice(1, 0, pos + T)[_], 1);
  auto values = expand_dims(value_cache.slice(1, 0, pos + T)[_], 1);
  auto s = matmul(q[_], transpose(keys)) * rsqrt(cast<float>(hs));
  s = where(index(s, -1) <= index(s, -2) + pos, s, -INFINITY);
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), values);
}
