//===- Driver.h - pkc's work on a list of files -----------------*- C++ -*-===//
#ifndef PK_DRIVER_DRIVER_H
#define PK_DRIVER_DRIVER_H

#include "Driver/Pipeline.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace clang::tooling {
class CompilationDatabase;
}

namespace pk::driver {

struct DriverOptions {
  std::string OutDir = ".";
  bool Cpu = true;  ///< write <stem>.pk.cpp
  bool Cuda = true; ///< write <stem>.pk.cu and <stem>.pk.h
  EmitStage Emit = EmitStage::None;
  bool PrintAfterAll = false;
  /// `-v`: print the time of each stage to stderr.
  bool Verbose = false;
  std::string DepFile;
  /// Put before every compile command (the resource dir fix).
  std::vector<std::string> ExtraArgsBefore;
  /// `--pch-dir`: where a precompiled <pk/pk.h> is cached (empty: none).
  std::string PchDir;
};

/// Exit codes of pkc.
enum ExitCode : int {
  Success = 0,
  UserError = 1, ///< a kernel broke the contract: diagnostics printed
  UsageError = 2 ///< bad options, unreadable input, unwritable output
};

/// Compiles every file. Output is all or nothing: when any kernel in any
/// file has an error, no file is written. Files are written atomically
/// (temporary + rename), never over an input.
int run(const clang::tooling::CompilationDatabase &DB,
        llvm::ArrayRef<std::string> Files, const DriverOptions &Opts);

/// What compileInMemory() returns instead of writing files.
struct InMemoryResult {
  ExitCode Exit = Success;
  /// <stem>.pk.cpp, <stem>.pk.cu and <stem>.pk.h; empty unless Exit is
  /// Success (and the source had no errors, even expected ones).
  std::string Cpp, Cu, H;
  /// What --emit and --pk-print-after-all printed.
  std::string Printed;
};

/// Compiles one source held in memory as `run` compiles a file named
/// `FileName` with `CompilerArgs` after `--`, and returns the generated
/// texts: the file and its outputs never touch the disk (headers are read
/// from the real file system). Diagnostics go to stderr. This is the
/// fuzzer's entry point; `Opts.OutDir` and `Opts.DepFile` are ignored.
InMemoryResult compileInMemory(llvm::StringRef FileName, llvm::StringRef Code,
                               llvm::ArrayRef<std::string> CompilerArgs,
                               const DriverOptions &Opts);

} // namespace pk::driver

#endif // PK_DRIVER_DRIVER_H
