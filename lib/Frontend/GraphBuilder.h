//===- GraphBuilder.h - One kernel's AST to Graph IR ------------*- C++ -*-===//
//
// Walks a PK_KERNEL function's AST (no tracing, no execution of user code) and
// builds its Graph IR, checking the kernel contract on the way:
//
//   - parameters become ir::Params (refs: kind, dtype, rank from the template
//     arguments of pk::In/Out/InOut; scalars by value);
//   - `ref[_]` reads become loads (or, after a write, the stored value
//     broadcast to the ref's shape: SSA renaming, not memory order);
//     `ref[_] = v` becomes a store;
//   - locals are SSA names (an environment VarDecl -> value per call frame);
//   - calls to pk's ops become nodes (lookupOpBySource for the elementwise
//     ones); calls to helpers whose definition is visible are inlined;
//   - loops with a constant trip count are unrolled and `if`s on constants
//     resolved, by constant-folding through the IR builder.
//
// Every violation is reported through the Reporter with a [pk-<id>] tag.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_GRAPHBUILDER_H
#define PK_FRONTEND_GRAPHBUILDER_H

#include "Frontend/Diagnostics.h"
#include "IR/GraphIR.h"

namespace clang {
class ASTContext;
class FunctionDecl;
class SourceManager;
} // namespace clang

namespace pk::frontend {

/// Checks \p Kernel (a definition) and fills \p F with its Graph IR. Returns
/// true when no error was reported; F is only meaningful then.
bool buildKernelGraph(const clang::FunctionDecl *Kernel, clang::ASTContext &Ctx,
                      Reporter &Rep, ir::Function &F);

/// Line/column (presumed, after macro expansion) and the raw encoding of
/// \p Loc, which the frontend decodes again to report a UserDiag.
ir::SrcLoc makeSrcLoc(clang::SourceLocation Loc,
                      const clang::SourceManager &SM);

} // namespace pk::frontend

#endif // PK_FRONTEND_GRAPHBUILDER_H
