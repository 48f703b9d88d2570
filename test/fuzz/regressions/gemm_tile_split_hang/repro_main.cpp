// Calls the compiled gemm_tile_split_hang (pkc gemm_tile_split_hang.cpp) on
// [M, K] x [K, N] of the extents given: `repro 33 1000 16` never returns
// with OMP_NUM_THREADS >= 2 (see `hang`).
#include <pk/pk.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace fz_gemm_tile_split_hang {
void gemm_tile_split_hang(pk::In<float, 2>, pk::In<float, 2>, pk::Out<float, 2>);
}
int main(int argc, char **argv) {
  int64_t M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
  std::vector<float> a(M * K, 0.5f), b(K * N, 0.25f), o(M * N);
  fz_gemm_tile_split_hang::gemm_tile_split_hang(pk::In<float,2>(a.data(), {M, K}), pk::In<float,2>(b.data(), {K, N}), pk::Out<float,2>(o.data(), {M, N}));
  std::fprintf(stderr, "ok %f\n", o[0]);
}
