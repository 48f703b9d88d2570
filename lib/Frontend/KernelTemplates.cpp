//===- KernelTemplates.cpp - Explicit instantiations of kernel templates --===//

#include "Frontend/KernelTemplates.h"
#include "Frontend/ASTUtil.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/TemplateBase.h"
#include "clang/Basic/SourceManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace clang;
using namespace pk;
using namespace pk::frontend;

namespace {

/// Types as the rewritten file and the CUDA header can spell them anywhere:
/// canonical (`int64_t` is `long`, an alias is what it names), qualified,
/// without `(anonymous namespace)::`.
PrintingPolicy spellingPolicy(const ASTContext &Ctx) {
  PrintingPolicy PP(Ctx.getLangOpts());
  PP.SuppressUnwrittenScope = true;
  PP.SuppressTagKeyword = true;
  PP.Bool = true;
  PP.PrintCanonicalTypes = true;
  return PP;
}

std::string typeText(QualType T, const PrintingPolicy &PP) {
  return T.getCanonicalType().getAsString(PP);
}

std::string integerText(const llvm::APSInt &V, QualType T) {
  if (T->isBooleanType())
    return V.getBoolValue() ? "true" : "false";
  return llvm::toString(V, 10) + (V.isUnsigned() ? "u" : "");
}

/// The spelling of one template argument, or "" when pkc has none.
std::string argumentText(const TemplateArgument &A, const PrintingPolicy &PP) {
  switch (A.getKind()) {
  case TemplateArgument::Type:
    return typeText(A.getAsType(), PP);
  case TemplateArgument::Integral:
    return integerText(A.getAsIntegral(), A.getIntegralType());
  default:
    return "";
  }
}

/// A template parameter's name in generated code: its own, or pk_T<index>
/// for an unnamed one (or the invented parameter of an `auto` parameter).
std::string paramName(const NamedDecl *P, unsigned Index, bool &Spellable) {
  Spellable = P->getIdentifier() && !P->isImplicit();
  return Spellable ? P->getName().str() : "pk_T" + std::to_string(Index);
}

/// `scale_float_2` for scale<float, 2>: letters, digits and single `_`.
std::string identifierFor(llvm::StringRef Text) {
  std::string Out;
  for (char C : Text) {
    if (llvm::isAlnum(C))
      Out += C;
    else if (C == '-')
      Out += 'm';
    else if (!Out.empty() && Out.back() != '_')
      Out += '_';
  }
  while (!Out.empty() && Out.back() == '_')
    Out.pop_back();
  return Out;
}

/// The rank argument of `In<T, R>`: a template parameter's name or a value.
std::optional<std::string> rankText(const TemplateArgument &A,
                                    const std::vector<std::string> &Names,
                                    const ASTContext &Ctx) {
  if (A.getKind() == TemplateArgument::Integral)
    return llvm::toString(A.getAsIntegral(), 10);
  if (A.getKind() != TemplateArgument::Expression)
    return std::nullopt;
  const Expr *E = A.getAsExpr()->IgnoreParenImpCasts();
  if (const auto *DR = dyn_cast<DeclRefExpr>(E))
    if (const auto *NT = dyn_cast<NonTypeTemplateParmDecl>(DR->getDecl()))
      if (NT->getDepth() == 0 && NT->getIndex() < Names.size())
        return Names[NT->getIndex()];
  if (!E->isValueDependent()) {
    if (std::optional<llvm::APSInt> V = E->getIntegerConstantExpr(Ctx))
      return llvm::toString(*V, 10);
    return std::nullopt;
  }
  // An expression over the template parameters (`R - 1`), printed as
  // written when it names nothing else and the parameters keep their names.
  bool Spellable = true;
  std::function<void(const Stmt *)> Check = [&](const Stmt *S) {
    if (const auto *DR = dyn_cast<DeclRefExpr>(S)) {
      const auto *NT = dyn_cast<NonTypeTemplateParmDecl>(DR->getDecl());
      Spellable &= NT && NT->getDepth() == 0 && NT->getIndex() < Names.size() &&
                   Names[NT->getIndex()] == NT->getName();
    } else if (!isa<BinaryOperator>(S) && !isa<UnaryOperator>(S) &&
               !isa<ParenExpr>(S) && !isa<IntegerLiteral>(S) &&
               !isa<ImplicitCastExpr>(S)) {
      Spellable = false;
    }
    for (const Stmt *Child : S->children())
      if (Child)
        Check(Child);
  };
  Check(E);
  if (!Spellable)
    return std::nullopt;
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  E->printPretty(OS, nullptr, PrintingPolicy(Ctx.getLangOpts()));
  return Text;
}

/// A type parameter's name, or a non-dependent type's spelling.
std::optional<std::string> typeArgText(QualType T,
                                       const std::vector<std::string> &Names,
                                       const PrintingPolicy &PP) {
  if (!T->isDependentType())
    return typeText(T, PP);
  if (const auto *TT = T.getUnqualifiedType()->getAs<TemplateTypeParmType>())
    if (TT->getDepth() == 0 && TT->getIndex() < Names.size())
      return Names[TT->getIndex()];
  return std::nullopt;
}

/// A parameter type of the primary template written with its template
/// parameters: `pk::In<T, R>` or `T`; "" when it does not depend on them;
/// nullopt when pkc cannot spell it.
std::optional<std::string>
genericParamType(QualType T, const std::vector<std::string> &Names,
                 const ASTContext &Ctx, const PrintingPolicy &PP) {
  if (!T->isDependentType())
    return std::string();
  if (T->getAs<TemplateTypeParmType>())
    return typeArgText(T, Names, PP);
  const auto *TST = T->getAs<TemplateSpecializationType>();
  if (!TST)
    return std::nullopt;
  const TemplateDecl *TD = TST->getTemplateName().getAsTemplateDecl();
  if (!TD || !isInPkNamespace(TD) ||
      !llvm::is_contained({"In", "Out", "InOut"}, TD->getName()))
    return std::nullopt;
  llvm::ArrayRef<TemplateArgument> Args = TST->template_arguments();
  if (Args.empty() || Args.size() > 2 ||
      Args[0].getKind() != TemplateArgument::Type)
    return std::nullopt;
  std::optional<std::string> Elem = typeArgText(Args[0].getAsType(), Names, PP);
  std::optional<std::string> Rank =
      Args.size() == 2 ? rankText(Args[1], Names, Ctx) : std::string("1");
  if (!Elem || !Rank)
    return std::nullopt;
  return "pk::" + TD->getName().str() + "<" + *Elem + ", " + *Rank + ">";
}

} // namespace

