//===- ASTUtil.cpp - Recognising pk's types and functions in the AST ------===//

#include "Frontend/ASTUtil.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"

#include "llvm/Support/Path.h"

using namespace clang;
using namespace pk;
using namespace pk::frontend;

bool pk::frontend::isInPkNamespace(const Decl *D) {
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent()) {
    const auto *ND = dyn_cast<NamespaceDecl>(DC);
    if (!ND || ND->isInline())
      continue;
    if (ND->getName() == "pk" &&
        ND->getParent()->getRedeclContext()->isTranslationUnit())
      return true;
  }
  return false;
}

bool pk::frontend::isPkLibrary(const Decl *D, const SourceManager &SM) {
  if (!isInPkNamespace(D))
    return false;
  llvm::StringRef File = SM.getFilename(SM.getExpansionLoc(D->getLocation()));
  return llvm::sys::path::filename(llvm::sys::path::parent_path(File)) ==
             "pk" &&
         llvm::sys::path::extension(File) == ".h";
}

const CXXRecordDecl *pk::frontend::recordOf(QualType T) {
  if (T.isNull())
    return nullptr;
  T = T.getNonReferenceType().getCanonicalType();
  return T->getAsCXXRecordDecl();
}

bool pk::frontend::isPkClass(QualType T, llvm::StringRef Name) {
  const CXXRecordDecl *RD = recordOf(T);
  return RD && RD->getIdentifier() && RD->getName() == Name &&
         RD->getDeclContext()->getRedeclContext()->isNamespace() &&
         isInPkNamespace(RD);
}

bool pk::frontend::isArithmeticScalar(QualType T) {
  if (T.isNull())
    return false;
  T = T.getNonReferenceType().getCanonicalType();
  return T->isArithmeticType() && !T->isEnumeralType() && !T->isComplexType();
}

std::optional<ir::DType> pk::frontend::scalarDType(QualType T,
                                                   const ASTContext &Ctx) {
  if (T.isNull())
    return std::nullopt;
  T = T.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  if (const auto *ET = T->getAs<EnumType>()) {
    if (!ET->getDecl()->isComplete())
      return std::nullopt;
    T = ET->getDecl()->getIntegerType().getCanonicalType();
  }
  const auto *BT = dyn_cast<BuiltinType>(T.getTypePtr());
  if (!BT)
    return std::nullopt;
  switch (BT->getKind()) {
  case BuiltinType::Bool:
    return ir::DType::Bool;
  case BuiltinType::Float:
    return ir::DType::F32;
  case BuiltinType::Double:
    return ir::DType::F64;
  default:
    break;
  }
  if (BT->isInteger()) {
    uint64_t Bits = Ctx.getTypeSize(T);
    if (Bits <= 32)
      return ir::DType::I32;
    if (Bits == 64)
      return ir::DType::I64;
  }
  return std::nullopt;
}

std::optional<ir::DType> pk::frontend::storage16DType(QualType T) {
  if (isPkClass(T, "half"))
    return ir::DType::F16;
  if (isPkClass(T, "bfloat16"))
    return ir::DType::BF16;
  return std::nullopt;
}

/// Template argument \p I of a specialization of the pk class \p Name.
static const TemplateArgument *pkTemplateArg(QualType T, llvm::StringRef Name,
                                             unsigned I) {
  const CXXRecordDecl *RD = recordOf(T);
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  if (!Spec || !isPkClass(T, Name))
    return nullptr;
  const TemplateArgumentList &Args = Spec->getTemplateArgs();
  if (Args.size() <= I)
    return nullptr;
  return &Args[I];
}

std::optional<ir::DType> pk::frontend::valueDType(QualType T,
                                                  const ASTContext &Ctx) {
  if (T.isNull())
    return std::nullopt;
  if (isArithmeticScalar(T) || T->isEnumeralType())
    return scalarDType(T, Ctx);
  if (const TemplateArgument *A = pkTemplateArg(T, "Array", 0))
    if (A->getKind() == TemplateArgument::Type)
      return scalarDType(A->getAsType(), Ctx);
  // `auto t = ref[_];` is a WholeProxy<T, R> of the ref's element type T,
  // an Array of T's compute type (float for pk::half and pk::bfloat16,
  // int32_t for the 8-bit types).
  if (const TemplateArgument *A = pkTemplateArg(T, "WholeProxy", 0))
    if (A->getKind() == TemplateArgument::Type)
      if (std::optional<ir::DType> E = elementDType(A->getAsType(), Ctx))
        return ir::computeType(*E);
  return std::nullopt;
}

