//===- Frontend.cpp - Clang AST to Graph IR, one file at a time -----------===//
//
// compileFiles() runs a ClangTool per input file (so that each file's result
// and failure are its own). The action finds the PK_KERNEL definitions of
// the main file, builds each one's Graph IR (GraphBuilder), hands it to the
// pipeline, reports the pipeline's UserDiags as Clang errors, and rewrites
// the kernel bodies in a copy of the main file.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Frontend.h"
#include "Frontend/ASTUtil.h"
#include "Frontend/Diagnostics.h"
#include "Frontend/GraphBuilder.h"
#include "Frontend/KernelTemplates.h"
#include "Frontend/Pch.h"
#include "Frontend/StdMath.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Driver/Options.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Lex/Lexer.h"
#include "clang/Rewrite/Core/Rewriter.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Option/Option.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <set>

using namespace clang;
using namespace pk;
using namespace pk::frontend;

namespace {

bool isKernel(const FunctionDecl *FD) {
  for (const auto *A : FD->specific_attrs<AnnotateAttr>())
    if (A->getAnnotation() == "pk.kernel")
      return true;
  return false;
}

/// Every PK_KERNEL function definition of the translation unit, in source
/// order; template instantiations are not visited (the pattern is, and
/// stands for its explicit instantiations).
class KernelFinder : public RecursiveASTVisitor<KernelFinder> {
public:
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD->doesThisDeclarationHaveABody() && isKernel(FD) &&
        !FD->isTemplateInstantiation())
      Found.push_back(FD);
    return true;
  }
  std::vector<FunctionDecl *> Found;
};

/// Where text can go in front of the kernel's declaration: before its
/// attributes (`PK_KERNEL`, a written `[[...]]` or `__attribute__((...))`),
/// its specifiers, and an `extern "C"` without braces. In the main file.
SourceLocation declarationStart(const FunctionDecl *FD,
                                const SourceManager &SM) {
  // A template's attributes follow its `template <...>` (an abbreviated
  // template, `void k(..., auto s)`, has none written).
  if (const FunctionTemplateDecl *FTD = FD->getDescribedFunctionTemplate())
    if (SourceLocation T = FTD->getTemplateParameters()->getTemplateLoc();
        T.isValid())
      return SM.getExpansionLoc(T);
  SourceLocation Begin = SM.getExpansionLoc(FD->getBeginLoc());
  for (const Attr *A : FD->attrs()) {
    if (A->isImplicit() || A->getRange().getBegin().isInvalid())
      continue;
    SourceLocation L = SM.getExpansionLoc(A->getRange().getBegin());
    if (SM.getFileID(L) == SM.getFileID(Begin) &&
        SM.isBeforeInTranslationUnit(L, Begin))
      Begin = L;
  }
  if (const auto *LS = dyn_cast<LinkageSpecDecl>(FD->getLexicalDeclContext()))
    if (!LS->hasBraces())
      Begin = SM.getExpansionLoc(LS->getExternLoc());
  // A written attribute's range starts at its name, after `[[` or
  // `__attribute__((`.
  llvm::StringRef Before =
      SM.getBufferData(SM.getFileID(Begin)).take_front(SM.getFileOffset(Begin));
  llvm::StringRef Trimmed = Before.rtrim();
  if (Trimmed.consume_back("[["))
    return Begin.getLocWithOffset(-int(Before.size() - Trimmed.size()));
  llvm::StringRef Gnu = "__attribute__";
  if (Trimmed.consume_back("((") && Trimmed.rtrim().ends_with(Gnu)) {
    Trimmed = Trimmed.rtrim().drop_back(Gnu.size());
    return Begin.getLocWithOffset(-int(Before.size() - Trimmed.size()));
  }
  return Begin;
}

/// declarationStart, moved up over the `//` comment lines right above the
/// declaration (they describe the kernel, and stay with it).
SourceLocation aboveLeadingComment(const FunctionDecl *FD,
                                   const SourceManager &SM) {
  SourceLocation Begin = declarationStart(FD, SM);
  llvm::StringRef Before =
      SM.getBufferData(SM.getFileID(Begin)).take_front(SM.getFileOffset(Begin));
  size_t LineStart = Before.rfind('\n') + 1; // 0 when there is none
  if (!Before.drop_front(LineStart).trim().empty())
    return Begin; // something else precedes it on its line
  size_t Start = LineStart;
  while (Start > 0) {
    size_t Prev = Before.take_front(Start - 1).rfind('\n') + 1;
    if (!Before.slice(Prev, Start).ltrim().starts_with("//"))
      break;
    Start = Prev;
  }
  return Begin.getLocWithOffset(-int(Before.size() - Start));
}

