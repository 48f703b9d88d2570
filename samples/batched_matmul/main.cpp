#include "../common/sample.h"

#include <pk/pk.h>

namespace eager {
#include "batched_matmul.cpp"
}
// The compiled kernels, from batched_matmul.pk.cpp (pk_add_kernels).
void batched_matmul(pk::In<float, 3> a, pk::In<float, 3> b,
                    pk::Out<float, 3> c);
void batched_matmul_shared(pk::In<float, 3> a, pk::In<float, 2> w,
                           pk::Out<float, 3> c);

int main() {
  const int64_t Bn = 8, M = 256, N = 256, K = 256;
  const auto A = sample::random(Bn * M * K, 1, -1, 1),
             B = sample::random(Bn * K * N, 2, -1, 1),
             W = sample::random(K * N, 3, -1, 1);
  std::vector<float> E(Bn * M * N), C(Bn * M * N), ES(Bn * M * N),
      CS(Bn * M * N);
  auto Run = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({A.data(), {Bn, M, K}}, {B.data(), {Bn, K, N}},
           {Y.data(), {Bn, M, N}});
  };
  auto RunShared = [&](auto Kernel, std::vector<float> &Y) {
    Kernel({A.data(), {Bn, M, K}}, {W.data(), {K, N}}, {Y.data(), {Bn, M, N}});
  };
  double TE = sample::median_ms([&] { Run(eager::batched_matmul, E); });
  double TC = sample::median_ms([&] { Run(batched_matmul, C); });
  double TES =
      sample::median_ms([&] { RunShared(eager::batched_matmul_shared, ES); });
  double TCS = sample::median_ms([&] { RunShared(batched_matmul_shared, CS); });
  sample::print_head("c", C);
  sample::print_head("c_shared", CS);
  // Eager sums in double, compiled in float: sample::matmul_atol says why
  // 1e-5 * sqrt(K).
  const double Atol = sample::matmul_atol(K);
  bool Ok = sample::agree_rel("c", E, C, 1e-6, Atol) &
            sample::agree_rel("c_shared", ES, CS, 1e-6, Atol);
  const double Flop = 2.0 * Bn * M * N * K;
  sample::print_times("[8, 256, 256] x [8, 256, 256]", TE, TC);
  sample::print_times("[8, 256, 256] x [256, 256]", TES, TCS);
  std::printf("  compiled: %.2f GFLOP/s batched, %.2f GFLOP/s shared "
              "(2*B*M*N*K / time)\n",
              Flop / (TC * 1e6), Flop / (TCS * 1e6));
  sample::print_outputs();
  return Ok ? 0 : 1;
}