bool pk::frontend::describeInstantiation(const FunctionDecl *FD,
                                         ASTContext &Ctx, Reporter &Rep,
                                         Instantiation &I,
                                         ir::KernelTemplate &T) {
  const FunctionTemplateDecl *FTD = FD->getPrimaryTemplate();
  const FunctionDecl *Pattern = FTD->getTemplatedDecl();
  const TemplateArgumentList *Args = FD->getTemplateSpecializationArgs();
  const TemplateParameterList *TPL = FTD->getTemplateParameters();
  const SourceManager &SM = Ctx.getSourceManager();
  PrintingPolicy PP = spellingPolicy(Ctx);
  std::string Name = Pattern->getNameAsString();
  bool OK = true;
  auto NotYet = [&](SourceLocation L, const llvm::Twine &What,
                    const llvm::Twine &Note) {
    Rep.error(rule::NotSupportedYet, L, SourceRange(),
              (What + " is not supported by pkc yet").str(), Note.str());
    OK = false;
  };

  std::vector<std::string> Names, ArgTexts, Conditions, Head;
  for (unsigned Index = 0; Index < TPL->size(); ++Index) {
    const NamedDecl *P = TPL->getParam(Index);
    bool Spellable = false;
    Names.push_back(paramName(P, Index, Spellable));
  }
  for (unsigned Index = 0; Index < TPL->size() && OK; ++Index) {
    const NamedDecl *P = TPL->getParam(Index);
    const std::string &PName = Names[Index];
    bool Spellable = false;
    paramName(P, Index, Spellable);
    const TemplateArgument &A = Args->get(Index);
    std::string Text = argumentText(A, PP);
    const char *ParamNote = "give a kernel template type parameters and "
                            "integer parameters only (template <typename T, "
                            "int R>)";
    if (P->isTemplateParameterPack()) {
      NotYet(P->getLocation(),
             "the template parameter pack '" + PName +
                 "' of the kernel template '" + Name + "'",
             ParamNote);
    } else if (isa<TemplateTypeParmDecl>(P) && !Text.empty()) {
      Head.push_back("typename " + PName);
      // The invented parameter of `auto s` is decltype(s).
      std::string Spelled = Spellable ? PName : "";
      for (const ParmVarDecl *PVD : Pattern->parameters())
        if (const auto *TT = dyn_cast<TemplateTypeParmType>(
                PVD->getType().getCanonicalType().getTypePtr());
            Spelled.empty() && TT && TT->getDepth() == 0 &&
            TT->getIndex() == Index && PVD->getIdentifier())
          Spelled = "decltype(" + PVD->getName().str() + ")";
      if (!Spelled.empty())
        Conditions.push_back("std::is_same_v<" + Spelled + ", " + Text + ">");
      // The condition names the type in the primary template's body.
      if (const TagDecl *TD = A.getAsType()->getAsTagDecl())
        if (SM.isBeforeInTranslationUnit(Pattern->getBeginLoc(),
                                         TD->getLocation()))
          NotYet(FD->getPointOfInstantiation(),
                 "instantiating the kernel template '" + Name +
                     "' with the type '" + Text +
                     "', declared after the template,",
                 "declare '" + Text + "' before the kernel template '" + Name +
                     "'");
    } else if (const auto *NT = dyn_cast<NonTypeTemplateParmDecl>(P);
               NT && !Text.empty() &&
               (NT->getType()->isIntegralType(Ctx) ||
                NT->getType()->isBooleanType())) {
      Head.push_back(typeText(NT->getType(), PP) + " " + PName);
      if (Spellable)
        Conditions.push_back(NT->getType()->isBooleanType()
                                 ? (Text == "true" ? PName : "!" + PName)
                                 : PName + " == " + Text);
    } else {
      NotYet(P->getLocation(),
             "the template parameter '" + PName + "' of the kernel template '" +
                 Name + "'",
             ParamNote);
    }
    ArgTexts.push_back(Text);
  }
  if (!OK)
    return false;
  I.Args = llvm::join(ArgTexts, ", ");
  I.Symbol = identifierFor(Name + "_" + I.Args);
  I.Condition = Conditions.empty() ? "true" : llvm::join(Conditions, " && ");

  T.Name = Name;
  T.Head = llvm::join(Head, ", ");
  T.ParamTypes.clear();
  for (const ParmVarDecl *PVD : Pattern->parameters()) {
    std::optional<std::string> S =
        genericParamType(PVD->getType(), Names, Ctx, PP);
    if (!S) {
      NotYet(PVD->getLocation(),
             "the parameter type '" + PVD->getType().getAsString() +
                 "' of the kernel template '" + Name + "'",
             "write a kernel template's parameters as In<T, R>, Out<T, R>, "
             "InOut<T, R> or T, with T and R its template parameters, or as "
             "types that do not depend on them");
      continue;
    }
    T.ParamTypes.push_back(std::move(*S));
  }
  return OK;
}

