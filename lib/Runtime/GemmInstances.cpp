//===- GemmInstances.cpp - The matrix product, compiled once --------------===//
//
// pk's runtime library: the instances of pk::rt::gemm's core that
// <pk/gemm.h> declares `extern template` under PK_RUNTIME_LIBRARY, so that a
// generated file compiles only its own adapters (its lambdas' loops) and not
// the tile loops, packing, GEMV driver and micro-kernels of every x86-64
// level again (nor the GEMV of int8 weights with group scales). This file is
// compiled without PK_RUNTIME_LIBRARY, so the header's definitions are what it
// instantiates.
//
//===----------------------------------------------------------------------===//
#include <pk/gemm.h>

#ifdef PK_RUNTIME_LIBRARY
#error "GemmInstances.cpp instantiates what PK_RUNTIME_LIBRARY declares extern"
#endif

namespace pk::rt::gemm_detail {

#define PK_GEMM_CORE_INSTANCE(T, WT)                                           \
  template void gemmCore<T, WT>(                                               \
      const GemmShape &, const GemmOptions &, const Operand<T> &,              \
      const Operand<T, WT> &, const RowEpilogue<T> &, const Operand<T, WT> *);
PK_GEMM_CORE_INSTANCE(float, float)
PK_GEMM_CORE_INSTANCE(float, bfloat16)
PK_GEMM_CORE_INSTANCE(double, double)
#undef PK_GEMM_CORE_INSTANCE
template void gemv<float, int8_t>(const GemmShape &, bool,
                                  const Operand<float> &,
                                  const Operand<float, int8_t> &,
                                  const RowEpilogue<float> &,
                                  const GroupScales &, int64_t,
                                  const GemvWeights<float, int8_t> &);

} // namespace pk::rt::gemm_detail
