//===- Presets.h - pk-llama-checkpoint's small presets, for the tests -----===//
//
// The shapes of `pk-llama-checkpoint --preset tiny` and `--preset
// qwen2-tiny` (make_checkpoint.cpp), which NarrowWeightsTest and CudaTest
// write and read back as checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_TESTS_PRESETS_H
#define PK_SAMPLES_LLAMA_TESTS_PRESETS_H

#include "model.h"

namespace llama::test {

/// `--preset tiny`: grouped-query attention (2 query heads per kv head), a
/// hidden_dim that is no power of two (so version 2 gets group size 4).
inline Config tinyPreset() {
  Config C;
  C.dim = 64;
  C.hidden_dim = 172;
  C.n_layers = 2;
  C.n_heads = 4;
  C.n_kv_heads = 2;
  C.vocab_size = 512;
  C.seq_len = 128;
  C.shared_classifier = true;
  return C;
}

/// `--preset qwen2-tiny`: q/k/v biases, RoPE base 1e6, epsilon 1e-6, 7 query
/// heads per kv head (version 2: group size 16).
inline Config qwen2TinyPreset() {
  Config C = tinyPreset();
  C.dim = 112;
  C.hidden_dim = 304;
  C.n_heads = 7;
  C.n_kv_heads = 1;
  C.qkv_bias = true;
  C.rope_theta = 1e6f;
  C.norm_eps = 1e-6f;
  return C;
}

} // namespace llama::test

#endif // PK_SAMPLES_LLAMA_TESTS_PRESETS_H
