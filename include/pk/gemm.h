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
// pk::rt::gemm_dual runs two products that share A (SwiGLU's x W1ᵀ and
// x W3ᵀ, combined elementwise in one store) as one pass: A is packed once
// per tile (read once per row block at small M), both B operands are
// multiplied into C tiles of their own, and the epilogue gets both rows:
// E(b, i, j0, n, acc, acc2).
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
#include <pk/dispatch.h>
#include <pk/gemm_amx.h>
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
  bool B2UnitK = false; ///< the same for gemm_dual's second B
  /// A's values are bfloat16 values (the kernel rounds them,
  /// `cast<pk::bfloat16>(x)`, or reads a bfloat16 ref): with bfloat16
  /// weights read in place the product may run on AMX (<pk/gemm_amx.h>).
  bool ABf16 = false;
};

/// The most memory a thread's C tile takes (it is read and written once per
/// K block, KC / 4 flops a byte, so it need not stay in cache).
inline constexpr int64_t kTileBytes = int64_t(4) << 20;

/// The blocking for elements of `Bytes` bytes and a MR x NR micro-tile, from
/// the cache sizes (BLIS's analysis): a B micro-panel (KC x NR) takes half
/// of L1, so that it stays there while the A micro-panels stream past it;
/// an A block (MC x KC) half of L2, reused by every B micro-panel; a column
/// block of B (KC x NC) a quarter of L3, at most 4096 columns, and the C
/// tile (MC x NC) at most kTileBytes.
inline GemmBlocking gemm_blocking(int64_t Bytes, int64_t MR, int64_t NR) {
  const CacheSizes &C = cache_sizes();
  const int64_t L1 = C.L1d > 0 ? C.L1d : int64_t(32) << 10;
  const int64_t L2 = C.L2 > 0 ? C.L2 : int64_t(1) << 20;
  const int64_t L3 = C.LastLevel > L2 ? C.LastLevel : int64_t(8) << 20;
  GemmBlocking B;
  B.KC = std::clamp<int64_t>(L1 / (2 * NR * Bytes) / 16 * 16, 64, 384);
  B.MC = std::max<int64_t>(MR, L2 / (2 * B.KC * Bytes) / MR * MR);
  B.NC = std::max<int64_t>(NR, std::min({int64_t(4096), L3 / (4 * B.KC * Bytes),
                                          kTileBytes / (B.MC * Bytes)}) /
                                    NR * NR);
  return B;
}

/// The packed B of a column block is kept for the whole depth (and reused
/// by every row tile of the block a thread computes) when it takes at most
/// this much memory; otherwise it is packed again for each tile. It is read
/// once per row tile, MC / 2 flops a byte, so it need not stay in cache.
inline constexpr int64_t kKeptPanelBytes = int64_t(8) << 20;

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

/// A B operand of int8 weights with one float scale per group of `Group`
/// along k (llama2.c's Q8_0; pkc passes it for `cast<float>(w[_]) *
/// repeat(scale[_], gs, -1)` as a product's weights): element (b, k, j) is
/// `float(Data[b * BatchStride + k * KStride + j * NStride]) *
/// Scales[b * ScaleBatchStride + j * ScaleNStride + (k / Group) *
/// ScaleKStride]`. For a few rows of A with w[N, K] contiguous along k and
/// groups of whole vectors, the GEMV kernels read the int8 values in place
/// (a quarter of float's bytes); otherwise it is packed like a lambda.
struct GroupScaledB {
  const int8_t *Data;
  int64_t BatchStride, KStride, NStride;
  const float *Scales;
  int64_t ScaleBatchStride, ScaleNStride, ScaleKStride, Group;
  float operator()(int64_t B, int64_t K, int64_t J) const {
    return float(Data[B * BatchStride + K * KStride + J * NStride]) *
           Scales[B * ScaleBatchStride + J * ScaleNStride +
                  K / Group * ScaleKStride];
  }
};

/// An A operand read straight from memory: element (b, i, k) at
/// `Data[b * BatchStride + i * IStride + k * KStride]` (strides 0 along
/// broadcast axes). pkc passes it instead of a lambda when A is a ref read as
/// it is; with a unit stride along k it is packed by transposing it straight
/// from memory, where a lambda's values are staged one at a time first.
template <class T> struct StridedA {
  const T *Data;
  int64_t BatchStride, IStride, KStride;
  T operator()(int64_t B, int64_t I, int64_t K) const {
    return Data[B * BatchStride + I * IStride + K * KStride];
  }
};

/// Products with at most this many rows (per batch) run as matrix-vector
/// products when B is a StridedB with a unit stride: below it the packed
/// path spends more time packing the weights than multiplying. Measured
/// (docs/design.md, "Small M"): at 2048 x 2048 with rotating weights the
/// GEMV path is 4.7x faster at M = 1, 1.2-1.5x at M = 32, even at M = 48 on
/// one thread.
inline constexpr int64_t kGemvMaxRows = 32;

/// Products with more rows than kGemvMaxRows and at most this many, whose
/// weights are w[N, K] read in place (a StridedB with a unit stride along
/// k: nn.Linear's layout), run gemmWeightRows: the micro-tile's rows are
/// rows of w, read where they are, and x is packed instead of w. Measured
/// (docs/design.md, "Short prefills: w read in place"; Xeon model 167,
/// avx512, weights from memory): 1.13-1.42x the packed path at M = 40-64
/// on one thread, 0.87-1.15x on two; at M = 80-256 within 0.90-1.15x
/// either way, so those keep the packed path.
inline constexpr int64_t kWeightRowsMaxRows = 64;

