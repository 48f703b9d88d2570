//===- StdMath.h - `std::exp(x[_])` as one pk diagnostic --------*- C++ -*-===//
//
// C++ programmers write `std::exp(v)` by habit. On a pk value that is a
// failed overload resolution, with a screen of libm candidates (or, for
// `std::max(a, b)`, an error inside <algorithm>'s instantiation). pkc
// reports instead one [pk-std-math] error at the call, whose note carries
// the fix-it to the pk::lang function (`std::exp` -> `exp`), and drops
// Clang's diagnostics about that call (language.md §3).
//
// The mechanism: a DiagnosticConsumer (DiagnosticHold) in front of Clang's
// holds Clang's diagnostics while the translation unit is parsed; once Sema
// is done, findStdMathCalls() finds the calls in the AST (RecoveryExprs of
// failed calls, calls resolved into the library, dependent calls in helper
// templates whose pk instantiation failed), and the hold is released:
// each held diagnostic (with its notes) about such a call is replaced by
// the pk diagnostic, the others are passed on unchanged and in order.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_STDMATH_H
#define PK_FRONTEND_STDMATH_H

#include "Frontend/Diagnostics.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "clang/Basic/Diagnostic.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pk::frontend {

/// The pk::lang function for a C/C++ library math function called with
/// \p NumArgs arguments, or "" when pk has none: the op table's function
/// names (exp, sqrt, pow, clamp ...), with C's `f`/`l` suffixes (expf,
/// sqrtl), fabs/labs/llabs -> abs, max/fmax and min/fmin of two operands ->
/// maximum/minimum, and of one operand (an initializer list) -> pk's
/// reductions max/min.
std::string pkFunctionFor(llvm::StringRef LibraryName, unsigned NumArgs);

/// A call of a library math function on a pk value.
struct StdMathCall {
  clang::SourceRange Call;   ///< the whole call
  clang::SourceRange Callee; ///< `std::exp`: what the fix-it replaces
  std::string Spelled;       ///< the callee as written: "std::exp"
  std::string PkName;        ///< "exp"
  std::string Operand;       ///< the first pk operand as written: "x[_]"
  /// Found in a helper template's pattern (its arguments are dependent):
  /// reported only if Clang reported an error at it.
  bool InPattern = false;
  /// For InPattern: the helper template's location. A later call of the
  /// helper with the same types fails too (its specialization is invalid),
  /// and Clang's "no matching function" there is dropped as well.
  clang::SourceLocation Template;
};

/// The call \p E (a CallExpr, or the RecoveryExpr of a failed call) when it
/// calls a library function that pk has (pkFunctionFor) with a pk value
/// (pk::Array, `ref[_]`) as an argument.
std::optional<StdMathCall> matchStdMathCall(const clang::Expr *E,
                                            const clang::ASTContext &Ctx);

/// Every such call in the user's code of the translation unit (not in
/// system or pk headers), template instantiations included, in source order,
/// one per call site.
std::vector<StdMathCall> findStdMathCalls(clang::ASTContext &Ctx);

/// Reports \p C as `[pk-std-math]` with its fix-it note.
void reportStdMathCall(Reporter &Rep, const StdMathCall &C);

/// Holds every diagnostic until release(); installed in front of a
/// DiagnosticsEngine's client (which may be -verify's), it forwards
/// everything else to that client, and reports the client's counts as its
/// own.
class DiagnosticHold : public clang::DiagnosticConsumer {
public:
  /// Puts a new hold in front of \p DE's client (owning it when \p DE did).
  static DiagnosticHold *install(clang::DiagnosticsEngine &DE);

  /// A diagnostic that is not a note, and the notes that follow it.
  using Group = llvm::ArrayRef<clang::StoredDiagnostic>;

  /// Stops holding. For each held group in order, \p Drop decides whether
  /// it is replaced (it may emit diagnostics of its own: they pass
  /// straight through) or replayed to the client unchanged.
  void release(llvm::function_ref<bool(Group)> Drop);
  bool holding() const { return Holding; }
  /// Drops what is held and every diagnostic after it: this parse is thrown
  /// away (a parse with a precompiled header that found errors is redone
  /// without it, Pch.h). discardUnlessReleased(): the same from the end of
  /// the parse, if release() was never called (the parse stopped early).
  void discard() {
    Discarding = true;
    Held.clear();
  }
  void discardUnlessReleased() { DiscardAtEnd = true; }

  void BeginSourceFile(const clang::LangOptions &LO,
                       const clang::Preprocessor *PP) override;
  void EndSourceFile() override;
  void finish() override;
  void clear() override;
  bool IncludeInDiagnosticCounts() const override;
  void HandleDiagnostic(clang::DiagnosticsEngine::Level Level,
                        const clang::Diagnostic &Info) override;

private:
  DiagnosticHold(clang::DiagnosticsEngine &DE,
                 std::unique_ptr<clang::DiagnosticConsumer> Owned,
                 clang::DiagnosticConsumer *Client)
      : DE(DE), Owned(std::move(Owned)), Client(Client) {}
  void syncCounts();

  clang::DiagnosticsEngine &DE;
  std::unique_ptr<clang::DiagnosticConsumer> Owned;
  clang::DiagnosticConsumer *Client;
  bool Holding = true;
  bool Discarding = false, DiscardAtEnd = false;
  std::vector<clang::StoredDiagnostic> Held;
};

/// Releases \p Hold, replacing Clang's diagnostics about the calls of
/// \p Calls with their pk diagnostics (see the file comment).
void releaseWithStdMathCalls(DiagnosticHold &Hold,
                             const std::vector<StdMathCall> &Calls,
                             const clang::SourceManager &SM, Reporter &Rep);

} // namespace pk::frontend

#endif // PK_FRONTEND_STDMATH_H
