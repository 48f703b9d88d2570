//===- pk/gemm.h - The blocked matrix product of pkc's matmul ---*- C++ -*-===//
//
// pkc compiles a matmul group (see docs/design.md, "Matmul") into one call of
// pk::rt::gemm with three lambdas it generates from the kernel:
//
//   A(b, i, k) -> T    element (i, k) of the left operand of batch b, with the
//                      operand's elementwise producers applied (prologue);
//   B(b, k, j) -> T    the same for the right operand;
//   E(b, i, j0, n, acc) the epilogue of row i, columns [j0, j0 + n): acc[l]
//                      is the finished sum for column j0 + l; it computes
//                      the consumers (bias, activation, residual) and stores.
//
// The loops are the classic BLIS/GotoBLAS structure, with the C tile kept in
// a per-thread buffer so that the epilogue runs once per element, after the
// last K block, while the tile is still in cache:
//
//   parallel for each tile (b, MC rows, NC columns) of C:    threads
//     Ct = 0                                                 MC x NC buffer
//     for each KC block of K:
//       pack B[kc, nc] into NR-column micro-panels           ~L2
//       pack A[mc, kc] into MR-row micro-panels              ~L2
//       for each NR micro-panel of B (stays in L1):
//         for each MR micro-panel of A:
//           Ct[MR x NR] += A-panel * B-panel                 registers
//     E(rows of Ct)
//
// Packing reads each operand through its lambda once per tile, so a
// transposed or broadcast operand, or one with a prologue, costs the same in
// the micro-kernel; edges are packed with zeros, so the micro-kernel always
// runs full MR x NR tiles and only the epilogue sees the true extents.
//
// The micro-kernel is written with GCC/Clang vector extensions sized by the
// target the *user's* compiler builds for (-march): 16-byte vectors by
// default, 32 with AVX, 64 with AVX-512F. It holds MR x NR accumulators in
// registers: 6 x 2 vectors (12 of 16 registers) up to AVX2, 12 x 2 (24 of
// 32) with AVX-512.
//
//===----------------------------------------------------------------------===//
#ifndef PK_GEMM_H
#define PK_GEMM_H

#include <pk/runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace pk::rt {

/// The extents of one (possibly batched) matrix product.
struct GemmShape {
  int64_t Batch, M, N, K;
};

/// Cache blocking, chosen by pkc's CPU schedule (Tile IR) from the cache
/// sizes of its target: the rows (MC) and columns (NC) of a C tile and the
/// depth (KC) of one packed block. MC is rounded up to a multiple of MR and
/// NC to one of NR here, where MR and NR are known.
struct GemmBlocking {
  int64_t MC, KC, NC;
};

