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
// The micro-kernel (<pk/gemm_kernels.h>) is compiled per x86-64 level and
// picked at run time, and the blocking comes from the cache sizes Linux
// lists (<pk/cpuinfo.h>): a default build runs at the CPU's vector width.
// Packing reads each operand along its contiguous axis (GemmOptions), so
// nn.Linear's w[N, K] and a [K, N] weight both stream through the cache.
//
//===----------------------------------------------------------------------===//
#ifndef PK_GEMM_H
#define PK_GEMM_H

#include <pk/cpuinfo.h>
#include <pk/gemm_kernels.h>
#include <pk/half.h>
#include <pk/runtime.h>
#include <pk/workspace.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace pk::rt {

/// The extents of one (possibly batched) matrix product.
struct GemmShape {
  int64_t Batch, M, N, K;
};

/// Cache blocking: the rows (MC) and columns (NC) of a C tile and the
/// depth (KC) of one packed block. MC is rounded up to a multiple of the
/// micro-tile's rows and NC to one of its columns.
struct GemmBlocking {
  int64_t MC = 0, KC = 0, NC = 0;
};

/// How pkc calls gemm: whether to use threads (false below its threading
/// threshold), which axis of each operand is contiguous in memory (packing
/// walks it innermost), and a blocking to use instead of the cache-sized one
/// (tests; zeros: gemm_blocking()).
struct GemmOptions {
  bool Threaded = false;
  bool AUnitK = true;  ///< A(b, i, k), A(b, i, k + 1) adjacent (row-major A)
  bool BUnitK = false; ///< B(b, k, j), B(b, k + 1, j) adjacent (w[N, K])
  GemmBlocking Blocking = {};
};

/// The blocking for elements of `Bytes` bytes and a MR x NR micro-tile, from
/// the cache sizes (BLIS's analysis): a B micro-panel (KC x NR) takes L1,
/// KC at most 384; an A block (MC x KC) a quarter of L2, reused by every B
/// micro-panel; a B block (KC x NC) half of L2.
inline GemmBlocking gemm_blocking(int64_t Bytes, int64_t MR, int64_t NR) {
  const CacheSizes &C = cache_sizes();
  const int64_t L1 = C.L1d > 0 ? C.L1d : int64_t(32) << 10;
  const int64_t L2 = C.L2 > 0 ? C.L2 : int64_t(1) << 20;
  GemmBlocking B;
  B.KC = std::clamp<int64_t>(L1 / (NR * Bytes) / 16 * 16, 64, 384);
  B.MC = std::max<int64_t>(MR, L2 / (4 * B.KC * Bytes) / MR * MR);
  B.NC = std::max<int64_t>(NR, L2 / (2 * B.KC * Bytes) / NR * NR);
  return B;
}

/// A B operand read straight from memory: element (b, k, j) at
/// `Data[b * BatchStride + k * KStride + j * NStride]` (strides 0 along
/// broadcast axes). pkc passes it instead of a lambda when B is a ref, maybe
/// transposed or broadcast, without a prologue; with a unit stride along k
/// or j the small-M path reads it without packing. WT is the stored type:
/// T, or pk::bfloat16 for T = float (weights widened as they are read, so a
/// decode step reads half the bytes).
template <class T, class WT = T> struct StridedB {
  static_assert(std::is_same_v<T, WT> ||
                    (std::is_same_v<T, float> && std::is_same_v<WT, bfloat16>),
                "StridedB holds T, or bfloat16 weights of a float product");
  const WT *Data;
  int64_t BatchStride, KStride, NStride;
  T operator()(int64_t B, int64_t K, int64_t J) const {
    return gemm_detail::weightValue<T>(Data + B * BatchStride + K * KStride +
                                       J * NStride);
  }
};

/// Products with at most this many rows (per batch) run as matrix-vector
/// products when B is a StridedB with a unit stride: below it the packed
/// path spends more time packing the weights than multiplying. Measured
/// (docs/design.md, "Small M"): at 2048 x 2048 with rotating weights the
/// GEMV path is 4.7x faster at M = 1, 1.2-1.5x at M = 32, even at M = 48 on
/// one thread.
inline constexpr int64_t kGemvMaxRows = 32;

namespace gemm_detail {

inline int64_t roundUp(int64_t V, int64_t To) { return (V + To - 1) / To * To; }

/// A 64-byte aligned buffer (the packed panels are read as whole vectors),
/// from the thread's arena (pk/workspace.h): repeated products allocate
/// nothing.
template <class T> class Buffer {
public:
  explicit Buffer(int64_t N)
      : W(std::max<int64_t>(N, 1) * int64_t(sizeof(T))) {}
  T *get() const { return reinterpret_cast<T *>(W.data()); }

private:
  Workspace W;
};

} // namespace gemm_detail

