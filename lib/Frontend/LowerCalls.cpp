//===- LowerCalls.cpp - pk operations, library calls, helper inlining -----===//
//
// Part of the AST walker (ASTToGraph.h): a call is a pk operation (an op of
// the table, a reduction, a shape op), a C/C++ library function (scalar
// math maps to the same ops; anything else is opaque), or a helper whose
// definition is visible, which is inlined in a new frame.
//
//===----------------------------------------------------------------------===//

#include "Frontend/ASTToGraph.h"
#include "Frontend/StdMath.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>

namespace pk::frontend::lowering {

namespace {
/// The pk op to suggest for a C/C++ library function called with
/// \p NumArgs arguments, with its operands ("maximum(a, b)"); "" when none.
std::string suggestionFor(llvm::StringRef Name, unsigned NumArgs) {
  std::string Fn = pkFunctionFor(Name, NumArgs);
  if (Fn.empty())
    return "";
  const ir::OpInfo *Op = ir::lookupOpBySource(Fn);
  unsigned Arity = Op ? Op->Arity : 1; // a reduction: f(v)
  return Fn + (Arity == 3 ? "(x, lo, hi)" : Arity == 2 ? "(a, b)" : "(v)");
}

/// The elementwise op a C/C++ math function computes on scalars, or null:
/// `std::exp`, `expf`, `std::sqrt`, `fabs` ... (the library's own functions,
/// for C++ scalars; pk's ops take arrays).
const ir::OpInfo *scalarMathOp(llvm::StringRef Name) {
  auto IsMath = [](const ir::OpInfo *I) {
    return I && I->Code != ir::OpCode::Select &&
           I->Code != ir::OpCode::Maximum && I->Code != ir::OpCode::Minimum &&
           I->Code != ir::OpCode::Clamp && I->Code != ir::OpCode::Rsqrt &&
           I->Code != ir::OpCode::Sigmoid && !I->Source.empty() &&
           std::isalpha(static_cast<unsigned char>(I->Source[0]));
  };
  if (Name == "fabs" || Name == "fabsf" || Name == "labs" || Name == "llabs")
    return ir::lookupOpBySource("abs");
  if (const ir::OpInfo *I = ir::lookupOpBySource(Name); IsMath(I))
    return I;
  if (Name.size() > 1 && (Name.back() == 'f' || Name.back() == 'l'))
    if (const ir::OpInfo *I = ir::lookupOpBySource(Name.drop_back()); IsMath(I))
      return I;
  return nullptr;
}
} // namespace

/// The braced list `{a, b, ...}` an std::initializer_list argument was
/// written as, or null.
const InitListExpr *braceList(const Expr *Arg) {
  const Expr *E = Arg->IgnoreImplicit();
  if (const auto *M = dyn_cast<MaterializeTemporaryExpr>(E))
    E = M->getSubExpr()->IgnoreImplicit();
  if (const auto *L = dyn_cast<CXXStdInitializerListExpr>(E))
    E = L->getSubExpr()->IgnoreImplicit();
  if (const auto *M = dyn_cast<MaterializeTemporaryExpr>(E))
    E = M->getSubExpr()->IgnoreImplicit();
  return dyn_cast<InitListExpr>(E);
}

std::optional<int> ASTToGraph::constAxis(const Expr *Arg, llvm::StringRef Op) {
  Val V = eval(Arg);
  std::optional<NodeId> Id = valueOf(V);
  if (!Id)
    return std::nullopt;
  std::optional<double> C = constValue(*Id);
  if (!C) {
    error(rule::AxisNotConstant, Arg,
          "the axis of '" + Op + "' must be an integer constant expression",
          "write the axis as a literal or a constexpr value (negative counts "
          "from the end)");
    return std::nullopt;
  }
  return static_cast<int>(*C);
}

Val ASTToGraph::evalPkElementwise(const ir::OpInfo &Op, const Expr *E,
                                  llvm::ArrayRef<const Expr *> Args) {
  if (Args.size() != Op.Arity)
    return unsupported(E, "'" + Op.Source + "' with " +
                              std::to_string(Args.size()) + " operands");
  std::optional<DType> R = dtypeOf(E->getType());
  if (!R)
    return unsupported(E, "'" + text(E) + "'");
  llvm::SmallVector<NodeId, 3> Ops;
  llvm::SmallVector<Operand, 3> Kinds;
  for (const Expr *A : Args) {
    std::optional<NodeId> V = valueOf(eval(A));
    if (!V)
      return Val::invalid();
    Ops.push_back(*V);
    Kinds.push_back({F.node(*V).Type, isArithmeticScalar(A->getType())});
  }
  DType ComputeIn = *R;
  if (Op.Result == ir::ResultRule::Bool) {
    // Comparisons compute in the promoted type of their operands.
    Operand C = Kinds[0];
    for (size_t I = 1; I < Kinds.size(); ++I)
      C = join(C, Kinds[I]);
    ComputeIn = C.T;
  }
  return Val::value(buildOp(Op.Code, Ops, ComputeIn, *R, E));
}

Val ASTToGraph::evalPkCall(const FunctionDecl *FD, const CallExpr *E,
                           llvm::ArrayRef<const Expr *> Args) {
  llvm::StringRef Name = FD->getIdentifier() ? FD->getName() : "";
  std::optional<DType> R = dtypeOf(E->getType());
  auto Arg0 = [&]() -> std::optional<NodeId> {
    if (Args.empty())
      return std::nullopt;
    return valueOf(eval(Args[0]));
  };

  if (Name == "cast") {
    std::optional<NodeId> V = Arg0();
    if (!V || !R)
      return Val::invalid();
    // cast<pk::half>/cast<pk::bfloat16> give a float value rounded to the
    // 16-bit type, cast<int8_t>/cast<uint8_t> an int32 value wrapped to the
    // 8-bit type (R, the eager result's element type, is the storage
    // type's compute type).
    const TemplateArgumentList *TA = FD->getTemplateSpecializationArgs();
    if (TA && TA->size() >= 1 && TA->get(0).getKind() == TemplateArgument::Type)
      if (std::optional<DType> S = elementDType(TA->get(0).getAsType(), Ctx);
          S && ir::isStorageOnly(*S)) {
        NodeId In = castTo(*V, *R, E);
        return Val::value(buildOp(ir::throughStorageOp(*S), {In}, *R, *R, E));
      }
    return Val::value(castTo(*V, *R, E));
  }

  std::optional<ir::ReduceKind> Red =
      llvm::StringSwitch<std::optional<ir::ReduceKind>>(Name)
          .Case("sum", ir::ReduceKind::Sum)
          .Case("max", ir::ReduceKind::Max)
          .Case("min", ir::ReduceKind::Min)
          .Case("mean", ir::ReduceKind::Mean)
          .Case("argmax", ir::ReduceKind::ArgMax)
          .Case("argmin", ir::ReduceKind::ArgMin)
          .Default(std::nullopt);
  if (Red) {
    std::optional<NodeId> V = Arg0();
    if (!V || !R)
      return Val::invalid();
    llvm::SmallVector<int, 2> Axes;
    bool Keep = false;
    if (Args.size() >= 2) {
      std::optional<int> Axis = constAxis(Args[1], Name);
      if (!Axis)
        return Val::invalid();
      Axes.push_back(*Axis);
    }
    if (Args.size() >= 3) {
      Val K = eval(Args[2]);
      if (!K.ok())
        return K;
      Keep = K.K == Val::KeepDims;
    }
    // A reduction computes in its result's dtype; an arg-reduction compares
    // the values as they are (bools as 0 and 1) and gives int64 positions.
    NodeId In = !ir::isArgReduction(*Red)        ? castTo(*V, *R, E)
                : F.node(*V).Type == DType::Bool ? castTo(*V, DType::I32, E)
                                                 : *V;
    return Val::value(B.reduce(*Red, In, Axes, Keep, *R, loc(E)));
  }

  if (Name == "expand_dims" || Name == "squeeze" || Name == "index") {
    if (Args.size() != 2)
      return unsupported(E, "'" + text(E) + "'");
    std::optional<NodeId> V = Arg0();
    if (!V)
      return Val::invalid();
    std::optional<int> Axis = constAxis(Args[1], Name);
    if (!Axis)
      return Val::invalid();
    if (Name == "expand_dims")
      return Val::value(B.expandDims(*V, *Axis, loc(E)));
    if (Name == "squeeze")
      return Val::value(B.squeeze(*V, *Axis, loc(E)));
    return Val::value(B.index(*V, *Axis, loc(E)));
  }

  if (Name == "broadcast_to") {
    if (Args.size() != 2 || !R)
      return unsupported(E, "'" + text(E) + "'");
    std::optional<NodeId> V = Arg0();
    if (!V)
      return Val::invalid();
    Val W = eval(Args[1]);
    std::optional<NodeId> Shape;
    if (W.K == Val::Ref)
      Shape = shapeSource(W.Param, Args[1]);
    else
      Shape = valueOf(W);
    if (!Shape)
      return Val::invalid();
    return Val::value(B.broadcastTo(castTo(*V, *R, E), *Shape, loc(E)));
  }

  if (Name == "matmul") {
    if (Args.size() != 2 || !R)
      return unsupported(E, "'" + text(E) + "'");
    std::optional<NodeId> A = Arg0();
    std::optional<NodeId> C = valueOf(eval(Args[1]));
    if (!A || !C)
      return Val::invalid();
    return Val::value(
        B.matmul(castTo(*A, *R, E), castTo(*C, *R, E), *R, loc(E)));
  }

  if (Name == "transpose") {
    std::optional<NodeId> V = Arg0();
    if (!V)
      return Val::invalid();
    return Val::value(B.transpose(*V, loc(E)));
  }

  if (Name == "permute_dims") {
    // permute_dims(v, {a0, a1, ...}): the axes are a braced list of integer
    // constant expressions (inferShapes checks that they permute v's axes).
    const InitListExpr *List = nullptr;
    if (Args.size() == 2)
      List = braceList(Args[1]);
    if (!List)
      return unsupported(E, "'" + text(E) + "'",
                         "write the axes as a braced list of constants: "
                         "permute_dims(v, {1, 0, 2})");
    std::optional<NodeId> V = Arg0();
    if (!V)
      return Val::invalid();
    llvm::SmallVector<int, 4> Axes;
    for (const Expr *A : List->inits()) {
      std::optional<int> Axis = constAxis(A, Name);
      if (!Axis)
        return Val::invalid();
      Axes.push_back(*Axis);
    }
    return Val::value(B.permuteDims(*V, Axes, loc(E)));
  }

  if (const ir::OpInfo *Op = ir::lookupOpBySource(Name))
    return evalPkElementwise(*Op, E, Args);

  if (Name == "slice")
    return evalSlice(E, Args);
  if (Name == "reshape")
    return evalReshape(E, Args);
  if (Name == "concat")
    return evalConcat(E, Args);
  if (Name == "take")
    return evalTake(E, Args);
  if (Name == "repeat")
    return evalRepeat(E, Args);

  return unsupported(E, "'" + FD->getQualifiedNameAsString() + "'",
                     "use the operations of pk::lang (language.md §3)");
}

Val ASTToGraph::evalLibraryCall(const FunctionDecl *FD, const CallExpr *E,
                                llvm::ArrayRef<const Expr *> Args) {
  llvm::StringRef Name = FD->getIdentifier() ? FD->getName() : "";
  std::string Qual = FD->getQualifiedNameAsString();
  bool Std = FD->isInStdNamespace();
  bool AllScalar = llvm::all_of(
      Args, [](const Expr *A) { return isArithmeticScalar(A->getType()); });
  std::optional<DType> R = dtypeOf(E->getType());

  if (Std && (Name == "move" || Name == "forward" || Name == "as_const") &&
      Args.size() == 1)
    return eval(Args[0]);

  // <cmath> on C++ scalars (pk's ops take arrays): the same elementwise op.
  if (const ir::OpInfo *Op = scalarMathOp(Name);
      Op && AllScalar && R && isArithmeticScalar(E->getType()) &&
      Args.size() == Op->Arity) {
    llvm::SmallVector<NodeId, 2> Ops;
    for (const Expr *A : Args) {
      std::optional<NodeId> V = valueOf(eval(A));
      if (!V)
        return Val::invalid();
      Ops.push_back(*V);
    }
    return Val::value(buildOp(Op->Code, Ops, *R, *R, E));
  }
  // std::max / std::min / std::clamp on scalars, exactly as <algorithm>
  // defines them: max(a, b) = a < b ? b : a, min(a, b) = b < a ? b : a.
  if (Std && AllScalar && R &&
      ((Args.size() == 2 && (Name == "max" || Name == "min")) ||
       (Args.size() == 3 && Name == "clamp"))) {
    llvm::SmallVector<NodeId, 3> Ops;
    for (const Expr *A : Args) {
      std::optional<NodeId> V = valueOf(eval(A));
      if (!V)
        return Val::invalid();
      Ops.push_back(castTo(*V, *R, A));
    }
    auto Lt = [&](NodeId A, NodeId C) {
      return buildOp(ir::OpCode::Lt, {A, C}, *R, DType::Bool, E);
    };
    auto Sel = [&](NodeId M, NodeId A, NodeId C) {
      return buildOp(ir::OpCode::Select, {M, A, C}, *R, *R, E);
    };
    if (Name == "max")
      return Val::value(Sel(Lt(Ops[0], Ops[1]), Ops[1], Ops[0]));
    if (Name == "min")
      return Val::value(Sel(Lt(Ops[1], Ops[0]), Ops[1], Ops[0]));
    // clamp(v, lo, hi) = v < lo ? lo : (hi < v ? hi : v)
    NodeId Hi = Sel(Lt(Ops[2], Ops[0]), Ops[2], Ops[0]);
    return Val::value(Sel(Lt(Ops[0], Ops[1]), Ops[1], Hi));
  }

  // `std::max(x[_], y[_])` (resolved into <algorithm>): reported once, as
  // the Frontend reported it with Clang's diagnostics (the Reporter drops
  // the same message at the same place).
  if (std::optional<StdMathCall> M = matchStdMathCall(E, Ctx)) {
    reportStdMathCall(Rep, *M);
    return Val::invalid();
  }
  std::string Suggest = suggestionFor(Name, Args.size());
  error(rule::OpaqueCall, E,
        "call to the library function '" + Qual + "' cannot be compiled",
        Suggest.empty()
            ? std::string("kernels may call pk operations and functions whose "
                          "definition is visible (they are inlined)")
            : "use pk's " + Suggest + ", which works elementwise on arrays");
  return Val::invalid();
}

Val ASTToGraph::evalCall(const CallExpr *E) {
  const FunctionDecl *FD = E->getDirectCallee();
  if (!FD) {
    if (E->getCallee()->getType()->isMemberPointerType())
      return unsupported(E, "calling through a member pointer");
    return unsupported(E, "calling through a function pointer",
                       "call helpers directly; they are inlined");
  }
  llvm::SmallVector<const Expr *, 4> Args(E->arguments());
  const auto *MD = dyn_cast<CXXMethodDecl>(FD);
  if (MD && MD->getParent()->isLambda())
    return unsupported(E, "calling a lambda",
                       "write a helper function; it is inlined");
  if (isPkLibrary(FD, SM)) {
    if (MD && !MD->isStatic())
      return unsupported(E, "'" + text(E) + "'");
    return evalPkCall(FD, E, Args);
  }
  if (isLibraryFunction(FD, SM))
    return evalLibraryCall(FD, E, Args);
  if (MD && !MD->isStatic() && !isa<CXXOperatorCallExpr>(E))
    return unsupported(E,
                       "calling the member function '" +
                           MD->getQualifiedNameAsString() + "'",
                       "write a free helper function; it is inlined");
  return inlineCall(FD, E, Args);
}

Val ASTToGraph::inlineCall(const FunctionDecl *FD, const CallExpr *E,
                           llvm::ArrayRef<const Expr *> Args) {
  const FunctionDecl *Def = nullptr;
  if (!FD->hasBody(Def) || !Def || !Def->getBody()) {
    error(rule::OpaqueCall, E,
          "call to '" + FD->getQualifiedNameAsString() +
              "' cannot be compiled: its definition is not visible",
          "define '" + FD->getNameAsString() +
              "' in this file or in a header it includes; helpers are "
              "inlined");
    return Val::invalid();
  }
  if (Def->isVariadic())
    return unsupported(E, "calling the variadic function '" +
                              FD->getNameAsString() + "'");
  if (isa<CXXMethodDecl>(Def) && !cast<CXXMethodDecl>(Def)->isStatic())
    return unsupported(E,
                       "calling the member function '" +
                           FD->getQualifiedNameAsString() + "'",
                       "write a free helper function; it is inlined");
  for (const Frame &Fr : Frames)
    if (Fr.FD && Fr.FD->getCanonicalDecl() == Def->getCanonicalDecl())
      return unsupported(
          E, "the recursive call to '" + FD->getNameAsString() + "'",
          "helpers are inlined, so they cannot recurse");
  if (Frames.size() > MaxInlineDepth)
    return unsupported(E, "nesting helper calls more than " +
                              std::to_string(MaxInlineDepth) + " deep");
  if (Def->getReturnType()->isReferenceType() || refType(Def->getReturnType()))
    return unsupported(E, "a helper that returns a reference or a ref",
                       "return values by value");

  // Arguments are evaluated in the caller's frame.
  llvm::SmallVector<Val, 4> Bound;
  for (unsigned I = 0; I < Def->getNumParams(); ++I) {
    const ParmVarDecl *PVD = Def->getParamDecl(I);
    if (I >= Args.size())
      return unsupported(E, "this call");
    Val A = eval(Args[I]);
    if (!A.ok())
      return A;
    QualType PT = PVD->getType().getNonReferenceType();
    if (refType(PT) && A.K != Val::Ref)
      return unsupported(Args[I], "passing this value as a ref");
    if (A.K == Val::Value || A.K == Val::LazyScalar)
      A = convertTo(A, PT, Args[I]);
    Bound.push_back(A);
  }

  size_t FirstNode = F.Nodes.size();
  Frames.emplace_back();
  frame().FD = Def;
  for (unsigned I = 0; I < Def->getNumParams(); ++I)
    bind(Def->getParamDecl(I), Bound[I]);
  unsigned Errors = Rep.numErrors();
  exec(Def->getBody());
  std::optional<Val> Result = frame().Result;
  Frames.pop_back();

  if (Def->getReturnType()->isVoidType())
    return Val::voidVal();
  if (!Result) {
    if (Rep.numErrors() == Errors && !SkippedCode)
      return unsupported(E, "calling '" + FD->getNameAsString() +
                                "', which ends without returning a value");
    return Val::invalid();
  }
  // Messages name the value as the caller wrote it (`gelu_tanh(x[_])`),
  // not by the helper's return expression.
  if (Result->K == Val::Value && Result->Id >= FirstNode)
    B.setLabel(Result->Id, text(E));
  return *Result;
}

} // namespace pk::frontend::lowering