namespace gemm_detail {

inline int64_t roundUp(int64_t V, int64_t To) { return (V + To - 1) / To * To; }

/// The block along an extent of Extent for a blocking of at most Max: the
/// fewest blocks of at most Max (at least one micro-tile), made as equal as
/// the micro-tile Unit allows.
inline int64_t balancedBlock(int64_t Extent, int64_t Max, int64_t Unit) {
  const int64_t Limit = std::max(Unit, Max / Unit * Unit);
  const int64_t Blocks = (Extent + Limit - 1) / Limit;
  return std::min(Limit, roundUp((Extent + Blocks - 1) / Blocks, Unit));
}

/// The row and column blocks (MC, NC) of a product on `Threads` threads,
/// from the serial ones: first until every thread has two tiles, then until
/// the tiles are a multiple of the threads (threads take contiguous runs of
/// tiles: 2048 x 768 on two threads was nine row tiles, four on one thread
/// and five on the other). Each step splits the side that packs fewer
/// elements again: one more column block packs A's rows once more (M x K),
/// one more row tile B's columns (N x K, for each of `Products` weights
/// multiplying A: gemm_dual's two). 128 x 2048 x 5632 on two threads split
/// its three column blocks into two row tiles, reading the 46 MB weight
/// twice: 159 against 265 GFLOP/s for six column blocks. The columns are
/// taken where they pack at most 3/4 of what the rows would (at 5/6,
/// 512 x 768 x 3072, the rows ran 3% faster), and first until each thread
/// has a column block of its own (then it packs only its own B). Each
/// step shrinks a side wider than its micro-tile, so the loops end (a 33 x 16
/// product once halved one-micro-tile columns forever: found by the fuzzer,
/// regressions/gemm_tile_split_hang).
inline void splitForThreads(int64_t Batch, int64_t M, int64_t N,
                            int64_t Products, int64_t Threads, int64_t MR,
                            int64_t NR, int64_t &MC, int64_t &NC) {
  auto Count = [](int64_t Extent, int64_t Block) {
    return (Extent + Block - 1) / Block;
  };
  auto Tiles = [&] { return Batch * Count(M, MC) * Count(N, NC); };
  auto Packed = [&](int64_t Mc, int64_t Nc) {
    return Count(N, Nc) * M + Count(M, Mc) * N * Products;
  };
  // A side's next block: half of it, or the first with more blocks (the
  // micro-tile's rounding can keep a count's block the same as the last).
  auto Next = [&](int64_t Extent, int64_t Block, int64_t Unit, bool Halve) {
    if (Block <= Unit)
      return Block;
    if (Halve)
      return balancedBlock(Extent, Block / 2, Unit);
    for (int64_t Want = Count(Extent, Block) + 1;; ++Want) {
      const int64_t Smaller = balancedBlock(Extent, Count(Extent, Want), Unit);
      if (Smaller < Block)
        return Smaller;
    }
  };
  auto Split = [&](bool Halve) {
    const int64_t NextMC = Next(M, MC, MR, Halve),
                  NextNC = Next(N, NC, NR, Halve);
    const bool Rows = NextMC < MC, Columns = NextNC < NC;
    if (!Rows && !Columns)
      return false;
    if (Columns && (!Rows || Batch * Count(N, NC) < Threads ||
                    4 * Packed(MC, NextNC) <= 3 * Packed(NextMC, NC)))
      NC = NextNC;
    else
      MC = NextMC;
    return true;
  };
  while (Threads > 1 && Tiles() < 2 * Threads && Split(/*Halve=*/true)) {
  }
  while (Threads > 1 && Tiles() % Threads != 0 && Tiles() < 8 * Threads &&
         Split(/*Halve=*/false)) {
  }
}

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

// --- The product's operands, type-erased ----------------------------------
//
// pkc writes one gemm call per matmul, each with lambdas of its own type. The
// tile loops, the packing and the GEMV driver are compiled once per element
// type (gemmCore below), not once per call: they reach a lambda through a
// function pointer that fills a whole block (up to kMaxPanelWidth x
// kPackStage values) per call, and the epilogue through one that finishes a
// whole row. The lambda's own loop is compiled in its adapter (fillFrom,
// finishRow), so the values are computed as before; only the tile machinery
// stops being compiled again for every matmul of a file (about 0.2 s of g++
// -O2 per call; docs/design.md, "Compiled once per type").

/// An operand as a matrix of rows (i of A, j of B) by depth k: read in place
/// from `Data` (element (b, r, k) at `Data[b * BatchStride + r * RowStride +
/// k * KStride]`, widened from ST to T) when `Fill` is null, else filled by
/// `Fill` from the lambda at `Fn`.
template <class T, class ST = T> struct Operand {
  const ST *Data = nullptr;
  int64_t BatchStride = 0, RowStride = 0, KStride = 0;
  /// Out[r * Ld + k] (AlongK) or Out[k * Ld + r] (otherwise) = element
  /// (b, R0 + r, K0 + k) for r < Rows, k < Depth, walking k innermost when
  /// AlongK: the order in which the operand is contiguous.
  void (*Fill)(const void *Fn, int64_t B, int64_t R0, int64_t Rows, int64_t K0,
               int64_t Depth, T *Out, int64_t Ld, bool AlongK) = nullptr;
  const void *Fn = nullptr;

  T at(int64_t B, int64_t R, int64_t K) const {
    return weightValue<T>(Data + B * BatchStride + R * RowStride + K * KStride);
  }
  void fill(int64_t B, int64_t R0, int64_t Rows, int64_t K0, int64_t Depth,
            T *Out, int64_t Ld, bool AlongK) const {
    if (Fill)
      return Fill(Fn, B, R0, Rows, K0, Depth, Out, Ld, AlongK);
    if (AlongK) {
      for (int64_t R = 0; R < Rows; ++R)
        for (int64_t K = 0; K < Depth; ++K)
          Out[R * Ld + K] = at(B, R0 + R, K0 + K);
    } else {
      for (int64_t K = 0; K < Depth; ++K)
        for (int64_t R = 0; R < Rows; ++R)
          Out[K * Ld + R] = at(B, R0 + R, K0 + K);
    }
  }
};

/// Operand::Fill for a lambda: A(b, i, k) with rows i (IsA), or B(b, k, j)
/// with rows j. Cloned per x86-64 level like the kernel bodies
/// (PK_CPU_DISPATCH, <pk/dispatch.h>) and flattened, so that the lambda is
/// inlined into each clone (g++ does not inline it by itself: it has three
/// callers, and other optimisation options) and runs at the CPU's vector
/// width, with the clones' fp-contract=off: the same bits on every CPU.
template <class T, class Load, bool IsA>
PK_CPU_DISPATCH __attribute__((flatten)) void
fillFrom(const void *Fn, int64_t B, int64_t R0, int64_t Rows, int64_t K0,
         int64_t Depth, T *Out, int64_t Ld, bool AlongK) {
  const Load &Ld0 = *static_cast<const Load *>(Fn);
  auto At = [&](int64_t R, int64_t K) -> T {
    if constexpr (IsA)
      return Ld0(B, R0 + R, K0 + K);
    else
      return Ld0(B, K0 + K, R0 + R);
  };
  if (AlongK) {
    for (int64_t R = 0; R < Rows; ++R)
      for (int64_t K = 0; K < Depth; ++K)
        Out[R * Ld + K] = At(R, K);
  } else {
    for (int64_t K = 0; K < Depth; ++K)
      for (int64_t R = 0; R < Rows; ++R)
        Out[K * Ld + R] = At(R, K);
  }
}

/// The epilogue: Run(Fn, b, i, j0, n, acc, acc2) finishes row i, columns
/// [j0, j0 + n), acc[l] the sum for column j0 + l (acc2[l] the second
/// product's, for gemm_dual; null otherwise).
template <class T> struct RowEpilogue {
  void (*Run)(const void *Fn, int64_t B, int64_t I, int64_t J0, int64_t N,
              const T *Acc, const T *Acc2);
  const void *Fn;
  void operator()(int64_t B, int64_t I, int64_t J0, int64_t N, const T *Acc,
                  const T *Acc2 = nullptr) const {
    Run(Fn, B, I, J0, N, Acc, Acc2);
  }
};

/// RowEpilogue::Run for a lambda, cloned like fillFrom: the epilogue (bias,
/// activation, residual) runs at the CPU's vector width.
template <class T, class Epilogue>
PK_CPU_DISPATCH __attribute__((flatten)) void
finishRow(const void *Fn, int64_t B, int64_t I, int64_t J0, int64_t N,
          const T *Acc, const T *) {
  (*static_cast<const Epilogue *>(Fn))(B, I, J0, N, Acc);
}

/// finishRow for gemm_dual's epilogue, which takes both products' sums.
template <class T, class Epilogue>
PK_CPU_DISPATCH __attribute__((flatten)) void
finishRow2(const void *Fn, int64_t B, int64_t I, int64_t J0, int64_t N,
           const T *Acc, const T *Acc2) {
  (*static_cast<const Epilogue *>(Fn))(B, I, J0, N, Acc, Acc2);
}

template <class T, class LoadA> Operand<T> operandA(const LoadA &A) {
  Operand<T> O;
  if constexpr (std::is_same_v<LoadA, StridedA<T>>) {
    O.Data = A.Data;
    O.BatchStride = A.BatchStride;
    O.RowStride = A.IStride;
    O.KStride = A.KStride;
  } else {
    O.Fill = &fillFrom<T, LoadA, true>;
    O.Fn = &A;
  }
  return O;
}

template <class X> inline constexpr bool IsStridedB = false;
template <class T, class WT>
inline constexpr bool IsStridedB<StridedB<T, WT>> = true;
/// The type B's elements are stored in: a StridedB's WT, else T (a
/// lambda's values).
template <class T, class LoadB> struct StoredB { using Type = T; };
template <class T, class WT> struct StoredB<T, StridedB<T, WT>> {
  using Type = WT;
};

template <class T, class LoadB>
Operand<T, typename StoredB<T, LoadB>::Type> operandB(const LoadB &B) {
  Operand<T, typename StoredB<T, LoadB>::Type> O;
  if constexpr (IsStridedB<LoadB>) {
    O.Data = B.Data;
    O.BatchStride = B.BatchStride;
    O.RowStride = B.NStride;
    O.KStride = B.KStride;
  } else {
    O.Fill = &fillFrom<T, LoadB, false>;
    O.Fn = &B;
  }
  return O;
}

/// The small-M path: per batch, A (M x K) packed contiguously, the columns
/// of C split between the threads in blocks, each block computed by the
/// level's GEMV kernel reading B (in place) once, then handed to the
/// epilogue.
/// int8 weights (WT = int8_t) have their scales in Gs, batch b's at
/// Gs.S + b * ScaleBatchStride, and are contiguous along k.
template <class T, class WT> struct GemvWeights {
  const Operand<T, WT> *B = nullptr;
  GroupScales Gs = {};
  int64_t ScaleBatchStride = 0;
};

/// The small-M path as above; with B2.B (gemm_dual) each block of columns
/// is multiplied by both weights, from the same packed A, before the
/// epilogue sees them.
template <class T, class WT>
void gemv(const GemmShape &S, bool Threaded, const Operand<T> &A,
          const Operand<T, WT> &B, const RowEpilogue<T> &E,
          const GroupScales &Gs = {}, int64_t ScaleBatchStride = 0,
          const GemvWeights<T, WT> &B2 = {}) {
  auto KernelFor = [](const Operand<T, WT> &W) {
    if constexpr (kScaledWeights<WT>)
      return gemvKernel<T, WT, true>(gemm_isa());
    else
      return W.KStride == 1 ? gemvKernel<T, WT, true>(gemm_isa())
                            : gemvKernel<T, WT, false>(gemm_isa());
  };
  const GemvFn<T, WT> Kernel = KernelFor(B);
  const GemvFn<T, WT> Kernel2 = B2.B ? KernelFor(*B2.B) : nullptr;
  // Columns a block: enough to amortise the epilogue calls, few enough that
  // two threads get work at N = 768.
  constexpr int64_t Block = 128;
  const int64_t Blocks = (S.N + Block - 1) / Block;
  const int64_t Threads = Threaded ? thread_count() : 1;
  Buffer<T> Ap(S.M * S.K);
  // One weight's block of columns [J0, J0 + Nc) of batch Bi into Out.
  auto Multiply = [&](GemvFn<T, WT> Fn, const Operand<T, WT> &W,
                      const GroupScales &Scales, int64_t ScaleBatch, int64_t Bi,
                      const T *PA, int64_t J0, int64_t Nc, T *Out) {
    const bool AlongK = W.KStride == 1;
    const WT *Wb = W.Data + Bi * W.BatchStride;
    const WT *Wj = AlongK ? Wb + J0 * W.RowStride : Wb + J0;
    GroupScales Gj = Scales;
    if (Gj.S)
      Gj.S += Bi * ScaleBatch + J0 * Scales.LdS;
    Fn(S.K, S.M, PA, Wj, AlongK ? W.RowStride : W.KStride, Nc, Out, Block, Gj);
  };
  for (int64_t Bi = 0; Bi < S.Batch; ++Bi) {
    T *PA = Ap.get();
    A.fill(Bi, 0, S.M, 0, S.K, PA, S.K, /*AlongK=*/true);
    // Blocks [Begin, End) on one thread: contiguous, so that each thread
    // streams its own part of the weights.
    auto Run = [&](int64_t Begin, int64_t End) __attribute__((noinline)) {
      Buffer<T> Out(S.M * Block), Out2(B2.B ? S.M * Block : 0);
      for (int64_t Bl = Begin; Bl < End; ++Bl) {
        const int64_t J0 = Bl * Block, Nc = std::min(Block, S.N - J0);
        Multiply(Kernel, B, Gs, ScaleBatchStride, Bi, PA, J0, Nc, Out.get());
        if (B2.B)
          Multiply(Kernel2, *B2.B, B2.Gs, B2.ScaleBatchStride, Bi, PA, J0, Nc,
                   Out2.get());
        for (int64_t I = 0; I < S.M; ++I)
          E(Bi, I, J0, Nc, static_cast<const T *>(Out.get() + I * Block),
            B2.B ? static_cast<const T *>(Out2.get() + I * Block) : nullptr);
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

/// Panel[k * Width + r] = element (b, R0 + r, K0 + k) of Op for r < Rows, k <
/// Depth (zeros for rows up to Width), where consecutive k are adjacent in
/// memory: a float operand in place is transposed straight from memory,
/// anything else staged row-major first, then transposed by the level's
/// kernel (float) or copied.
template <class T, class ST>
void packAlongK(const Operand<T, ST> &Op, int64_t B, int64_t R0, int64_t Rows,
                int64_t K0, int64_t Depth, T *Panel, int64_t Width) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<ST, float>) {
    if (!Op.Fill && Op.KStride == 1)
      return packKernel(gemm_isa())(
          Rows, Depth, Op.Data + B * Op.BatchStride + R0 * Op.RowStride + K0,
          Op.RowStride, Panel, Width);
  }
  if constexpr (std::is_same_v<T, float>) {
    alignas(64) float Stage[kMaxPanelWidth * kPackStage];
    const PackFn Pack = packKernel(gemm_isa());
    for (int64_t Ks = 0; Ks < Depth; Ks += kPackStage) {
      const int64_t D = std::min(kPackStage, Depth - Ks);
      Op.fill(B, R0, Rows, K0 + Ks, D, Stage, kPackStage, /*AlongK=*/true);
      Pack(Rows, D, Stage, kPackStage, Panel + Ks * Width, Width);
    }
  } else {
    alignas(64) T Stage[kMaxPanelWidth * kPackStage];
    for (int64_t Ks = 0; Ks < Depth; Ks += kPackStage) {
      const int64_t D = std::min(kPackStage, Depth - Ks);
      Op.fill(B, R0, Rows, K0 + Ks, D, Stage, kPackStage, /*AlongK=*/true);
      for (int64_t R = 0; R < Rows; ++R)
        for (int64_t K = 0; K < D; ++K)
          Panel[(Ks + K) * Width + R] = Stage[R * kPackStage + K];
    }
    for (int64_t K = 0; K < Depth; ++K)
      for (int64_t R = Rows; R < Width; ++R)
        Panel[K * Width + R] = T(0);
  }
}

/// The same where consecutive rows are adjacent (a row-major B, a
/// transposed A): filled straight into the panel, k outermost.
template <class T, class ST>
void packAlongRows(const Operand<T, ST> &Op, int64_t B, int64_t R0,
                   int64_t Rows, int64_t K0, int64_t Depth, T *Panel,
                   int64_t Width) {
  if constexpr (std::is_same_v<T, ST>) {
    if (!Op.Fill && Op.RowStride == 1) {
      // In place: each k's rows are one contiguous piece.
      const ST *Src = Op.Data + B * Op.BatchStride + R0 + K0 * Op.KStride;
      for (int64_t K = 0; K < Depth; ++K) {
        std::memcpy(Panel + K * Width, Src + K * Op.KStride, Rows * sizeof(T));
        std::fill(Panel + K * Width + Rows, Panel + (K + 1) * Width, T(0));
      }
      return;
    }
  }
  Op.fill(B, R0, Rows, K0, Depth, Panel, Width, /*AlongK=*/false);
  for (int64_t K = 0; K < Depth; ++K)
    for (int64_t R = Rows; R < Width; ++R)
      Panel[K * Width + R] = T(0);
}

/// B[K0 + k, J0 + j] for k < Kc, j < Nc -> panel j / NR, row k, lane j % NR,
/// columns past Nc zero; read along the operand's contiguous axis (UnitK: k).
template <class T, class WT>
void packB(const Operand<T, WT> &B, bool UnitK, int64_t Bi, int64_t K0,
           int64_t Kc, int64_t J0, int64_t Nc, int64_t NcPad, int64_t NR,
           T *PB) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<WT, float>) {
    // A float [K, N] weight read in place: each row of it is copied, in
    // NR-column pieces, into every panel at once.
    if (!B.Fill && B.RowStride == 1 && B.KStride != 1) {
      const float *Src = B.Data + Bi * B.BatchStride + K0 * B.KStride + J0;
      for (int64_t K = 0; K < Kc; ++K)
        for (int64_t Jp = 0; Jp < NcPad; Jp += NR) {
          T *Row = PB + Jp * Kc + K * NR;
          const int64_t W = std::min(NR, Nc - Jp);
          std::memcpy(Row, Src + K * B.KStride + Jp, W * sizeof(T));
          std::fill(Row + W, Row + NR, T(0));
        }
      return;
    }
  }
  for (int64_t Jp = 0; Jp < NcPad; Jp += NR) {
    T *Panel = PB + Jp * Kc;
    const int64_t W = std::min(NR, Nc - Jp);
    // A float operand in place with a unit stride along k is transposed
    // straight from memory (packAlongK) whatever UnitK says.
    if (UnitK || (!B.Fill && B.KStride == 1))
      packAlongK(B, Bi, J0 + Jp, W, K0, Kc, Panel, NR);
    else
      packAlongRows(B, Bi, J0 + Jp, W, K0, Kc, Panel, NR);
  }
}

/// A[I0 + i, K0 + k] for i < Mc, k < Kc -> panel i / MR, column k, lane
/// i % MR, rows past Mc zero.
template <class T>
void packA(const Operand<T> &A, bool UnitK, int64_t Bi, int64_t I0, int64_t Mc,
           int64_t McPad, int64_t MR, int64_t K0, int64_t Kc, T *PA) {
  for (int64_t Ip = 0; Ip < McPad; Ip += MR) {
    T *Panel = PA + Ip * Kc;
    const int64_t H = std::min(MR, Mc - Ip);
    if (UnitK || (!A.Fill && A.KStride == 1))
      packAlongK(A, Bi, I0 + Ip, H, K0, Kc, Panel, MR);
    else
      packAlongRows(A, Bi, I0 + Ip, H, K0, Kc, Panel, MR);
  }
}

#if PK_GEMM_AMX
/// Rows of x per tile of the packed x (<pk/gemm_amx.h>), and the block of C
/// a thread finishes before its epilogue runs: kAmxBlockRows x
/// kAmxBlockColumns floats (64 KiB), the w rows of the block (128 x K
/// bfloat16 values) reused from L2 by each 32-row step of x.
inline constexpr int64_t kAmxBlockRows = 128, kAmxBlockColumns = 128;

/// Products of bfloat16 values with at least this many rows run on AMX,
/// before the GEMV's kGemvMaxRows. Measured (Xeon model 167, one thread,
/// bfloat16 weights 2048 x 2048 and 5632 x 2048 rotating through the L3):
/// the GEMV is 0.87-0.91x AMX's time at M = 4, AMX is 1.3-1.4x faster at
/// M = 8, 2.1-2.2x at 16, 3.5-3.6x at 32. At M = 8 the weights come from
/// memory in a decode step (the GEMV streams them at the read bound), so
/// the rows where AMX clearly wins start at 16.
inline constexpr int64_t kAmxMinRows = 16;

/// Packs rows [16 Q, 16 Q + 16) of batch Bi's A (float values that are
/// bfloat16 values) into tile Q of Xp: pair p of row t at
/// Xp[(Q * Depth / 2 + p) * 32 + 2 t], zeros past M and K.
inline void packAmxRows(const Operand<float> &A, int64_t Bi, const GemmShape &S,
                        int64_t Depth, int64_t Q, uint16_t *Xp) {
  alignas(64) float Stage[kAmxTileRows * kPackStage];
  uint16_t *Tile = Xp + Q * kAmxTileRows * Depth;
  const int64_t R0 = Q * kAmxTileRows;
  const int64_t Rows = std::max<int64_t>(0, std::min(kAmxTileRows, S.M - R0));
  for (int64_t K0 = 0; K0 < Depth; K0 += kPackStage) {
    const int64_t D = std::max<int64_t>(0, std::min(kPackStage, S.K - K0));
    if (Rows > 0 && D > 0)
      A.fill(Bi, R0, Rows, K0, D, Stage, kPackStage, /*AlongK=*/true);
    const int64_t Width = std::min(kPackStage, Depth - K0);
    for (int64_t K = 0; K < Width; ++K)
      for (int64_t T = 0; T < kAmxTileRows; ++T) {
        const float V = T < Rows && K < D ? Stage[T * kPackStage + K] : 0.0f;
        Tile[(K0 + K) / 2 * 32 + 2 * T + (K & 1)] = fp16::floatToBfloat16(V);
      }
  }
}

/// C = A B (and C2 = A B2) for float products of bfloat16 values on AMX
/// tiles: per batch, A packed once into tiles by all the threads, then the
/// columns of C (rows of w[N, K], read in place) split between the threads
/// in 32-column steps. Each thread fills blocks of kAmxBlockRows x
/// kAmxBlockColumns of C, 32 x 32 at a time, and runs the epilogue on each
/// finished block. A w block narrower than 32 rows, and the last partial
/// step of k, are copied into zero-padded scratch (a tile load reads 32
/// values of 16 rows whatever the extents).
inline void gemmAmxBf16(const GemmShape &S, bool Threaded,
                        const Operand<float> &A,
                        const Operand<float, bfloat16> &B,
                        const RowEpilogue<float> &E,
                        const Operand<float, bfloat16> *B2) {
  const int64_t Steps = S.K / kAmxDepth, Depth = roundUp(S.K, kAmxDepth);
  const int64_t TailDepth = S.K - Steps * kAmxDepth;
  const int64_t RowsPad = roundUp(S.M, kAmxRows);
  const int64_t Tiles = RowsPad / kAmxTileRows;
  const int64_t Subs = (S.N + kAmxRows - 1) / kAmxRows;
  const int64_t Threads = Threaded ? thread_count() : 1;
  const int64_t Products = B2 ? 2 : 1;
  const Operand<float, bfloat16> *Bs[2] = {&B, B2};
  Buffer<uint16_t> Xp(RowsPad * Depth);
  AmxProducts.fetch_add(1, std::memory_order_relaxed);
  for (int64_t Bi = 0; Bi < S.Batch; ++Bi) {
    // Steps [Sub0, Sub1) of 32 columns on one thread.
    auto Run = [&](int64_t Sub0, int64_t Sub1) __attribute__((noinline)) {
      const int64_t C1 = std::min(S.N, Sub1 * kAmxRows);
      if (Sub0 * kAmxRows >= C1)
        return;
      Buffer<float> Cb(Products * kAmxBlockRows * kAmxBlockColumns),
          Cs(kAmxRows * kAmxRows);
      Buffer<uint16_t> Tail(Products * kAmxRows * kAmxDepth),
          Edge(S.N % kAmxRows ? Products * kAmxRows * Depth : 0);
      amxBegin();
      for (int64_t C0 = Sub0 * kAmxRows; C0 < C1; C0 += kAmxBlockColumns) {
        const int64_t Nc = std::min(kAmxBlockColumns, C1 - C0);
        for (int64_t R0 = 0; R0 < S.M; R0 += kAmxBlockRows) {
          const int64_t Mr = std::min(kAmxBlockRows, S.M - R0);
          for (int64_t J = 0; J < Nc; J += kAmxRows) {
            const int64_t Nj = std::min(kAmxRows, Nc - J);
            for (int64_t P = 0; P < Products; ++P) {
              const Operand<float, bfloat16> &W = *Bs[P];
              const uint16_t *Wp = reinterpret_cast<const uint16_t *>(
                  W.Data + Bi * W.BatchStride + (C0 + J) * W.RowStride);
              int64_t Ld = W.RowStride, St = Steps;
              const uint16_t *WTail = nullptr;
              if (Nj < kAmxRows) {
                // The last rows of w: all of them, zero-padded.
                uint16_t *Ep = Edge.get() + P * kAmxRows * Depth;
                std::fill(Ep, Ep + kAmxRows * Depth, uint16_t(0));
                for (int64_t R = 0; R < Nj; ++R)
                  std::memcpy(Ep + R * Depth, Wp + R * W.RowStride,
                              S.K * sizeof(uint16_t));
                Wp = Ep, Ld = Depth, St = Depth / kAmxDepth;
              } else if (TailDepth > 0) {
                uint16_t *Tp = Tail.get() + P * kAmxRows * kAmxDepth;
                std::fill(Tp, Tp + kAmxRows * kAmxDepth, uint16_t(0));
                for (int64_t R = 0; R < kAmxRows; ++R)
                  std::memcpy(Tp + R * kAmxDepth,
                              Wp + R * W.RowStride + Steps * kAmxDepth,
                              TailDepth * sizeof(uint16_t));
                WTail = Tp;
              }
              float *Cp = Cb.get() + P * kAmxBlockRows * kAmxBlockColumns;
              for (int64_t I = 0; I < Mr; I += kAmxRows) {
                const uint16_t *X0 =
                    Xp.get() + (R0 + I) / kAmxTileRows * kAmxTileRows * Depth;
                amxBf16Micro(St, Wp, Ld, WTail, X0, X0 + kAmxTileRows * Depth,
                             Cs.get());
                // The tiles hold C transposed (w's rows are theirs): 32 x
                // 32 values moved into the block's rows through AVX-512
                // registers (a CPU with AMX has AVX-512). Element by
                // element this copy took a fifth of the product's time at
                // K = 768 (512 x 2048 x 768: 3.62 -> 2.86 ms, one thread).
                const int64_t Mi = std::min(kAmxRows, Mr - I);
                transpose_block(static_cast<const float *>(Cs.get()), kAmxRows,
                                Nj, Mi, Cp + I * kAmxBlockColumns + J,
                                kAmxBlockColumns);
              }
            }
          }
          for (int64_t R = 0; R < Mr; ++R)
            E(Bi, R0 + R, C0, Nc,
              static_cast<const float *>(Cb.get() + R * kAmxBlockColumns),
              B2 ? static_cast<const float *>(Cb.get() + (kAmxBlockRows + R) *
                                                             kAmxBlockColumns)
                 : nullptr);
        }
      }
      amxEnd();
    };
    if (Threads > 1 && (Subs > 1 || Tiles > 2)) {
#pragma omp parallel
      {
#ifdef _OPENMP
        const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
#else
        const int64_t T0 = 0, Tn = 1;
#endif
        for (int64_t Q = Tiles * T0 / Tn; Q < Tiles * (T0 + 1) / Tn; ++Q)
          packAmxRows(A, Bi, S, Depth, Q, Xp.get());
#pragma omp barrier
        Run(Subs * T0 / Tn, Subs * (T0 + 1) / Tn);
      }
    } else {
      for (int64_t Q = 0; Q < Tiles; ++Q)
        packAmxRows(A, Bi, S, Depth, Q, Xp.get());
      Run(0, Subs);
    }
  }
}
#endif

/// What micro-kernel call Call of Calls fetches into L2: its share of Rows
/// rows of Depth elements, rows [Row, Row + Rows) of the matrix at Base
/// (Ld elements apart) from column K0. No address is formed for no rows.
template <class WT>
PrefetchRows rowsShare(const WT *Base, int64_t Ld, int64_t Row, int64_t K0,
                       int64_t Depth, int64_t Rows, int64_t Call,
                       int64_t Calls) {
  const int64_t Row0 = Rows * Call / Calls, Row1 = Rows * (Call + 1) / Calls;
  PrefetchRows Ahead;
  if (Row1 > Row0) {
    Ahead.Base = reinterpret_cast<const char *>(Base + (Row + Row0) * Ld + K0);
    Ahead.Stride = Ld * int64_t(sizeof(WT));
    Ahead.Lines = (Depth * int64_t(sizeof(WT)) + 63) / 64;
    Ahead.Rows = Row1 - Row0;
  }
  return Ahead;
}

/// Run(First, Last) over the tiles [0, Tiles): with Parallel (and more than
/// one tile), each OpenMP thread a contiguous share of them.
template <class F> void runShares(bool Parallel, int64_t Tiles, const F &Run) {
  if (Parallel && Tiles > 1) {
#pragma omp parallel
    {
#ifdef _OPENMP
      const int64_t T0 = omp_get_thread_num(), Tn = omp_get_num_threads();
      Run(Tiles * T0 / Tn, Tiles * (T0 + 1) / Tn);
#else
      Run(0, Tiles);
#endif
    }
  } else {
    Run(0, Tiles);
  }
}

/// Dst[m * LdD + n] = Src[n * LdS + m] for n < Rows, m < Cols, and zeros in
/// Dst's columns [Rows, LdD): a C^T tile turned into C's rows.
template <class T>
void transposeTile(const T *Src, int64_t LdS, int64_t Rows, int64_t Cols,
                   T *Dst, int64_t LdD) {
  if constexpr (std::is_same_v<T, float>) {
    packKernel(gemm_isa())(Rows, Cols, Src, LdS, Dst, LdD);
  } else {
    constexpr int64_t Block = 16;
    for (int64_t N0 = 0; N0 < Rows; N0 += Block)
      for (int64_t M = 0; M < Cols; ++M)
        for (int64_t N = N0; N < std::min(Rows, N0 + Block); ++N)
          Dst[M * LdD + N] = Src[N * LdS + M];
    for (int64_t M = 0; M < Cols; ++M)
      std::fill(Dst + M * LdD + Rows, Dst + (M + 1) * LdD, T(0));
  }
}

/// C = A B (and C2 = A B2) with w[N, K] read in place: the roles of the
/// operands swapped, C^T = w A^T, so that the micro-kernel's MR rows are
/// rows of w, read where they are (MicroKernel::RunRows), and its NR
/// columns rows of A, packed as B panels are. With few rows of A the
/// packed path's transpose of w into panels is amortised over few
/// multiply-adds; here A (M x K) is packed instead, once per row tile
/// while it fits (KeepA). Each tile is Mc rows of A by
/// Nc rows of w; its C^T, Nc x Mc, is summed in memory over the K blocks,
/// then transposed into C's rows for the epilogue. The next micro-panel's
/// rows of w are prefetched into L2 by the current one's calls. Same
/// arithmetic as gemmCore (one sum per element, k in order within a K
/// block), so the same tolerance; K is never split between threads.
template <class T, class WT>
void gemmWeightRows(const GemmShape &S, const GemmOptions &Opt,
                    const Operand<T> &A, const Operand<T, WT> &B,
                    const RowEpilogue<T> &E, const Operand<T, WT> *B2,
                    const MicroKernel<T> &Micro) {
  static_assert(std::is_same_v<T, WT>, "w is read in place as T");
  const int64_t MR = Micro.Shape.MR, NR = Micro.Shape.NR;
  const int64_t Bytes = int64_t(sizeof(T)), Products = B2 ? 2 : 1;
  const GemmBlocking &Blk = Opt.Blocking;
  // All of A's rows in one tile (M <= kWeightRowsMaxRows), or the
  // blocking's MC when a test asks for more row tiles (rounded up to NR).
  const int64_t MC = roundUp(Blk.MC > 0 ? std::min(Blk.MC, S.M) : S.M, NR);
  const CacheSizes &Caches = cache_sizes();
  const int64_t L2 = Caches.L2 > 0 ? Caches.L2 : int64_t(1) << 20;
  // A's packed K block takes half of L2 (at M = 64 on a 2 MiB L2: KC =
  // 4096, one block for most LLM weights); the micro-panel of w, MR rows
  // of KC, is read from memory by A's first panel and from L2 by the rest.
  // (A micro-panel of w in half of L1, KC = 512, ran M = 48-64 1.15-1.2x
  // slower on one thread, Xeon model 167.)
  int64_t KC = Blk.KC;
  if (KC <= 0)
    KC = std::clamp<int64_t>(L2 / (2 * MC * Bytes) / 16 * 16, 128, 4096);
  KC = balancedBlock(S.K, KC, 1);
  // The C^T tile takes an eighth of L2: written by the micro-kernels,
  // then transposed and read by the epilogue while it is still there. On
  // two threads (Xeon model 167, 2 MiB L2) tiles of all the columns a
  // thread computes ran 128 x 5632 x 2048 at 0.8x the speed of tiles of
  // 468 rows of w.
  const int64_t LdCT = MC + 64 / Bytes;
  int64_t NCMax = std::max(MR, std::min(kTileBytes, L2 / 8) /
                                   (Products * LdCT * Bytes) / MR * MR);
  if (Blk.NC > 0)
    NCMax = std::max(MR, std::min(NCMax, Blk.NC / MR * MR));
  const int64_t TilesM = (S.M + MC - 1) / MC;
  // Threads split w's rows (each packs A for itself: M x K against N x K):
  // the fewest column tiles that give every thread as many tiles.
  const int64_t Threads = Opt.Threaded ? thread_count() : 1;
  int64_t TilesN = (S.N + NCMax - 1) / NCMax;
  const int64_t MostTilesN = (S.N + MR - 1) / MR;
  while (Threads > 1 && (S.Batch * TilesM * TilesN) % Threads != 0 &&
         TilesN < MostTilesN)
    ++TilesN;
  const int64_t NC = balancedBlock(S.N, (S.N + TilesN - 1) / TilesN, MR);
  TilesN = (S.N + NC - 1) / NC;
  const int64_t NumTiles = S.Batch * TilesM * TilesN;
  // A packed once per row tile for the whole depth, while that takes at
  // most 16 MiB (64 rows of K = 65536): with the small C^T tiles above it
  // would otherwise be packed again for every tile of a deep product. A
  // test's blocking packs it per K block, as deeper products do.
  const bool KeepA = Blk.KC <= 0 && MC * S.K * Bytes <= 2 * kKeptPanelBytes;

  auto Run = [&](int64_t First, int64_t Last) __attribute__((noinline)) {
    const int64_t NCPad = roundUp(NC, MR);
    const int64_t LdC = NCPad + 64 / Bytes;
    Buffer<T> Xp(KeepA ? MC * S.K : MC * KC), Wt(MR * KC),
        CtT(Products * NCPad * LdCT), Ct(Products * MC * LdC);
    const Operand<T, WT> *Bs[2] = {&B, B2};
    // A's packed rows, kept for the whole depth, serve every column tile of
    // the same rows: (batch, first row) of the tile they were packed for.
    int64_t PackedBi = -1, PackedI0 = -1;
    for (int64_t Tile = First; Tile < Last; ++Tile) {
      const int64_t Block = Tile / TilesM; // batch * TilesN + column block
      const int64_t Bi = Block / TilesN;
      const int64_t J0 = Block % TilesN * NC, I0 = Tile % TilesM * MC;
      const int64_t Mc = std::min(MC, S.M - I0), Nc = std::min(NC, S.N - J0);
      const int64_t McPad = roundUp(Mc, NR), NcPad = roundUp(Nc, MR);
      std::fill(CtT.get(), CtT.get() + Products * NCPad * LdCT, T(0));
      const bool Packed = KeepA && Bi == PackedBi && I0 == PackedI0;
      PackedBi = Bi;
      PackedI0 = I0;
      for (int64_t K0 = 0; K0 < S.K; K0 += KC) {
        const int64_t Kc = std::min(KC, S.K - K0);
        // K block K0 of the kept A at K0 * McPad, panel Ip at Ip * Kc.
        T *XpBlock = Xp.get() + (KeepA ? K0 * McPad : 0);
        if (!Packed)
          packA(A, Opt.AUnitK, Bi, I0, Mc, McPad, NR, K0, Kc, XpBlock);
        for (int64_t Jr = 0; Jr < NcPad; Jr += MR) {
          const int64_t Rows = std::min(MR, Nc - Jr);
          // What this micro-panel's calls fetch into L2: the next one's
          // rows of w, or the tile's first ones in the next K block.
          int64_t NextJ = J0 + Jr + MR, NextK = K0, NextKc = Kc,
                  NextRows = std::max<int64_t>(0, std::min(MR, Nc - Jr - MR));
          if (NextRows == 0 && K0 + Kc < S.K) {
            NextJ = J0;
            NextK = K0 + Kc;
            NextKc = std::min(KC, S.K - NextK);
            NextRows = std::min(MR, Nc);
          }
          for (int64_t P = 0; P < Products; ++P) {
            const Operand<T, WT> &W = *Bs[P];
            const WT *Base = W.Data + Bi * W.BatchStride;
            T *C = CtT.get() + P * NCPad * LdCT + Jr * LdCT;
            if (Rows < MR)
              packAlongK(W, Bi, J0 + Jr, Rows, K0, Kc, Wt.get(), MR);
            const int64_t Calls = McPad / NR;
            for (int64_t Ip = 0; Ip < McPad; Ip += NR) {
              const PrefetchRows Ahead =
                  rowsShare(Base, W.RowStride, NextJ, NextK, NextKc, NextRows,
                            Ip / NR, Calls);
              if (Rows == MR)
                Micro.RunRows(Kc, Base + (J0 + Jr) * W.RowStride + K0,
                              W.RowStride, XpBlock + Ip * Kc, C + Ip, LdCT,
                              Ahead);
              else
                Micro.Run(Kc, Wt.get(), XpBlock + Ip * Kc, C + Ip, LdCT, Ahead);
            }
          }
        }
      }
      for (int64_t P = 0; P < Products; ++P)
        transposeTile(CtT.get() + P * NCPad * LdCT, LdCT, Nc, Mc,
                      Ct.get() + P * MC * LdC, LdC);
      for (int64_t I = 0; I < Mc; ++I)
        E(Bi, I0 + I, J0, Nc, static_cast<const T *>(Ct.get() + I * LdC),
          B2 ? static_cast<const T *>(Ct.get() + MC * LdC + I * LdC) : nullptr);
    }
  };
  runShares(Threads > 1, NumTiles, Run);
}

/// C = A B for every batch with the micro-kernel of gemm_isa(): the tile
/// loops of pk::rt::gemm, compiled once per element type and weight type.
/// With B2 (gemm_dual), also C2 = A B2: each tile packs A once and
/// multiplies it by both, and the epilogue gets both rows.
template <class T, class WT>
void gemmCore(const GemmShape &S, const GemmOptions &Opt, const Operand<T> &A,
              const Operand<T, WT> &B, const RowEpilogue<T> &E,
              const Operand<T, WT> *B2 = nullptr) {
  if (S.Batch <= 0 || S.M <= 0 || S.N <= 0)
    return;
  auto InPlace = [](const Operand<T, WT> &W) {
    return !W.Fill && (W.KStride == 1 || W.RowStride == 1);
  };
#if PK_GEMM_AMX
  if constexpr (std::is_same_v<T, float> && std::is_same_v<WT, bfloat16>) {
    // Both operands bfloat16 values, the weights in place along k: AMX,
    // from kAmxMinRows rows (below it the GEMV, which reads each weight
    // once, is as fast).
    auto AlongK = [](const Operand<T, WT> &W) {
      return !W.Fill && W.KStride == 1;
    };
    if (Opt.ABf16 && S.M >= kAmxMinRows && S.K > 0 && AlongK(B) &&
        (!B2 || AlongK(*B2)) && gemm_amx())
      return gemmAmxBf16(S, Opt.Threaded, A, B, E, B2);
  }
#endif
  if (S.M <= kGemvMaxRows && S.K > 0 && InPlace(B) && (!B2 || InPlace(*B2)))
    return gemv<T>(S, Opt.Threaded, A, B, E, {}, 0,
                   GemvWeights<T, WT>{B2, {}, 0});
  const MicroKernel<T> Micro = microKernel<T>(gemm_isa());
  if constexpr (std::is_same_v<T, WT>) {
    auto RowsInPlace = [](const Operand<T, WT> &W) {
      return !W.Fill && W.KStride == 1;
    };
    if (S.M <= kWeightRowsMaxRows && S.K > 0 && RowsInPlace(B) &&
        (!B2 || RowsInPlace(*B2)))
      return gemmWeightRows(S, Opt, A, B, E, B2, Micro);
  }
  const int64_t MR = Micro.Shape.MR, NR = Micro.Shape.NR;
  GemmBlocking Blk = Opt.Blocking;
  if (Blk.MC <= 0 || Blk.KC <= 0 || Blk.NC <= 0)
    Blk = gemm_blocking(int64_t(sizeof(T)), MR, NR);
  const int64_t KC = std::max<int64_t>(1, std::min(Blk.KC, S.K));
  // The packed B of a column block is kept for its whole depth, and reused
  // by every row tile of the block that a thread computes, when the rows
  // are more than one tile and it fits the budget.
  const int64_t DepthPad = roundUp(std::max<int64_t>(S.K, 1), KC);
  const bool KeepB =
      S.M > Blk.MC && DepthPad * NR * int64_t(sizeof(T)) <= kKeptPanelBytes;
  const int64_t Products = B2 ? 2 : 1;
  const int64_t NCMax =
      KeepB
          ? std::max(NR, std::min(Blk.NC, kKeptPanelBytes /
                                              (DepthPad * int64_t(sizeof(T))) /
                                              NR * NR))
          : Blk.NC;
  // Equal tiles: N = 768 with NC = 672 was a 672 and a 96 column tile, and
  // with two threads one of them got both wide ones.
  int64_t MC = balancedBlock(S.M, Blk.MC, MR);
  int64_t NC = balancedBlock(S.N, NCMax, NR);
  const int64_t Threads = Opt.Threaded ? thread_count() : 1;
  splitForThreads(S.Batch, S.M, S.N, Products, Threads, MR, NR, MC, NC);
  const int64_t TilesM = (S.M + MC - 1) / MC, TilesN = (S.N + NC - 1) / NC;
  const int64_t NumTiles = S.Batch * TilesM * TilesN;

  // One thread's share: the contiguous tiles [First, Last), the row tiles
  // of a column block consecutive, so that the block's packed B is reused.
  // Not inlined: inlined into gemm() (the serial path) g++ compiled the tile
  // loop ~1.5x slower than the same code in the OpenMP region's outlined
  // function (1024^3, one thread: 139 against 207 GFLOP/s with AVX-512).
  auto Run = [&](int64_t First, int64_t Last) __attribute__((noinline)) {
    // B's packed panels, when not kept: w[N, K] one micro-panel at a time,
    // packed just before its use, so that it is written to L1 rather than
    // memory; a [K, N] weight one K block of the tile at a time, so that
    // each row of it is read once per block.
    const bool PanelByPanel = !KeepB && Opt.BUnitK && (!B2 || Opt.B2UnitK);
    const int64_t NCPad = roundUp(NC, NR);
    const int64_t LdC = NCPad + 64 / int64_t(sizeof(T));
    const int64_t BpSize =
        KeepB ? DepthPad * NCPad : KC * (PanelByPanel ? NR : NCPad);
    Buffer<T> Ap(roundUp(MC, MR) * KC), Ct(Products * roundUp(MC, MR) * LdC),
        Bp(Products * BpSize);
    // Product p's B operand, unit-k flag, packed panels and C tile.
    const Operand<T, WT> *Bs[2] = {&B, B2};
    const bool UnitK[2] = {Opt.BUnitK, Opt.B2UnitK};
    auto PackedB = [&](int64_t P) { return Bp.get() + P * BpSize; };
    auto CTile = [&](int64_t P) {
      return Ct.get() + P * roundUp(MC, MR) * LdC;
    };
    int64_t PackedBlock = -1; // the column block whose B is in Bp
    for (int64_t Tile = First; Tile < Last; ++Tile) {
      const int64_t Block = Tile / TilesM; // batch * TilesN + column block
      const int64_t Bi = Block / TilesN;
      const int64_t J0 = Block % TilesN * NC, I0 = Tile % TilesM * MC;
      const int64_t Mc = std::min(MC, S.M - I0), Nc = std::min(NC, S.N - J0);
      const int64_t McPad = roundUp(Mc, MR), NcPad = roundUp(Nc, NR);
      // A kept block is packed for its whole depth at once, in the order
      // that reads B in long streams: micro-panel by micro-panel when it is
      // contiguous along k (each row of w[N, K] in one stream), K block by
      // K block otherwise (each row of a [K, N] weight once).
      for (int64_t P = 0; KeepB && Block != PackedBlock && P < Products; ++P) {
        const Operand<T, WT> &W = *Bs[P];
        for (int64_t K0 = 0; K0 < S.K && !UnitK[P]; K0 += KC)
          packB(W, false, Bi, K0, std::min(KC, S.K - K0), J0, Nc, NcPad, NR,
                PackedB(P) + K0 * NcPad);
        for (int64_t Jp = 0; Jp < NcPad && UnitK[P]; Jp += NR)
          for (int64_t K0 = 0; K0 < S.K; K0 += KC) {
            const int64_t Kc = std::min(KC, S.K - K0);
            packB(W, true, Bi, K0, Kc, J0 + Jp, std::min(NR, Nc - Jp), NR, NR,
                  PackedB(P) + K0 * NcPad + Jp * Kc);
          }
      }
      PackedBlock = Block;
      for (int64_t P = 0; P < Products; ++P)
        std::fill(CTile(P), CTile(P) + McPad * LdC, T(0));
      for (int64_t K0 = 0; K0 < S.K; K0 += KC) {
        const int64_t Kc = std::min(KC, S.K - K0);
        for (int64_t P = 0; P < Products && !KeepB && !PanelByPanel; ++P)
          packB(*Bs[P], false, Bi, K0, Kc, J0, Nc, NcPad, NR, PackedB(P));
        T *PA = Ap.get();
        packA(A, Opt.AUnitK, Bi, I0, Mc, McPad, MR, K0, Kc, PA);
        for (int64_t Jp = 0; Jp < NcPad; Jp += NR)
          for (int64_t P = 0; P < Products; ++P) {
            T *PB = PackedB(P) + (KeepB ? K0 * NcPad : 0);
            T *Panel = PanelByPanel ? PB : PB + Jp * Kc;
            if (PanelByPanel)
              packB(*Bs[P], true, Bi, K0, Kc, J0 + Jp, std::min(NR, Nc - Jp),
                    NR, NR, Panel);
            T *C = CTile(P);
            // Packed panel by panel, the next panel's rows of w are fetched
            // into L2 by this one's micro-kernels, a few rows each: packing
            // it then reads L2 instead of waiting on memory. With M <= MC
            // each weight is packed once per call, and from memory (an LLM's
            // weights are past the L3) the pack was a third of the time at
            // M = 128: 1.06-1.2x at M = 48-128, 1.02-1.04x at 256-512.
            const Operand<T, WT> &W = *Bs[P];
            const int64_t NextJ = J0 + Jp + NR;
            const int64_t NextRows =
                PanelByPanel && !W.Fill && W.KStride == 1 && Jp + NR < NcPad
                    ? std::min(NR, Nc - Jp - NR)
                    : 0;
            const int64_t Calls = McPad / MR;
            for (int64_t Ip = 0; Ip < McPad; Ip += MR) {
              const PrefetchRows Ahead =
                  rowsShare(W.Data + Bi * W.BatchStride, W.RowStride, NextJ, K0,
                            Kc, NextRows, Ip / MR, Calls);
              Micro.Run(Kc, PA + Ip * Kc, Panel, C + Ip * LdC + Jp, LdC, Ahead);
            }
          }
      }
      for (int64_t I = 0; I < Mc; ++I)
        E(Bi, I0 + I, J0, Nc, static_cast<const T *>(CTile(0) + I * LdC),
          B2 ? static_cast<const T *>(CTile(1) + I * LdC) : nullptr);
    }
  };
  runShares(Threads > 1, NumTiles, Run);
}

// With PK_RUNTIME_LIBRARY (pk_add_kernels defines it, and links pk's runtime
// library, lib/Runtime), the product's instances are compiled there once,
// not in every file that multiplies: the first matmul of a generated file
// cost about 1.9 s of g++ -O2 for the core, the GEMV and the micro-kernels
// of three levels. These are every element/weight pair pkc writes (StridedB
// above); another pair is still compiled from this header. Without the
// macro (the eager reference, code compiled outside pk_add_kernels) this
// header is all there is.
#ifdef PK_RUNTIME_LIBRARY
#define PK_GEMM_CORE_INSTANCE(T, WT)                                           \
  extern template void gemmCore<T, WT>(                                        \
      const GemmShape &, const GemmOptions &, const Operand<T> &,              \
      const Operand<T, WT> &, const RowEpilogue<T> &, const Operand<T, WT> *);
PK_GEMM_CORE_INSTANCE(float, float)
PK_GEMM_CORE_INSTANCE(float, bfloat16)
PK_GEMM_CORE_INSTANCE(double, double)
#undef PK_GEMM_CORE_INSTANCE
// int8 weights with group scales (GroupScaledB) read in place.
extern template void gemv<float, int8_t>(const GemmShape &, bool,
                                         const Operand<float> &,
                                         const Operand<float, int8_t> &,
                                         const RowEpilogue<float> &,
                                         const GroupScales &, int64_t,
                                         const GemvWeights<float, int8_t> &);
#endif

} // namespace gemm_detail

