//===- sampler.h - llama2.c's sampler: greedy, multinomial, top-p ---------===//
//
// Sampler picks the next token from logits exactly as run.c's sample()
// does, so that a seed gives run.c's tokens: temperature 0 is argmax;
// otherwise the logits are divided by the temperature and softmaxed, one
// coin is drawn from run.c's xorshift* generator, and the token is drawn
// from the whole distribution (top-p <= 0 or >= 1) or from its nucleus
// (top-p). The pieces are free functions so that tests can pin each one.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_SAMPLER_H
#define PK_SAMPLES_LLAMA_SAMPLER_H

#include <cstdint>
#include <span>
#include <vector>

namespace llama {

/// run.c's random_u32: xorshift64 (12, 25, 27) on `State`, then the high 32
/// bits of the state times 0x2545F4914F6CDD1D. State 0 stays 0 forever.
uint32_t randomU32(uint64_t &State);

/// run.c's random_f32: the top 24 bits of randomU32 over 2^24, in [0, 1).
float randomF32(uint64_t &State);

/// run.c's softmax, in place, in fp32 in the same order (max, then exp and
/// sum left to right, then divide), so the probabilities are bit-identical.
void softmaxInPlace(std::span<float> X);

/// The index of the first largest value (run.c's sample_argmax).
int32_t sampleArgmax(std::span<const float> Probabilities);

/// The first index whose cumulative probability exceeds `Coin` in [0, 1),
/// or the last index when rounding leaves the sum below it (sample_mult).
int32_t sampleMultinomial(std::span<const float> Probabilities, float Coin);

/// run.c's sample_topp: candidates with probability >= (1 - TopP) / (n - 1)
/// (no others can be in the nucleus), sorted by probability, descending;
/// the nucleus is the shortest prefix whose cumulative probability exceeds
/// TopP (all candidates if rounding never lets it); then `Coin` scaled by
/// the nucleus' mass picks one, the last on rounding. Ties are sorted
/// stably, by ascending index: glibc's qsort, which run.c calls, is a merge
/// sort (stable) unless memory runs short, so this is its order. Where no
/// probability reaches the cutoff (run.c then reads before its buffer:
/// nearly uniform distributions with a small TopP), every index that is
/// not NaN is a candidate (the last index if all are NaN). A one-token
/// vocabulary gives 0.
int32_t sampleTopP(std::span<const float> Probabilities, float TopP,
                   float Coin);

class Sampler {
public:
  /// As run.c's build_sampler; `Seed` is the generator's initial state.
  /// Throws std::invalid_argument for VocabSize <= 0.
  Sampler(int64_t VocabSize, float Temperature, float TopP, uint64_t Seed);

  /// run.c's sample(): the next token from `Logits` (VocabSize of them),
  /// which it overwrites with the probabilities unless Temperature is 0, as
  /// run.c does. Draws one randomF32 unless Temperature is 0. Throws
  /// std::invalid_argument when Logits has another size.
  int32_t sample(std::span<float> Logits);

  /// The generator's state, which each non-greedy sample advances once.
  uint64_t state() const { return State; }

private:
  int64_t VocabSize;
  float Temperature;
  float TopP;
  uint64_t State;
  /// (probability, index) candidates of sampleTopP, kept between calls.
  std::vector<std::pair<float, int32_t>> Candidates;
};

} // namespace llama

#endif // PK_SAMPLES_LLAMA_SAMPLER_H
