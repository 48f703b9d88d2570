#include "../common/sample.h"

#include <pk/pk.h>

#include <cstdio>

namespace eager {
#include "kv_cache_attention.cpp"
}
// The compiled kernel, from kv_cache_attention.pk.cpp (pk_add_kernels).
void kv_cache_attention(pk::In<float, 4> q, pk::In<float, 3> k,
                        pk::In<float, 3> v, pk::InOut<float, 3> key_cache,
                        pk::InOut<float, 3> value_cache, pk::Out<float, 4> o,
                        int64_t pos);

// The tolerance of eager vs compiled attention (samples/attention_causal
// derives it): each output is a convex combination of value rows in
// [-1, 1], the scores are hs-term dot products and the running sums run over
// the visible keys: 2e-5 + 2e-6 (keys + hs), absolute.
inline double attention_atol(int64_t Keys, int64_t Hs) {
  return 2e-5 + 2e-6 * double(Keys + Hs);
}

int main() {
  // One decode step (T = 1) of 32 query heads over 4 kv heads, hs = 64, at
  // three positions, with a cache of pos + 1 positions and one of 8 pos:
  // the compiled step reads the prefix only, so both take about as long.
  const int64_t Hkv = 4, G = 8, T = 1, Hs = 64;
  bool Ok = true;
  for (int64_t Pos : {128, 1024, 4096}) {
    double Times[2] = {0, 0};
    for (int64_t L : {Pos + T, 8 * Pos}) {
      const auto Q = sample::random(Hkv * G * T * Hs, 1, -1, 1),
                 K = sample::random(Hkv * T * Hs, 2, -1, 1),
                 V = sample::random(Hkv * T * Hs, 3, -1, 1),
                 Cache0 = sample::random(Hkv * L * Hs, 4, -1, 1);
      std::vector<float> EK = Cache0, EV = Cache0, CK = Cache0, CV = Cache0;
      std::vector<float> E(Hkv * G * T * Hs), C(Hkv * G * T * Hs);
      auto Run = [&](auto Kernel, std::vector<float> &KC,
                     std::vector<float> &VC, std::vector<float> &O) {
        Kernel({Q.data(), {Hkv, G, T, Hs}}, {K.data(), {Hkv, T, Hs}},
               {V.data(), {Hkv, T, Hs}}, {KC.data(), {Hkv, L, Hs}},
               {VC.data(), {Hkv, L, Hs}}, {O.data(), {Hkv, G, T, Hs}}, Pos);
      };
      // Writing the same k and v again leaves the caches as they were after
      // the first call: every timed call sees the same inputs.
      double TE = sample::median_ms(
          [&] { Run(eager::kv_cache_attention, EK, EV, E); }, 3);
      double TC =
          sample::median_ms([&] { Run(kv_cache_attention, CK, CV, C); });
      char What[64];
      std::snprintf(What, sizeof What, "o at pos %lld, cache %lld",
                    (long long)Pos, (long long)L);
      Ok &= sample::agree_rel(What, E, C, 0, attention_atol(Pos + T, Hs));
      Ok &= sample::agree("key_cache", EK, CK, 0);
      Ok &= sample::agree("value_cache", EV, CV, 0);
      char Shape[96];
      std::snprintf(Shape, sizeof Shape,
                    "q [4, 8, 1, 64], cache [4, %lld, 64], pos %lld",
                    (long long)L, (long long)Pos);
      sample::print_times(Shape, TE, TC);
      Times[L == Pos + T ? 0 : 1] = TC;
    }
    std::printf("  pos %lld: compiled, cache of 8 pos / cache of pos + 1: "
                "%.2fx the time\n",
                (long long)Pos, Times[1] / Times[0]);
  }
  sample::print_outputs();
  return Ok ? 0 : 1;
}
