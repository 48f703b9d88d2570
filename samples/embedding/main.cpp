#include "../common/sample.h"

#include <pk/pk.h>

#include <cstdio>

namespace eager {
#include "embedding.cpp"
}
// The compiled kernel, from embedding.pk.cpp (pk_add_kernels).
void embedding(pk::In<float, 2> table, pk::In<int32_t> ids,
               pk::Out<float, 2> x);

int main() {
  // A table larger than the last-level cache (32000 x 1024 floats, 131 MB),
  // 512 ids spread over it.
  const int64_t V = 32000, D = 1024, T = 512;
  const auto Table = sample::random(V * D, 1);
  std::vector<int32_t> Ids(T);
  for (int64_t I = 0; I < T; ++I)
    Ids[I] = static_cast<int32_t>((I * 7919 + 13) % V);
  std::vector<float> E(T * D), C(T * D);
  auto Run = [&](auto Kernel, std::vector<float> &X) {
    Kernel({Table.data(), {V, D}}, {Ids.data(), {T}}, {X.data(), {T, D}});
  };
  double TE = sample::median_ms([&] { Run(eager::embedding, E); });
  double TC = sample::median_ms([&] { Run(embedding, C); });
  sample::print_head("x", C);
  // A gather moves values: bit for bit.
  bool Ok = sample::agree("x", E, C, 0);
  sample::print_times("[32000, 1024] table, 512 ids", TE, TC);
  std::printf("  compiled: %.2f GB/s (the rows read and written)\n",
              2.0 * T * D * sizeof(float) / (TC * 1e6));
  // An id outside the table: ShapeError before any write.
  Ids[3] = static_cast<int32_t>(V);
  try {
    Run(embedding, C);
    std::printf("  MISSING the ShapeError for id %lld\n", (long long)V);
    Ok = false;
  } catch (const pk::ShapeError &Err) {
    std::printf("  id %lld: pk::ShapeError: %s\n", (long long)V, Err.what());
  }
  sample::print_outputs();
  return Ok ? 0 : 1;
}
