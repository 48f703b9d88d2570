//===- cuda_fp16.h - The CUDA shim's stand-in for NVIDIA's cuda_fp16.h ----===//
//
// __half and the two conversions pkc's generated code uses, with CUDA's
// names and semantics (round to nearest even; NaN and infinity kept). The
// conversions are deliberately not pk's own (<pk/half.h>): where the host
// compiler has _Float16 they are its IEEE conversions, so a differential
// test through the shim also checks pk's CPU conversions against an
// independent implementation; elsewhere a plain, branchy reference below.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SHIM_CUDA_FP16_H
#define PK_SHIM_CUDA_FP16_H

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

/// binary16, 2 bytes, 2-byte aligned, as NVIDIA's (whose bits are private;
/// the generated code only converts).
struct __half {
  unsigned short __x;
};

namespace pk::shim::detail {
inline unsigned short float_to_half_bits(float F) {
#if defined(__FLT16_MAX__)
  _Float16 H = static_cast<_Float16>(F);
  unsigned short B;
  std::memcpy(&B, &H, 2);
  return B;
#else
  uint32_t U;
  std::memcpy(&U, &F, 4);
  unsigned short Sign = static_cast<unsigned short>((U >> 16) & 0x8000u);
  uint32_t A = U & 0x7fffffffu;
  if (A > 0x7f800000u) // NaN
    return Sign | 0x7e00u | static_cast<unsigned short>((A >> 13) & 0x3ffu);
  int Exp = static_cast<int>(A >> 23) - 127;
  uint32_t Man = (A & 0x7fffffu) | (A ? 0x800000u : 0u);
  if (A == 0)
    return Sign;
  if (Exp > 15)
    return Sign | 0x7c00u;
  // Shift the 24-bit significand to the half's grid: 10 bits below the
  // leading one for normals, a fixed 2^-24 grid for subnormals.
  int Shift = Exp >= -14 ? 13 : 13 + (-14 - Exp);
  if (Shift > 25)
    return Sign;
  uint32_t Q = Man >> Shift, Rem = Man & ((1u << Shift) - 1),
           Half = 1u << (Shift - 1);
  if (Rem > Half || (Rem == Half && (Q & 1u)))
    ++Q;
  uint32_t Bits =
      Exp >= -14 ? (static_cast<uint32_t>(Exp + 15) << 10) + (Q - 0x400u) : Q;
  return Sign | static_cast<unsigned short>(Bits >= 0x7c00u ? 0x7c00u : Bits);
#endif
}
inline float half_bits_to_float(unsigned short B) {
#if defined(__FLT16_MAX__)
  _Float16 H;
  std::memcpy(&H, &B, 2);
  return static_cast<float>(H);
#else
  int Exp = (B >> 10) & 31, Man = B & 1023;
  float V = Exp == 31  ? (Man ? NAN : INFINITY)
            : Exp == 0 ? std::ldexp(static_cast<float>(Man), -24)
                       : std::ldexp(static_cast<float>(1024 + Man), Exp - 25);
  return (B & 0x8000u) ? -V : V;
#endif
}
} // namespace pk::shim::detail

__host__ __device__ inline __half __float2half_rn(float F) {
  return __half{::pk::shim::detail::float_to_half_bits(F)};
}
__host__ __device__ inline __half __float2half(float F) {
  return __float2half_rn(F);
}
__host__ __device__ inline float __half2float(__half H) {
  return ::pk::shim::detail::half_bits_to_float(H.__x);
}

#endif // PK_SHIM_CUDA_FP16_H