/// What one run of the action leaves behind.
struct RunState {
  unsigned Runs = 0;
  bool Verify = false; ///< -verify: the diagnostics are the expected output
  /// The files a precompiled <pk/pk.h> was built from, when one is used:
  /// the parse does not enter them, the depfile must still list them.
  std::vector<std::string> PchDependencies;
  bool UsingPch = false;
  /// Clang found errors in a parse with the precompiled header: its
  /// diagnostics were dropped, and the file is parsed again without it, so
  /// that they read exactly as without the cache (the header's paths and
  /// include stacks differ).
  bool RetryWithoutPch = false;
};

class KernelConsumer : public ASTConsumer {
public:
  KernelConsumer(CompilerInstance &CI, const CompileKernelFn &Compile,
                 FileResult &Result, RunState &State, DiagnosticHold *Hold)
      : CI(CI), Compile(Compile), Result(Result), State(State), Hold(Hold) {}

  void HandleTranslationUnit(ASTContext &Ctx) override;

private:
  void compileKernel(FunctionDecl *FD, ASTContext &Ctx, Reporter &Rep,
                     bool ClangErrors, const std::string &Name,
                     const std::string &Symbol, const Instantiation *Inst,
                     const ir::KernelTemplate *KernelTemplate);
  /// A kernel template's explicit instantiations in the order they are
  /// written; warns about the implicit ones, which run eagerly.
  std::vector<FunctionDecl *> instantiations(FunctionDecl *Pattern,
                                             Reporter &Rep);
  /// Rewrites each compiled kernel template's body into a dispatch over
  /// its explicit instantiations (KernelTemplates.h).
  void rewriteTemplates(ASTContext &Ctx, Reporter &Rep);
  void reportUserDiag(const ir::UserDiag &D, const FunctionDecl *FD,
                      Reporter &Rep);
  std::vector<std::string> dependencies(const SourceManager &SM) const;

  CompilerInstance &CI;
  const CompileKernelFn &Compile;
  FileResult &Result;
  RunState &State;
  /// Clang's diagnostics, held until std::exp(x[_]) calls are known.
  DiagnosticHold *Hold;
  /// Kernel body (braces included) -> its replacement.
  std::vector<std::pair<SourceRange, std::string>> Replacements;
  /// Text inserted before a kernel: its compiled body as a template.
  std::vector<std::pair<SourceLocation, std::string>> Insertions;
  /// Per kernel template (in source order), its compiled instantiations.
  struct TemplateRewrite {
    const FunctionDecl *Pattern = nullptr;
    /// (condition, compiled body) per explicit instantiation.
    std::vector<std::pair<std::string, std::string>> Branches;
    std::vector<const FunctionDecl *> Instances;
    std::string CppTemplates; ///< their pk_<symbol>_cpu functions
  };
  std::vector<TemplateRewrite> Templates;
};

std::string absolutePath(llvm::StringRef Name, const FileManager &FM) {
  llvm::SmallString<256> P(Name);
  FM.makeAbsolutePath(P);
  return dependencyPath(P);
}

