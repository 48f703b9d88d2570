//===- StdMath.cpp - `std::exp(x[_])` as one pk diagnostic ----------------===//

#include "Frontend/StdMath.h"
#include "Frontend/ASTUtil.h"
#include "IR/GraphIR.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/DiagnosticSema.h"
#include "clang/Basic/SourceManager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace clang;
using namespace pk;
using namespace pk::frontend;

namespace {

/// An op of the table that kernels call as a function (`exp`), not an
/// operator (`+`) or a spelling such as `cast<pk::half>`.
bool isPkFunctionOp(llvm::StringRef Name) {
  return !Name.empty() && ir::lookupOpBySource(Name) &&
         llvm::all_of(Name,
                      [](char C) { return llvm::isAlnum(C) || C == '_'; });
}

bool isPkReduction(llvm::StringRef Name) {
  for (ir::ReduceKind K : {ir::ReduceKind::Sum, ir::ReduceKind::Max,
                           ir::ReduceKind::Min, ir::ReduceKind::Mean})
    if (ir::reduceKindName(K) == Name)
      return true;
  return false;
}

/// A pk value: pk::Array<T> or the WholeProxy of `out[_]`.
bool isPkArrayType(QualType T) {
  return isPkClass(T, "Array") || isPkClass(T, "WholeProxy");
}

/// An argument that is a pk value, an initializer list holding one
/// (`std::max({a, b})`), or a call that matchStdMathCall matches (the outer
/// call of `std::exp(std::sqrt(x[_]))` is on a pk value too).
bool isPkOperand(const Expr *A, const ASTContext &Ctx) {
  if (!A)
    return false;
  if (isPkArrayType(A->getType()))
    return true;
  const Expr *S = A->IgnoreImplicit();
  if (isPkArrayType(S->getType()))
    return true;
  if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(S))
    return isPkOperand(SIL->getSubExpr(), Ctx);
  if (const auto *IL = dyn_cast<InitListExpr>(S))
    return llvm::any_of(IL->inits(),
                        [&](const Expr *I) { return isPkOperand(I, Ctx); });
  return (isa<RecoveryExpr>(S) || isa<CallExpr>(S)) &&
         matchStdMathCall(S, Ctx).has_value();
}

} // namespace

std::string pk::frontend::pkFunctionFor(llvm::StringRef Name,
                                        unsigned NumArgs) {
  llvm::StringRef Base = Name;
  // C's float and long double versions: expf, sqrtl, fabsf, fmaxf.
  auto Known = [](llvm::StringRef N) {
    return isPkFunctionOp(N) || isPkReduction(N) || N == "fabs" ||
           N == "fmax" || N == "fmin";
  };
  if (!Known(Base) && Base.size() > 1 &&
      (Base.ends_with("f") || Base.ends_with("l")) && Known(Base.drop_back()))
    Base = Base.drop_back();
  if (Base == "fabs" || Base == "labs" || Base == "llabs")
    Base = "abs";
  // Of two operands, the library's max and min are pk's elementwise
  // maximum and minimum; of one (an initializer list), pk's reductions.
  if ((Base == "max" || Base == "fmax") && NumArgs == 2)
    return "maximum";
  if ((Base == "min" || Base == "fmin") && NumArgs == 2)
    return "minimum";
  if (isPkReduction(Base) && NumArgs == 1)
    return Base.str();
  if (isPkFunctionOp(Base))
    return Base.str();
  return "";
}

