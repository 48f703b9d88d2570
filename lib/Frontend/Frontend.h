//===- Frontend.h - Clang AST to Graph IR -----------------------*- C++ -*-===//
//
// The only layer that sees Clang. It finds PK_KERNEL functions, checks the
// kernel contract (language.md §4-§5) with Clang diagnostics, builds Graph IR
// by walking the AST (locals become SSA renames, helpers are inlined,
// constant loops unrolled, constant ifs resolved) and hands each kernel to the
// pipeline. The kernel bodies the pipeline returns replace the originals in a
// copy of the main file, through clang::Rewriter.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_FRONTEND_H
#define PK_FRONTEND_FRONTEND_H

#include "IR/GraphIR.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/IntrusiveRefCntPtr.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <functional>
#include <string>
#include <vector>

namespace clang::tooling {
class CompilationDatabase;
}

namespace pk::frontend {

/// What the pipeline returns for one kernel.
struct KernelResult {
  /// Inserted before the kernel's declaration (its attributes and
  /// specifiers included). Ignored when Diags is not empty.
  std::string CppTemplate;
  /// Replacement for the kernel's body, braces included. Ignored when Diags
  /// is not empty.
  std::string CppBody;
  /// Problems in the user's kernel found by a later layer; reported as Clang
  /// errors at their locations.
  std::vector<ir::UserDiag> Diags;
};

/// Runs the pipeline (every pass from shape inference on) on one kernel's
/// freshly built Graph IR.
using CompileKernelFn = std::function<KernelResult(ir::Function &F)>;

/// The result for one input file.
struct FileResult {
  std::string InputPath;
  /// The main file with each kernel body replaced. Empty when the file had
  /// errors.
  std::string Rewritten;
  /// Every file the preprocessor entered (for depfiles), main file first.
  std::vector<std::string> Dependencies;
  unsigned NumKernels = 0;
  bool HadErrors = false;
};

struct Options {
  /// Inserted at the front of every compile command (the resource dir fix,
  /// see toolchain.md).
  std::vector<std::string> ExtraArgsBefore;
  /// Appended to every compile command.
  std::vector<std::string> ExtraArgsAfter;
  /// Where the files and their headers are read from; null means the real
  /// file system. The driver's in-memory entry point (the fuzzer's) lays a
  /// file held in memory over the real one.
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS;
  /// Where a precompiled <pk/pk.h> is kept between runs (Pch.h); empty: the
  /// header is parsed with every file.
  std::string PchDir;
};

/// Parses `Files` with the commands of `DB`, reports diagnostics to stderr,
/// and calls `Compile` once per kernel definition in each main file, in
/// source order. Returns false when any file had an error (then no result
/// should be written anywhere).
bool compileFiles(const clang::tooling::CompilationDatabase &DB,
                  llvm::ArrayRef<std::string> Files, const Options &Opts,
                  const CompileKernelFn &Compile,
                  std::vector<FileResult> &Results);

} // namespace pk::frontend

#endif // PK_FRONTEND_FRONTEND_H
