//===- pk/gemm_amx.h - bfloat16 products on AMX tiles -----------*- C++ -*-===//
//
// Intel's Advanced Matrix Extensions (Sapphire Rapids and later) multiply
// bfloat16 matrices in tile registers: one TDPBF16PS is a 16 x 16 float tile
// += a 16 x 32 bfloat16 tile times a 32 x 16 one, 16 times the multiply-adds
// of an AVX-512 FMA per cycle. pk::rt::gemm uses it for a float product whose
// operands are both bfloat16 values: weights stored as pk::bfloat16 read in
// place, times a left operand the kernel rounds to bfloat16 itself
// (`matmul(cast<pk::bfloat16>(x), transpose(w[_]))`, GemmOptions::ABf16).
// Each product of two bfloat16 values is exact in float, and the sums are
// float, so the result is the float product of the same values up to the
// order of the sum over K (the tolerance of every level, <pk/gemm_kernels.h>)
// and AMX's treatment of subnormal bfloat16 inputs and float outputs as zero.
//
// This header holds what is specific to the hardware: whether the CPU and the
// kernel let the process use the tiles, the tile configuration, and the
// micro-kernel; <pk/gemm.h> holds the loops around it (gemmAmxBf16).
//
// AMX-INT8's TDPBSSD multiplies signed bytes into exact int32 sums: the
// products of int8 values in groups (<pk/int8_product.h>, llama2.c runq's
// Q8_0 x Q8_0) use it through amxInt8Micro, with a configuration per depth
// of a step (a divisor of the group size) and the same layout as below: the
// int8 weights the left operand, in place; x packed four bytes of k at a
// time; a 32 x 32 block of int32 dots per call.
//
//   tile      rows x bytes   holds
//   tmm0..3   16 x 64        C: 2 x 2 tiles of 16 x 16 floats (32 w-rows x
//                            32 x-rows)
//   tmm4, 5   16 x 64        16 rows of w[N, K], 32 bfloat16 values of k
//                            each, loaded straight from the weights
//   tmm6, 7   16 x 64        16 pairs of k x 16 rows of x (packed)
//
// The weights are the tiles' left operand, so nn.Linear's w[N, K] (rows
// contiguous along k) is read in place, never packed; the activations are
// packed into the pair-interleaved layout TDPBF16PS wants for its right
// operand, and the 32 x 32 result (w-rows by x-rows) is transposed into the
// epilogue's rows.
//
// Linux hands out the tile state on request (arch_prctl
// ARCH_REQ_XCOMP_PERM): amx_bf16_supported() asks once per process. The
// path is on where the CPU and kernel allow it and gemm_isa() is avx512; set
// PK_GEMM_AMX=0 (or call set_gemm_amx(false)) to turn it off, for tests and
// benchmarks.
//
//===----------------------------------------------------------------------===//
#ifndef PK_GEMM_AMX_H
#define PK_GEMM_AMX_H

#include <pk/gemm_kernels.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if PK_GEMM_X86 && defined(__linux__) && !defined(__CUDACC__) &&               \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11) ||           \
     (defined(__clang__) && __clang_major__ >= 12))
#define PK_GEMM_AMX 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define PK_GEMM_AMX 0
#endif