std::optional<StdMathCall>
pk::frontend::matchStdMathCall(const Expr *E, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  const Expr *Callee = nullptr;
  llvm::SmallVector<const Expr *, 4> Args;
  if (const auto *RE = dyn_cast<RecoveryExpr>(E)) {
    // A call whose overload resolution failed: the callee, then the
    // arguments.
    auto Subs = RE->subExpressions();
    if (Subs.empty())
      return std::nullopt;
    Callee = Subs.front();
    Args.append(Subs.begin() + 1, Subs.end());
  } else if (const auto *CE = dyn_cast<CallExpr>(E)) {
    if (isa<CXXOperatorCallExpr>(CE) || isa<CXXMemberCallExpr>(CE))
      return std::nullopt;
    Callee = CE->getCallee();
    Args.append(CE->arg_begin(), CE->arg_end());
  } else {
    return std::nullopt;
  }
  if (!Callee)
    return std::nullopt;
  Callee = Callee->IgnoreParenImpCasts();

  // The callee: a library function, or an overload set of library
  // functions only (`std::exp`, `expf`; not pk's own `exp`).
  auto IsLibrary = [&](const NamedDecl *D) {
    const FunctionDecl *FD =
        D ? D->getUnderlyingDecl()->getAsFunction() : nullptr;
    return FD && !isPkLibrary(FD, SM) && isLibraryFunction(FD, SM);
  };
  std::string Name;
  if (const auto *ULE = dyn_cast<UnresolvedLookupExpr>(Callee)) {
    if (ULE->getNumDecls() == 0 || !ULE->getName().isIdentifier() ||
        !llvm::all_of(ULE->decls(), IsLibrary))
      return std::nullopt;
    Name = ULE->getName().getAsString();
  } else if (const auto *DRE = dyn_cast<DeclRefExpr>(Callee)) {
    if (!IsLibrary(DRE->getDecl()) || !DRE->getDecl()->getIdentifier())
      return std::nullopt;
    Name = DRE->getDecl()->getName().str();
  } else {
    return std::nullopt;
  }
  std::string Pk = pkFunctionFor(Name, Args.size());
  if (Pk.empty())
    return std::nullopt;

  const auto *Operand =
      llvm::find_if(Args, [&](const Expr *A) { return isPkOperand(A, Ctx); });
  if (Operand == Args.end())
    return std::nullopt;
  StdMathCall C;
  C.Call = E->getSourceRange();
  C.Callee = Callee->getSourceRange();
  C.Spelled = sourceText(C.Callee, Ctx, 40);
  C.PkName = std::move(Pk);
  C.Operand = sourceText((*Operand)->getSourceRange(), Ctx, 40);
  return C;
}

namespace {

/// The calls of findStdMathCalls: RecoveryExprs and CallExprs in the user's
/// code and its template instantiations, and the dependent calls of helper
/// templates that were instantiated with pk values.
class StdMathFinder : public RecursiveASTVisitor<StdMathFinder> {
public:
  explicit StdMathFinder(ASTContext &Ctx)
      : Ctx(Ctx), SM(Ctx.getSourceManager()) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D)) {
      SourceLocation L = D->getLocation();
      if ((L.isValid() && SM.isInSystemHeader(SM.getExpansionLoc(L))) ||
          isPkLibrary(D, SM))
        return true;
    }
    return RecursiveASTVisitor::TraverseDecl(D);
  }

  bool VisitRecoveryExpr(RecoveryExpr *E) {
    add(matchStdMathCall(E, Ctx));
    return true;
  }
  bool VisitCallExpr(CallExpr *E) {
    add(matchStdMathCall(E, Ctx));
    return true;
  }

  /// `auto f(auto v) { return std::tanh(v); }` called with a pk value: the
  /// instantiation failed (and may have no body left), so look at the
  /// pattern's dependent library calls.
  bool VisitFunctionTemplateDecl(FunctionTemplateDecl *FTD) {
    const FunctionDecl *Pattern = FTD->getTemplatedDecl();
    if (!Pattern || !Pattern->hasBody() ||
        !llvm::any_of(FTD->specializations(), [](const FunctionDecl *S) {
          return llvm::any_of(S->parameters(), [](const ParmVarDecl *P) {
            return isPkArrayType(P->getType());
          });
        }))
      return true;
    addPatternCalls(Pattern->getBody(), FTD->getLocation());
    return true;
  }

  std::vector<StdMathCall> Found;

