//===- model.h - A Llama-family decoder run by pk kernels -----------------===//
//
// The model's shape (Config), its fp32 weights as llama2.c lays them out
// (Weights: pointers into a memory-mapped checkpoint, never copies), and
// Model, which owns the KV cache and the activations and runs the kernels of
// llama.cpp: T new tokens at positions pos..pos+T-1 per call (prefill is one
// call over the whole prompt, decode one call per token).
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_MODEL_H
#define PK_SAMPLES_LLAMA_MODEL_H

#include <cstdint>
#include <memory>
#include <span>

namespace llama {

/// llama2.c's Config, plus what its formats leave implicit (Llama 2's
/// RMSNorm epsilon and RoPE base).
struct Config {
  int64_t dim = 0;        ///< transformer width
  int64_t hidden_dim = 0; ///< SwiGLU width
  int64_t n_layers = 0;
  int64_t n_heads = 0;    ///< query heads
  int64_t n_kv_heads = 0; ///< key/value heads (n_heads for MHA; fewer: GQA)
  int64_t vocab_size = 0;
  int64_t seq_len = 0;           ///< context length: positions 0..seq_len-1
  bool shared_classifier = true; ///< wcls is the token embedding table
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return head_size() * n_kv_heads; }
};

/// fp32 weights in llama2.c's layouts: row-major, matrices as nn.Linear
/// ([out, in]), one slab per kind with the layers stacked on the first axis.
/// RoPE is llama2.c's: pairs (2i, 2i+1) of each head rotated by
/// pos * rope_theta^(-2i / head_size).
struct Weights {
  const float *token_embedding = nullptr; ///< [vocab_size, dim]
  const float *rms_att = nullptr;         ///< [n_layers, dim]
  const float *wq = nullptr;              ///< [n_layers, dim, dim]
  const float *wk = nullptr;              ///< [n_layers, kv_dim, dim]
  const float *wv = nullptr;              ///< [n_layers, kv_dim, dim]
  const float *wo = nullptr;              ///< [n_layers, dim, dim]
  const float *rms_ffn = nullptr;         ///< [n_layers, dim]
  const float *w1 = nullptr;              ///< [n_layers, hidden_dim, dim] gate
  const float *w2 = nullptr;              ///< [n_layers, dim, hidden_dim] down
  const float *w3 = nullptr;              ///< [n_layers, hidden_dim, dim] up
  const float *rms_final = nullptr;       ///< [dim]
  const float *wcls =
      nullptr; ///< [vocab_size, dim] (token_embedding if shared)
};

/// Runs the decoder. Not thread-safe; the kernels use the threads OpenMP
/// gives them.
class Model {
public:
  /// Checks the config (positive sizes, dim divisible by n_heads, n_heads
  /// divisible by n_kv_heads, even head_size) and allocates the KV cache
  /// for seq_len positions; throws pk::ShapeError otherwise. `W` must
  /// outlive the model.
  Model(const Config &C, const Weights &W);
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Runs `tokens` (T >= 1 of them, each in [0, vocab_size)) at positions
  /// pos..pos+T-1 (pos + T <= seq_len), writing their keys and values into
  /// the cache, and returns the logits of the last one ([vocab_size]), valid
  /// until the next call. Throws pk::ShapeError for a bad token or range,
  /// before touching the cache.
  std::span<const float> forward(std::span<const int32_t> tokens, int64_t pos);

  const Config &config() const { return Cfg; }

private:
  struct State;
  Config Cfg;
  Weights W;
  std::unique_ptr<State> S;
};

} // namespace llama

#endif // PK_SAMPLES_LLAMA_MODEL_H