void KernelConsumer::HandleTranslationUnit(ASTContext &Ctx) {
  ++State.Runs;
  State.Verify = CI.getDiagnosticOpts().VerifyDiagnostics;
  SourceManager &SM = Ctx.getSourceManager();
  DiagnosticsEngine &DE = CI.getDiagnostics();
  Reporter Rep(DE);
  if (State.UsingPch && !State.Verify && DE.hasErrorOccurred()) {
    Hold->discard();
    State.RetryWithoutPch = true;
    return;
  }
  // Clang's diagnostics about `std::exp(x[_])` become one pk error each.
  if (Hold && Hold->holding())
    releaseWithStdMathCalls(*Hold, findStdMathCalls(Ctx), SM, Rep);
  // Clang's own errors: the AST may be incomplete; still check the kernels
  // (to report every problem at once) but do not compile them.
  bool ClangErrors = DE.hasErrorOccurred();

  KernelFinder Finder;
  Finder.TraverseDecl(Ctx.getTranslationUnitDecl());
  std::vector<FunctionDecl *> Kernels;
  for (FunctionDecl *FD : Finder.Found) {
    SourceLocation L = SM.getExpansionLoc(FD->getLocation());
    if (!SM.isWrittenInMainFile(L)) {
      // The .pk.cpp includes the same header, so this definition is what
      // the program runs: eagerly, without a CUDA launcher.
      Rep.warning(rule::IncludedKernel, FD->getLocation(),
                  "the kernel '" + FD->getNameAsString() +
                      "' is defined in an included file, which pkc does "
                      "not rewrite: it runs eagerly and gets no CUDA "
                      "launcher");
      Rep.note(FD->getLocation(),
               "define it in the file given to pkc, and only declare it in "
               "the header");
      continue;
    }
    if (FD->getDescribedFunctionTemplate()) {
      // A kernel template: a kernel per explicit instantiation.
      for (FunctionDecl *Inst : instantiations(FD, Rep))
        Kernels.push_back(Inst);
      continue;
    }
    Kernels.push_back(FD);
  }
  // The CUDA code names a kernel's launcher pk::cuda::<name> and its
  // __global__ functions pk_<name>_g<N>, without the namespace: kernels of
  // one file that share a name get distinct __global__ names, and two whose
  // launchers would be the same function are an error.
  std::map<std::string, std::vector<FunctionDecl *>> ByName;
  std::set<std::string> Names;
  for (FunctionDecl *FD : Kernels)
    Names.insert(FD->getNameAsString());
  for (FunctionDecl *FD : Kernels) {
    ++Result.NumKernels;
    if (FD->isInvalidDecl())
      continue;
    std::string Name = FD->getNameAsString();
    // An explicit instantiation or specialization of a kernel template is
    // the kernel `scale<float>`; its symbols are pk_scale_float_*.
    std::optional<Instantiation> Inst;
    std::optional<ir::KernelTemplate> Template;
    if (FD->getPrimaryTemplate()) {
      Inst.emplace();
      Template.emplace();
      if (!describeInstantiation(FD, Ctx, Rep, *Inst, *Template))
        continue;
      Name += "<" + Inst->Args + ">";
    }
    std::vector<FunctionDecl *> &Same = ByName[Name];
    const FunctionDecl *Clash = nullptr;
    for (const FunctionDecl *Prev : Same)
      if (Ctx.hasSameType(Prev->getType(), FD->getType()))
        Clash = Prev;
    if (Clash) {
      Rep.error(rule::Unsupported, FD->getLocation(), SourceRange(),
                "the kernels '" + Clash->getQualifiedNameAsString() +
                    "' and '" + FD->getQualifiedNameAsString() +
                    "' would have the same CUDA launcher pk::cuda::" + Name +
                    " (launchers are named without the kernel's namespace)",
                "rename one of them", Clash->getLocation());
      continue;
    }
    std::string Symbol;
    if (Inst) {
      Symbol = Inst->Symbol;
      for (unsigned N = 2; Names.count(Symbol); ++N)
        Symbol = Inst->Symbol + "_" + std::to_string(N);
    } else if (!Same.empty()) {
      for (unsigned N = Same.size() + 1; Symbol.empty() || Names.count(Symbol);
           ++N)
        Symbol = Name + "_" + std::to_string(N);
    }
    Names.insert(Symbol);
    Same.push_back(FD);
    compileKernel(FD, Ctx, Rep, ClangErrors, Name, Symbol,
                  Inst ? &*Inst : nullptr, Template ? &*Template : nullptr);
  }
  rewriteTemplates(Ctx, Rep);

  Result.Dependencies = dependencies(SM);
  Result.HadErrors = DE.hasErrorOccurred();
  if (Result.HadErrors) {
    Result.Rewritten.clear();
    return;
  }
  Rewriter RW(SM, Ctx.getLangOpts());
  for (const auto &[Range, Body] : Replacements)
    RW.ReplaceText(Range, Body);
  for (const auto &[Loc, Text] : Insertions)
    RW.InsertTextBefore(Loc, Text);
  FileID Main = SM.getMainFileID();
  if (const RewriteBuffer *RB = RW.getRewriteBufferFor(Main))
    Result.Rewritten = std::string(RB->begin(), RB->end());
  else
    Result.Rewritten = SM.getBufferData(Main).str();
}