private:
  void add(std::optional<StdMathCall> C, bool InPattern = false) {
    if (!C)
      return;
    C->InPattern = InPattern;
    for (StdMathCall &F : Found)
      if (F.Callee.getBegin() == C->Callee.getBegin()) {
        F.InPattern = F.InPattern && InPattern;
        if (F.Template.isInvalid())
          F.Template = C->Template;
        return;
      }
    Found.push_back(std::move(*C));
  }

  void addPatternCalls(const Stmt *S, SourceLocation Template) {
    if (!S)
      return;
    if (const auto *CE = dyn_cast<CallExpr>(S);
        CE && !isa<CXXOperatorCallExpr>(CE) &&
        isa_and_nonnull<UnresolvedLookupExpr>(
            CE->getCallee()->IgnoreParenImpCasts()) &&
        llvm::any_of(CE->arguments(),
                     [](const Expr *A) { return A->isTypeDependent(); }))
      addDependent(CE, Template);
    for (const Stmt *Child : S->children())
      addPatternCalls(Child, Template);
  }

  /// A dependent call in a pattern: the library callee and the pk function
  /// are known, the operand's type is not.
  void addDependent(const CallExpr *CE, SourceLocation Template) {
    const auto *ULE =
        cast<UnresolvedLookupExpr>(CE->getCallee()->IgnoreParenImpCasts());
    if (ULE->getNumDecls() == 0 || !ULE->getName().isIdentifier() ||
        !llvm::all_of(ULE->decls(), [&](const NamedDecl *D) {
          const FunctionDecl *FD = D->getUnderlyingDecl()->getAsFunction();
          return FD && !isPkLibrary(FD, SM) && isLibraryFunction(FD, SM);
        }))
      return;
    std::string Pk =
        pkFunctionFor(ULE->getName().getAsString(), CE->getNumArgs());
    if (Pk.empty())
      return;
    const Expr *Operand = *llvm::find_if(
        CE->arguments(), [](const Expr *A) { return A->isTypeDependent(); });
    StdMathCall C;
    C.Call = CE->getSourceRange();
    C.Callee = ULE->getSourceRange();
    C.Spelled = sourceText(C.Callee, Ctx, 40);
    C.PkName = std::move(Pk);
    C.Operand = sourceText(Operand->getSourceRange(), Ctx, 40);
    C.Template = Template;
    add(std::move(C), /*InPattern=*/true);
  }

  ASTContext &Ctx;
  const SourceManager &SM;
};

} // namespace

std::vector<StdMathCall> pk::frontend::findStdMathCalls(ASTContext &Ctx) {
  StdMathFinder Finder(Ctx);
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  const SourceManager &SM = Ctx.getSourceManager();
  std::stable_sort(Finder.Found.begin(), Finder.Found.end(),
                   [&](const StdMathCall &A, const StdMathCall &B) {
                     return SM.isBeforeInTranslationUnit(A.Call.getBegin(),
                                                         B.Call.getBegin());
                   });
  return std::move(Finder.Found);
}

void pk::frontend::reportStdMathCall(Reporter &Rep, const StdMathCall &C) {
  std::optional<FixItHint> Fix;
  if (C.Callee.getBegin().isFileID() && C.Callee.getEnd().isFileID())
    Fix = FixItHint::CreateReplacement(CharSourceRange::getTokenRange(C.Callee),
                                       C.PkName);
  bool Reduction = C.PkName == "max" || C.PkName == "min";
  Rep.error(rule::StdMath, C.Call.getBegin(), C.Call,
            "'" + C.Spelled + "' is called on the pk array '" + C.Operand +
                "'; the C++ library's math functions take scalars",
            Reduction ? "use pk's reduction '" + C.PkName + "'"
                      : "use pk's '" + C.PkName +
                            "', which works elementwise on arrays and on "
                            "scalars",
            C.Callee.getBegin(), std::move(Fix));
}

//===----------------------------------------------------------------------===//
// DiagnosticHold
//===----------------------------------------------------------------------===//

DiagnosticHold *DiagnosticHold::install(DiagnosticsEngine &DE) {
  // The diagnostics this hold drops count towards Clang's error limit, which
  // would stop the parse ("too many errors emitted") on their account.
  DE.setErrorLimit(0);
  DiagnosticConsumer *Client = DE.getClient();
  std::unique_ptr<DiagnosticConsumer> Owned = DE.takeClient();
  auto *Hold = new DiagnosticHold(DE, std::move(Owned), Client);
  DE.setClient(Hold, /*ShouldOwnClient=*/true);
  return Hold;
}

void DiagnosticHold::syncCounts() {
  // CompilerInstance reads the counts of the engine's client (this hold):
  // they must be the client's, which under -verify counts mismatches only.
  NumErrors = Client->getNumErrors();
  NumWarnings = Client->getNumWarnings();
}

