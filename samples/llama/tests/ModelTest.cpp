//===- ModelTest.cpp - llama::Model against a scalar llama2.c forward -----===//
//
// The reference (Reference.h) is llama2.c's forward() (run.c) restated as
// plain scalar C++ in double: one token at a time, a KV cache in llama2.c's
// layout ([n_layers, seq_len, kv_dim]), every product, sum, norm, angle and
// softmax computed and accumulated in double from the same float weights. It
// shares no code with the model (no pk), so the comparisons check llama.cpp's
// kernels, model.cpp's slab offsets and cache handling, and pk's eager ops.
//
// Tolerance: max |logits - reference| <= kTol * max |reference logit|, with
// kTol = 2e-5 (see kTol for how it is derived and what was measured).
//
//===----------------------------------------------------------------------===//

#include "model.h"
#include "Reference.h"

#include <pk/ref.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace llama {
/// How GoogleTest names a parameter in failure messages.
void PrintTo(const Config &C, std::ostream *OS) {
  *OS << "dim " << C.dim << ", hidden " << C.hidden_dim << ", " << C.n_layers
      << " layers, " << C.n_heads << " heads, " << C.n_kv_heads
      << " kv heads, vocab " << C.vocab_size << ", seq_len " << C.seq_len
      << (C.qkv_bias ? ", q/k/v biases" : "") << ", rope_theta " << C.rope_theta
      << ", norm_eps " << C.norm_eps;
}
} // namespace llama

namespace {

using llama::Config;
using llama::Model;
using llama::Weights;
using llama::test::Reference;

/// The relative tolerance on logits, derived. The model computes in float
/// (pk's eager matmul, sum and mean accumulate in double, then round to
/// float), the reference in double from the same float weights, so the
/// model's error is the rounding of its float intermediates, u = 2^-24 =
/// 6e-8 each, about 30 of them on the path through a layer (norm, q/k/v,
/// RoPE, scores, softmax, p v, wo, residual, FFN): ~2e-6 per layer. The
/// largest single term is RoPE's angle (pos + t) * theta^(-2i/hs) in float,
/// off by up to ~3 u (pos + t) <= 3 u * 31 = 5.5e-6 rad at seq_len 32, which
/// turns q and k by that much. The residual stream carries each layer's
/// error into the next, and random weights scaled by 1/sqrt(fan_in) with
/// RMSNorm in between keep the amplification O(1): 2 layers give about
/// 2 * (5.5e-6 + 2e-6) = 1.5e-5, and the classifier adds ~u: kTol = 2e-5.
/// Measured over every comparison below: at most 3.6e-7 (the roundings are
/// of random sign and mostly cancel). Seeded bugs are far above it: a causal
/// mask off by one 0.1..0.6, RoPE at pos instead of pos + t 0.04..0.2 (and
/// prefill != token by token), q heads grouped h % n_kv_heads instead of
/// h / group 0.03..0.1.
constexpr double kTol = 2e-5;

/// A deterministic generator (splitmix64): the same weights on every
/// platform.
class Rng {
public:
  explicit Rng(uint64_t Seed) : S(Seed) {}
  /// Uniform in [Lo, Hi).
  float uniform(float Lo, float Hi) {
    uint64_t Z = (S += 0x9E3779B97F4A7C15ull);
    Z = (Z ^ (Z >> 30)) * 0xBF58476D1CE4E5B9ull;
    Z = (Z ^ (Z >> 27)) * 0x94D049BB133111EBull;
    Z ^= Z >> 31;
    const double U = static_cast<double>(Z >> 11) * 0x1.0p-53;
    return static_cast<float>(Lo + (Hi - Lo) * U);
  }

private:
  uint64_t S;
};

/// Random weights in llama2.c's layouts (model.h), owned as one vector per
/// slab: matrices uniform in +-1/sqrt(fan_in) (nn.Linear's init), norms
/// around 1, embeddings in +-1, or +-0.1 when the classifier is the
/// embedding table: there, embeddings as large as the layers' outputs make
/// every token predict itself, and greedy decoding would repeat one token.
struct Checkpoint {
  Config C;
  std::vector<float> Emb, RmsAtt, Wq, Wk, Wv, Wo, RmsFfn, W1, W2, W3, RmsFinal,
      Wcls, Bq, Bk, Bv;

