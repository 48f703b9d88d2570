// layers: the token embedding and the decoder layer of samples/llama for
// fp32 and bf16 weights, in a file of their own because pkc compiles them
// (pk_add_kernels) while llama.cpp's int8 kernels still run eagerly. pkc
// decides the layer's kernel boundaries and buffers: the q/k/v projections,
// RoPE, the KV cache writes, the grouped-query attention over the cache
// prefix, wo, and the SwiGLU FFN. model.cpp runs the compiled kernels; the
// eager ones (the same source, through <pk/pk.h>) stay the reference of the
// tests.
#include "common.h"

/// x[T, dim] = the rows of the token embedding table for `tokens` (the
/// compiled kernel checks every token against the table before any write).
template <class W>
PK_KERNEL void embed(In<int32_t> tokens, In<W, 2> token_embedding,
                     Out<float, 2> x) {
  x[_] = take(token_embedding[_], tokens[_], 0);
}

template void embed<float>(In<int32_t>, In<float, 2>, Out<float, 2>);
template void embed<pk::bfloat16>(In<int32_t>, In<pk::bfloat16, 2>,
                                  Out<float, 2>);

/// The RoPE tables of a model, cos and sin of rope_angles ([seq_len,
/// head_size / 2] each): every layer reads the rows of its positions.
PK_KERNEL void rope_tables(Out<float, 2> rope_cos, Out<float, 2> rope_sin,
                           float theta) {
  auto angle = rope_angles(broadcast_to(0.0f, rope_cos), theta);
  rope_cos[_] = cos(angle);
  rope_sin[_] = sin(angle);
}

/// One decoder layer on the residual stream x [T, dim] for the tokens at
/// positions pos..pos+T-1: writes their keys and values into the caches
/// [n_kv_heads, seq_len, head_size] at pos, attends causally over 0..pos+T-1
/// (query head h uses kv head h / (n_heads / n_kv_heads)), then the SwiGLU
/// FFN; both blocks are pre-norm and residual. rope_cos and rope_sin are
/// the model's RoPE tables (rope_tables). bq, bk and bv are the q/k/v
/// projections' biases (Qwen2's; zeros for a Llama, whose projections have
/// none).
template <class W>
PK_KERNEL void layer(InOut<float, 2> x, In<float> rms_att, In<W, 2> wq,
                     In<W, 2> wk, In<W, 2> wv, In<float> bq, In<float> bk,
                     In<float> bv, In<W, 2> wo, In<float> rms_ffn, In<W, 2> w1,
                     In<W, 2> w2, In<W, 2> w3, InOut<float, 3> key_cache,
                     InOut<float, 3> value_cache, In<float, 2> rope_cos,
                     In<float, 2> rope_sin, int64_t pos, float eps) {
  auto T = x.extent(0), kv_heads = key_cache.extent(0);
  auto heads = x.extent(1) / key_cache.extent(2);

  // The products' inputs are rounded to the weights' type (cast<W>: a no-op
  // for float), so that bf16 layers multiply bfloat16 values, on AMX where
  // the CPU has it, as PyTorch's bf16 models do; everything else (norms,
  // RoPE, attention, the residual stream) stays float.
  auto h = cast<W>(rmsnorm(x[_], rms_att[_], eps));
  auto c = rope_cos.slice(0, pos, pos + T)[_];
  auto s = rope_sin.slice(0, pos, pos + T)[_];
  auto q = rope(matmul(h, transpose(wq[_])) + bq[_], c, s, heads);
  auto k = rope(matmul(h, transpose(wk[_])) + bk[_], c, s, kv_heads);
  auto v = matmul(h, transpose(wv[_])) + bv[_];
  key_cache.slice(1, pos, pos + T)[_] = heads_first(k, kv_heads);
  value_cache.slice(1, pos, pos + T)[_] = heads_first(v, kv_heads);
  auto o = attention(q, key_cache.slice(1, 0, pos + T)[_],
                     value_cache.slice(1, 0, pos + T)[_], pos);
  auto a = x[_] + matmul(cast<W>(o), transpose(wo[_]));

  auto f = cast<W>(rmsnorm(a, rms_ffn[_], eps));
  auto g = swiglu(matmul(f, transpose(w1[_])), matmul(f, transpose(w3[_])));
  x[_] = a + matmul(cast<W>(g), transpose(w2[_]));
}

template void layer<float>(InOut<float, 2>, In<float>, In<float, 2>,
                           In<float, 2>, In<float, 2>, In<float>, In<float>,
                           In<float>, In<float, 2>, In<float>, In<float, 2>,
                           In<float, 2>, In<float, 2>, InOut<float, 3>,
                           InOut<float, 3>, In<float, 2>, In<float, 2>, int64_t,
                           float);
template void layer<pk::bfloat16>(InOut<float, 2>, In<float>,
                                  In<pk::bfloat16, 2>, In<pk::bfloat16, 2>,
                                  In<pk::bfloat16, 2>, In<float>, In<float>,
                                  In<float>, In<pk::bfloat16, 2>, In<float>,
                                  In<pk::bfloat16, 2>, In<pk::bfloat16, 2>,
                                  In<pk::bfloat16, 2>, InOut<float, 3>,
                                  InOut<float, 3>, In<float, 2>, In<float, 2>,
                                  int64_t, float);
