#include "../common/sample.h"

#include <pk/pk.h>

#include <cstdio>

namespace eager {
#include "rope.cpp"
}
// The compiled kernels, from rope.pk.cpp (pk_add_kernels).
void rope_half(pk::In<float, 3> x, pk::Out<float, 3> y, int64_t pos,
               float theta);
void rope_interleaved(pk::In<float, 2> x, pk::Out<float, 2> y, int64_t pos,
                      int64_t heads, float theta);

int main() {
  // A prefill of 512 tokens at position 1000 for 32 heads of 128 features.
  const int64_t T = 512, H = 32, Hs = 128, Pos = 1000;
  const float Theta = 10000.0f;
  const auto X = sample::random(T * H * Hs, 1, -1, 1);
  std::vector<float> E(T * H * Hs), C(T * H * Hs);
  // The angles reach (Pos + T) rad; cos and sin of them (pk::vm in compiled
  // code, libm in eager) differ by a few ulp of the reduced angle: 1e-5 on
  // values below 2 in magnitude.
  const double Atol = 1e-5;
  double TE = sample::median_ms([&] {
    eager::rope_half({X.data(), {T, H, Hs}}, {E.data(), {T, H, Hs}}, Pos,
                     Theta);
  });
  double TC = sample::median_ms([&] {
    rope_half({X.data(), {T, H, Hs}}, {C.data(), {T, H, Hs}}, Pos, Theta);
  });
  sample::print_head("rope_half", C);
  bool Ok = sample::agree_rel("rope_half", E, C, 0, Atol);
  sample::print_times("[512, 32, 128] (T, H, hs)", TE, TC);
  TE = sample::median_ms([&] {
    eager::rope_interleaved({X.data(), {T, H * Hs}}, {E.data(), {T, H * Hs}},
                            Pos, H, Theta);
  });
  TC = sample::median_ms([&] {
    rope_interleaved({X.data(), {T, H * Hs}}, {C.data(), {T, H * Hs}}, Pos, H,
                     Theta);
  });
  sample::print_head("rope_interleaved", C);
  Ok &= sample::agree_rel("rope_interleaved", E, C, 0, Atol);
  sample::print_times("[512, 4096] (T, H * hs)", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
