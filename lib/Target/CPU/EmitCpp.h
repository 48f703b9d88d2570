//===- EmitCpp.h - Loop IR to a C++ kernel body -----------------*- C++ -*-===//
#ifndef PK_TARGET_CPU_EMITCPP_H
#define PK_TARGET_CPU_EMITCPP_H

#include "IR/TileIR.h"

#include <string>

namespace pk::cpu {

/// The replacement for the kernel's body, braces included: the entry guards,
/// then one loop nest per group, shaped as the CPU schedule (Tile IR) says.
/// Its transcendentals call `pk_vm::`, a template parameter (see KernelCpp).
std::string emitKernelBody(const tile::Program &Schedule);

/// What the rewrite puts in the .pk.cpp for one kernel.
struct KernelCpp {
  /// Inserted before the kernel: the body above as a function template over
  /// the flavour of pk::vm, `template <class pk_vm> PK_CPU_DISPATCH static
  /// void pk_<symbol>_cpu(<the kernel's parameters>)`. GCC clones it per
  /// x86-64 level; the v3/v4 clones of the pk::vm::Fused instance fuse
  /// pk::vm's own steps while the kernel's arithmetic stays unfused.
  std::string Template;
  /// The kernel's new body, braces included: pk::rt::run_cpu calls the
  /// template's instance for this CPU (<pk/dispatch.h>).
  std::string Body;
};

/// The template and the forwarding body for the kernel scheduled in
/// `Schedule`.
KernelCpp emitKernel(const tile::Program &Schedule);

} // namespace pk::cpu

#endif // PK_TARGET_CPU_EMITCPP_H
