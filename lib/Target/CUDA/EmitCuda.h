//===- EmitCuda.h - Kernel IR to CUDA kernels and launchers -----*- C++ -*-===//
#ifndef PK_TARGET_CUDA_EMITCUDA_H
#define PK_TARGET_CUDA_EMITCUDA_H

#include "IR/KernelIR.h"

#include <string>
#include <vector>

namespace pk::cuda {

/// The CUDA text of one kernel.
struct KernelText {
  std::string Kernels;     ///< `__global__` functions, one per loop nest
  std::string Launcher;    ///< `void <name>(refs..., CUstream_st *)` body
  std::string Declaration; ///< the launcher's declaration for the .pk.h
  /// For an instantiation of a kernel template: the launcher template that
  /// Launcher specializes (`template <typename T> void scale(...);`), which
  /// cudaHeader declares once before the first of its specializations.
  std::string TemplateDeclaration;
  /// Lines the file needs before the kernels (the 16-bit types' headers
  /// and layout checks); cudaFile prints each distinct line once.
  std::vector<std::string> Prelude;
};

/// Prints the Kernel IR of a kernel as CUDA, and its host launcher: the
/// entry guards, then per nest the launch variant that fits the run-time
/// extents, on the caller's stream through PK_LAUNCH.
KernelText emitCuda(const kernel::Program &P);

/// The whole .pk.cu / .pk.h for the kernels of one source file.
std::string cudaFile(llvm::StringRef Source, llvm::StringRef HeaderName,
                     llvm::ArrayRef<KernelText> Kernels);
std::string cudaHeader(llvm::StringRef Source,
                       llvm::ArrayRef<KernelText> Kernels);

} // namespace pk::cuda

#endif // PK_TARGET_CUDA_EMITCUDA_H
