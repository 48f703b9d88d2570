//===- cuda_bf16.h - The CUDA shim's stand-in for NVIDIA's cuda_bf16.h ----===//
//
// __nv_bfloat16 and the two conversions pkc's generated code uses, with
// CUDA's names and semantics (round to nearest even; NaN and infinity kept).
// Written independently of <pk/half.h> (a branchy reference), so that a
// differential test through the shim also checks pk's CPU conversions.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SHIM_CUDA_BF16_H
#define PK_SHIM_CUDA_BF16_H

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

/// bfloat16, 2 bytes, 2-byte aligned, as NVIDIA's.
struct __nv_bfloat16 {
  unsigned short __x;
};

__host__ __device__ inline __nv_bfloat16 __float2bfloat16_rn(float F) {
  uint32_t U;
  std::memcpy(&U, &F, 4);
  if ((U & 0x7fffffffu) > 0x7f800000u) // NaN: quiet, never rounded
    return __nv_bfloat16{static_cast<unsigned short>((U >> 16) | 0x40u)};
  uint32_t Q = U >> 16, Rem = U & 0xffffu;
  if (Rem > 0x8000u || (Rem == 0x8000u && (Q & 1u)))
    ++Q; // a carry into the exponent is the correct result (up to inf)
  return __nv_bfloat16{static_cast<unsigned short>(Q)};
}
__host__ __device__ inline __nv_bfloat16 __float2bfloat16(float F) {
  return __float2bfloat16_rn(F);
}
__host__ __device__ inline float __bfloat162float(__nv_bfloat16 H) {
  uint32_t U = static_cast<uint32_t>(H.__x) << 16;
  float F;
  std::memcpy(&F, &U, 4);
  return F;
}

#endif // PK_SHIM_CUDA_BF16_H
