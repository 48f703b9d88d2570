#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "attention_probs.cpp"
}
// The compiled kernel, from attention_probs.pk.cpp (pk_add_kernels).
void attention_probs(pk::In<float, 3> q, pk::In<float, 3> k, pk::In<float, 3> v,
                     pk::Out<float, 3> p, pk::Out<float, 3> o, float scale);

int main() {
  const int64_t H = 4, T = 256, D = 64;
  const float Scale = 1.0f / std::sqrt(float(D));
  const auto Q = sample::random(H * T * D, 1, -1, 1),
             K = sample::random(H * T * D, 2, -1, 1),
             V = sample::random(H * T * D, 3, -1, 1);
  std::vector<float> EP(H * T * T), CP(H * T * T), EO(H * T * D), CO(H * T * D);
  auto Run = [&](auto Kernel, std::vector<float> &P, std::vector<float> &O) {
    Kernel({Q.data(), {H, T, D}}, {K.data(), {H, T, D}}, {V.data(), {H, T, D}},
           {P.data(), {H, T, T}}, {O.data(), {H, T, D}}, Scale);
  };
  double TE = sample::median_ms([&] { Run(eager::attention_probs, EP, EO); });
  double TC = sample::median_ms([&] { Run(attention_probs, CP, CO); });
  sample::print_head("o", CO);
  // A score is a d-term dot product (error <= u d^1.5 with u = 2^-24, eager
  // sums in double); softmax turns score errors <= delta into probabilities
  // off by <= 2 delta relative, and each probability is <= 1: 2e-6 * d plus
  // exp's few ulps (2e-6). o is a convex combination of v rows (|v| <= 1)
  // summed over T keys in float: the probabilities' error plus u * T. A key
  // let through the mask moves row 0's probabilities by 0.5.
  const double AtolP = 2e-6 + 2e-6 * D;
  bool Ok = sample::agree_rel("p", EP, CP, 0, AtolP);
  Ok &= sample::agree_rel("o", EO, CO, 0, AtolP + 2e-6 * T);
  sample::print_times("[4, 256, 64] (H, T, d), probabilities stored", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
