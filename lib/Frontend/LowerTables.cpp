//===- LowerTables.cpp - Constant tables: const arrays of numbers ---------===//
//
// Part of the AST walker (ASTToGraph.h). A const or constexpr array of numbers
// (a C array, of any rank, or std::array) with a constant initializer is a
// table (language.md §4): its elements are constant nodes, built once at the
// declaration, and `c[i]` with `i` a compile-time constant in the walk (a
// literal, a constexpr value, the counter of an unrolled loop) is the node
// of that element. Horner's rule over a coefficient table is the use:
//
//   constexpr float c[] = {1.0f, 0.5f, 0.25f};
//   auto p = c[0];
//   for (int i = 1; i < 3; ++i)
//     p = p * x[_] + c[i];
//
// There is no memory and no run-time index: an index that depends on data or
// on a scalar parameter is an error (choose with where(...) instead).
//
//===----------------------------------------------------------------------===//

#include "Frontend/ASTToGraph.h"

#include "clang/AST/DeclTemplate.h"

namespace pk::frontend::lowering {

namespace {

/// std::array<T, N>'s one data member, or null for any other type.
const FieldDecl *stdArrayField(QualType T) {
  const auto *RD =
      dyn_cast_or_null<ClassTemplateSpecializationDecl>(recordOf(T));
  if (!RD || RD->getName() != "array" || !RD->isInStdNamespace() ||
      !RD->hasDefinition())
    return nullptr;
  const FieldDecl *Only = nullptr;
  for (const FieldDecl *FD : RD->fields()) {
    if (Only)
      return nullptr;
    Only = FD;
  }
  return Only;
}

const char *const TableNote =
    "a local array is a table of constants: declare it const or constexpr "
    "with constant elements (constexpr float c[] = {1.0f, 0.5f};) and index "
    "it by constants; compute arrays from refs with pk operations";

} // namespace

bool isStdArray(QualType T) { return stdArrayField(T) != nullptr; }

bool ASTToGraph::tableShape(QualType T, llvm::SmallVectorImpl<uint64_t> &Dims,
                            QualType &Elem) const {
  T = T.getNonReferenceType();
  if (const ConstantArrayType *CAT = Ctx.getAsConstantArrayType(T)) {
    Dims.push_back(CAT->getZExtSize());
    return tableShape(CAT->getElementType(), Dims, Elem);
  }
  if (const FieldDecl *FD = stdArrayField(T))
    return tableShape(FD->getType(), Dims, Elem);
  if (T->isArrayType() || !isArithmeticScalar(T) || !dtypeOf(T) || Dims.empty())
    return false;
  Elem = T;
  return true;
}

Flow ASTToGraph::execTableDecl(const VarDecl *VD, const DeclStmt *At) {
  QualType T = VD->getType();
  std::string Name = VD->getNameAsString();
  llvm::SmallVector<uint64_t, 2> Dims;
  QualType Elem;
  if (!tableShape(T, Dims, Elem)) {
    unsupported(At,
                (T.getNonReferenceType()->isArrayType() ? "the C array '"
                                                        : "the array '") +
                    Name + "' of type '" + T.getAsString() + "'",
                TableNote);
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  bool Const =
      VD->isConstexpr() ||
      Ctx.getBaseElementType(T.getNonReferenceType()).isConstQualified();
  if (!Const) {
    if (VD->isStaticLocal() || VD->getTLSKind() != VarDecl::TLS_None)
      unsupported(At, "the static local variable '" + Name + "'",
                  "kernels keep no state between calls; a static constexpr "
                  "array is a constant table");
    else
      error(rule::Unsupported, At,
            "the array '" + Name +
                "' is not const; a local array in a kernel is a constant table",
            TableNote);
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  std::optional<Val> Tab;
  if (VD->getInit())
    Tab = buildTable(VD, VD->getInit());
  else
    unsupported(At, "the array '" + Name + "' without an initializer",
                TableNote);
  frame().Env[VD] = Tab ? *Tab : Val::invalid();
  return Flow::Normal;
}

std::optional<Val> ASTToGraph::globalTable(const VarDecl *VD) {
  if (!VD->hasGlobalStorage() || !VD->getInit())
    return std::nullopt;
  llvm::SmallVector<uint64_t, 2> Dims;
  QualType Elem;
  if (!tableShape(VD->getType(), Dims, Elem) ||
      !(VD->isConstexpr() ||
        Ctx.getBaseElementType(VD->getType().getNonReferenceType())
            .isConstQualified()))
    return std::nullopt;
  if (auto It = GlobalTables.find(VD); It != GlobalTables.end())
    return It->second;
  // Built in a frame of its own: the initializer sees no locals.
  Frames.emplace_back();
  std::optional<Val> Tab = buildTable(VD, VD->getInit());
  Frames.pop_back();
  Val V = Tab ? *Tab : Val::invalid();
  GlobalTables[VD] = V;
  return V;
}

std::optional<Val> ASTToGraph::buildTable(const VarDecl *VD, const Expr *Init) {
  llvm::SmallVector<uint64_t, 2> Dims;
  QualType Elem;
  tableShape(VD->getType(), Dims, Elem);
  auto Elems = std::make_shared<std::vector<NodeId>>();
  if (!collectTable(Init, VD->getType(), VD, *Elems))
    return std::nullopt;
  Table Tab;
  Tab.Name = VD->getNameAsString();
  Tab.Elems = std::move(Elems);
  Tab.Dims = Dims;
  Tables.push_back(std::move(Tab));
  return Val::table(Tables.size() - 1);
}

bool ASTToGraph::collectTable(const Expr *Init, QualType T, const VarDecl *VD,
                              std::vector<NodeId> &Out) {
  T = T.getNonReferenceType();
  llvm::SmallVector<uint64_t, 2> Dims;
  QualType Elem;
  bool IsTable = tableShape(T, Dims, Elem);
  const Expr *S = Init ? strip(Init) : nullptr;
  if (S && isa<ImplicitValueInitExpr>(S))
    S = nullptr; // zeros
  if (const auto *CE = dyn_cast_or_null<CXXConstructExpr>(S);
      CE && CE->getNumArgs() == 0 && CE->requiresZeroInitialization())
    S = nullptr; // `std::array<float, 4> c{}`
  if (IsTable && S && isa<DeclRefExpr>(S)) {
    // A copy of (or a reference to) another table.
    Val V = eval(S);
    if (!V.ok())
      return false;
    if (V.K == Val::Table) {
      Table Src = Tables[V.Param];
      size_t N = 1;
      for (uint64_t D : Src.Dims)
        N *= D;
      Out.insert(Out.end(), Src.Elems->begin() + Src.Offset,
                 Src.Elems->begin() + Src.Offset + N);
      return true;
    }
  }
  if (const ConstantArrayType *CAT = Ctx.getAsConstantArrayType(T)) {
    const auto *IL = dyn_cast_or_null<InitListExpr>(S);
    if (S && !IL) {
      error(rule::Unsupported, S,
            "the array '" + VD->getName() +
                "' is not a constant table: it is initialized from '" +
                text(S) + "'",
            TableNote);
      return false;
    }
    for (uint64_t I = 0; I < CAT->getZExtSize(); ++I) {
      const Expr *Sub = nullptr;
      if (IL)
        Sub = I < IL->getNumInits() ? IL->getInit(I) : IL->getArrayFiller();
      if (!collectTable(Sub, CAT->getElementType(), VD, Out))
        return false;
    }
    return true;
  }
  if (const FieldDecl *FD = stdArrayField(T)) {
    // std::array is an aggregate of one C array.
    const Expr *Sub = nullptr;
    if (const auto *IL = dyn_cast_or_null<InitListExpr>(S)) {
      Sub = IL->getNumInits() ? IL->getInit(0) : nullptr;
    } else if (S) {
      error(rule::Unsupported, S,
            "the array '" + VD->getName() +
                "' is not a constant table: it is initialized from '" +
                text(S) + "'",
            TableNote);
      return false;
    }
    return collectTable(Sub, FD->getType(), VD, Out);
  }
  std::optional<DType> D = dtypeOf(T);
  if (!D)
    return false;
  if (!S) {
    Out.push_back(
        B.constInt(0, *D, /*Weak=*/true, loc(Init ? Init : VD->getInit())));
    return true;
  }
  std::optional<NodeId> Id = valueOf(eval(Init));
  if (!Id)
    return false; // reported
  NodeId C = castTo(*Id, *D, Init);
  if (!constValue(C)) {
    bool OnData = false;
    error(rule::Unsupported, Init,
          "the array '" + VD->getName() +
              "' is not a constant table: its element '" + text(Init) +
              "' depends on " + dependenceOf(C, OnData),
          TableNote);
    return false;
  }
  Out.push_back(C);
  return true;
}

Val ASTToGraph::indexTable(const Expr *E, Val Tab, const Expr *Idx) {
  // A copy: Tables grows below.
  Table T = Tables[Tab.Param];
  std::optional<NodeId> I = valueOf(eval(Idx));
  if (!I)
    return Val::invalid();
  std::optional<double> C = constValue(*I);
  if (!C) {
    bool OnData = false;
    std::string Dep = dependenceOf(*I, OnData);
    error(rule::Subscript, E,
          "the table '" + T.Name + "' is indexed by '" + text(Idx) +
              "', which depends on " + Dep +
              "; a table's index must be a compile-time constant",
          "index it by a constant expression (a literal, a constexpr value or "
          "the counter of an unrolled loop); to choose per element, use "
          "where(mask, a, b)");
    return Val::invalid();
  }
  auto K = static_cast<int64_t>(*C);
  if (K < 0 || static_cast<uint64_t>(K) >= T.Dims[0]) {
    error(rule::Subscript, E,
          "the index " + std::to_string(K) +
              " is out of range for the table '" + T.Name + "' of " +
              std::to_string(T.Dims[0]) + " elements",
          "index it from 0 to " + std::to_string(T.Dims[0] - 1));
    return Val::invalid();
  }
  size_t RowSize = 1;
  for (size_t D = 1; D < T.Dims.size(); ++D)
    RowSize *= T.Dims[D];
  if (T.Dims.size() == 1)
    return Val::value((*T.Elems)[T.Offset + K]);
  Table Row = T;
  Row.Name = T.Name + "[" + std::to_string(K) + "]";
  Row.Dims.erase(Row.Dims.begin());
  Row.Offset = T.Offset + K * RowSize;
  Tables.push_back(std::move(Row));
  return Val::table(Tables.size() - 1);
}

Val ASTToGraph::tableSize(const Expr *E, Val Tab) {
  const Table &T = Tables[Tab.Param];
  std::optional<DType> D = dtypeOf(E->getType());
  if (!D)
    return Val::invalid();
  return Val::value(B.constInt(static_cast<int64_t>(T.Dims[0]), *D,
                               /*Weak=*/true, loc(E)));
}

} // namespace pk::frontend::lowering