  Checkpoint(const Config &Cfg, uint64_t Seed) : C(Cfg) {
    Rng R(Seed);
    auto Fill = [&](std::vector<float> &V, int64_t N, float Lo, float Hi) {
      V.resize(static_cast<size_t>(N));
      for (float &X : V)
        X = R.uniform(Lo, Hi);
    };
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim(), L = C.n_layers;
    const float AD = 1 / std::sqrt(float(D)), AF = 1 / std::sqrt(float(F));
    const float AE = C.shared_classifier ? 0.1f : 1.0f;
    Fill(Emb, C.vocab_size * D, -AE, AE);
    Fill(RmsAtt, L * D, 0.5f, 1.5f);
    Fill(Wq, L * D * D, -AD, AD);
    Fill(Wk, L * KV * D, -AD, AD);
    Fill(Wv, L * KV * D, -AD, AD);
    Fill(Wo, L * D * D, -AD, AD);
    Fill(RmsFfn, L * D, 0.5f, 1.5f);
    Fill(W1, L * F * D, -AD, AD);
    Fill(W2, L * D * F, -AF, AF);
    Fill(W3, L * F * D, -AD, AD);
    Fill(RmsFinal, D, 0.5f, 1.5f);
    if (!C.shared_classifier)
      Fill(Wcls, C.vocab_size * D, -AD, AD);
    if (C.qkv_bias) { // about the projections' own size
      Fill(Bq, L * D, -0.5f, 0.5f);
      Fill(Bk, L * KV, -0.5f, 0.5f);
      Fill(Bv, L * KV, -0.5f, 0.5f);
    }
  }