void KernelConsumer::compileKernel(FunctionDecl *FD, ASTContext &Ctx,
                                   Reporter &Rep, bool ClangErrors,
                                   const std::string &Name,
                                   const std::string &Symbol,
                                   const Instantiation *Inst,
                                   const ir::KernelTemplate *KernelTemplate) {
  SourceManager &SM = Ctx.getSourceManager();
  if (FD->isTemplated()) {
    Rep.error(rule::NotSupportedYet, FD->getLocation(), SourceRange(),
              "the kernel '" + Name +
                  "' is declared inside a template; such kernels are not "
                  "supported by pkc yet",
              "declare it at namespace scope (a kernel template is compiled "
              "per explicit instantiation)");
    return;
  }
  if (const auto *MD = dyn_cast<CXXMethodDecl>(FD)) {
    Rep.error(rule::Unsupported, FD->getLocation(), SourceRange(),
              "the kernel '" + MD->getQualifiedNameAsString() +
                  "' is a member function; a kernel must be a free function",
              "declare it at namespace scope");
    return;
  }
  // An explicit instantiation's body is rewritten in its template.
  const FunctionDecl *Written = FD;
  bool Instantiated = FD->getTemplateSpecializationKind() ==
                      TSK_ExplicitInstantiationDefinition;
  if (Instantiated)
    Written = FD->getTemplateInstantiationPattern();
  const auto *Body =
      dyn_cast_or_null<CompoundStmt>(Written ? Written->getBody() : nullptr);
  if (!Body || !FD->getBody())
    return;
  if (!Body->getLBracLoc().isFileID() || !Body->getRBracLoc().isFileID() ||
      !SM.isWrittenInMainFile(Body->getLBracLoc()) ||
      !SM.isWrittenInMainFile(Body->getRBracLoc())) {
    Rep.error(rule::Unsupported, FD->getLocation(), SourceRange(),
              "the body of the kernel '" + Name +
                  "' comes from a macro, so pkc cannot rewrite it",
              "write the kernel's braces in the source file");
    return;
  }

  ir::Function F;
  F.Name = Name;
  F.QualifiedName = FD->getQualifiedNameAsString();
  if (Inst)
    F.QualifiedName += "<" + Inst->Args + ">";
  F.Symbol = Symbol;
  if (KernelTemplate)
    F.Template = *KernelTemplate;
  if (OptionalFileEntryRef FE = SM.getFileEntryRefForID(SM.getMainFileID()))
    F.File = FE->getName().str();
  F.Loc = makeSrcLoc(FD->getLocation(), SM);
  if (!buildKernelGraph(FD, Ctx, Rep, F)) {
    // The errors point into the template: say which instantiation (after
    // the first one's errors; the same errors of the next instantiations
    // are printed once, and these notes follow them).
    if (Instantiated)
      Rep.note(FD->getPointOfInstantiation(),
               "in the explicit instantiation '" + Name + "' here");
    return;
  }
  if (ClangErrors)
    return;
  if (std::string Err = ir::verify(F); !Err.empty()) {
    Rep.error(rule::Internal, FD->getLocation(), SourceRange(),
              "internal error: pkc built invalid Graph IR for '" + Name +
                  "': " + Err,
              "please report this with the kernel's source");
    return;
  }
  KernelResult R = Compile(F);
  if (!R.Diags.empty()) {
    for (const ir::UserDiag &D : R.Diags)
      reportUserDiag(D, FD, Rep);
    if (Instantiated)
      Rep.note(FD->getPointOfInstantiation(),
               "in the explicit instantiation '" + Name + "' here");
    return;
  }
  if (Instantiated) {
    auto It = llvm::find_if(Templates, [&](const TemplateRewrite &T) {
      return T.Pattern == Written;
    });
    if (It == Templates.end()) {
      Templates.push_back({});
      It = std::prev(Templates.end());
      It->Pattern = Written;
    }
    It->Branches.emplace_back(Inst->Condition, std::move(R.CppBody));
    It->Instances.push_back(FD);
    It->CppTemplates += R.CppTemplate;
    return;
  }
  Replacements.emplace_back(Body->getSourceRange(), std::move(R.CppBody));
  // A template cannot have C linkage.
  std::string Template = std::move(R.CppTemplate);
  if (FD->isInExternCContext())
    Template = "extern \"C++\" {\n" + llvm::StringRef(Template).rtrim().str() +
               "\n} // extern \"C++\"\n\n";
  Insertions.emplace_back(aboveLeadingComment(FD, SM), std::move(Template));
}

