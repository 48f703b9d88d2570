#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "attention_causal.cpp"
}
// The compiled kernel, from attention_causal.pk.cpp (pk_add_kernels).
void attention_causal(pk::In<float, 3> q, pk::In<float, 3> k,
                      pk::In<float, 3> v, pk::Out<float, 3> o, float scale);

// The tolerance of eager vs compiled attention, inputs uniform in [-1, 1].
// Each output is a convex combination of v rows (softmax weights >= 0 summing
// to 1), so |o| <= 1 and the error is absolute. With u = 2^-24 = 6e-8:
//  - a score q.k * scale is a d-term dot product, summed in double eagerly and
//    in float compiled: error <= u * d * sum|q_c k_c| * scale <= u * d^1.5;
//    softmax turns score errors <= delta into at most 2 * delta on o, and
//    2 * u * d^1.5 <= 2e-6 * d for every d <= 277;
//  - compiled keeps the running sum l and the output row in float over T
//    keys, rescaled by exp(m_old - m) when the max grows (pk::vm::exp, a few
//    ulp): error <= about 3 * u * T relative to l, i.e. absolute on o, well
//    under 2e-6 * T; 2e-5 covers exp's ulps.
// At d = 64, T = 512 that is 1.2e-3 (measured: 1.3e-7, random signs cancel).
// A key let through the mask (j > i) or dropped (j = i) changes row i by about
// |v_j - o_i| / (i + 1): 0.5 on row 0, ~0.03 on row 16, far beyond it.
inline double attention_atol(int64_t T, int64_t D) {
  return 2e-5 + 2e-6 * double(T + D);
}

int main() {
  const int64_t H = 4, T = 512, D = 64;
  const float Scale = 1.0f / std::sqrt(float(D));
  const auto Q = sample::random(H * T * D, 1, -1, 1),
             K = sample::random(H * T * D, 2, -1, 1),
             V = sample::random(H * T * D, 3, -1, 1);
  std::vector<float> E(H * T * D), C(H * T * D);
  auto Run = [&](auto Kernel, std::vector<float> &O) {
    Kernel({Q.data(), {H, T, D}}, {K.data(), {H, T, D}}, {V.data(), {H, T, D}},
           {O.data(), {H, T, D}}, Scale);
  };
  double TE = sample::median_ms([&] { Run(eager::attention_causal, E); });
  double TC = sample::median_ms([&] { Run(attention_causal, C); });
  sample::print_head("o", C);
  bool Ok = sample::agree_rel("o", E, C, 0, attention_atol(T, D));
  sample::print_times("[4, 512, 64] (H, T, d)", TE, TC);
  // q k^T and p v, each over the causal half (j <= i): 2 * 2 * H * T * T * d / 2.
  const double Flop = 2.0 * H * double(T) * T * D;
  std::printf("  compiled: %.2f GFLOP/s (2*H*T*T*d / time: the causal half of "
              "q kT and p v)\n",
              Flop / (TC * 1e6));
  std::printf("  compiled: one online-softmax pass per query row, no [T, T] "
              "buffer (eager keeps several [%lld, %lld, %lld] temporaries, "
              "%.0f MiB each)\n",
              (long long)H, (long long)T, (long long)T,
              double(H) * T * T * sizeof(float) / (1 << 20));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