  Weights weights() const {
    Weights W;
    W.token_embedding = Emb.data();
    W.rms_att = RmsAtt.data();
    W.wq = Wq.data();
    W.wk = Wk.data();
    W.wv = Wv.data();
    W.wo = Wo.data();
    W.rms_ffn = RmsFfn.data();
    W.w1 = W1.data();
    W.w2 = W2.data();
    W.w3 = W3.data();
    W.rms_final = RmsFinal.data();
    W.wcls = C.shared_classifier ? Emb.data() : Wcls.data();
    if (C.qkv_bias) {
      W.bq = Bq.data();
      W.bk = Bk.data();
      W.bv = Bv.data();
    }
    return W;
  }
};

Config gqaConfig() {
  Config C;
  C.dim = 64;
  C.hidden_dim = 172;
  C.n_layers = 2;
  C.n_heads = 4;
  C.n_kv_heads = 2;
  C.vocab_size = 97;
  C.seq_len = 32;
  C.shared_classifier = false;
  return C;
}

Config mhaConfig() {
  Config C;
  C.dim = 48;
  C.hidden_dim = 128;
  C.n_layers = 2;
  C.n_heads = 6;
  C.n_kv_heads = 6;
  C.vocab_size = 97;
  C.seq_len = 32;
  C.shared_classifier = true;
  return C;
}

/// Qwen2's layer: q/k/v biases, RoPE base 1e6, epsilon 1e-6, the classifier
/// tied to the embedding (Qwen2.5-0.5B's choices); 7 query heads share one
/// kv head (Qwen2.5-0.5B: 14 heads, 2 kv heads).
Config qwen2Config() {
  Config C;
  C.dim = 56;
  C.hidden_dim = 152;
  C.n_layers = 2;
  C.n_heads = 7;
  C.n_kv_heads = 1;
  C.vocab_size = 97;
  C.seq_len = 32;
  C.shared_classifier = true;
  C.qkv_bias = true;
  C.rope_theta = 1e6f;
  C.norm_eps = 1e-6f;
  return C;
}

/// max |Got - Want| / max |Want| (the relative error the tests bound).
double relError(std::span<const float> Got, const std::vector<double> &Want) {
  EXPECT_EQ(Got.size(), Want.size());
  double Err = 0, Scale = 0;
  for (size_t I = 0; I < Want.size() && I < Got.size(); ++I) {
    Err = std::max(Err, std::abs(double(Got[I]) - Want[I]));
    Scale = std::max(Scale, std::abs(Want[I]));
  }
  return Err / Scale;
}

std::vector<float> copyOf(std::span<const float> S) {
  return std::vector<float>(S.begin(), S.end());
}

template <class V> int32_t argmaxOf(const V &L) {
  return static_cast<int32_t>(std::max_element(L.begin(), L.end()) - L.begin());
}

/// The prompt of every test: 7 tokens spread over the vocabulary.
const std::vector<int32_t> kPrompt = {1, 42, 7, 96, 0, 13, 55};

class ModelTest : public ::testing::TestWithParam<Config> {
protected:
  ModelTest() : Ck(GetParam(), 1234) {}
  Checkpoint Ck;
};

/// (a) A prefill of 7 tokens, then decode steps at positions 7 and 8.
TEST_P(ModelTest, PrefillThenDecodeMatchesTheReference) {
  Model M(Ck.C, Ck.weights());
  Reference Ref(Ck.C, Ck.weights());
  std::vector<double> Want;
  for (size_t T = 0; T < kPrompt.size(); ++T)
    Want = Ref.forward(kPrompt[T], static_cast<int64_t>(T));
  double Err = relError(M.forward(kPrompt, 0), Want);
  EXPECT_LE(Err, kTol) << "prefill";
  std::printf("  prefill T=7: max |d| / max |logit| = %.2e\n", Err);
  for (int32_t Tok : {17, 80}) {
    const int64_t Pos = Tok == 17 ? 7 : 8;
    Want = Ref.forward(Tok, Pos);
    Err = relError(M.forward(std::vector<int32_t>{Tok}, Pos), Want);
    EXPECT_LE(Err, kTol) << "decode at " << Pos;
    std::printf("  decode at %lld: max |d| / max |logit| = %.2e\n",
                (long long)Pos, Err);
  }
}

/// (b) The whole prompt in one call, token by token, or in chunks (which
/// puts queries at pos > 0 against a causal mask inside the chunk) gives the
/// same logits, and leaves the same cache (the next steps agree too).
TEST_P(ModelTest, PrefillEqualsTokenByTokenAndChunks) {
  Model Whole(Ck.C, Ck.weights()), One(Ck.C, Ck.weights()),
      Chunks(Ck.C, Ck.weights());
  Reference Ref(Ck.C, Ck.weights());
  const std::span<const int32_t> P(kPrompt);
  const auto WholeLogits = copyOf(Whole.forward(P, 0));
  std::vector<float> OneLogits;
  for (size_t T = 0; T < P.size(); ++T)
    OneLogits = copyOf(One.forward(P.subspan(T, 1), static_cast<int64_t>(T)));
  (void)Chunks.forward(P.subspan(0, 3), 0);
  const auto ChunkLogits = copyOf(Chunks.forward(P.subspan(3), 3));
  std::vector<double> Want;
  for (size_t T = 0; T < P.size(); ++T)
    Want = Ref.forward(P[T], static_cast<int64_t>(T));
  std::vector<double> WholeD(WholeLogits.begin(), WholeLogits.end());
  EXPECT_LE(relError(OneLogits, WholeD), kTol);
  EXPECT_LE(relError(ChunkLogits, WholeD), kTol);
  EXPECT_LE(relError(WholeLogits, Want), kTol);
  std::printf("  whole vs one by one: %.2e, whole vs chunks: %.2e\n",
              relError(OneLogits, WholeD), relError(ChunkLogits, WholeD));
  // Two more tokens at positions 7 and 8 in one call on each model.
  const std::vector<int32_t> Next = {33, 64};
  (void)Ref.forward(Next[0], 7);
  Want = Ref.forward(Next[1], 8);
  EXPECT_LE(relError(Whole.forward(Next, 7), Want), kTol);
  EXPECT_LE(relError(One.forward(Next, 7), Want), kTol);
  EXPECT_LE(relError(Chunks.forward(Next, 7), Want), kTol);
}

/// The whole context in one call (T = seq_len), then nothing more fits.
TEST_P(ModelTest, FullContextPrefill) {
  Model M(Ck.C, Ck.weights());
  Reference Ref(Ck.C, Ck.weights());
  std::vector<int32_t> Tokens;
  std::vector<double> Want;
  for (int64_t T = 0; T < Ck.C.seq_len; ++T) {
    Tokens.push_back(static_cast<int32_t>((T * 37 + 5) % Ck.C.vocab_size));
    Want = Ref.forward(Tokens.back(), T);
  }
  const double Err = relError(M.forward(Tokens, 0), Want);
  EXPECT_LE(Err, kTol);
  std::printf("  prefill T=%lld: %.2e\n", (long long)Ck.C.seq_len, Err);
  EXPECT_THROW(M.forward(std::vector<int32_t>{1}, Ck.C.seq_len),
               pk::ShapeError);
}

/// (c) Greedy decoding picks the reference's tokens for 16 steps. The
/// reference's top two logits differ by more than the tolerance at every
/// step, so a rounding difference cannot legitimately change a pick.
TEST_P(ModelTest, GreedyDecodingMatchesTheReference) {
  Model M(Ck.C, Ck.weights());
  Reference Ref(Ck.C, Ck.weights());
  std::vector<double> Want;
  for (size_t T = 0; T < kPrompt.size(); ++T)
    Want = Ref.forward(kPrompt[T], static_cast<int64_t>(T));
  auto Logits = M.forward(kPrompt, 0);
  std::vector<int32_t> Got, Expected;
  int64_t Pos = static_cast<int64_t>(kPrompt.size());
  for (int Step = 0; Step < 16; ++Step, ++Pos) {
    const int32_t G = argmaxOf(Logits), E = argmaxOf(Want);
    Got.push_back(G);
    Expected.push_back(E);
    std::vector<double> Sorted = Want;
    std::sort(Sorted.rbegin(), Sorted.rend());
    EXPECT_GT(Sorted[0] - Sorted[1], kTol * 2 * std::abs(Sorted[0]))
        << "a near tie at step " << Step;
    Logits = M.forward(std::vector<int32_t>{G}, Pos);
    Want = Ref.forward(E, Pos);
    EXPECT_LE(relError(Logits, Want), kTol) << "step " << Step;
  }
  EXPECT_EQ(Got, Expected);
  // Not a fixed point: greedy decoding of random weights moves around.
  std::sort(Expected.begin(), Expected.end());
  EXPECT_GE(std::unique(Expected.begin(), Expected.end()) - Expected.begin(),
            3);
}

/// (d) Bad tokens and ranges throw pk::ShapeError before touching the cache:
/// the next valid step still matches the reference. The calls at pos 2 would
/// overwrite cached positions that the next step reads.
TEST_P(ModelTest, BadInputsThrowAndLeaveTheCacheAlone) {
  Model M(Ck.C, Ck.weights());
  Reference Ref(Ck.C, Ck.weights());
  for (size_t T = 0; T < kPrompt.size(); ++T)
    (void)Ref.forward(kPrompt[T], static_cast<int64_t>(T));
  (void)M.forward(kPrompt, 0);
  const int32_t V = static_cast<int32_t>(Ck.C.vocab_size);
  const int64_t L = Ck.C.seq_len;
  using Tokens = std::vector<int32_t>;
  EXPECT_THROW(M.forward(Tokens{V}, 7), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{-1}, 7), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3, 4, V}, 2), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3, 4, -5}, 2), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{}, 7), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3, 4}, L - 1), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3}, L), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3, 4}, -1), pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens(static_cast<size_t>(L + 1), 3), 0),
               pk::ShapeError);
  EXPECT_THROW(M.forward(Tokens{3}, INT64_MAX), pk::ShapeError);
  try {
    (void)M.forward(Tokens{3, 4, V}, 2);
  } catch (const pk::ShapeError &E) {
    EXPECT_EQ(std::string(E.what()), "llama::Model: token " +
                                         std::to_string(V) +
                                         " (at 2) is outside [0, vocab_size " +
                                         std::to_string(V) + ")");
  }
  const double Err = relError(M.forward(Tokens{17}, 7), Ref.forward(17, 7));
  EXPECT_LE(Err, kTol);
}