std::vector<FunctionDecl *>
KernelConsumer::instantiations(FunctionDecl *Pattern, Reporter &Rep) {
  ASTContext &Ctx = Pattern->getASTContext();
  const SourceManager &SM = Ctx.getSourceManager();
  FunctionTemplateDecl *FTD = Pattern->getDescribedFunctionTemplate();
  std::vector<FunctionDecl *> Explicit;
  for (FunctionDecl *Spec : FTD->specializations()) {
    TemplateSpecializationKind K = Spec->getTemplateSpecializationKind();
    if (K == TSK_ExplicitInstantiationDefinition) {
      Explicit.push_back(Spec);
    } else if (K == TSK_ImplicitInstantiation) {
      // A warning, not an error: the program is right, only slower (like
      // a kernel in an included file).
      SourceLocation L = Spec->getPointOfInstantiation();
      if (L.isInvalid())
        L = Pattern->getLocation();
      Rep.warning(rule::ImplicitInstantiation, L,
                  "the kernel template '" + Pattern->getNameAsString() +
                      "' is instantiated implicitly here; pkc compiles only "
                      "explicit instantiations, so this one runs eagerly");
      Rep.note(L, "instantiate it explicitly to compile it: " +
                      explicitInstantiation(Spec, Ctx));
    }
  }
  std::stable_sort(
      Explicit.begin(), Explicit.end(), [&](FunctionDecl *A, FunctionDecl *B) {
        return SM.isBeforeInTranslationUnit(A->getPointOfInstantiation(),
                                            B->getPointOfInstantiation());
      });
  return Explicit;
}

void KernelConsumer::rewriteTemplates(ASTContext &Ctx, Reporter &Rep) {
  const SourceManager &SM = Ctx.getSourceManager();
  for (TemplateRewrite &T : Templates) {
    // The conditions tell the instantiations apart only through named
    // template parameters.
    bool Distinct = true;
    for (size_t I = 0; I < T.Branches.size() && Distinct; ++I)
      for (size_t J = 0; J < I; ++J)
        if (T.Branches[I].first == T.Branches[J].first) {
          Rep.error(rule::NotSupportedYet,
                    T.Instances[I]->getPointOfInstantiation(), SourceRange(),
                    "this explicit instantiation differs from an earlier "
                    "one of the kernel template '" +
                        T.Pattern->getNameAsString() +
                        "' only in unnamed template parameters, which pkc "
                        "cannot tell apart yet",
                    "name the template parameters of '" +
                        T.Pattern->getNameAsString() + "'");
          Distinct = false;
          break;
        }
    if (!Distinct)
      continue;
    const auto *Body = cast<CompoundStmt>(T.Pattern->getBody());
    llvm::StringRef Eager = Lexer::getSourceText(
        CharSourceRange::getTokenRange(Body->getSourceRange()), SM,
        Ctx.getLangOpts());
    Replacements.emplace_back(Body->getSourceRange(),
                              dispatchBody(T.Branches, Eager));
    Insertions.emplace_back(aboveLeadingComment(T.Pattern, SM),
                            std::move(T.CppTemplates));
  }
}

void KernelConsumer::reportUserDiag(const ir::UserDiag &D,
                                    const FunctionDecl *FD, Reporter &Rep) {
  SourceLocation L = SourceLocation::getFromRawEncoding(
      static_cast<SourceLocation::UIntTy>(D.Loc.Raw));
  if (L.isInvalid())
    L = FD->getLocation();
  std::string Id = D.Id;
  if (!llvm::StringRef(Id).starts_with("pk-"))
    Id = "pk-" + Id;
  Rep.error(Id, L, SourceRange(), D.Message, D.Note);
}

std::vector<std::string>
KernelConsumer::dependencies(const SourceManager &SM) const {
  const FileManager &FM = SM.getFileManager();
  std::string Main;
  if (OptionalFileEntryRef FE = SM.getFileEntryRefForID(SM.getMainFileID()))
    Main = absolutePath(FE->getName(), FM);
  std::vector<std::string> Others;
  for (auto It = SM.fileinfo_begin(), E = SM.fileinfo_end(); It != E; ++It) {
    std::string P = absolutePath(It->first.getName(), FM);
    if (P != Main)
      Others.push_back(std::move(P));
  }
  for (const std::string &P : State.PchDependencies)
    if (P != Main)
      Others.push_back(P);
  std::sort(Others.begin(), Others.end());
  Others.erase(std::unique(Others.begin(), Others.end()), Others.end());
  std::vector<std::string> Deps;
  if (!Main.empty())
    Deps.push_back(Main);
  Deps.insert(Deps.end(), Others.begin(), Others.end());
  return Deps;
}

