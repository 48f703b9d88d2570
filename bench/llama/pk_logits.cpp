//===- pk_logits.cpp - pk-llama's logits for hf_compare.py ----------------===//
//
// Not part of the build: hf_compare.py compiles it with g++, links it with
// the build's libpk_llama.a and libpk_llama_kernels.a (the model and the
// kernels pkc compiled) and runs it in one of two modes:
//
//   pk_logits forced CHECKPOINT OUT.f32 TOKEN...
//       Runs the T tokens through llama::Model twice, on two models of the
//       same weights: token by token (forward(token t, pos t), t = 0..T-1),
//       keeping the logits of every position, then as one prefill
//       (forward(all T tokens, pos 0)), which returns the last position's.
//       OUT.f32: (T + 1) x vocab_size float32, the T token-by-token rows,
//       then the prefill's row.
//
//   pk_logits greedy CHECKPOINT OUT.f32 N TOKEN...
//       Prefills the prompt TOKEN... in one call, then decodes greedily one
//       token per call: token k is the argmax of logits row k (the first
//       index of the maximum, as llama2.c's sample_argmax), row 0 being the
//       prefill's and row k+1 that of forward(token k, pos = T + k).
//       OUT.f32: N x vocab_size float32 (rows 0..N-1); stdout: the N tokens.
//
// Either mode prints "vocab=N seq_len=N" first on stdout. Errors: a message
// on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"
#include "model.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

int32_t argmax(std::span<const float> L) {
  size_t Best = 0;
  for (size_t I = 1; I < L.size(); ++I)
    if (L[I] > L[Best])
      Best = I;
  return static_cast<int32_t>(Best);
}

std::vector<int32_t> parseTokens(int Argc, char **Argv, int First) {
  std::vector<int32_t> Tokens;
  for (int I = First; I < Argc; ++I)
    Tokens.push_back(static_cast<int32_t>(std::atol(Argv[I])));
  return Tokens;
}

} // namespace

int main(int Argc, char **Argv) {
  const std::string Mode = Argc > 1 ? Argv[1] : "";
  if (!((Mode == "forced" && Argc >= 5) || (Mode == "greedy" && Argc >= 6))) {
    std::fprintf(stderr,
                 "usage: %s forced CHECKPOINT OUT.f32 TOKEN...\n"
                 "       %s greedy CHECKPOINT OUT.f32 N TOKEN...\n",
                 Argv[0], Argv[0]);
    return 2;
  }
  try {
    const llama::Checkpoint Ckpt = llama::Checkpoint::open(Argv[2]);
    const llama::Config &C = Ckpt.config();
    std::printf("vocab=%lld seq_len=%lld\n",
                static_cast<long long>(C.vocab_size),
                static_cast<long long>(C.seq_len));
    std::vector<float> Out;

    if (Mode == "forced") {
      const std::vector<int32_t> Tokens = parseTokens(Argc, Argv, 4);
      const int64_t T = static_cast<int64_t>(Tokens.size());
      {
        llama::Model Step(C, Ckpt.weights());
        for (int64_t P = 0; P < T; ++P) {
          std::span<const float> L =
              Step.forward(std::span<const int32_t>(&Tokens[P], 1), P);
          Out.insert(Out.end(), L.begin(), L.end());
        }
      }
      llama::Model Prefill(C, Ckpt.weights());
      std::span<const float> L = Prefill.forward(Tokens, 0);
      Out.insert(Out.end(), L.begin(), L.end());
    } else {
      const int64_t N = std::atol(Argv[4]);
      const std::vector<int32_t> Prompt = parseTokens(Argc, Argv, 5);
      const int64_t T = static_cast<int64_t>(Prompt.size());
      llama::Model M(C, Ckpt.weights());
      std::span<const float> L = M.forward(Prompt, 0);
      for (int64_t K = 0; K < N; ++K) {
        Out.insert(Out.end(), L.begin(), L.end());
        const int32_t Next = argmax(L);
        std::printf("%s%d", K ? " " : "", Next);
        if (K + 1 < N)
          L = M.forward(std::span<const int32_t>(&Next, 1), T + K);
      }
      std::printf("\n");
    }

    std::FILE *F = std::fopen(Argv[3], "wb");
    if (!F ||
        std::fwrite(Out.data(), sizeof(float), Out.size(), F) != Out.size() ||
        std::fclose(F) != 0) {
      std::fprintf(stderr, "cannot write %s\n", Argv[3]);
      return 1;
    }
    return 0;
  } catch (const std::exception &E) {
    std::fprintf(stderr, "error: %s\n", E.what());
    return 1;
  }
}