/// C = A B for every batch, through the lambdas described at the top of
/// this file (or a StridedA / StridedB read in place), with the
/// micro-kernel of gemm_isa(). Only the adapters to the lambdas are compiled
/// per call; the product itself is gemm_detail::gemmCore's, once per type.
template <class T, class LoadA, class LoadB, class Epilogue>
void gemm(const GemmShape &S, const GemmOptions &Opt, const LoadA &A,
          const LoadB &B, const Epilogue &E) {
  using namespace gemm_detail;
  const RowEpilogue<T> Finish{&finishRow<T, Epilogue>, &E};
  if constexpr (std::is_same_v<LoadB, GroupScaledB>) {
    // int8 weights read in place by the GEMV kernels: w[N, K] contiguous
    // along k, a few rows of A, groups of whole vectors of the level.
    static_assert(std::is_same_v<T, float>, "GroupScaledB: float products");
    if (S.Batch > 0 && S.M > 0 && S.N > 0 && S.M <= kGemvMaxRows && S.K > 0 &&
        B.KStride == 1 && B.Group > 0 &&
        B.Group % gemv_float_lanes(gemm_isa()) == 0) {
      Operand<float, int8_t> W;
      W.Data = B.Data;
      W.BatchStride = B.BatchStride;
      W.RowStride = B.NStride;
      W.KStride = 1;
      const GroupScales Gs{B.Scales, B.ScaleNStride, B.ScaleKStride, B.Group};
      return gemv<float, int8_t>(S, Opt.Threaded, operandA<T>(A), W, Finish, Gs,
                                 B.ScaleBatchStride);
    }
  }
  gemmCore<T>(S, Opt, operandA<T>(A), operandB<T>(B), Finish);
}

