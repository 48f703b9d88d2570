//===- Reference.h - llama2.c's forward() in scalar double, for tests -----===//
//
// The reference the model tests compare against: llama2.c's forward()
// (run.c) restated as plain scalar C++ in double: one token at a time, a KV
// cache in llama2.c's layout ([n_layers, seq_len, kv_dim]), every product,
// sum, norm, angle and softmax computed and accumulated in double from the
// float weights it is given. It shares no code with the model (no pk), so
// the comparisons check llama.cpp's kernels, model.cpp's slab offsets and
// cache handling, and pk's eager ops. ModelTest gives it fp32 weights,
// NarrowWeightsTest the same weights rounded to bf16, and the inputs of the
// layers' products rounded to bf16 as the bf16 model's layers round them
// (RoundActivations: rounded from float, like the model's float values).
// Qwen2's q/k/v biases
// (Config::qkv_bias) are added as Qwen2ForCausalLM adds them, before RoPE.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_TESTS_REFERENCE_H
#define PK_SAMPLES_LLAMA_TESTS_REFERENCE_H

#include "model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace llama::test {

/// llama2.c's forward() for one token, in double (see the file comment).
class Reference {
public:
  Reference(const Config &Cfg, const Weights &Wt, bool RoundActivations = false)
      : C(Cfg), W(Wt), Round(RoundActivations),
        KeyCache(static_cast<size_t>(C.n_layers * C.seq_len * C.kv_dim())),
        ValueCache(KeyCache.size()) {}

  std::vector<double> forward(int32_t Token, int64_t Pos) {
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim(),
                  Hs = C.head_size(), Group = C.n_heads / C.n_kv_heads;
    std::vector<double> X(static_cast<size_t>(D)), Xb(X.size()), Q(X.size()),
        Att(static_cast<size_t>(Pos + 1)), Hb(static_cast<size_t>(F)),
        Hb2(Hb.size());
    for (int64_t I = 0; I < D; ++I)
      X[I] = W.token_embedding[Token * D + I];
    for (int64_t L = 0; L < C.n_layers; ++L) {
      rmsnorm(Xb, X, W.rms_att + L * D);
      roundInputs(Xb);
      double *K = &KeyCache[(L * C.seq_len + Pos) * KV];
      double *V = &ValueCache[(L * C.seq_len + Pos) * KV];
      linear(Q.data(), Xb.data(), W.wq + L * D * D, D, D);
      linear(K, Xb.data(), W.wk + L * KV * D, KV, D);
      linear(V, Xb.data(), W.wv + L * KV * D, KV, D);
      if (C.qkv_bias) // Qwen2: q/k/v projections add their biases
        for (int64_t I = 0; I < D; ++I) {
          Q[I] += W.bq[L * D + I];
          if (I < KV) {
            K[I] += W.bk[L * KV + I];
            V[I] += W.bv[L * KV + I];
          }
        }
      // RoPE: the pair (I, I + 1) at offset J = I % Hs of its head.
      for (int64_t I = 0; I < D; I += 2) {
        const double Angle =
            double(Pos) * std::pow(double(C.rope_theta), -double(I % Hs) / Hs);
        rotate(&Q[I], Angle);
        if (I < KV)
          rotate(&K[I], Angle);
      }
      // Attention of each query head over positions 0..Pos.
      for (int64_t H = 0; H < C.n_heads; ++H) {
        const double *Qh = &Q[H * Hs];
        const int64_t KvOff = (H / Group) * Hs;
        double Max = -INFINITY;
        for (int64_t T = 0; T <= Pos; ++T) {
          const double *Kt = &KeyCache[(L * C.seq_len + T) * KV + KvOff];
          double S = 0;
          for (int64_t I = 0; I < Hs; ++I)
            S += Qh[I] * Kt[I];
          Att[T] = S / std::sqrt(double(Hs));
          Max = std::max(Max, Att[T]);
        }
        double Sum = 0;
        for (int64_t T = 0; T <= Pos; ++T)
          Sum += (Att[T] = std::exp(Att[T] - Max));
        for (int64_t I = 0; I < Hs; ++I) {
          double O = 0;
          for (int64_t T = 0; T <= Pos; ++T)
            O +=
                Att[T] / Sum * ValueCache[(L * C.seq_len + T) * KV + KvOff + I];
          Xb[H * Hs + I] = O;
        }
      }
      std::vector<double> Proj(X.size());
      roundInputs(Xb);
      linear(Proj.data(), Xb.data(), W.wo + L * D * D, D, D);
      for (int64_t I = 0; I < D; ++I)
        X[I] += Proj[I];
      // SwiGLU: w2(silu(w1 x) * w3 x), silu(g) = g / (1 + exp(-g)).
      rmsnorm(Xb, X, W.rms_ffn + L * D);
      roundInputs(Xb);
      linear(Hb.data(), Xb.data(), W.w1 + L * F * D, F, D);
      linear(Hb2.data(), Xb.data(), W.w3 + L * F * D, F, D);
      for (int64_t I = 0; I < F; ++I)
        Hb[I] = Hb[I] / (1 + std::exp(-Hb[I])) * Hb2[I];
      roundInputs(Hb);
      linear(Proj.data(), Hb.data(), W.w2 + L * D * F, D, F);
      for (int64_t I = 0; I < D; ++I)
        X[I] += Proj[I];
    }
    rmsnorm(Xb, X, W.rms_final);
    std::vector<double> Logits(static_cast<size_t>(C.vocab_size));
    linear(Logits.data(), Xb.data(), W.wcls, C.vocab_size, D);
    return Logits;
  }

private:
  /// V rounded to float, then to bf16 (to nearest, ties to even), where the
  /// model rounds its float value; NaN as it is.
  static double bf16(double V) {
    float F = static_cast<float>(V);
    uint32_t U;
    std::memcpy(&U, &F, sizeof U);
    if ((U & 0x7fffffffu) > 0x7f800000u)
      return V;
    U = (U + 0x7fffu + ((U >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&F, &U, sizeof F);
    return F;
  }
  /// The inputs of a layer's products, rounded when Round.
  void roundInputs(std::vector<double> &V) const {
    if (Round)
      for (double &E : V)
        E = bf16(E);
  }

  /// Out[i] = sum_j Wt[i, j] In[j] for Wt [N, K] (nn.Linear).
  static void linear(double *Out, const double *In, const float *Wt, int64_t N,
                     int64_t K) {
    for (int64_t I = 0; I < N; ++I) {
      double S = 0;
      for (int64_t J = 0; J < K; ++J)
        S += double(Wt[I * K + J]) * In[J];
      Out[I] = S;
    }
  }
  void rmsnorm(std::vector<double> &Out, const std::vector<double> &In,
               const float *Wt) const {
    double SS = 0;
    for (double V : In)
      SS += V * V;
    const double Scale = 1 / std::sqrt(SS / double(In.size()) + C.norm_eps);
    for (size_t I = 0; I < In.size(); ++I)
      Out[I] = double(Wt[I]) * (Scale * In[I]);
  }
  static void rotate(double *P, double Angle) {
    const double C = std::cos(Angle), S = std::sin(Angle), X = P[0], Y = P[1];
    P[0] = X * C - Y * S;
    P[1] = X * S + Y * C;
  }

  Config C;
  Weights W;
  bool Round = false; ///< round the inputs of the layers' products to bf16
  std::vector<double> KeyCache, ValueCache; ///< [n_layers, seq_len, kv_dim]
};

} // namespace llama::test

#endif // PK_SAMPLES_LLAMA_TESTS_REFERENCE_H
