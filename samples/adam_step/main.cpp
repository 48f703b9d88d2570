#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "adam_step.cpp"
}
void adam_step(pk::InOut<float> p, pk::InOut<float> m, pk::InOut<float> v,
               pk::In<float> g, float lr, float beta1, float beta2, float eps,
               float bias1, float bias2);

int main() {
  const int64_t N = 1 << 22;
  const auto P0 = sample::random(N, 1), M0 = sample::random(N, 2, -0.1f, 0.1f),
             V0 = sample::random(N, 3, 0, 0.1f), G = sample::random(N, 4);
  std::vector<float> PE, ME, VE, PC, MC, VC;
  const float Lr = 1e-3f, B1 = 0.9f, B2 = 0.999f, Eps = 1e-8f;
  const float Bias1 = 1 - 0.9f * 0.9f, Bias2 = 1 - 0.999f * 0.999f;
  double TE = sample::median_ms(
      [&] { eager::adam_step(PE, ME, VE, G, Lr, B1, B2, Eps, Bias1, Bias2); },
      7, [&] { PE = P0, ME = M0, VE = V0; });
  double TC = sample::median_ms(
      [&] { adam_step(PC, MC, VC, G, Lr, B1, B2, Eps, Bias1, Bias2); }, 7,
      [&] { PC = P0, MC = M0, VC = V0; });
  sample::print_head("p", PC);
  bool Ok = sample::agree("p", PE, PC, 1) & sample::agree("m", ME, MC, 0) &
            sample::agree("v", VE, VC, 0);
  sample::print_times("[4194304]", TE, TC);
  sample::print_outputs();
  return Ok ? 0 : 1;
}