INSTANTIATE_TEST_SUITE_P(Configs, ModelTest,
                         ::testing::Values(gqaConfig(), mhaConfig(),
                                           qwen2Config()),
                         [](const auto &Info) {
                           if (Info.param.qkv_bias)
                             return std::string("Qwen2");
                           return Info.param.n_kv_heads < Info.param.n_heads
                                      ? std::string("GQA")
                                      : std::string("MHA");
                         });

/// (e) The constructor rejects configs the kernels cannot run.
TEST(ModelConfig, RejectsBadConfigs) {
  const Checkpoint Ck(gqaConfig(), 1);
  const Weights W = Ck.weights();
  auto Rejects = [&](auto Change, const char *What) {
    Config C = gqaConfig();
    Change(C);
    EXPECT_THROW(Model(C, W), pk::ShapeError) << What;
  };
  Rejects([](Config &C) { C.dim = 0; }, "dim 0");
  Rejects([](Config &C) { C.hidden_dim = -1; }, "hidden_dim < 0");
  Rejects([](Config &C) { C.n_layers = 0; }, "no layers");
  Rejects([](Config &C) { C.n_heads = 0; }, "no heads");
  Rejects([](Config &C) { C.n_kv_heads = 0; }, "no kv heads");
  Rejects([](Config &C) { C.vocab_size = 0; }, "no vocabulary");
  Rejects([](Config &C) { C.seq_len = 0; }, "no context");
  Rejects([](Config &C) { C.n_heads = 5; }, "dim % n_heads");
  Rejects([](Config &C) { C.n_kv_heads = 3; }, "n_heads % n_kv_heads");
  Rejects(
      [](Config &C) {
        C.dim = 56; // 8 heads of 7
        C.n_heads = 8;
        C.n_kv_heads = 8;
      },
      "odd head_size");
  Rejects([](Config &C) { C.norm_eps = 0; }, "norm_eps 0");
  Rejects([](Config &C) { C.rope_theta = -1; }, "rope_theta < 0");
  // A hostile header's context: the cache size must not wrap around (2^62
  // positions x 2 layers x 2 kv heads x 16 overflows int64) nor be huge.
  Rejects([](Config &C) { C.seq_len = int64_t(1) << 62; }, "cache overflows");
  Rejects([](Config &C) { C.seq_len = int64_t(1) << 36; }, "cache > 1 TiB");
  Weights Missing = W;
  Missing.w2 = nullptr;
  EXPECT_THROW(Model(gqaConfig(), Missing), pk::ShapeError);
  Missing = W;
  Missing.wcls = nullptr; // needed: gqaConfig's classifier is not shared
  EXPECT_THROW(Model(gqaConfig(), Missing), pk::ShapeError);
  // A model with q/k/v biases needs all three.
  const Checkpoint Qwen(qwen2Config(), 1);
  for (const float *Weights::*Bias :
       {&Weights::bq, &Weights::bk, &Weights::bv}) {
    Weights NoBias = Qwen.weights();
    NoBias.*Bias = nullptr;
    EXPECT_THROW(Model(qwen2Config(), NoBias), pk::ShapeError);
  }
  // The good config builds and keeps its config.
  Model M(gqaConfig(), W);
  EXPECT_EQ(M.config().kv_dim(), 32);
}

/// Device::Cuda needs the kernels' CUDA versions: a build without them (the
/// ASan build, a machine without nvcc) refuses it at construction. (With
/// them, test/cuda_shim's llama.cuda.* runs it.)
TEST(ModelConfig, DeviceCudaNeedsCudaKernels) {
  if (llama::hasCuda())
    GTEST_SKIP() << "this build has CUDA kernels";
  const Checkpoint Ck(gqaConfig(), 1);
  EXPECT_THROW(
      Model(gqaConfig(), Ck.weights(), llama::DType::F32, llama::Device::Cuda),
      pk::ShapeError);
}

} // namespace