class KernelAction : public ASTFrontendAction {
public:
  KernelAction(const CompileKernelFn &Compile, FileResult &Result,
               RunState &State)
      : Compile(Compile), Result(Result), State(State) {}

protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI,
                                                 llvm::StringRef) override {
    // Owned by the engine, in front of its client (-verify's too).
    DiagnosticHold *Hold = DiagnosticHold::install(CI.getDiagnostics());
    if (State.UsingPch)
      Hold->discardUnlessReleased(); // the parse stopped: redone without it
    return std::make_unique<KernelConsumer>(CI, Compile, Result, State, Hold);
  }

private:
  const CompileKernelFn &Compile;
  FileResult &Result;
  RunState &State;
};

class KernelActionFactory : public tooling::FrontendActionFactory {
public:
  KernelActionFactory(const CompileKernelFn &Compile, FileResult &Result,
                      RunState &State)
      : Compile(Compile), Result(Result), State(State) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<KernelAction>(Compile, Result, State);
  }

private:
  const CompileKernelFn &Compile;
  FileResult &Result;
  RunState &State;
};

/// Only the first compile command of a file: a database may list a file
/// several times (several targets); pkc compiles each kernel once.
class FirstCommandDatabase : public tooling::CompilationDatabase {
public:
  explicit FirstCommandDatabase(const tooling::CompilationDatabase &DB)
      : DB(DB) {}
  std::vector<tooling::CompileCommand>
  getCompileCommands(llvm::StringRef File) const override {
    std::vector<tooling::CompileCommand> Commands = DB.getCompileCommands(File);
    if (Commands.size() > 1)
      Commands.resize(1);
    return Commands;
  }
  std::vector<std::string> getAllFiles() const override {
    return DB.getAllFiles();
  }

private:
  const tooling::CompilationDatabase &DB;
};

/// Drops the arguments Clang's driver does not know (GCC-only flags from a
/// g++ compile database: -fno-fat-lto-objects, -fconcepts-diagnostics-depth,
/// ...), which would otherwise be "unknown argument" errors.
tooling::ArgumentsAdjuster stripUnknownArguments() {
  return [](const tooling::CommandLineArguments &Args, llvm::StringRef) {
    if (Args.size() < 2)
      return Args;
    std::vector<const char *> Ptrs;
    for (size_t I = 1; I < Args.size(); ++I)
      Ptrs.push_back(Args[I].c_str());
    unsigned MissingIndex = 0, MissingCount = 0;
    const llvm::opt::OptTable &Table = driver::getDriverOptTable();
    llvm::opt::InputArgList List =
        Table.ParseArgs(Ptrs, MissingIndex, MissingCount,
                        llvm::opt::Visibility(driver::options::ClangOption));
    std::set<unsigned> Drop;
    for (const llvm::opt::Arg *A : List)
      if (A->getOption().getKind() == llvm::opt::Option::UnknownClass)
        Drop.insert(A->getIndex() + 1);
    if (Drop.empty())
      return Args;
    tooling::CommandLineArguments Out;
    std::vector<std::string> Dropped;
    for (size_t I = 0; I < Args.size(); ++I)
      (Drop.count(I) ? Dropped : Out).push_back(Args[I]);
    // Said once per run for each set of flags (every file of a build
    // usually has the same).
    static std::set<std::vector<std::string>> Said;
    if (Said.insert(Dropped).second)
      llvm::errs() << "pkc: note: ignoring compiler flags Clang does not "
                      "know (GCC-only?): "
                   << llvm::join(Dropped, " ") << "\n";
    return Out;
  };
}