std::string pk::frontend::dispatchBody(
    const std::vector<std::pair<std::string, std::string>> &Branches,
    llvm::StringRef EagerBody) {
  auto Indent = [](llvm::StringRef Text, llvm::StringRef Pad) {
    std::string Out;
    for (char C : Text) {
      Out += C;
      if (C == '\n')
        Out += Pad;
    }
    return Out;
  };
  std::string Out =
      "{\n  // pkc compiled the explicit instantiations of this kernel "
      "template;\n  // any other instantiation runs the eager body (the "
      "last branch).\n";
  for (size_t B = 0; B < Branches.size(); ++B) {
    const auto &[Condition, Body] = Branches[B];
    // The compiled body without its braces.
    llvm::StringRef Inner = llvm::StringRef(Body).trim();
    if (Inner.consume_front("{"))
      Inner.consume_back("}");
    Out += (B ? "  } else if constexpr (" : "  if constexpr (") + Condition +
           ") {" + Indent(Inner.rtrim(), "  ") + "\n";
  }
  Out += "  } else " + Indent(EagerBody, "  ") + "\n}";
  return Out;
}

std::string pk::frontend::explicitInstantiation(const FunctionDecl *FD,
                                                const ASTContext &Ctx) {
  PrintingPolicy PP = spellingPolicy(Ctx);
  std::vector<std::string> Args, Params;
  if (const TemplateArgumentList *L = FD->getTemplateSpecializationArgs())
    for (const TemplateArgument &A : L->asArray())
      Args.push_back(argumentText(A, PP));
  for (const ParmVarDecl *PVD : FD->parameters())
    Params.push_back(typeText(PVD->getType(), PP));
  std::string Name = FD->getQualifiedNameAsString();
  if (llvm::StringRef(Name).contains("(anonymous"))
    Name = FD->getNameAsString();
  return "template void " + Name + "<" + llvm::join(Args, ", ") + ">(" +
         llvm::join(Params, ", ") + ");";
}
