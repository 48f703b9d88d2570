//===- EmitCpp.h - Loop IR to a C++ kernel body -----------------*- C++ -*-===//
#ifndef PK_TARGET_CPU_EMITCPP_H
#define PK_TARGET_CPU_EMITCPP_H

#include "IR/TileIR.h"

#include <string>

namespace pk::cpu {

/// The replacement for the kernel's body, braces included: the entry guards,
/// then one loop nest per group, shaped as the CPU schedule (Tile IR) says.
std::string emitKernelBody(const tile::Program &Schedule);

} // namespace pk::cpu

#endif // PK_TARGET_CPU_EMITCPP_H
