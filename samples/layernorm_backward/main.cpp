#include "../common/sample.h"

#include <pk/pk.h>

#include <cmath>

namespace eager {
#include "layernorm_backward.cpp"
}
// The compiled kernel, from layernorm_backward.pk.cpp (pk_add_kernels).
void layernorm_backward(pk::InOut<float, 2> dinp, pk::InOut<float, 1> dweight,
                        pk::InOut<float, 1> dbias, pk::In<float, 2> dout,
                        pk::In<float, 2> inp, pk::In<float, 1> weight,
                        pk::In<float, 1> mean_, pk::In<float, 1> rstd);

int main() {
  // GPT-2 small: B * T = 256 rows of C = 768 channels.
  const int64_t N = 256, C = 768;
  const auto Inp = sample::random(N * C, 1, -1, 1),
             Dout = sample::random(N * C, 2, -1, 1),
             W = sample::random(C, 3, 0.5f, 1.5f);
  // The forward pass's statistics of each row.
  std::vector<float> Mean(N), Rstd(N);
  for (int64_t R = 0; R < N; ++R) {
    double S = 0, S2 = 0;
    for (int64_t I = 0; I < C; ++I)
      S += Inp[R * C + I];
    Mean[R] = float(S / C);
    for (int64_t I = 0; I < C; ++I)
      S2 += (Inp[R * C + I] - Mean[R]) * (Inp[R * C + I] - Mean[R]);
    Rstd[R] = float(1 / std::sqrt(S2 / C + 1e-5));
  }
  const auto Dinp0 = sample::random(N * C, 4, -1, 1),
             Dw0 = sample::random(C, 5, -1, 1),
             Db0 = sample::random(C, 6, -1, 1);
  std::vector<float> EDinp, EDw, EDb, CDinp, CDw, CDb;
  auto Run = [&](auto Kernel, std::vector<float> &Dinp, std::vector<float> &Dw,
                 std::vector<float> &Db) {
    Kernel({Dinp.data(), {N, C}}, Dw, Db, {Dout.data(), {N, C}},
           {Inp.data(), {N, C}}, W, Mean, Rstd);
  };
  // The gradients accumulate (+=): each timed call starts from the same
  // values.
  auto Reset = [&](std::vector<float> &Dinp, std::vector<float> &Dw,
                   std::vector<float> &Db) {
    Dinp = Dinp0;
    Dw = Dw0;
    Db = Db0;
  };
  double TE = sample::median_ms(
      [&] { Run(eager::layernorm_backward, EDinp, EDw, EDb); }, 7,
      [&] { Reset(EDinp, EDw, EDb); });
  double TC =
      sample::median_ms([&] { Run(layernorm_backward, CDinp, CDw, CDb); }, 7,
                        [&] { Reset(CDinp, CDw, CDb); });
  sample::print_head("dinp", CDinp);
  // dbias and dweight sum N terms of size <= 1 and <= 1.8 (|norm| <= 1.8
  // for these rows) in float, eagerly in double: 2^-24 * N * 1.8 * 4 is
  // 1.1e-4 at N = 256; dinp's row means sum C terms of size <= 1.5 * 1.8:
  // the same bound at C = 768, times rstd (<= 1.8).
  bool Ok = sample::agree_rel("dbias", EDb, CDb, 1e-6, 6e-8 * N * 4);
  Ok &= sample::agree_rel("dweight", EDw, CDw, 1e-6, 6e-8 * N * 1.8 * 4);
  Ok &= sample::agree_rel("dinp", EDinp, CDinp, 1e-6, 6e-8 * C * 2.7 * 1.8 * 4);
  sample::print_times("[256, 768]: dinp, dweight, dbias", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
