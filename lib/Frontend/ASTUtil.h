//===- ASTUtil.h - pk's types and functions in the AST ----------*- C++ -*-===//
//
// What the frontend needs to know about Clang types and declarations: the
// element type of a value (C++ scalar, pk::Array<T>, pk::WholeProxy<T, R>),
// refs (pk::In/Out/InOut<T, R>), the tags `_` and `keepdims`, and whether a
// function belongs to pk, to the C++/C library, or to the user.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_ASTUTIL_H
#define PK_FRONTEND_ASTUTIL_H

#include "IR/GraphIR.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"

#include <optional>
#include <string>

namespace pk::frontend {

/// True when \p D is declared (at any depth) inside the top-level namespace
/// `pk` (pk, pk::lang, pk::detail, members of pk's classes).
bool isInPkNamespace(const clang::Decl *D);

/// True when \p D is part of pk's own headers (<pk/pk.h>, <pk/ref.h>, ...):
/// declared in namespace pk in a file `pk/<name>.h`. User code that lives in
/// a namespace under pk (`pk::samples`) is user code.
bool isPkLibrary(const clang::Decl *D, const clang::SourceManager &SM);

/// The record type of \p T (references, cv and sugar removed), or null.
const clang::CXXRecordDecl *recordOf(clang::QualType T);

/// True for the pk class named \p Name (`Whole`, `KeepDims`, `Array`, ...).
bool isPkClass(clang::QualType T, llvm::StringRef Name);

/// The dtype of a C++ arithmetic type, normalised like pk.h's Canon
/// (integers of at most 4 bytes -> i32, 8 bytes -> i64, float, double, bool).
/// nullopt for other types (long double, __int128, _Float16, ...).
std::optional<ir::DType> scalarDType(clang::QualType T,
                                     const clang::ASTContext &Ctx);

/// True for a C++ arithmetic type (a weak scalar operand in pk's ops).
bool isArithmeticScalar(clang::QualType T);

/// The element dtype of a value type: an arithmetic scalar (or an enum, as
/// its underlying integer), pk::Array<T> or pk::WholeProxy<T, R>. nullopt
/// for anything else.
std::optional<ir::DType> valueDType(clang::QualType T,
                                    const clang::ASTContext &Ctx);

/// F16 for pk::half, BF16 for pk::bfloat16, else nullopt.
std::optional<ir::DType> storage16DType(clang::QualType T);

/// The exact element types a ref may have: float, double, int32_t, int64_t,
/// bool (any signed 32/64-bit integer type spelling is accepted), pk::half,
/// pk::bfloat16, int8_t (signed char) and uint8_t (unsigned char).
std::optional<ir::DType> elementDType(clang::QualType T,
                                      const clang::ASTContext &Ctx);

/// pk::In / pk::Out / pk::InOut<T, R>.
struct RefType {
  ir::ParamKind Kind = ir::ParamKind::In;
  clang::QualType Element;
  int64_t Rank = 1;
};
std::optional<RefType> refType(clang::QualType T);

/// "In", "Out", "InOut".
llvm::StringRef refKindName(ir::ParamKind K);
/// "In<float, 2>".
std::string refSpelling(ir::ParamKind K, ir::DType T, unsigned Rank);

/// True for functions of the C++ standard library or the C library: in
/// namespace std, a compiler builtin, or declared in a system header outside
/// any user namespace.
bool isLibraryFunction(const clang::FunctionDecl *FD,
                       const clang::SourceManager &SM);

/// The source text of \p R (macro expansions resolved), whitespace runs
/// collapsed to one space. Shortened to \p Max characters with "..." when
/// Max is not 0.
std::string sourceText(clang::SourceRange R, const clang::ASTContext &Ctx,
                       size_t Max = 0);

} // namespace pk::frontend

#endif // PK_FRONTEND_ASTUTIL_H