std::optional<ir::DType> pk::frontend::elementDType(QualType T,
                                                    const ASTContext &Ctx) {
  T = T.getCanonicalType().getUnqualifiedType();
  if (std::optional<ir::DType> S = storage16DType(T))
    return S;
  const auto *BT = dyn_cast<BuiltinType>(T.getTypePtr());
  if (!BT)
    return std::nullopt;
  switch (BT->getKind()) {
  case BuiltinType::Bool:
    return ir::DType::Bool;
  case BuiltinType::Float:
    return ir::DType::F32;
  case BuiltinType::Double:
    return ir::DType::F64;
  // int8_t and uint8_t; plain char is not an element type (its signedness
  // is the platform's).
  case BuiltinType::SChar:
    return ir::DType::I8;
  case BuiltinType::UChar:
    return ir::DType::U8;
  default:
    break;
  }
  if (BT->isSignedInteger() && !BT->isCharType()) {
    uint64_t Bits = Ctx.getTypeSize(T);
    if (Bits == 32)
      return ir::DType::I32;
    if (Bits == 64)
      return ir::DType::I64;
  }
  return std::nullopt;
}

std::optional<RefType> pk::frontend::refType(QualType T) {
  static const std::pair<llvm::StringRef, ir::ParamKind> Kinds[] = {
      {"In", ir::ParamKind::In},
      {"Out", ir::ParamKind::Out},
      {"InOut", ir::ParamKind::InOut}};
  for (const auto &[Name, Kind] : Kinds) {
    const TemplateArgument *E = pkTemplateArg(T, Name, 0);
    const TemplateArgument *R = pkTemplateArg(T, Name, 1);
    if (!E || !R || E->getKind() != TemplateArgument::Type ||
        R->getKind() != TemplateArgument::Integral)
      continue;
    RefType Ref;
    Ref.Kind = Kind;
    Ref.Element = E->getAsType();
    Ref.Rank = R->getAsIntegral().getExtValue();
    return Ref;
  }
  return std::nullopt;
}

llvm::StringRef pk::frontend::refKindName(ir::ParamKind K) {
  switch (K) {
  case ir::ParamKind::In:
    return "In";
  case ir::ParamKind::Out:
    return "Out";
  case ir::ParamKind::InOut:
    return "InOut";
  case ir::ParamKind::Scalar:
    return "scalar";
  }
  return "?";
}

std::string pk::frontend::refSpelling(ir::ParamKind K, ir::DType T,
                                      unsigned Rank) {
  return (refKindName(K) + "<" + ir::dtypeCppName(T) + ", " +
          std::to_string(Rank) + ">")
      .str();
}

bool pk::frontend::isLibraryFunction(const FunctionDecl *FD,
                                     const SourceManager &SM) {
  if (FD->isInStdNamespace() || FD->getBuiltinID() != 0)
    return true;
  if (!SM.isInSystemHeader(FD->getLocation()))
    return false;
  // A system header's function outside any namespace, or extern "C": the C
  // library (or POSIX, or a compiler runtime).
  return FD->isExternC() ||
         FD->getDeclContext()->getRedeclContext()->isTranslationUnit();
}

std::string pk::frontend::sourceText(SourceRange R, const ASTContext &Ctx,
                                     size_t Max) {
  const SourceManager &SM = Ctx.getSourceManager();
  CharSourceRange CR = Lexer::makeFileCharRange(
      CharSourceRange::getTokenRange(R), SM, Ctx.getLangOpts());
  if (CR.isInvalid()) {
    // Inside a macro: show the expansion.
    CR = CharSourceRange::getTokenRange(SM.getExpansionRange(R).getAsRange());
  }
  llvm::StringRef Text = Lexer::getSourceText(CR, SM, Ctx.getLangOpts());
  std::string Out;
  bool Space = false;
  for (char C : Text) {
    if (C == ' ' || C == '\t' || C == '\n' || C == '\r') {
      Space = !Out.empty();
      continue;
    }
    if (Space)
      Out += ' ';
    Space = false;
    Out += C;
  }
  if (Max && Out.size() > Max)
    Out = Out.substr(0, Max - 3) + "...";
  return Out;
}
