#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>
#include <cstdio>

namespace eager {
#include "greedy_head.cpp"
}
// The compiled kernel, from greedy_head.pk.cpp (pk_add_kernels).
void greedy_head(pk::In<float, 2> x, pk::In<float> norm_w,
                 pk::In<float, 2> embedding, pk::Out<int64_t> next, float eps);

int main() {
  // 8 sequences, stories15M's width and Llama 2's vocabulary.
  const int64_t B = 8, Dim = 288, Vocab = 32000;
  const float Eps = 1e-5f;
  const auto X = sample::random(B * Dim, 1);
  const auto W = sample::random(Dim, 2, 0.5f, 1.5f);
  const auto Emb = sample::random(Vocab * Dim, 3, -0.1f, 0.1f);
  std::vector<int64_t> E(B), C(B);
  auto Run = [&](auto Kernel, std::vector<int64_t> &Next) {
    Kernel({X.data(), {B, Dim}}, {W.data(), {Dim}}, {Emb.data(), {Vocab, Dim}},
           {Next.data(), {B}}, Eps);
  };
  double TE = sample::median_ms([&] { Run(eager::greedy_head, E); });
  double TC = sample::median_ms([&] { Run(greedy_head, C); });
  std::printf("  next tokens: ");
  for (int64_t T : C)
    std::printf("%lld ", static_cast<long long>(T));
  std::printf("\n");
  // The logits in double: the two tokens agree, or their logits are a tie
  // within the float matmul's error (sample.h, matmul_atol).
  bool Ok = true;
  for (int64_t R = 0; R < B; ++R) {
    const float *XR = X.data() + R * Dim;
    double SS = 0;
    for (int64_t K = 0; K < Dim; ++K)
      SS += double(XR[K]) * XR[K];
    const double Inv = 1 / std::sqrt(SS / Dim + Eps);
    auto Logit = [&](int64_t V) {
      double Dot = 0;
      for (int64_t K = 0; K < Dim; ++K)
        Dot += XR[K] * Inv * W[K] * Emb[V * Dim + K];
      return Dot;
    };
    if (E[R] != C[R] &&
        std::fabs(Logit(E[R]) - Logit(C[R])) > sample::matmul_atol(Dim)) {
      std::printf("  MISMATCH row %lld: eager %lld, compiled %lld\n",
                  static_cast<long long>(R), static_cast<long long>(E[R]),
                  static_cast<long long>(C[R]));
      Ok = false;
    }
  }
  std::printf("  next tokens: %s\n",
              Ok ? "eager and compiled agree" : "DIFFER");
  sample::print_times("[8, 288] x [32000, 288]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
