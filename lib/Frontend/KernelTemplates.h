//===- KernelTemplates.h - Explicit instantiations of kernel templates -*- C++
//-*-===//
//
// A PK_KERNEL function template is a kernel per explicit instantiation
// (language.md §4): `template void scale<float>(In<float>, Out<float>,
// float);` is compiled like a hand-written kernel named `scale<float>`. What
// the rewriting needs about one instantiation, spelled as C++:
//
//   - its template arguments, `float` (the kernel's name is scale<float>,
//     its CUDA launcher the explicit specialization pk::cuda::scale<float>),
//     and an identifier for them (pk_scale_float_cpu, pk_scale_float_g0);
//   - the condition that selects it in the primary template's body, which
//     pkc rewrites into `if constexpr (std::is_same_v<T, float>) {
//     <compiled> } else ... else { <the eager body> }`: every explicit
//     instantiation keeps its symbol, linkage and `inline`-ness, and any
//     other instantiation still runs eagerly;
//   - the launcher template that the CUDA header declares, `template
//     <typename T> void scale(pk::In<T, 1> x, ...)`, from the primary
//     template's head and parameter types.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_KERNELTEMPLATES_H
#define PK_FRONTEND_KERNELTEMPLATES_H

#include "Frontend/Diagnostics.h"
#include "IR/GraphIR.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"

#include <string>
#include <utility>
#include <vector>

namespace pk::frontend {

struct Instantiation {
  std::string Args;      ///< "float, 2"
  std::string Symbol;    ///< "scale_float_2": an identifier for the args
  std::string Condition; ///< "std::is_same_v<T, float> && R == 2"; "" for
                         ///< an explicit specialization (its own body)
};

/// Describes \p FD, an explicit instantiation or explicit specialization of
/// a kernel template, and fills \p T (the launcher template) from its
/// primary template. Reports what pkc cannot spell (template parameter
/// packs, template template parameters, parameter types other than refs
/// and scalars written with the template's parameters) and returns false
/// then.
bool describeInstantiation(const clang::FunctionDecl *FD,
                           clang::ASTContext &Ctx, Reporter &Rep,
                           Instantiation &I, ir::KernelTemplate &T);

/// The primary template's new body: each (condition, compiled body) in
/// turn as `if constexpr`, then \p EagerBody (the original body, braces
/// included) for any other instantiation.
std::string
dispatchBody(const std::vector<std::pair<std::string, std::string>> &Branches,
             llvm::StringRef EagerBody);

/// `template void scale<int>(pk::In<int, 1>, pk::Out<int, 1>, int);`: the
/// explicit instantiation definition of the specialization \p FD.
std::string explicitInstantiation(const clang::FunctionDecl *FD,
                                  const clang::ASTContext &Ctx);

} // namespace pk::frontend

#endif // PK_FRONTEND_KERNELTEMPLATES_H