/// A precompiled <pk/pk.h> for `File` (Pch.h): when a cache directory is
/// set and the file includes the header first.
std::optional<PrecompiledPkHeader>
precompiledHeaderFor(const tooling::CompilationDatabase &DB,
                     const std::string &File, const Options &Opts,
                     const std::vector<tooling::ArgumentsAdjuster> &Adjusters) {
  if (Opts.PchDir.empty())
    return std::nullopt;
  llvm::vfs::FileSystem &FS =
      Opts.FS ? *Opts.FS : *llvm::vfs::getRealFileSystem();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Source =
      FS.getBufferForFile(File);
  if (!Source || !includesPkHeaderFirst((*Source)->getBuffer()))
    return std::nullopt;
  std::vector<tooling::CompileCommand> Commands = DB.getCompileCommands(File);
  if (Commands.empty())
    return std::nullopt;
  // The command as ClangTool runs it: its own adjusters, then pkc's.
  tooling::ArgumentsAdjuster All = tooling::combineAdjusters(
      tooling::combineAdjusters(tooling::getClangStripOutputAdjuster(),
                                tooling::getClangSyntaxOnlyAdjuster()),
      tooling::getClangStripDependencyFileAdjuster());
  for (const tooling::ArgumentsAdjuster &A : Adjusters)
    All = tooling::combineAdjusters(All, A);
  tooling::CommandLineArguments Args =
      All(Commands.front().CommandLine, Commands.front().Filename);
  // The main file is the one argument that names it (the adjusters put
  // pkc's flags after it).
  auto Main = std::find(Args.rbegin(), Args.rend(), Commands.front().Filename);
  if (Args.empty() || Main == Args.rend())
    return std::nullopt;
  Args.erase(std::next(Main).base());
  return precompiledPkHeader(Opts.PchDir, Commands.front().Directory,
                             Commands.front().Filename, Args);
}

} // namespace

bool pk::frontend::compileFiles(const tooling::CompilationDatabase &DB,
                                llvm::ArrayRef<std::string> Files,
                                const Options &Opts,
                                const CompileKernelFn &Compile,
                                std::vector<FileResult> &Results) {
  using tooling::ArgumentInsertPosition;
  bool AllOK = true;
  for (const std::string &File : Files) {
    FirstCommandDatabase First(DB);
    std::vector<tooling::ArgumentsAdjuster> Adjusters = {
        stripUnknownArguments()};
    if (!Opts.ExtraArgsBefore.empty())
      Adjusters.push_back(tooling::getInsertArgumentAdjuster(
          Opts.ExtraArgsBefore, ArgumentInsertPosition::BEGIN));
    Adjusters.push_back(tooling::getInsertArgumentAdjuster(
        {"-D__PK_PKC__=1", "-Wno-unknown-warning-option"},
        ArgumentInsertPosition::END));
    if (!Opts.ExtraArgsAfter.empty())
      Adjusters.push_back(tooling::getInsertArgumentAdjuster(
          Opts.ExtraArgsAfter, ArgumentInsertPosition::END));
    std::optional<PrecompiledPkHeader> Pch =
        precompiledHeaderFor(First, File, Opts, Adjusters);

    FileResult Result;
    RunState State;
    int RC = 0;
    for (bool WithPch : {true, false}) {
      if (WithPch && !Pch)
        continue;
      Result = FileResult();
      Result.InputPath = File;
      State = RunState();
      tooling::ClangTool Tool(
          First, {File}, std::make_shared<PCHContainerOperations>(),
          Opts.FS ? Opts.FS : llvm::vfs::getRealFileSystem());
      for (const tooling::ArgumentsAdjuster &A : Adjusters)
        Tool.appendArgumentsAdjuster(A);
      if (WithPch) {
        Tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
            {"-include-pch", Pch->Path, "-Xclang", "-fno-validate-pch"},
            ArgumentInsertPosition::END));
        State.UsingPch = true;
        State.PchDependencies = Pch->Dependencies;
      }
      KernelActionFactory Factory(Compile, Result, State);
      RC = Tool.run(&Factory);
      // Errors, or a parse that did not get as far as the kernels: again,
      // without the header (its diagnostics were dropped).
      if (!WithPch || !(State.RetryWithoutPch || State.Runs == 0))
        break;
    }
    // Under -verify the diagnostics are the expected output: the run fails
    // only when they differ from the expectations (RC). The file still
    // HadErrors, so nothing may be written for it.
    bool Failed =
        RC != 0 || State.Runs == 0 || (Result.HadErrors && !State.Verify);
    if (RC != 0 || State.Runs == 0)
      Result.HadErrors = true; // not parsed, or -verify found a mismatch
    if (Result.HadErrors)
      Result.Rewritten.clear();
    if (Failed)
      AllOK = false;
    Results.push_back(std::move(Result));
  }
  return AllOK;
}