/// C = A B and C2 = A B2 for every batch, as one pass (see the top of this
/// file): two products that share their left operand and their shape, which
/// one epilogue combines, E(b, i, j0, n, acc, acc2). B and B2 are lambdas
/// or StridedB of the same stored type, or both GroupScaledB; Opt.B2UnitK
/// says how B2 is laid out.
template <class T, class LoadA, class LoadB, class LoadB2, class Epilogue>
void gemm_dual(const GemmShape &S, const GemmOptions &Opt, const LoadA &A,
               const LoadB &B, const LoadB2 &B2, const Epilogue &E) {
  using namespace gemm_detail;
  const RowEpilogue<T> Finish{&finishRow2<T, Epilogue>, &E};
  if constexpr (std::is_same_v<LoadB, GroupScaledB> &&
                std::is_same_v<LoadB2, GroupScaledB>) {
    static_assert(std::is_same_v<T, float>, "GroupScaledB: float products");
    auto Fits = [&](const GroupScaledB &W) {
      return W.KStride == 1 && W.Group > 0 &&
             W.Group % gemv_float_lanes(gemm_isa()) == 0;
    };
    if (S.Batch > 0 && S.M > 0 && S.N > 0 && S.M <= kGemvMaxRows && S.K > 0 &&
        Fits(B) && Fits(B2)) {
      auto Weights = [](const GroupScaledB &W) {
        Operand<float, int8_t> O;
        O.Data = W.Data;
        O.BatchStride = W.BatchStride;
        O.RowStride = W.NStride;
        O.KStride = 1;
        return O;
      };
      const Operand<float, int8_t> W1 = Weights(B), W2 = Weights(B2);
      return gemv<float, int8_t>(
          S, Opt.Threaded, operandA<T>(A), W1, Finish,
          GroupScales{B.Scales, B.ScaleNStride, B.ScaleKStride, B.Group},
          B.ScaleBatchStride,
          GemvWeights<float, int8_t>{&W2,
                                     GroupScales{B2.Scales, B2.ScaleNStride,
                                                 B2.ScaleKStride, B2.Group},
                                     B2.ScaleBatchStride});
    }
  }
  static_assert(std::is_same_v<typename StoredB<T, LoadB>::Type,
                               typename StoredB<T, LoadB2>::Type>,
                "gemm_dual: both B operands are stored as the same type");
  const auto O2 = operandB<T>(B2);
  gemmCore<T>(S, Opt, operandA<T>(A), operandB<T>(B), Finish, &O2);
}

} // namespace pk::rt

#endif // PK_GEMM_H