namespace pk::rt {

namespace gemm_detail {

/// Bits of CPUID leaf 7 (sub-leaf 0) EDX: AMX-BF16, AMX-TILE, AMX-INT8.
inline constexpr unsigned kCpuidAmxBf16 = 1u << 22, kCpuidAmxTile = 1u << 24,
                          kCpuidAmxInt8 = 1u << 25;

/// CPUID leaf 7's EDX when the CPU has AMX-TILE and Linux granted this
/// process the tile state, 0 otherwise: asked once (the grant is per
/// process, for every thread).
inline unsigned amxGrantedFeatures() {
#if PK_GEMM_AMX
  static const unsigned Features = []() -> unsigned {
    unsigned A = 0, B = 0, C = 0, D = 0;
    if (!__get_cpuid_count(7, 0, &A, &B, &C, &D) || !(D & kCpuidAmxTile))
      return 0;
    // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (arch/x86/include/uapi/
    // asm/prctl.h): fails with EINVAL on kernels before 5.16.
    constexpr long ReqXcompPerm = 0x1023, XtileData = 18;
    return syscall(SYS_arch_prctl, ReqXcompPerm, XtileData) == 0 ? D : 0;
  }();
  return Features;
#else
  return 0;
#endif
}

/// Whether the CPU has AMX-TILE and AMX-BF16 and Linux granted the tiles.
inline bool amxBf16Granted() {
  return (amxGrantedFeatures() & kCpuidAmxBf16) != 0;
}

/// Whether the CPU has AMX-TILE and AMX-INT8 and Linux granted the tiles.
inline bool amxInt8Granted() {
  return (amxGrantedFeatures() & kCpuidAmxInt8) != 0;
}

/// Products run on AMX so far (gemm_amx_products()).
inline std::atomic<int64_t> AmxProducts{0};

inline std::atomic<int> &gemm_amx_slot() {
  static std::atomic<int> Slot{[] {
    const char *Env = std::getenv("PK_GEMM_AMX");
    return !(Env && std::strcmp(Env, "0") == 0) && amxGrantedFeatures() ? 1 : 0;
  }()};
  return Slot;
}

} // namespace gemm_detail

/// Whether this CPU and process can multiply bfloat16 tiles (AMX-BF16).
inline bool amx_bf16_supported() { return gemm_detail::amxBf16Granted(); }

/// Whether this CPU and process can multiply int8 tiles (AMX-INT8: the
/// products of int8 values in groups, <pk/int8_product.h>).
inline bool amx_int8_supported() { return gemm_detail::amxInt8Granted(); }

/// Whether pk::rt::gemm runs products of bfloat16 values on AMX now: where
/// supported, unless PK_GEMM_AMX=0 or set_gemm_amx(false), and only while
/// gemm_isa() is avx512 (pinning a lower level pins its float kernels).
/// The same switch governs the int8 products' AMX path.
inline bool gemm_amx() {
  return gemm_detail::gemm_amx_slot().load(std::memory_order_relaxed) != 0 &&
         gemm_isa() == GemmIsa::Avx512 && amx_bf16_supported();
}

/// Turns the AMX paths (bfloat16 and int8 products) on or off for the whole
/// process (tests, benchmarks). Returns false, changing nothing, when asked
/// to turn them on where the CPU or the kernel does not allow the tiles.
inline bool set_gemm_amx(bool On) {
  if (On && !gemm_detail::amxGrantedFeatures())
    return false;
  gemm_detail::gemm_amx_slot().store(On ? 1 : 0, std::memory_order_relaxed);
  return true;
}

/// How many products have run on AMX in this process: tests check with it
/// that the path they mean to test ran.
inline int64_t gemm_amx_products() {
  return gemm_detail::AmxProducts.load(std::memory_order_relaxed);
}

namespace gemm_detail {

/// The rows and columns of w and x one micro-kernel call covers, and the
/// depth of one tile step (32 bfloat16 values: a tile row's 64 bytes).
inline constexpr int64_t kAmxRows = 32, kAmxDepth = 32;

/// x packed for the micro-kernel: a tile of 16 rows of x is kAmxPairsPad / 2
/// rows of 16 x 2 bfloat16 values (pair p of row t at [p][t][0..1]), so one
/// tile load (16 pairs = 32 values of k) reads 1 KiB contiguously.
inline constexpr int64_t kAmxTileRows = 16;

#if PK_GEMM_AMX
/// The configuration every thread loads: eight 16 x 64-byte tiles (palette
/// 1). A static object: g++ 12 does not see that LDTILECFG reads it and
/// dropped the stores to a local one.
struct alignas(64) AmxTileConfig {
  uint8_t Palette, StartRow, Reserved[14];
  uint16_t ColumnBytes[16];
  uint8_t Rows[16];
};
inline const AmxTileConfig kAmxConfig = {1,
                                         0,
                                         {},
                                         {64, 64, 64, 64, 64, 64, 64, 64},
                                         {16, 16, 16, 16, 16, 16, 16, 16}};

/// Loads the tile configuration on the calling thread (before its first
/// micro-kernel call) and releases the tile state (after its last).
__attribute__((target("amx-tile"))) inline void amxBegin() {
  _tile_loadconfig(&kAmxConfig);
}
__attribute__((target("amx-tile"))) inline void amxEnd() { _tile_release(); }

/// Cs[32 w-rows][32 x-rows] (row stride 32 floats) = w[32 rows, depth] times
/// x[32 rows, depth]ᵀ: Steps steps of 32 values of k from W (row stride LdW
/// elements, read in place), then one more from WTail (32 rows of 32
/// values, zero past the depth) when it is not null; X0 and X1 are the
/// packed tiles of x-rows 0..15 and 16..31 (Steps + 1 steps of 1 KiB).
/// Not inlined: the tile loads and stores are asm statements that the
/// compiler does not know read and write memory; a call boundary orders
/// them against the caller's packing and reading.
__attribute__((target("amx-tile,amx-bf16"), noinline)) inline void
amxBf16Micro(int64_t Steps, const uint16_t *W, int64_t LdW,
             const uint16_t *WTail, const uint16_t *X0, const uint16_t *X1,
             float *Cs) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const long StrideW = long(LdW) * 2;
  constexpr int64_t Step = kAmxTileRows * kAmxDepth; // values a tile step
  for (int64_t S = 0; S < Steps; ++S) {
    _tile_loadd(4, W + S * kAmxDepth, StrideW);
    _tile_loadd(5, W + 16 * LdW + S * kAmxDepth, StrideW);
    _tile_loadd(6, X0 + S * Step, 64);
    _tile_loadd(7, X1 + S * Step, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (WTail) {
    _tile_loadd(4, WTail, 64);
    _tile_loadd(5, WTail + 16 * kAmxDepth, 64);
    _tile_loadd(6, X0 + Steps * Step, 64);
    _tile_loadd(7, X1 + Steps * Step, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, Cs, 128);
  _tile_stored(1, Cs + 16, 128);
  _tile_stored(2, Cs + 16 * 32, 128);
  _tile_stored(3, Cs + 16 * 32 + 16, 128);
}

/// The configuration of the int8 products (amxInt8Micro) for Kc values of
/// k a tile step: tmm0..3 the 16 x 16 int32 dots, tmm4 and 5 16 rows of Kc
/// weights, tmm6 and 7 Kc / 4 quads of k x 16 rows of x (64 bytes).
constexpr AmxTileConfig amxInt8Config(int Kc) {
  AmxTileConfig C{};
  C.Palette = 1;
  for (int T = 0; T < 8; ++T) {
    C.ColumnBytes[T] = T == 4 || T == 5 ? uint16_t(Kc) : uint16_t(64);
    C.Rows[T] = T >= 6 ? uint8_t(Kc / 4) : uint8_t(16);
  }
  return C;
}

/// One configuration per multiple of 4 up to 64 (index Kc / 4), static for
/// the same reason as kAmxConfig.
struct AmxInt8Configs {
  AmxTileConfig Of[17];
};
inline constexpr AmxInt8Configs kAmxInt8Configs = [] {
  AmxInt8Configs C{};
  for (int I = 1; I <= 16; ++I)
    C.Of[I] = amxInt8Config(4 * I);
  return C;
}();

/// Loads the int8 products' configuration for Kc values of k a step.
__attribute__((target("amx-tile"))) inline void amxInt8Begin(int64_t Kc) {
  _tile_loadconfig(&kAmxInt8Configs.Of[Kc / 4]);
}

/// Cs[32 w-rows][32 x-rows] (row stride 32 int32) = the int32 dots of 32
/// rows of int8 weights (W, row stride LdW bytes, read in place) with 32 rows
/// of x over Chunks steps of Kc values of k: W + c Kc is step c's first
/// value; X0 and X1 are the packed tiles of x-rows 0..15 and 16..31 (Kc / 4
/// quads of k x 16 rows x 4 bytes a step, steps one after the other).
/// TDPBSSD multiplies signed bytes by signed bytes into exact int32 sums.
/// Not inlined, for the reason amxBf16Micro gives.
__attribute__((target("amx-tile,amx-int8"), noinline)) inline void
amxInt8Micro(int64_t Chunks, int64_t Kc, const int8_t *W, int64_t LdW,
             const int8_t *X0, const int8_t *X1, int32_t *Cs) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const int64_t Step = Kc * kAmxTileRows; // packed bytes a step
  for (int64_t C = 0; C < Chunks; ++C) {
    _tile_loadd(4, W + C * Kc, LdW);
    _tile_loadd(5, W + 16 * LdW + C * Kc, LdW);
    _tile_loadd(6, X0 + C * Step, 64);
    _tile_loadd(7, X1 + C * Step, 64);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_stored(0, Cs, 128);
  _tile_stored(1, Cs + 16, 128);
  _tile_stored(2, Cs + 16 * 32, 128);
  _tile_stored(3, Cs + 16 * 32 + 16, 128);
}
#endif

} // namespace gemm_detail

} // namespace pk::rt

#endif // PK_GEMM_AMX_H
