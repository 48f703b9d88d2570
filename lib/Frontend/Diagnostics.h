//===- Diagnostics.h - The kernel contract's diagnostics --------*- C++ -*-===//
//
// Every rejection of a kernel is a Clang diagnostic
//   file:line:col: error: <what> [pk-<id>]
// followed by a note that says what to write instead (language.md §5). One id
// per rule; the ids are listed here so that the tests, the README and the
// code agree.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_DIAGNOSTICS_H
#define PK_FRONTEND_DIAGNOSTICS_H

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceLocation.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

namespace pk::frontend {

/// The `[pk-<id>]` tags.
namespace rule {
inline constexpr const char *ReturnType = "pk-return-type";
inline constexpr const char *ParamKind = "pk-param-kind";
inline constexpr const char *WriteIn = "pk-write-in";
inline constexpr const char *OutUnwritten = "pk-out-unwritten";
inline constexpr const char *ReadBeforeWrite = "pk-read-before-write";
inline constexpr const char *Subscript = "pk-subscript";
inline constexpr const char *DataDependentControl = "pk-data-dependent-control";
inline constexpr const char *NonconstantLoop = "pk-nonconstant-loop";
inline constexpr const char *OpaqueCall = "pk-opaque-call";
/// `std::exp(x[_])`: the C++ library's math on a pk value (StdMath.h).
inline constexpr const char *StdMath = "pk-std-math";
inline constexpr const char *AxisNotConstant = "pk-axis-not-constant";
inline constexpr const char *AxisOutOfRange = "pk-axis-out-of-range";
/// A shape that cannot be right whatever the run-time extents (also used by
/// inferShapes).
inline constexpr const char *Shape = "pk-shape";
/// A window whose constant bounds are negative or reversed (language.md §2).
inline constexpr const char *WindowBounds = "pk-window-bounds";
inline constexpr const char *Unsupported = "pk-unsupported";
inline constexpr const char *NotSupportedYet = "pk-not-supported-yet";
/// Warning: a PK_KERNEL definition in an included file.
inline constexpr const char *IncludedKernel = "pk-included-kernel";
/// Warning: a kernel template instantiated implicitly (it runs eagerly).
inline constexpr const char *ImplicitInstantiation =
    "pk-implicit-instantiation";
/// A Graph IR the frontend built fails the verifier (a pkc bug).
inline constexpr const char *Internal = "pk-internal";
} // namespace rule

/// Emits pk diagnostics through Clang's DiagnosticsEngine (so that they print
/// with caret and source line, count as errors, and work with -verify).
class Reporter {
public:
  explicit Reporter(clang::DiagnosticsEngine &D) : D(D) {}

  /// `Message [Id]` at \p Loc (highlighting \p Range), then `note: Note` at
  /// \p NoteLoc (\p Loc when invalid) unless \p Note is empty. The same
  /// message at the same location is printed once (loop unrolling and
  /// helper inlining visit the same code many times).
  /// \p Fix, when given, rides on the note: the one obvious rewrite
  /// (`x[0]` -> `x[_]`), which -fixit and IDEs can apply.
  void error(llvm::StringRef Id, clang::SourceLocation Loc,
             clang::SourceRange Range, llvm::StringRef Message,
             llvm::StringRef Note = "",
             clang::SourceLocation NoteLoc = clang::SourceLocation(),
             std::optional<clang::FixItHint> Fix = std::nullopt);
  void warning(llvm::StringRef Id, clang::SourceLocation Loc,
               llvm::StringRef Message);
  void note(clang::SourceLocation Loc, llvm::StringRef Message,
            std::optional<clang::FixItHint> Fix = std::nullopt);

  /// Errors reported through this reporter, duplicates included (a kernel
  /// that reaches an error already printed for another kernel still fails).
  unsigned numErrors() const { return NumErrors; }
  clang::DiagnosticsEngine &engine() { return D; }

private:
  clang::DiagnosticsEngine &D;
  unsigned NumErrors = 0;
  std::set<std::pair<clang::SourceLocation::UIntTy, std::string>> Seen;
};

} // namespace pk::frontend

#endif // PK_FRONTEND_DIAGNOSTICS_H