namespace gemm_detail {

template <class X> inline constexpr bool IsStridedB = false;
template <class T, class WT>
inline constexpr bool IsStridedB<StridedB<T, WT>> = true;
template <class X> inline constexpr bool IsStridedFloatB = false;
template <> inline constexpr bool IsStridedFloatB<StridedB<float>> = true;

/// The small-M path: per batch, A (M x K) packed contiguously, the columns
/// of C split between the threads in blocks, each block computed by the
/// level's GEMV kernel reading B once, then handed to the epilogue.
template <class T, class WT, class LoadA, class Epilogue>
void gemv(const GemmShape &S, bool Threaded, const LoadA &A,
          const StridedB<T, WT> &B, const Epilogue &E) {
  const bool ColumnsAlongK = B.KStride == 1;
  const GemvFn<T, WT> Kernel = ColumnsAlongK
                                   ? gemvKernel<T, WT, true>(gemm_isa())
                                   : gemvKernel<T, WT, false>(gemm_isa());
  const int64_t LdW = ColumnsAlongK ? B.NStride : B.KStride;
  // Columns a block: enough to amortise the epilogue calls, few enough that
  // two threads get work at N = 768.
  constexpr int64_t Block = 128;
  const int64_t Blocks = (S.N + Block - 1) / Block;
  const int64_t Threads = Threaded ? thread_count() : 1;
  Buffer<T> Ap(S.M * S.K);
  for (int64_t Bi = 0; Bi < S.Batch; ++Bi) {
    T *PA = Ap.get();
    for (int64_t I = 0; I < S.M; ++I)
      for (int64_t K = 0; K < S.K; ++K)
        PA[I * S.K + K] = A(Bi, I, K);
    const WT *W = B.Data + Bi * B.BatchStride;
    // Blocks [Begin, End) on one thread: contiguous, so that each thread
    // streams its own part of the weights.
    auto Run = [&](int64_t Begin, int64_t End) __attribute__((noinline)) {
      Buffer<T> Out(S.M * Block);
      for (int64_t Bl = Begin; Bl < End; ++Bl) {
        const int64_t J0 = Bl * Block, Nc = std::min(Block, S.N - J0);
        const WT *Wj = ColumnsAlongK ? W + J0 * B.NStride : W + J0;
        Kernel(S.K, S.M, PA, Wj, LdW, Nc, Out.get(), Block);
        for (int64_t I = 0; I < S.M; ++I)
          E(Bi, I, J0, Nc, static_cast<const T *>(Out.get() + I * Block));
      }
    };
    if (Threads > 1 && Blocks > 1) {
#pragma omp parallel
      {
#ifdef _OPENMP
        const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
        const int64_t Per = (Blocks + Tn - 1) / Tn;
        Run(std::min(Blocks, T0 * Per), std::min(Blocks, (T0 + 1) * Per));
#else
        Run(0, Blocks);
#endif
      }
    } else {
      Run(0, Blocks);
    }
  }
}

/// Values of k staged at a time when a transposing pack reads its operand
/// through a lambda: a [rows, 64] block, row by row along the operand's
/// contiguous axis, then transposed into the panel by the level's kernel.
inline constexpr int64_t kPackStage = 64;

/// Panel[k * Width + r] = Load(r, k) for r < Rows, k < Depth (zeros for rows
/// up to Width), where Load(r, k), Load(r, k + 1) are adjacent in memory:
/// staged row-major, transposed by the level's kernel for float.
template <class T, class Load>
void packTransposed(const Load &Ld, int64_t Rows, int64_t Depth, T *Panel,
                    int64_t Width) {
  if constexpr (std::is_same_v<T, float>) {
    alignas(64) float Stage[kMaxPanelWidth * kPackStage];
    const PackFn Pack = packKernel(gemm_isa());
    for (int64_t K0 = 0; K0 < Depth; K0 += kPackStage) {
      const int64_t D = std::min(kPackStage, Depth - K0);
      for (int64_t R = 0; R < Rows; ++R)
        for (int64_t K = 0; K < D; ++K)
          Stage[R * kPackStage + K] = Ld(R, K0 + K);
      Pack(Rows, D, Stage, kPackStage, Panel + K0 * Width, Width);
    }
  } else {
    for (int64_t R = 0; R < Rows; ++R)
      for (int64_t K = 0; K < Depth; ++K)
        Panel[K * Width + R] = Ld(R, K);
    for (int64_t K = 0; K < Depth; ++K)
      for (int64_t R = Rows; R < Width; ++R)
        Panel[K * Width + R] = T(0);
  }
}

/// B[K0 + k, J0 + j] for k < Kc, j < Nc -> panel j / NR, row k, lane j % NR,
/// columns past Nc zero; read along the operand's contiguous axis.
template <class T, class LoadB>
void packB(const LoadB &B, bool UnitK, int64_t Bi, int64_t K0, int64_t Kc,
           int64_t J0, int64_t Nc, int64_t NcPad, int64_t NR, T *PB) {
  for (int64_t Jp = 0; Jp < NcPad; Jp += NR) {
    T *Panel = PB + Jp * Kc;
    const int64_t W = std::min(NR, Nc - Jp);
    if constexpr (IsStridedFloatB<LoadB>) {
      // A float weight read in place: w[N, K] is transposed straight from
      // memory.
      if (B.KStride == 1) {
        packKernel(gemm_isa())(
            W, Kc, B.Data + Bi * B.BatchStride + (J0 + Jp) * B.NStride + K0,
            B.NStride, Panel, NR);
        continue;
      }
    }
    if (UnitK) {
      packTransposed<T>(
          [&](int64_t J, int64_t K) { return B(Bi, K0 + K, J0 + Jp + J); }, W,
          Kc, Panel, NR);
    } else {
      for (int64_t K = 0; K < Kc; ++K) {
        for (int64_t J = 0; J < W; ++J)
          Panel[K * NR + J] = B(Bi, K0 + K, J0 + Jp + J);
        for (int64_t J = W; J < NR; ++J)
          Panel[K * NR + J] = T(0);
      }
    }
  }
}

/// A[I0 + i, K0 + k] for i < Mc, k < Kc -> panel i / MR, column k, lane
/// i % MR, rows past Mc zero.
template <class T, class LoadA>
void packA(const LoadA &A, bool UnitK, int64_t Bi, int64_t I0, int64_t Mc,
           int64_t McPad, int64_t MR, int64_t K0, int64_t Kc, T *PA) {
  for (int64_t Ip = 0; Ip < McPad; Ip += MR) {
    T *Panel = PA + Ip * Kc;
    const int64_t H = std::min(MR, Mc - Ip);
    if (UnitK) {
      packTransposed<T>(
          [&](int64_t I, int64_t K) { return A(Bi, I0 + Ip + I, K0 + K); }, H,
          Kc, Panel, MR);
    } else {
      for (int64_t K = 0; K < Kc; ++K) {
        for (int64_t I = 0; I < H; ++I)
          Panel[K * MR + I] = A(Bi, I0 + Ip + I, K0 + K);
        for (int64_t I = H; I < MR; ++I)
          Panel[K * MR + I] = T(0);
      }
    }
  }
}

} // namespace gemm_detail