namespace gemm_detail {

#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif

template <class T> struct Micro {
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  static constexpr int kLanes = kVectorBytes / int(sizeof(T));
  static constexpr int kVectorsPerRow = 2;
  static constexpr int NR = kLanes * kVectorsPerRow;
  static constexpr int MR = kVectorBytes == 64 ? 12 : 6;
};

inline int64_t roundUp(int64_t V, int64_t To) { return (V + To - 1) / To * To; }

/// Ct[MR x NR] (row stride LdC) += the product of an A micro-panel
/// (KC columns of MR values) and a B micro-panel (KC rows of NR values).
template <class T>
inline void microKernel(int64_t KC, const T *__restrict Ap,
                        const T *__restrict Bp, T *__restrict Ct, int64_t LdC) {
  using M = Micro<T>;
  using V = typename M::Vec;
  constexpr int MR = M::MR, NV = M::kVectorsPerRow, L = M::kLanes;
  V Acc[MR][NV];
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(&Acc[R][C], Ct + R * LdC + C * L, sizeof(V));
  for (int64_t K = 0; K < KC; ++K) {
    V Bv[NV];
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      Bv[C] = *reinterpret_cast<const V *>(Bp + K * M::NR + C * L);
#pragma GCC unroll 16
    for (int R = 0; R < MR; ++R) {
      const T A = Ap[K * MR + R];
#pragma GCC unroll 4
      for (int C = 0; C < NV; ++C)
        Acc[R][C] += A * Bv[C];
    }
  }
#pragma GCC unroll 16
  for (int R = 0; R < MR; ++R)
#pragma GCC unroll 4
    for (int C = 0; C < NV; ++C)
      std::memcpy(Ct + R * LdC + C * L, &Acc[R][C], sizeof(V));
}

/// A 64-byte aligned buffer (the packed panels are read as whole vectors).
template <class T> class Buffer {
public:
  explicit Buffer(int64_t N)
      : P(static_cast<T *>(
            ::operator new(size_t(std::max<int64_t>(N, 1)) * sizeof(T),
                           std::align_val_t(64)))) {}
  ~Buffer() { ::operator delete(P, std::align_val_t(64)); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  T *get() const { return P; }

private:
  T *P;
};

} // namespace gemm_detail

/// C = A B for every batch, through the lambdas described at the top of
/// this file. `Threaded`: run the tiles on OpenMP threads (pkc passes false
/// below its threading threshold).
template <class T, class LoadA, class LoadB, class Epilogue>
void gemm(const GemmShape &S, GemmBlocking Blk, bool Threaded, const LoadA &A,
          const LoadB &B, const Epilogue &E) {
  using namespace gemm_detail;
  using Mi = Micro<T>;
  constexpr int64_t MR = Mi::MR, NR = Mi::NR;
  if (S.Batch <= 0 || S.M <= 0 || S.N <= 0)
    return;
  const int64_t KC = std::max<int64_t>(1, std::min(Blk.KC, S.K));
  int64_t MC = roundUp(std::min(Blk.MC, S.M), MR);
  int64_t NC = roundUp(std::min(Blk.NC, S.N), NR);
  // Enough tiles for every thread: halve the tiles while there are fewer
  // than two per thread (a 128 x 128 product is one default tile).
  const int64_t Threads = Threaded ? thread_count() : 1;
  auto Tiles = [&] {
    return S.Batch * ((S.M + MC - 1) / MC) * ((S.N + NC - 1) / NC);
  };
  while (Threads > 1 && Tiles() < 2 * Threads && (MC > MR || NC > NR)) {
    if (MC >= NC && MC > MR)
      MC = roundUp(MC / 2, MR);
    else
      NC = roundUp(NC / 2, NR);
  }
  const int64_t TilesM = (S.M + MC - 1) / MC, TilesN = (S.N + NC - 1) / NC;
  const int64_t NumTiles = S.Batch * TilesM * TilesN;

  // One thread's share: tiles First, First + Step, ... Not inlined: inlined
  // into gemm() (the serial path) g++ compiled the tile loop ~1.5x slower
  // than the same code in the OpenMP region's outlined function (1024^3,
  // one thread: 139 against 207 GFLOP/s with AVX-512).
  auto Run = [&](int64_t First, int64_t Step) __attribute__((noinline)) {
    Buffer<T> Ap(MC * KC), Bp(KC * NC), Ct(MC * NC);
    for (int64_t Tile = First; Tile < NumTiles; Tile += Step) {
      const int64_t Bi = Tile / (TilesM * TilesN);
      const int64_t I0 = Tile / TilesN % TilesM * MC;
      const int64_t J0 = Tile % TilesN * NC;
      const int64_t Mc = std::min(MC, S.M - I0), Nc = std::min(NC, S.N - J0);
      const int64_t McPad = roundUp(Mc, MR), NcPad = roundUp(Nc, NR);
      T *C = Ct.get();
      std::fill(C, C + McPad * NC, T(0));
      for (int64_t K0 = 0; K0 < S.K; K0 += KC) {
        const int64_t Kc = std::min(KC, S.K - K0);
        // B[K0 + k, J0 + j] -> panel j / NR, row k, lane j % NR.
        T *PB = Bp.get();
        for (int64_t Jp = 0; Jp < NcPad; Jp += NR) {
          T *Panel = PB + Jp * Kc;
          const int64_t W = std::min(NR, Nc - Jp);
          for (int64_t K = 0; K < Kc; ++K) {
            for (int64_t J = 0; J < W; ++J)
              Panel[K * NR + J] = B(Bi, K0 + K, J0 + Jp + J);
            for (int64_t J = W; J < NR; ++J)
              Panel[K * NR + J] = T(0);
          }
        }
        // A[I0 + i, K0 + k] -> panel i / MR, column k, lane i % MR.
        T *PA = Ap.get();
        for (int64_t Ip = 0; Ip < McPad; Ip += MR) {
          T *Panel = PA + Ip * Kc;
          const int64_t H = std::min(MR, Mc - Ip);
          for (int64_t I = 0; I < H; ++I)
            for (int64_t K = 0; K < Kc; ++K)
              Panel[K * MR + I] = A(Bi, I0 + Ip + I, K0 + K);
          for (int64_t I = H; I < MR; ++I)
            for (int64_t K = 0; K < Kc; ++K)
              Panel[K * MR + I] = T(0);
        }
        for (int64_t Jp = 0; Jp < NcPad; Jp += NR)
          for (int64_t Ip = 0; Ip < McPad; Ip += MR)
            microKernel<T>(Kc, PA + Ip * Kc, PB + Jp * Kc, C + Ip * NC + Jp,
                           NC);
      }
      for (int64_t I = 0; I < Mc; ++I)
        E(Bi, I0 + I, J0, Nc, static_cast<const T *>(C + I * NC));
    }
  };
  if (Threads > 1 && NumTiles > 1) {
#pragma omp parallel
    {
#ifdef _OPENMP
      Run(omp_get_thread_num(), omp_get_num_threads());
#else
      Run(0, 1);
#endif
    }
  } else {
    Run(0, 1);
  }
}

} // namespace pk::rt

#endif // PK_GEMM_H
