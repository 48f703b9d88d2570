//===- EmitCpp.h - Loop IR to a C++ kernel body -----------------*- C++ -*-===//
#ifndef PK_TARGET_CPU_EMITCPP_H
#define PK_TARGET_CPU_EMITCPP_H

#include "IR/LoopIR.h"

#include <string>

namespace pk::cpu {

/// The replacement for the kernel's body, braces included: the entry guards,
/// then one loop nest per group (OpenMP threads above a size threshold,
/// `#pragma omp simd` inside, flat indexing where shapes allow).
std::string emitKernelBody(const loop::Program &P);

} // namespace pk::cpu

#endif // PK_TARGET_CPU_EMITCPP_H