void DiagnosticHold::release(llvm::function_ref<bool(Group)> Drop) {
  Holding = false;
  std::vector<StoredDiagnostic> All = std::move(Held);
  Held.clear();
  for (size_t I = 0; I < All.size();) {
    size_t End = I + 1;
    while (End < All.size() && All[End].getLevel() == DiagnosticsEngine::Note)
      ++End;
    if (!Drop(Group(All).slice(I, End - I)))
      for (size_t K = I; K < End; ++K)
        DE.Report(All[K]); // back through this hold, to the client
    I = End;
  }
}

void DiagnosticHold::BeginSourceFile(const LangOptions &LO,
                                     const Preprocessor *PP) {
  Client->BeginSourceFile(LO, PP);
}

void DiagnosticHold::EndSourceFile() {
  if (Holding && DiscardAtEnd)
    discard();
  if (Holding && !Discarding)
    release([](Group) { return false; });
  Client->EndSourceFile();
  syncCounts();
}

void DiagnosticHold::finish() {
  if (Holding && DiscardAtEnd)
    discard();
  if (Holding && !Discarding)
    release([](Group) { return false; });
  Client->finish();
  syncCounts();
}

void DiagnosticHold::clear() {
  Client->clear();
  syncCounts();
}

bool DiagnosticHold::IncludeInDiagnosticCounts() const {
  return Client->IncludeInDiagnosticCounts();
}

void DiagnosticHold::HandleDiagnostic(DiagnosticsEngine::Level Level,
                                      const Diagnostic &Info) {
  if (Discarding)
    return;
  if (Holding) {
    Held.emplace_back(Level, Info);
    return;
  }
  Client->HandleDiagnostic(Level, Info);
  syncCounts();
}

void pk::frontend::releaseWithStdMathCalls(
    DiagnosticHold &Hold, const std::vector<StdMathCall> &Calls,
    const SourceManager &SM, Reporter &Rep) {
  std::vector<bool> Reported(Calls.size(), false);
  auto Within = [&](SourceLocation L, SourceRange R) {
    if (L.isInvalid() || R.isInvalid())
      return false;
    return SM.isPointWithin(SM.getFileLoc(L), SM.getFileLoc(R.getBegin()),
                            SM.getFileLoc(R.getEnd()));
  };
  // The call a group of Clang's diagnostics is about: an error at its
  // callee (no viable overload, ambiguity), or an error inside a library
  // header whose instantiation was requested by the call (std::max's body).
  auto CallOf = [&](DiagnosticHold::Group G) -> std::optional<size_t> {
    SourceLocation L = G.front().getLocation();
    for (size_t K = 0; K < Calls.size(); ++K)
      if (Within(L, Calls[K].Callee))
        return K;
    if (L.isInvalid())
      return std::nullopt;
    // A helper whose instantiation failed at a call here, called again.
    if (G.front().getID() == diag::err_ovl_no_viable_function_in_call)
      for (const StoredDiagnostic &N : G.drop_front())
        for (size_t K = 0; K < Calls.size(); ++K)
          if (Calls[K].Template.isValid() && N.getLocation().isValid() &&
              SM.getFileLoc(N.getLocation()) ==
                  SM.getFileLoc(Calls[K].Template))
            return K;
    if (!SM.isInSystemHeader(SM.getFileLoc(L)))
      return std::nullopt;
    for (const StoredDiagnostic &N : G.drop_front())
      for (size_t K = 0; K < Calls.size(); ++K)
        if (!Calls[K].InPattern && Within(N.getLocation(), Calls[K].Call))
          return K;
    return std::nullopt;
  };
  auto Report = [&](size_t K) {
    if (!Reported[K])
      reportStdMathCall(Rep, Calls[K]);
    Reported[K] = true;
  };
  Hold.release([&](DiagnosticHold::Group G) {
    // In source order: a call before this diagnostic is reported first,
    // even when Clang's diagnostic about it comes later (an instantiation
    // at the end of the translation unit) or never (the outer call of
    // `std::sqrt(std::abs(x[_]))`).
    SourceLocation L = G.front().getLocation();
    if (L.isValid())
      for (size_t K = 0; K < Calls.size(); ++K)
        if (!Calls[K].InPattern &&
            SM.isBeforeInTranslationUnit(Calls[K].Call.getBegin(), L))
          Report(K);
    std::optional<size_t> K = CallOf(G);
    if (!K)
      return false;
    Report(*K);
    return true;
  });
  for (size_t K = 0; K < Calls.size(); ++K)
    if (!Calls[K].InPattern)
      Report(K);
}
