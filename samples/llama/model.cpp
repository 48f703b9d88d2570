//===- model.cpp - llama::Model: the kernels of llama.cpp, layer by layer -===//
//
// Model owns the KV cache and the activations, checks every argument, and
// runs embed -> layer x n_layers -> head over refs into the weight slabs.
// The kernels are reached through one table (Kernels), so that the compiled
// ones (llama.pk.cpp, which define ::embed, ::layer and ::head with the same
// signatures) replace the eager ones by filling it with their addresses.
//
//===----------------------------------------------------------------------===//

#include "model.h"

#include <pk/pk.h>

#include <string>
#include <vector>

namespace eager {
#include "llama.cpp"
} // namespace eager

namespace llama {
namespace {

using pk::In;
using pk::InOut;
using pk::Out;

/// The kernels Model runs, with llama.cpp's signatures.
struct Kernels {
  decltype(&eager::embed) embed;
  decltype(&eager::layer) layer;
  decltype(&eager::head) head;
};

/// The eager kernels (pk.h's NumPy-like semantics).
constexpr Kernels EagerKernels{&eager::embed, &eager::layer, &eager::head};

[[noreturn]] void fail(const std::string &Why) {
  throw pk::ShapeError("llama::Model: " + Why);
}

void checkConfig(const Config &C, const Weights &W) {
  auto Positive = [](const char *Name, int64_t V) {
    if (V <= 0)
      fail(std::string(Name) + " is " + std::to_string(V) +
           " (it must be positive)");
  };
  Positive("dim", C.dim);
  Positive("hidden_dim", C.hidden_dim);
  Positive("n_layers", C.n_layers);
  Positive("n_heads", C.n_heads);
  Positive("n_kv_heads", C.n_kv_heads);
  Positive("vocab_size", C.vocab_size);
  Positive("seq_len", C.seq_len);
  if (C.dim % C.n_heads != 0)
    fail("dim " + std::to_string(C.dim) + " is not a multiple of n_heads " +
         std::to_string(C.n_heads));
  if (C.n_heads % C.n_kv_heads != 0)
    fail("n_heads " + std::to_string(C.n_heads) +
         " is not a multiple of n_kv_heads " + std::to_string(C.n_kv_heads));
  if (C.head_size() % 2 != 0)
    fail("head_size " + std::to_string(C.head_size()) +
         " is odd (RoPE turns pairs)");
  if (!(C.norm_eps > 0) || !(C.rope_theta > 0))
    fail("norm_eps and rope_theta must be positive");
  // The caches and activations Model allocates: a header with a huge
  // seq_len must not wrap their sizes around (the weights' sizes are the
  // checkpoint reader's to check against the file).
  int64_t Cache = 0, Rows = 0;
  if (__builtin_mul_overflow(C.n_layers, C.n_kv_heads, &Cache) ||
      __builtin_mul_overflow(Cache, C.seq_len, &Cache) ||
      __builtin_mul_overflow(Cache, C.head_size(), &Cache) ||
      __builtin_mul_overflow(C.seq_len, C.dim, &Rows) ||
      Cache > (int64_t(1) << 40) / int64_t(sizeof(float)))
    fail("the KV cache of n_layers " + std::to_string(C.n_layers) +
         " x n_kv_heads " + std::to_string(C.n_kv_heads) + " x seq_len " +
         std::to_string(C.seq_len) + " x head_size " +
         std::to_string(C.head_size()) + " floats is too large");
  const std::pair<const char *, const float *> Slabs[] = {
      {"token_embedding", W.token_embedding},
      {"rms_att", W.rms_att},
      {"wq", W.wq},
      {"wk", W.wk},
      {"wv", W.wv},
      {"wo", W.wo},
      {"rms_ffn", W.rms_ffn},
      {"w1", W.w1},
      {"w2", W.w2},
      {"w3", W.w3},
      {"rms_final", W.rms_final},
      {"wcls", C.shared_classifier ? W.token_embedding : W.wcls}};
  for (const auto &[Name, Ptr] : Slabs)
    if (!Ptr)
      fail(std::string("weights.") + Name + " is null");
}

} // namespace

struct Model::State {
  /// Per layer [n_kv_heads, seq_len, head_size] (llama.cpp's layout), the
  /// layers stacked: [n_layers, n_kv_heads, seq_len, head_size].
  std::vector<float> KeyCache, ValueCache;
  std::vector<float> X;      ///< [seq_len, dim]: the residual stream of T rows
  std::vector<float> Logits; ///< [vocab_size]
  Kernels K = EagerKernels;
};

Model::Model(const Config &C, const Weights &Wt) : Cfg(C), W(Wt) {
  checkConfig(C, Wt);
  S = std::make_unique<State>();
  const int64_t Cache = C.n_layers * C.n_kv_heads * C.seq_len * C.head_size();
  S->KeyCache.assign(static_cast<size_t>(Cache), 0.0f);
  S->ValueCache.assign(static_cast<size_t>(Cache), 0.0f);
  S->X.assign(static_cast<size_t>(C.seq_len * C.dim), 0.0f);
  S->Logits.assign(static_cast<size_t>(C.vocab_size), 0.0f);
}

Model::~Model() = default;

std::span<const float> Model::forward(std::span<const int32_t> Tokens,
                                      int64_t Pos) {
  const Config &C = Cfg;
  const int64_t T = static_cast<int64_t>(Tokens.size());
  if (T < 1)
    fail("forward needs at least one token");
  if (Pos < 0 || T > C.seq_len || Pos > C.seq_len - T)
    fail("positions [" + std::to_string(Pos) + ", " + std::to_string(Pos) +
         " + " + std::to_string(T) + ") are outside [0, seq_len " +
         std::to_string(C.seq_len) + ")");
  for (int64_t I = 0; I < T; ++I)
    if (Tokens[static_cast<size_t>(I)] < 0 ||
        Tokens[static_cast<size_t>(I)] >= C.vocab_size)
      fail("token " + std::to_string(Tokens[static_cast<size_t>(I)]) + " (at " +
           std::to_string(I) + ") is outside [0, vocab_size " +
           std::to_string(C.vocab_size) + ")");

  const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim();
  const int64_t Hkv = C.n_kv_heads, Hs = C.head_size(), Seq = C.seq_len;
  const Kernels &K = S->K;
  float *X = S->X.data();
  K.embed(In<int32_t>(Tokens.data(), {T}, "tokens"),
          In<float, 2>(W.token_embedding, {C.vocab_size, D}, "token_embedding"),
          Out<float, 2>(X, {T, D}, "x"));
  for (int64_t L = 0; L < C.n_layers; ++L) {
    const int64_t CacheAt = L * Hkv * Seq * Hs;
    K.layer(InOut<float, 2>(X, {T, D}, "x"),
            In<float>(W.rms_att + L * D, {D}, "rms_att"),
            In<float, 2>(W.wq + L * D * D, {D, D}, "wq"),
            In<float, 2>(W.wk + L * KV * D, {KV, D}, "wk"),
            In<float, 2>(W.wv + L * KV * D, {KV, D}, "wv"),
            In<float, 2>(W.wo + L * D * D, {D, D}, "wo"),
            In<float>(W.rms_ffn + L * D, {D}, "rms_ffn"),
            In<float, 2>(W.w1 + L * F * D, {F, D}, "w1"),
            In<float, 2>(W.w2 + L * D * F, {D, F}, "w2"),
            In<float, 2>(W.w3 + L * F * D, {F, D}, "w3"),
            InOut<float, 3>(S->KeyCache.data() + CacheAt, {Hkv, Seq, Hs},
                            "key_cache"),
            InOut<float, 3>(S->ValueCache.data() + CacheAt, {Hkv, Seq, Hs},
                            "value_cache"),
            Pos, C.norm_eps, C.rope_theta);
  }
  K.head(In<float, 2>(X, {T, D}, "x"), In<float>(W.rms_final, {D}, "rms_final"),
         In<float, 2>(C.shared_classifier ? W.token_embedding : W.wcls,
                      {C.vocab_size, D}, "wcls"),
         Out<float>(S->Logits.data(), {C.vocab_size}, "logits"), C.norm_eps);
  return {S->Logits.data(), S->Logits.size()};
}

} // namespace llama
