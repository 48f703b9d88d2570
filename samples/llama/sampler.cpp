//===- sampler.cpp - llama2.c's sampler: greedy, multinomial, top-p -------===//
//
// Every loop runs in run.c's order and in fp32: a different summation order
// or precision would move a coin across a bucket boundary now and then, and
// the same seed would no longer give run.c's text.
//
//===----------------------------------------------------------------------===//

#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace llama {
namespace {

using Candidate = std::pair<float, int32_t>; // (probability, index)

int32_t sampleTopPWith(std::span<const float> Probabilities, float TopP,
                       float Coin, std::vector<Candidate> &Candidates) {
  const auto N = static_cast<int64_t>(Probabilities.size());
  if (N <= 1)
    return 0;
  // A probability p below the cutoff is in no nucleus, unless it is the
  // largest: with k >= 1 larger ones summing to at most TopP before it and
  // the rest at most p each, 1 <= TopP + (n - 1) p. So sort only the others;
  // and when the largest is below the cutoff, so is every other: sort all.
  const float Cutoff = (1.0f - TopP) / static_cast<float>(N - 1);
  Candidates.clear();
  for (int64_t I = 0; I < N; ++I)
    if (Probabilities[static_cast<size_t>(I)] >= Cutoff)
      Candidates.emplace_back(Probabilities[static_cast<size_t>(I)],
                              static_cast<int32_t>(I));
  if (Candidates.empty()) // NaNs (from infinite logits) stay out of the sort
    for (int64_t I = 0; I < N; ++I)
      if (!std::isnan(Probabilities[static_cast<size_t>(I)]))
        Candidates.emplace_back(Probabilities[static_cast<size_t>(I)],
                                static_cast<int32_t>(I));
  if (Candidates.empty())
    return static_cast<int32_t>(N - 1); // sample_mult's answer to rounding
  // Descending probability, ties by ascending index: a stable sort of the
  // candidates, which are in index order (std::stable_sort itself warns
  // under clang 19 with libstdc++ 12).
  std::sort(Candidates.begin(), Candidates.end(),
            [](const Candidate &A, const Candidate &B) {
              return A.first != B.first ? A.first > B.first
                                        : A.second < B.second;
            });

  float Cumulative = 0.0f;
  size_t Last = Candidates.size() - 1;
  for (size_t I = 0; I < Candidates.size(); ++I) {
    Cumulative += Candidates[I].first;
    if (Cumulative > TopP) {
      Last = I;
      break;
    }
  }
  const float R = Coin * Cumulative;
  float Cdf = 0.0f;
  for (size_t I = 0; I <= Last; ++I) {
    Cdf += Candidates[I].first;
    if (R < Cdf)
      return Candidates[I].second;
  }
  return Candidates[Last].second;
}

} // namespace

uint32_t randomU32(uint64_t &State) {
  State ^= State >> 12;
  State ^= State << 25;
  State ^= State >> 27;
  return static_cast<uint32_t>((State * 0x2545F4914F6CDD1DULL) >> 32);
}

float randomF32(uint64_t &State) {
  return static_cast<float>(randomU32(State) >> 8) / 16777216.0f;
}

void softmaxInPlace(std::span<float> X) {
  if (X.empty())
    return;
  float Max = X[0];
  for (float V : X.subspan(1))
    if (V > Max)
      Max = V;
  float Sum = 0.0f;
  for (float &V : X) {
    V = std::exp(V - Max);
    Sum += V;
  }
  for (float &V : X)
    V /= Sum;
}

int32_t sampleArgmax(std::span<const float> Probabilities) {
  int32_t Best = 0;
  for (size_t I = 1; I < Probabilities.size(); ++I)
    if (Probabilities[I] > Probabilities[static_cast<size_t>(Best)])
      Best = static_cast<int32_t>(I);
  return Best;
}

int32_t sampleMultinomial(std::span<const float> Probabilities, float Coin) {
  float Cdf = 0.0f;
  for (size_t I = 0; I < Probabilities.size(); ++I) {
    Cdf += Probabilities[I];
    if (Coin < Cdf)
      return static_cast<int32_t>(I);
  }
  return static_cast<int32_t>(Probabilities.size()) - 1;
}

int32_t sampleTopP(std::span<const float> Probabilities, float TopP,
                   float Coin) {
  std::vector<Candidate> Candidates;
  return sampleTopPWith(Probabilities, TopP, Coin, Candidates);
}

Sampler::Sampler(int64_t VocabSize, float Temperature, float TopP,
                 uint64_t Seed)
    : VocabSize(VocabSize), Temperature(Temperature), TopP(TopP), State(Seed) {
  if (VocabSize <= 0)
    throw std::invalid_argument("llama::Sampler: vocab_size is " +
                                std::to_string(VocabSize));
}

int32_t Sampler::sample(std::span<float> Logits) {
  if (static_cast<int64_t>(Logits.size()) != VocabSize)
    throw std::invalid_argument(
        "llama::Sampler: " + std::to_string(Logits.size()) +
        " logits for a vocabulary of " + std::to_string(VocabSize));
  if (Temperature == 0.0f)
    return sampleArgmax(Logits);
  for (float &L : Logits)
    L /= Temperature;
  softmaxInPlace(Logits);
  const float Coin = randomF32(State);
  if (TopP <= 0.0f || TopP >= 1.0f)
    return sampleMultinomial(Logits, Coin);
  return sampleTopPWith(Logits, TopP, Coin, Candidates);
}

} // namespace llama