/// C = A B for every batch, through the lambdas described at the top of
/// this file, with the micro-kernel of gemm_isa().
template <class T, class LoadA, class LoadB, class Epilogue>
void gemm(const GemmShape &S, const GemmOptions &Opt, const LoadA &A,
          const LoadB &B, const Epilogue &E) {
  using namespace gemm_detail;
  if (S.Batch <= 0 || S.M <= 0 || S.N <= 0)
    return;
  if constexpr (IsStridedB<LoadB>)
    if (S.M <= kGemvMaxRows && S.K > 0 && (B.KStride == 1 || B.NStride == 1))
      return gemv<T>(S, Opt.Threaded, A, B, E);
  const MicroKernel<T> Micro = microKernel<T>(gemm_isa());
  const int64_t MR = Micro.Shape.MR, NR = Micro.Shape.NR;
  GemmBlocking Blk = Opt.Blocking;
  if (Blk.MC <= 0 || Blk.KC <= 0 || Blk.NC <= 0)
    Blk = gemm_blocking(int64_t(sizeof(T)), MR, NR);
  const int64_t KC = std::max<int64_t>(1, std::min(Blk.KC, S.K));
  int64_t MC = roundUp(std::min(Blk.MC, S.M), MR);
  int64_t NC = roundUp(std::min(Blk.NC, S.N), NR);
  // Enough tiles for every thread: halve the tiles while there are fewer
  // than two per thread (a 128 x 128 product is one default tile).
  const int64_t Threads = Opt.Threaded ? thread_count() : 1;
  auto Tiles = [&] {
    return S.Batch * ((S.M + MC - 1) / MC) * ((S.N + NC - 1) / NC);
  };
  // Each step shrinks a side that is still wider than its micro-tile (the
  // columns are the one when they are the larger side or the rows are one
  // micro-tile already), so the loop ends: with a 16-row micro-tile and
  // 32-column one (AVX-512), 33 x 16 used to halve the one-micro-tile
  // columns forever (found by the fuzzer: regressions/gemm_tile_split_hang).
  while (Threads > 1 && Tiles() < 2 * Threads && (MC > MR || NC > NR)) {
    if (MC > MR && (MC >= NC || NC <= NR))
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
        T *PB = Bp.get();
        packB(B, Opt.BUnitK, Bi, K0, Kc, J0, Nc, NcPad, NR, PB);
        T *PA = Ap.get();
        packA(A, Opt.AUnitK, Bi, I0, Mc, McPad, MR, K0, Kc, PA);
        for (int64_t Jp = 0; Jp < NcPad; Jp += NR)
          for (int64_t Ip = 0; Ip < McPad; Ip += MR)
            Micro.Run(Kc, PA + Ip * Kc, PB + Jp * Kc, C + Ip * NC + Jp, NC);
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
