//===- LowerExprs.cpp - Values, refs and expressions ----------------------===//
//
// Part of the AST walker (ASTToGraph.h): how each expression becomes IR
// values, how `ref[_]` reads and writes become loads, stores and SSA
// renames, and the promotion rules that put casts before every op.
//
//===----------------------------------------------------------------------===//

#include "Frontend/ASTToGraph.h"

#include "llvm/ADT/StringSwitch.h"

namespace pk::frontend::lowering {

/// C++'s usual arithmetic conversions over the five dtypes, normalised like
/// pk.h's Canon (bool and small integers promote to i32).
DType usual(DType A, DType B) {
  if (A == DType::F64 || B == DType::F64)
    return DType::F64;
  if (A == DType::F32 || B == DType::F32)
    return DType::F32;
  if (A == DType::I64 || B == DType::I64)
    return DType::I64;
  return DType::I32;
}

/// pk.h's Join: the weak-scalar promotion rule (design.md).
Operand join(Operand A, Operand B) {
  if (A.Weak && !B.Weak)
    std::swap(A, B);
  if (!A.Weak && !B.Weak)
    return {usual(A.T, B.T), false};
  if (!A.Weak) // B weak
    return {ir::isFloat(A.T) && ir::isFloat(B.T) ? A.T : usual(A.T, B.T),
            false};
  return {usual(A.T, B.T), true};
}

const ir::OpInfo *binaryOpFor(BinaryOperatorKind K) {
  switch (K) {
  case BO_Add:
    return ir::lookupOpBySource("+");
  case BO_Sub:
    return ir::lookupOpBySource("-");
  case BO_Mul:
    return ir::lookupOpBySource("*");
  case BO_Div:
    return ir::lookupOpBySource("/");
  case BO_Rem:
    return ir::lookupOpBySource("%");
  case BO_LT:
    return ir::lookupOpBySource("<");
  case BO_LE:
    return ir::lookupOpBySource("<=");
  case BO_GT:
    return ir::lookupOpBySource(">");
  case BO_GE:
    return ir::lookupOpBySource(">=");
  case BO_EQ:
    return ir::lookupOpBySource("==");
  case BO_NE:
    return ir::lookupOpBySource("!=");
  default:
    return nullptr;
  }
}

/// The arithmetic operator of a compound assignment (`+=` -> "+").
llvm::StringRef compoundOpSpelling(OverloadedOperatorKind OO) {
  switch (OO) {
  case OO_PlusEqual:
    return "+";
  case OO_MinusEqual:
    return "-";
  case OO_StarEqual:
    return "*";
  case OO_SlashEqual:
    return "/";
  case OO_PercentEqual:
    return "%";
  default:
    return "";
  }
}

/// Strips what does not change a value: parens, temporaries, cleanups,
/// no-op and derived-to-base casts.
const Expr *strip(const Expr *E) {
  while (true) {
    const Expr *Next = E->IgnoreParens();
    if (const auto *FE = dyn_cast<FullExpr>(Next))
      Next = FE->getSubExpr();
    else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(Next))
      Next = MT->getSubExpr();
    else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(Next))
      Next = BT->getSubExpr();
    else if (const auto *IC = dyn_cast<ImplicitCastExpr>(Next)) {
      CastKind K = IC->getCastKind();
      if (K == CK_NoOp || K == CK_LValueToRValue || K == CK_DerivedToBase ||
          K == CK_UncheckedDerivedToBase)
        Next = IC->getSubExpr();
    } else if (const auto *CE = dyn_cast<CXXConstructExpr>(Next)) {
      if (CE->getNumArgs() == 1 &&
          CE->getConstructor()->isCopyOrMoveConstructor())
        Next = CE->getArg(0);
    }
    if (Next == E)
      return E;
    E = Next;
  }
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

std::optional<NodeId> ASTToGraph::valueOf(Val V) {
  if (V.K == Val::Value)
    return V.Id;
  if (V.K == Val::LazyScalar) {
    auto It = ScalarNodes.find(V.Param);
    if (It != ScalarNodes.end())
      return It->second;
    const ParmVarDecl *PVD = Refs[V.Param].Decl;
    NodeId Id = B.scalarParam(V.Param, makeSrcLoc(PVD->getLocation(), SM));
    ScalarNodes[V.Param] = Id;
    return Id;
  }
  return std::nullopt;
}

NodeId ASTToGraph::castTo(NodeId V, DType T, const Expr *At) {
  size_t Before = F.Nodes.size();
  NodeId R = B.cast(V, T, loc(At));
  if (R >= Before && F.node(R).Label.empty())
    B.setLabel(R, text(At));
  return R;
}

Val ASTToGraph::convertTo(Val V, QualType T, const Expr *At) {
  if (T->isVoidType())
    return V.ok() ? Val::voidVal() : V;
  if (V.K != Val::Value && V.K != Val::LazyScalar)
    return V;
  std::optional<DType> To = dtypeOf(T);
  std::optional<NodeId> Id = valueOf(V);
  if (!To || !Id)
    return V;
  return Val::value(castTo(*Id, *To, At));
}

NodeId ASTToGraph::constant(const APValue &V, QualType T, const Expr *At) {
  DType D = *valueDType(T, Ctx);
  if (V.isInt()) {
    const llvm::APSInt &I = V.getInt();
    int64_t X = I.isSigned() ? I.getSExtValue()
                             : static_cast<int64_t>(I.getZExtValue());
    return B.constInt(X, D, /*Weak=*/true, loc(At));
  }
  llvm::APFloat X = V.getFloat();
  bool Lost = false;
  X.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &Lost);
  return B.constFloat(X.convertToDouble(), D, /*Weak=*/true, loc(At));
}

NodeId ASTToGraph::buildOp(ir::OpCode Op, llvm::ArrayRef<NodeId> Operands,
                           DType ComputeIn, DType Result, const Expr *At) {
  llvm::SmallVector<NodeId, 3> Cast;
  const ir::OpInfo &Info = ir::opInfo(Op);
  for (size_t I = 0; I < Operands.size(); ++I) {
    DType T = ComputeIn;
    if (Op == ir::OpCode::Select && I == 0)
      T = DType::Bool;
    else if (Op == ir::OpCode::And || Op == ir::OpCode::Or ||
             Op == ir::OpCode::Not)
      T = DType::Bool;
    Cast.push_back(castTo(Operands[I], T, At));
  }
  DType R = Info.Result == ir::ResultRule::Bool ? DType::Bool : Result;
  return B.elementwise(Op, Cast, R, loc(At));
}

//===----------------------------------------------------------------------===//
// Refs
//===----------------------------------------------------------------------===//

NodeId ASTToGraph::entryLoad(unsigned P, const Expr *At) {
  RefState &S = Refs[P];
  if (!S.Load) {
    S.Load = B.load(P, At ? loc(At) : makeSrcLoc(S.Decl->getLocation(), SM));
    if (At)
      B.setLabel(*S.Load, text(At));
  }
  return *S.Load;
}

NodeId ASTToGraph::shapeSource(unsigned P, const Expr *At) {
  RefState &S = Refs[P];
  if (param(P).Kind != ir::ParamKind::Out)
    return entryLoad(P, nullptr);
  // An Out has no entry value; this load only gives the ref's shape.
  if (!S.ShapeSrc)
    S.ShapeSrc = B.load(P, makeSrcLoc(S.Decl->getLocation(), SM));
  (void)At;
  return *S.ShapeSrc;
}

Val ASTToGraph::readRef(unsigned P, const Expr *At) {
  RefState &S = Refs[P];
  const ir::Param &Pm = param(P);
  const unsigned Root = ir::rootOf(F, P);
  RefState &RS = Refs[Root];
  if (Pm.isWindow() || RS.WindowStores > 0) {
    // Memory, not an SSA value: a window reads its ref's contents after the
    // stores so far (language.md §2), and so does the whole ref once a
    // window of it was written.
    const ir::Param &RootPm = param(Root);
    if (RootPm.Kind == ir::ParamKind::Out && RS.Stores == 0) {
      RS.Written = true; // not "never written" as well
      error(rule::ReadBeforeWrite, At,
            "'" + text(At) + "' reads '" + RootPm.Name +
                "' before it is written; an " + refSpell(Root) +
                " has no initial contents",
            "declare '" + RootPm.Name + "' as " +
                refSpelling(ir::ParamKind::InOut, RootPm.Type, RootPm.Rank) +
                " to read the caller's values",
            RS.Decl->getLocation());
      return Val::invalid();
    }
    NodeId L = B.load(P, loc(At));
    F.node(L).Version = RS.Stores;
    B.setLabel(L, text(At));
    return Val::value(L);
  }
  if (!S.Written) {
    if (Pm.Kind == ir::ParamKind::Out) {
      error(rule::ReadBeforeWrite, At,
            "'" + Pm.Name + "' is read before it is written; an " +
                refSpell(P) + " has no initial contents",
            "declare '" + Pm.Name + "' as " +
                refSpelling(ir::ParamKind::InOut, Pm.Type, Pm.Rank) +
                " to read the caller's values",
            S.Decl->getLocation());
      return Val::invalid();
    }
    return Val::value(entryLoad(P, At));
  }
  if (!S.Current) {
    S.Current = B.broadcastTo(*S.Stored, shapeSource(P, At), loc(At));
    B.setName(*S.Current, Pm.Name);
    B.setLabel(*S.Current, text(At));
  }
  return Val::value(*S.Current);
}

void ASTToGraph::storeRef(unsigned P, NodeId V, const Expr *At) {
  RefState &S = Refs[P];
  const DType T = param(P).Type;
  NodeId Stored = castTo(V, ir::computeType(T), At);
  RefState &RS = Refs[ir::rootOf(F, P)];
  B.store(P, Stored, makeSrcLoc(At->getBeginLoc(), SM));
  ++RS.Stores;
  RS.WindowStores += param(P).isWindow();
  RS.Written = true;
  S.Written = true;
  S.Current.reset();
  S.Stored = Stored;
  // A later read of a 16- or 8-bit ref sees the rounded or wrapped value,
  // as in eager mode (the store converts; DCE drops this when nothing reads
  // it).
  if (ir::isStorageOnly(T))
    S.Stored = buildOp(ir::throughStorageOp(T), {Stored}, ir::computeType(T),
                       ir::computeType(T), At);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Val ASTToGraph::eval(const Expr *E) {
  if (!E)
    return Val::invalid();
  if (E->containsErrors() || E->isValueDependent() || E->isTypeDependent()) {
    // Clang reported an error here already: stay quiet, and do not call
    // the refs it might have written "never written".
    SkippedCode = true;
    return Val::invalid();
  }
  if (ExprDepth >= MaxExprDepth) {
    if (!ReportedDepth)
      unsupported(E,
                  "an expression nested more than " +
                      std::to_string(MaxExprDepth) +
                      " levels deep (sub-expressions, casts and temporaries)",
                  "split it with local variables: auto t = ...;");
    ReportedDepth = true;
    return Val::invalid();
  }
  size_t Before = F.Nodes.size();
  ++ExprDepth;
  Val V = evalImpl(E);
  --ExprDepth;
  if (V.K == Val::Value && V.Id >= Before && F.node(V.Id).Label.empty() &&
      !isa<ParenExpr>(E))
    B.setLabel(V.Id, text(E));
  return V;
}

std::optional<Val> ASTToGraph::tryFold(const Expr *E) {
  QualType T = E->getType();
  if (!(isArithmeticScalar(T) || T->isEnumeralType()) || !dtypeOf(T))
    return std::nullopt;
  // A local's value is the environment's, not its initializer's (a `const`
  // local may be usable in constant expressions; that agrees anyway).
  Expr::EvalResult R;
  if (!E->EvaluateAsRValue(R, Ctx) || R.HasSideEffects)
    return std::nullopt;
  if (!R.Val.isInt() && !R.Val.isFloat())
    return std::nullopt;
  if (R.Val.isInt() && R.Val.getInt().getSignificantBits() > 64)
    return std::nullopt;
  return Val::value(constant(R.Val, E->getType(), E));
}

Val ASTToGraph::evalImpl(const Expr *E) {
  if (std::optional<Val> C = tryFold(E))
    return *C;

  if (const auto *PE = dyn_cast<ParenExpr>(E))
    return eval(PE->getSubExpr());
  if (const auto *FE = dyn_cast<FullExpr>(E))
    return convert(eval(FE->getSubExpr()), E);
  if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
    return eval(MT->getSubExpr());
  if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
    return eval(BT->getSubExpr());
  if (const auto *DA = dyn_cast<CXXDefaultArgExpr>(E))
    return convert(eval(DA->getExpr()), E);
  if (const auto *ST = dyn_cast<SubstNonTypeTemplateParmExpr>(E))
    return convert(eval(ST->getReplacement()), E);
  if (const auto *OV = dyn_cast<OpaqueValueExpr>(E)) {
    if (OV->getSourceExpr())
      return eval(OV->getSourceExpr());
    return unsupported(E, "this expression");
  }
  if (const auto *RB = dyn_cast<CXXRewrittenBinaryOperator>(E))
    return convert(eval(RB->getSemanticForm()), E);
  if (const auto *CE = dyn_cast<CastExpr>(E))
    return evalCast(CE);
  if (const auto *DR = dyn_cast<DeclRefExpr>(E))
    return evalDeclRef(DR);
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    return evalUnary(UO);
  if (const auto *BO = dyn_cast<BinaryOperator>(E))
    return evalBinary(BO);
  if (const auto *CO = dyn_cast<ConditionalOperator>(E))
    return evalConditional(CO);
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E))
    return evalOperatorCall(OC);
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E))
    return evalMemberCall(MC);
  if (const auto *CE = dyn_cast<CallExpr>(E))
    return evalCall(CE);
  if (const auto *CC = dyn_cast<CXXConstructExpr>(E))
    return evalConstruct(CC);
  if (const auto *IL = dyn_cast<InitListExpr>(E)) {
    if (IL->getNumInits() == 1 && dtypeOf(E->getType()))
      return convert(eval(IL->getInit(0)), E);
    return unsupported(E, "an initializer list");
  }
  if (const auto *AS = dyn_cast<ArraySubscriptExpr>(E)) {
    // A constant table's element (the base decays to a pointer in C++).
    const Expr *Base = AS->getBase()->IgnoreParens();
    if (const auto *IC = dyn_cast<ImplicitCastExpr>(Base);
        IC && IC->getCastKind() == CK_ArrayToPointerDecay)
      return evalSubscript(AS, IC->getSubExpr(), AS->getIdx());
    return subscriptError(AS);
  }

  // Literals and constant expressions were folded above; what is left of
  // them has a type pk cannot hold.
  if (isa<StringLiteral>(E) || isa<PredefinedExpr>(E))
    return unsupported(E, "a string literal",
                       "kernels cannot print or use text");
  if (isa<CXXNullPtrLiteralExpr>(E) || isa<GNUNullExpr>(E))
    return unsupported(E, "a null pointer");
  if (isa<IntegerLiteral>(E) || isa<FloatingLiteral>(E) ||
      isa<CharacterLiteral>(E) || isa<CXXBoolLiteralExpr>(E))
    return notYet(E, "a literal of type '" + E->getType().getAsString() + "'",
                  "use float, double, int32_t, int64_t or bool values");
  if (isa<LambdaExpr>(E))
    return unsupported(E, "a lambda", "write a helper function; it is inlined");
  if (isa<CXXNewExpr>(E))
    return unsupported(E, "'new'",
                       "kernels allocate nothing; compute whole "
                       "arrays with pk operations");
  if (isa<CXXDeleteExpr>(E))
    return unsupported(E, "'delete'");
  if (isa<CXXThrowExpr>(E))
    return unsupported(E, "'throw'",
                       "kernels cannot throw; shape errors are "
                       "checked by pk at kernel entry");
  if (isa<CXXThisExpr>(E))
    return unsupported(E, "'this'", "kernels are free functions");
  if (isa<StmtExpr>(E))
    return unsupported(E, "a statement expression");
  if (isa<CXXTypeidExpr>(E))
    return unsupported(E, "'typeid'");
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    return unsupported(E, "member access '" + text(ME) + "'",
                       "kernels use ref[_], locals and pk operations");
  if (isa<AddrLabelExpr>(E))
    return unsupported(E, "a label address");
  if (isa<CXXStdInitializerListExpr>(E))
    return unsupported(E, "an initializer list");
  return unsupported(E, llvm::Twine("this expression (") +
                            E->getStmtClassName() + ")");
}

Val ASTToGraph::evalCast(const CastExpr *E) {
  if (isa<CXXReinterpretCastExpr>(E))
    return unsupported(E, "'reinterpret_cast'");
  if (isa<CXXConstCastExpr>(E))
    return unsupported(E, "'const_cast'");
  if (isa<CXXDynamicCastExpr>(E))
    return unsupported(E, "'dynamic_cast'");
  switch (E->getCastKind()) {
  case CK_LValueToRValue:
  case CK_NoOp:
  case CK_DerivedToBase:
  case CK_UncheckedDerivedToBase:
  case CK_ConstructorConversion:
  case CK_UserDefinedConversion:
  case CK_IntegralCast:
  case CK_FloatingCast:
  case CK_IntegralToFloating:
  case CK_FloatingToIntegral:
  case CK_IntegralToBoolean:
  case CK_FloatingToBoolean:
  case CK_ToVoid:
  case CK_AtomicToNonAtomic:
  case CK_NonAtomicToAtomic:
    return convert(eval(E->getSubExpr()), E);
  case CK_FunctionToPointerDecay:
  case CK_BuiltinFnToFnPtr:
    return unsupported(E, "a function pointer",
                       "call helpers directly; they are inlined");
  case CK_ArrayToPointerDecay:
    if (isa<StringLiteral>(E->getSubExpr()->IgnoreParens()))
      return unsupported(E, "a string literal",
                         "kernels cannot print or use text");
    return unsupported(E, "a pointer (array-to-pointer decay)");
  default:
    break;
  }
  if (E->getType()->isAnyPointerType() ||
      E->getSubExpr()->getType()->isAnyPointerType())
    return unsupported(E, "a pointer conversion");
  return unsupported(E, llvm::Twine("the conversion '") + E->getCastKindName() +
                            "'");
}

Val ASTToGraph::evalDeclRef(const DeclRefExpr *E) {
  const ValueDecl *D = E->getDecl();
  if (const auto *VD = dyn_cast<VarDecl>(D)) {
    if (isPkClass(VD->getType(), "Whole"))
      return Val::make(Val::Whole);
    if (isPkClass(VD->getType(), "KeepDims"))
      return Val::make(Val::KeepDims);
    if (std::optional<Val> V = lookup(VD)) {
      if (V->K == Val::Uninit)
        return unsupported(
            E, "reading '" + VD->getName() + "' before it is given a value",
            "initialize it where it is declared");
      if (V->K == Val::LazyScalar)
        return Val::value(*valueOf(*V));
      return *V;
    }
    if (std::optional<Val> T = globalTable(VD))
      return *T;
    if (VD->isLocalVarDeclOrParm())
      return unsupported(E, "'" + VD->getName() + "' here");
    return unsupported(E, "reading the global variable '" + VD->getName() + "'",
                       "pass it as a parameter, or make it a constexpr "
                       "constant");
  }
  if (isa<FunctionDecl>(D))
    return unsupported(E, "a function used as a value",
                       "call helpers directly; they are inlined");
  if (isa<BindingDecl>(D))
    return unsupported(E, "a structured binding");
  return unsupported(E, "'" + text(E) + "'");
}

Val ASTToGraph::evalUnary(const UnaryOperator *E) {
  switch (E->getOpcode()) {
  case UO_AddrOf:
    return unsupported(E, "taking an address ('&')",
                       "kernels have no pointers; pass refs and values");
  case UO_Deref:
    return unsupported(E, "dereferencing a pointer ('*')",
                       "kernels have no pointers; read a ref with ref[_]");
  case UO_PreInc:
  case UO_PreDec:
  case UO_PostInc:
  case UO_PostDec:
    return evalIncDec(E);
  case UO_Plus:
    return convert(eval(E->getSubExpr()), E);
  case UO_Minus:
  case UO_LNot: {
    Val V = eval(E->getSubExpr());
    std::optional<NodeId> Id = valueOf(V);
    std::optional<DType> T = dtypeOf(E->getType());
    if (!Id || !T)
      return Val::invalid();
    const ir::OpInfo *Op =
        ir::lookupOpBySource(E->getOpcode() == UO_Minus ? "unary-" : "!");
    // Clang already promoted the operand (bool -> int, ...).
    DType In = E->getOpcode() == UO_LNot ? DType::Bool : *T;
    return Val::value(buildOp(Op->Code, {*Id}, In, *T, E));
  }
  case UO_Not:
    return notYet(E, "bitwise '~'", "use ! on bool values");
  default:
    return unsupported(E, "the operator '" +
                              UnaryOperator::getOpcodeStr(E->getOpcode()) +
                              "'");
  }
}

Val ASTToGraph::evalIncDec(const UnaryOperator *E) {
  const Expr *Sub = strip(E->getSubExpr());
  const auto *DR = dyn_cast<DeclRefExpr>(Sub);
  const auto *VD = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
  std::optional<Val> Cur = VD ? lookup(VD) : std::nullopt;
  if (!Cur || VD->getType()->isReferenceType())
    return unsupported(E, "'" + text(E) + "'",
                       "increment local scalar variables only");
  std::optional<NodeId> Old = valueOf(*Cur);
  std::optional<DType> T = dtypeOf(VD->getType());
  if (!Old || !T || !isArithmeticScalar(VD->getType()))
    return Cur->K == Val::Invalid
               ? Val::invalid()
               : unsupported(E, "'" + text(E) + "'",
                             "increment local scalar variables only");
  NodeId One = B.constInt(1, *T, true, loc(E));
  bool Inc = E->isIncrementOp();
  NodeId New =
      buildOp(Inc ? ir::OpCode::Add : ir::OpCode::Sub, {*Old, One}, *T, *T, E);
  bind(VD, Val::value(New));
  return Val::value(E->isPrefix() ? New : *Old);
}

Val ASTToGraph::evalBinary(const BinaryOperator *E) {
  BinaryOperatorKind K = E->getOpcode();
  if (K == BO_Assign)
    return evalAssign(E, E->getLHS(), E->getRHS(), "", nullptr);
  if (const auto *CA = dyn_cast<CompoundAssignOperator>(E)) {
    llvm::StringRef Op;
    switch (K) {
    case BO_AddAssign:
      Op = "+";
      break;
    case BO_SubAssign:
      Op = "-";
      break;
    case BO_MulAssign:
      Op = "*";
      break;
    case BO_DivAssign:
      Op = "/";
      break;
    case BO_RemAssign:
      Op = "%";
      break;
    default:
      return notYet(E, "the operator '" + BinaryOperator::getOpcodeStr(K) + "'",
                    "use + - * / %");
    }
    return evalAssign(E, E->getLHS(), E->getRHS(), Op, CA);
  }
  if (K == BO_Comma) {
    eval(E->getLHS());
    return eval(E->getRHS());
  }
  if (K == BO_LAnd || K == BO_LOr) {
    std::optional<NodeId> L = valueOf(eval(E->getLHS()));
    if (!L)
      return Val::invalid();
    if (std::optional<double> C = constValue(*L)) {
      bool LV = *C != 0;
      if ((K == BO_LAnd && !LV) || (K == BO_LOr && LV))
        return Val::value(B.constInt(LV, DType::Bool, true, loc(E)));
      std::optional<NodeId> R = valueOf(eval(E->getRHS()));
      if (!R)
        return Val::invalid();
      return Val::value(castTo(*R, DType::Bool, E));
    }
    std::optional<NodeId> R = valueOf(eval(E->getRHS()));
    if (!R)
      return Val::invalid();
    return Val::value(buildOp(K == BO_LAnd ? ir::OpCode::And : ir::OpCode::Or,
                              {*L, *R}, DType::Bool, DType::Bool, E));
  }
  std::optional<DType> T = dtypeOf(E->getType());
  if (K == BO_And || K == BO_Or) {
    // `b1 & b2` on bools (promoted to int by C++): the logical op.
    const Expr *L = E->getLHS()->IgnoreParenImpCasts();
    const Expr *R = E->getRHS()->IgnoreParenImpCasts();
    if (L->getType()->isBooleanType() && R->getType()->isBooleanType() && T) {
      std::optional<NodeId> LV = valueOf(eval(L)), RV = valueOf(eval(R));
      if (!LV || !RV)
        return Val::invalid();
      NodeId V = buildOp(K == BO_And ? ir::OpCode::And : ir::OpCode::Or,
                         {*LV, *RV}, DType::Bool, DType::Bool, E);
      return Val::value(castTo(V, *T, E));
    }
  }
  const ir::OpInfo *Op = binaryOpFor(K);
  if (!Op)
    return notYet(E, "the operator '" + BinaryOperator::getOpcodeStr(K) + "'",
                  "use + - * / % < <= > >= == != && || on scalars");
  if (E->getLHS()->getType()->isAnyPointerType() ||
      E->getRHS()->getType()->isAnyPointerType())
    return unsupported(E, "pointer arithmetic");
  std::optional<NodeId> L = valueOf(eval(E->getLHS()));
  std::optional<NodeId> R = valueOf(eval(E->getRHS()));
  std::optional<DType> In = dtypeOf(E->getLHS()->getType());
  if (!L || !R || !T || !In)
    return Val::invalid();
  // Clang converted both operands to the common type already.
  return Val::value(buildOp(Op->Code, {*L, *R}, *In, *T, E));
}

Val ASTToGraph::evalConditional(const ConditionalOperator *E) {
  std::optional<bool> C = condition(E->getCond(), "'?:'", false);
  if (!C)
    return Val::invalid();
  return convert(eval(*C ? E->getTrueExpr() : E->getFalseExpr()), E);
}

Val ASTToGraph::subscriptError(const Expr *E) {
  // `x[0]` -> `x[_]`: the fix-it replaces the index (a call operator
  // `t(0, 1)` has no single obvious rewrite).
  std::optional<FixItHint> Fix;
  if (const auto *Sub = dyn_cast<CXXOperatorCallExpr>(E);
      Sub && Sub->getOperator() == OO_Subscript && Sub->getNumArgs() == 2)
    Fix = FixItHint::CreateReplacement(Sub->getArg(1)->getSourceRange(), "_");
  Rep.error(rule::Subscript, E->getBeginLoc(), E->getSourceRange(),
            "only 'ref[_]' (the whole array) can be indexed, not '" + text(E) +
                "'",
            "index the whole array with ref[_]; choose elements with "
            "where(mask, a, b)",
            SourceLocation(), std::move(Fix));
  return Val::invalid();
}

Val ASTToGraph::evalSubscript(const Expr *E, const Expr *Base,
                              const Expr *Idx) {
  Val BV = eval(Base);
  if (!BV.ok())
    return BV;
  if (BV.K == Val::Ref && isWholeIndex(Idx))
    return readRef(BV.Param, E);
  if (BV.K == Val::Table)
    return indexTable(E, BV, Idx);
  return subscriptError(E);
}

Val ASTToGraph::evalAssign(const Expr *E, const Expr *LHS, const Expr *RHS,
                           llvm::StringRef CompoundOp,
                           const CompoundAssignOperator *CA) {
  const Expr *L = strip(LHS);

  // `ref[_] = v`, `ref[_] += v`.
  if (const auto *Sub = dyn_cast<CXXOperatorCallExpr>(L);
      Sub && Sub->getOperator() == OO_Subscript) {
    Val Base = eval(Sub->getArg(0));
    if (!Base.ok())
      return Base;
    if (Base.K != Val::Ref || !isWholeIndex(Sub->getArg(1))) {
      if (Base.K == Val::Ref)
        Refs[Base.Param].Written = true; // not "never written" as well
      eval(RHS);
      return subscriptError(Sub);
    }
    unsigned P = Base.Param;
    const ir::Param &Pm = param(P);
    if (Pm.isReadOnly()) {
      error(rule::WriteIn, Sub,
            "cannot write to '" + Pm.Name + "': it is an " + refSpell(P) +
                " (read-only)",
            "declare '" + Pm.Name + "' as " +
                refSpelling(ir::ParamKind::Out, Pm.Type, Pm.Rank) +
                " to write it, or " +
                refSpelling(ir::ParamKind::InOut, Pm.Type, Pm.Rank) +
                " to read and write it",
            Refs[P].Decl->getLocation());
      return Val::invalid();
    }
    if (!CompoundOp.empty() && !Pm.isWindow() &&
        Pm.Kind == ir::ParamKind::Out && !Refs[P].Written) {
      // `out[_] += v` reads the Out: the caller's memory, not a value.
      error(rule::ReadBeforeWrite, E,
            "'" + Pm.Name + "[_] " + CompoundOp + "= ...' reads '" + Pm.Name +
                "' before it is written; an " + refSpell(P) +
                " has no initial contents",
            "write '" + Pm.Name + "[_] = ...' first, or declare '" + Pm.Name +
                "' as " + refSpelling(ir::ParamKind::InOut, Pm.Type, Pm.Rank) +
                " to update the caller's values",
            Refs[P].Decl->getLocation());
      eval(RHS);
      Refs[P].Written = true; // not "never written" as well
      return Val::invalid();
    }
    std::optional<NodeId> V = valueOf(eval(RHS));
    if (!V) {
      Refs[P].Written = true; // don't report it unwritten as well
      return Val::invalid();
    }
    if (!CompoundOp.empty()) {
      std::optional<NodeId> Cur = valueOf(readRef(P, Sub));
      if (!Cur) {
        Refs[P].Written = true;
        return Val::invalid();
      }
      // The ref's value type (float for the 16-bit types) against v, as
      // pk.h's `ref[_] + v` promotes.
      Operand Common =
          join({F.node(*Cur).Type, false},
               {F.node(*V).Type, isArithmeticScalar(RHS->getType())});
      V = buildOp(ir::lookupOpBySource(CompoundOp)->Code, {*Cur, *V}, Common.T,
                  Common.T, E);
    }
    storeRef(P, *V, E);
    return Val::voidVal();
  }

  // `local = v`, `local op= v`.
  if (const auto *DR = dyn_cast<DeclRefExpr>(L)) {
    const auto *VD = dyn_cast<VarDecl>(DR->getDecl());
    std::optional<Val> Cur = VD ? lookup(VD) : std::nullopt;
    if (!Cur) {
      eval(RHS);
      if (VD && !VD->isLocalVarDeclOrParm())
        return unsupported(
            E, "writing the global variable '" + VD->getName() + "'",
            "kernels write only their Out and InOut refs");
      return unsupported(E, "assigning to '" + text(L) + "'");
    }
    if (Cur->K == Val::Ref) {
      Refs[Cur->Param].Written = true; // not "never written" as well
      eval(RHS);
      return unsupported(
          E, "assigning to the ref '" + VD->getName() + "' itself",
          "store into its elements with '" + VD->getName() + "[_] = ...'");
    }
    if (VD->getType()->isReferenceType()) {
      eval(RHS);
      return unsupported(
          E, "assigning through the reference '" + VD->getName() + "'",
          "return the new value from the helper instead");
    }
    std::optional<DType> T = dtypeOf(VD->getType());
    if (!T) {
      eval(RHS);
      return Cur->K == Val::Invalid
                 ? Val::invalid()
                 : unsupported(E, "assigning to '" + VD->getName() + "'");
    }
    Val R = eval(RHS);
    std::optional<NodeId> V = valueOf(R);
    if (!V) {
      frame().Env[VD] = Val::invalid(); // quiet follow-on uses
      return Val::invalid();
    }
    if (!CompoundOp.empty()) {
      std::optional<NodeId> Old = valueOf(*Cur);
      if (!Old) {
        if (Cur->K == Val::Uninit)
          return unsupported(
              E, "reading '" + VD->getName() + "' before it is given a value",
              "initialize it where it is declared");
        return Val::invalid();
      }
      const ir::OpInfo *Op = ir::lookupOpBySource(CompoundOp);
      if (CA) {
        // Builtin on scalars: Clang gives the computation types.
        std::optional<DType> In = dtypeOf(CA->getComputationLHSType());
        std::optional<DType> Res = dtypeOf(CA->getComputationResultType());
        if (!In || !Res)
          return Val::invalid();
        V = buildOp(Op->Code, {*Old, *V}, *In, *Res, E);
      } else {
        Operand Common =
            join({F.node(*Old).Type, isArithmeticScalar(VD->getType())},
                 {F.node(*V).Type, isArithmeticScalar(RHS->getType())});
        V = buildOp(Op->Code, {*Old, *V}, Common.T, Common.T, E);
      }
    }
    NodeId New = castTo(*V, *T, E);
    bind(VD, Val::value(New));
    return Val::value(New);
  }

  eval(RHS);
  return unsupported(E, "assigning to '" + text(L) + "'",
                     "assign to locals or store with ref[_] = ...");
}

Val ASTToGraph::evalOperatorCall(const CXXOperatorCallExpr *E) {
  OverloadedOperatorKind OO = E->getOperator();
  const FunctionDecl *FD = E->getDirectCallee();
  if (OO == OO_Subscript)
    return evalSubscript(E, E->getArg(0), E->getArg(1));
  if (OO == OO_Equal)
    return evalAssign(E, E->getArg(0), E->getArg(1), "", nullptr);
  if (llvm::StringRef Op = compoundOpSpelling(OO); !Op.empty())
    return evalAssign(E, E->getArg(0), E->getArg(1), Op, nullptr);
  if (OO == OO_Call) {
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(FD);
    if (MD && MD->getParent()->isLambda())
      return unsupported(E, "calling a lambda",
                         "write a helper function; it is inlined");
    if (MD && isPkLibrary(MD, SM))
      return subscriptError(E);
    return unsupported(E, "calling a function object",
                       "write a helper function; it is inlined");
  }
  if (FD && isPkLibrary(FD, SM)) {
    std::string Spelling = getOperatorSpelling(OO);
    if (E->getNumArgs() == 1 && (OO == OO_Minus || OO == OO_Plus))
      Spelling = "unary" + Spelling;
    if (Spelling == "unary+")
      return convert(eval(E->getArg(0)), E);
    if (Spelling == "&&")
      Spelling = "&";
    if (Spelling == "||")
      Spelling = "|";
    const ir::OpInfo *Op = ir::lookupOpBySource(Spelling);
    llvm::SmallVector<const Expr *, 3> Args(E->arguments());
    if (Op)
      return evalPkElementwise(*Op, E, Args);
    return notYet(E, "the operator '" + Spelling + "' on pk values",
                  "use + - * / % < <= > >= == != & | ! and pk's functions");
  }
  // A user's own operator: a helper call.
  return evalCall(E);
}

Val ASTToGraph::evalMemberCall(const CXXMemberCallExpr *E) {
  const CXXMethodDecl *MD = E->getMethodDecl();
  if (!MD)
    return unsupported(E, "calling through a member pointer");
  const Expr *Obj = E->getImplicitObjectArgument();
  // A conversion (`operator T()`) of a pk value: the value itself.
  if (isa<CXXConversionDecl>(MD) && isPkLibrary(MD, SM))
    return convert(eval(Obj), E);
  if (MD->getParent()->isLambda())
    return unsupported(E, "calling a lambda",
                       "write a helper function; it is inlined");
  llvm::StringRef Name = MD->getIdentifier() ? MD->getName() : "";
  bool OnRef = Obj && refType(Obj->getType()).has_value();
  if (isPkLibrary(MD, SM)) {
    // extent() is RefBase's: the object is the ref under a derived-to-base
    // conversion.
    const Expr *Self = Obj ? Obj->IgnoreImpCasts() : nullptr;
    const bool OnWindow = Self && isPkClass(Self->getType(), "Window");
    if (Name == "extent" && E->getNumArgs() == 1 && Self &&
        (refType(Self->getType()) || OnWindow))
      return evalExtent(E, Self);
    if (Name == "slice" && E->getNumArgs() == 3 && Self &&
        (refType(Self->getType()) || OnWindow))
      return evalWindow(E, Self);
    if (Name == "extent" && E->getNumArgs() == 1 && Self &&
        dtypeOf(Self->getType())) {
      // v.extent(i) of a value: known once shapes are (inferShapes).
      std::optional<NodeId> V = valueOf(eval(Self));
      std::optional<int> Axis = constAxis(E->getArg(0), "extent");
      if (!V || !Axis)
        return Val::invalid();
      return Val::value(B.extentOf(*V, *Axis, loc(E)));
    }
    if (Name == "extent" || Name == "size" || Name == "shape" || Name == "rank")
      return notYet(E, "'" + text(E) + "' (a run-time extent in a kernel)",
                    "shapes are implicit: operations broadcast, reductions "
                    "take an axis, broadcast_to(v, ref) takes a shape");
    if (Name == "at" || Name == "item")
      return subscriptError(E);
    if (Name == "data")
      return unsupported(E, "'" + text(E) + "' (a pointer)",
                         "read the whole array with ref[_]");
    return unsupported(E,
                       "the member function '" + MD->getNameAsString() +
                           "' of " + (OnRef ? "a ref" : "a pk value"),
                       "use ref[_] and pk operations");
  }
  return unsupported(
      E, "calling the member function '" + MD->getQualifiedNameAsString() + "'",
      "write a free helper function; it is inlined");
}

Val ASTToGraph::evalExtent(const CXXMemberCallExpr *E, const Expr *Ref) {
  Val R = eval(Ref);
  if (!R.ok())
    return R;
  if (R.K != Val::Ref)
    return unsupported(E, "'" + text(E) + "'", "call extent() on a ref");
  std::optional<int> Axis = constAxis(E->getArg(0), "extent");
  if (!Axis)
    return Val::make(Val::Invalid);
  const int Rank = static_cast<int>(F.Params[R.Param].Rank);
  // As the eager ref's extent(i): 0 <= i < rank (no counting from the end).
  if (*Axis < 0 || *Axis >= Rank) {
    error(rule::AxisOutOfRange, E,
          "axis " + std::to_string(*Axis) + " of '" + text(E) +
              "' is out of range for a ref of rank " + std::to_string(Rank),
          Rank ? "valid axes are 0.." + std::to_string(Rank - 1)
               : "a rank-0 ref has no extents");
    return Val::make(Val::Invalid);
  }
  return Val::value(B.extentValue(
      ir::refExtent(F, R.Param, static_cast<unsigned>(*Axis)), loc(E)));
}

std::optional<ir::ExtentId> ASTToGraph::boundExtent(NodeId Id) const {
  return ir::scalarExtent(F, Id);
}

Val ASTToGraph::evalWindow(const CXXMemberCallExpr *E, const Expr *Ref) {
  Val R = eval(Ref);
  if (!R.ok())
    return R;
  if (R.K != Val::Ref)
    return unsupported(E, "'" + text(E) + "'",
                       "call slice() on a ref or on a window of one");
  std::optional<unsigned> W = windowOf(R.Param, E->getArg(0), E->getArg(1),
                                       E->getArg(2), /*FromEnd=*/false, E);
  return W ? Val::ref(*W) : Val::invalid();
}

Val ASTToGraph::evalSlice(const CallExpr *E,
                          llvm::ArrayRef<const Expr *> Args) {
  if (Args.size() != 4)
    return unsupported(E, "'" + text(E) + "'");
  std::optional<NodeId> V = valueOf(eval(Args[0]));
  if (!V)
    return Val::invalid();
  const ir::Node Read = F.node(*V);
  if (Read.Kind != ir::NodeKind::Load) {
    // A computed value: a Slice view, kept in a temporary and windowed by
    // BufferViews.cpp; its negative constant bounds count from the end
    // once inferShapes knows the extent.
    std::optional<int> Axis = constAxis(Args[1], "slice");
    std::optional<NodeId> Lo = valueOf(eval(Args[2]));
    std::optional<NodeId> Hi = valueOf(eval(Args[3]));
    if (!Axis || !Lo || !Hi)
      return Val::invalid();
    return Val::value(B.slice(*V, *Axis, castTo(*Lo, DType::I64, Args[2]),
                              castTo(*Hi, DType::I64, Args[3]), loc(E)));
  }
  std::optional<unsigned> W =
      windowOf(Read.Param, Args[1], Args[2], Args[3], /*FromEnd=*/true, E);
  if (!W)
    return Val::invalid();
  NodeId L = B.load(*W, loc(E));
  F.node(L).Version = Read.Version;
  B.setLabel(L, text(E));
  return Val::value(L);
}

std::optional<unsigned>
ASTToGraph::windowOf(unsigned Parent, const Expr *AxisArg, const Expr *BeginArg,
                     const Expr *EndArg, bool FromEnd, const Expr *E) {
  const int Rank = static_cast<int>(param(Parent).Rank);
  std::optional<int> Axis = constAxis(AxisArg, "slice");
  if (!Axis)
    return std::nullopt;
  if (*Axis < -Rank || *Axis >= Rank) {
    error(rule::AxisOutOfRange, E,
          "axis " + std::to_string(*Axis) + " of '" + text(E) +
              "' is out of range for " +
              (Rank ? "rank " + std::to_string(Rank)
                    : std::string("a rank-0 value")),
          Rank ? "valid axes are " + std::to_string(-Rank) + ".." +
                     std::to_string(Rank - 1)
               : "a rank-0 value has no axis to slice");
    return std::nullopt;
  }
  const unsigned Ax = static_cast<unsigned>(*Axis < 0 ? *Axis + Rank : *Axis);
  const ir::ExtentId Whole = ir::refExtent(F, Parent, Ax);
  ir::ExtentId Bounds[2];
  const Expr *BoundArgs[2] = {BeginArg, EndArg};
  for (unsigned I = 0; I < 2; ++I) {
    const Expr *Arg = BoundArgs[I];
    std::optional<ir::ExtentId> X = extentArg(Arg, "the window bound");
    if (!X)
      return std::nullopt;
    // slice(v, ...) counts a negative constant from the end, as NumPy.
    const ir::Extent C = F.Extents.get(*X);
    if (FromEnd && C.K == ir::Extent::Const && C.Value < 0)
      X = F.Extents.add(Whole, *X);
    Bounds[I] = *X;
  }
  // Copies: interning more extents may move the table's items.
  const ir::Extent Len = F.Extents.get(F.Extents.sub(Bounds[1], Bounds[0]));
  const ir::Extent Lo = F.Extents.get(Bounds[0]), Hi = F.Extents.get(Bounds[1]);
  if ((Lo.K == ir::Extent::Const && Lo.Value < 0) ||
      (Hi.K == ir::Extent::Const && Hi.Value < 0) ||
      (Len.K == ir::Extent::Const && Len.Value < 0)) {
    error(rule::WindowBounds, E,
          "the window '" + text(E) + "' has " +
              (Len.K == ir::Extent::Const && Len.Value < 0
                   ? "its end before its begin"
                   : "a negative bound"),
          FromEnd ? "slice(v, axis, begin, end) takes [begin, end) with 0 <= "
                    "begin <= end <= the extent once negative constants "
                    "count from the end"
                  : "a window is [begin, end) with 0 <= begin <= end <= the "
                    "extent; bounds never count from the end");
    return std::nullopt;
  }
  // One window parameter per distinct parent, axis and bounds.
  for (unsigned P = 0; P < F.Params.size(); ++P) {
    const ir::Param &W = F.Params[P];
    if (W.isWindow() && W.Parent == Parent && W.WindowAxis == Ax &&
        W.Begin == Bounds[0] && W.End == Bounds[1])
      return P;
  }
  const ir::Param &Pa = param(Parent);
  ir::Param W;
  W.Kind = ir::ParamKind::Window;
  W.Type = Pa.Type;
  W.Rank = Pa.Rank;
  W.Loc = loc(E);
  W.Parent = Parent;
  W.Root = Pa.isWindow() ? Pa.Root : Parent;
  W.WindowAxis = Ax;
  W.Begin = Bounds[0];
  W.End = Bounds[1];
  W.WindowWritable = Pa.isWritable();
  W.TempShape = ir::refShape(F, Parent);
  W.TempShape[Ax] = F.Extents.sub(Bounds[1], Bounds[0]);
  for (unsigned A = 0; A < Pa.Rank; ++A)
    W.RootOffset.push_back(Pa.isWindow() ? Pa.RootOffset[A]
                                         : F.Extents.constant(0));
  W.RootOffset[Ax] = F.Extents.add(W.RootOffset[Ax], Bounds[0]);
  // `pk_<name>_<axis>` must not meet another buffer's names.
  const std::string Base = param(W.Root).Name + "_w";
  W.Name = Base;
  for (unsigned N = 2; llvm::any_of(
           F.Params, [&](const ir::Param &Q) { return Q.Name == W.Name; });
       ++N)
    W.Name = Base + std::to_string(N);
  F.Params.push_back(std::move(W));
  Refs.resize(F.Params.size());
  Refs.back().Decl = Refs[ir::rootOf(F, Parent)].Decl;
  return F.Params.size() - 1;
}

std::optional<ir::ExtentId> ASTToGraph::extentArg(const Expr *Arg,
                                                  llvm::StringRef What) {
  std::optional<NodeId> V = valueOf(eval(Arg));
  if (!V)
    return std::nullopt;
  std::optional<ir::ExtentId> X = boundExtent(*V);
  if (!X) {
    bool OnData = false;
    std::string Dep = dependenceOf(*V, OnData);
    notYet(Arg,
           What + " '" + text(Arg) + "'" +
               (OnData ? " (it depends on " + Dep + ")" : ""),
           "extents and bounds are integer sums, differences, products and "
           "quotients of scalar parameters, x.extent(i) and constants");
  }
  return X;
}

Val ASTToGraph::evalReshape(const CallExpr *E,
                            llvm::ArrayRef<const Expr *> Args) {
  const InitListExpr *List = Args.size() == 2 ? braceList(Args[1]) : nullptr;
  if (!List)
    return unsupported(E, "'" + text(E) + "'",
                       "write the extents as a braced list: reshape(v, {T, "
                       "heads, -1})");
  std::optional<NodeId> V = valueOf(eval(Args[0]));
  if (!V)
    return Val::invalid();
  llvm::SmallVector<NodeId, 4> Extents;
  int Infer = -1;
  for (const Expr *Init : List->inits()) {
    std::optional<NodeId> X = valueOf(eval(Init));
    if (!X)
      return Val::invalid();
    if (std::optional<double> C = constValue(*X); C && *C == -1) {
      if (Infer >= 0) {
        error(rule::Shape, Init,
              "reshape: more than one extent of '" + text(E) + "' is -1",
              "one extent may be -1: it is inferred from the others");
        return Val::invalid();
      }
      Infer = static_cast<int>(Extents.size());
    }
    // inferShapes turns each into an extent, once the extents of values
    // are known; one it cannot express is reported there.
    if (!ir::isInteger(F.node(*X).Type) || F.node(*X).rank() != 0) {
      notYet(Init, "the reshape extent '" + text(Init) + "'",
             "extents are int64_t scalars");
      return Val::invalid();
    }
    B.setLabel(*X, text(Init));
    Extents.push_back(castTo(*X, DType::I64, Init));
  }
  return Val::value(B.reshape(*V, Extents, Infer, loc(E)));
}

Val ASTToGraph::evalConcat(const CallExpr *E,
                           llvm::ArrayRef<const Expr *> Args) {
  const InitListExpr *List = Args.size() == 2 ? braceList(Args[0]) : nullptr;
  std::optional<DType> R = dtypeOf(E->getType());
  if (!List || List->getNumInits() == 0 || !R)
    return unsupported(E, "'" + text(E) + "'",
                       "write the parts as a braced list: concat({a, b}, 1)");
  llvm::SmallVector<NodeId, 4> Parts;
  for (const Expr *Init : List->inits()) {
    std::optional<NodeId> P = valueOf(eval(Init));
    if (!P)
      return Val::invalid();
    Parts.push_back(castTo(*P, *R, E));
  }
  std::optional<int> Axis = constAxis(Args[1], "concat");
  if (!Axis)
    return Val::invalid();
  return Val::value(B.concat(Parts, *Axis, loc(E)));
}

Val ASTToGraph::evalTake(const CallExpr *E, llvm::ArrayRef<const Expr *> Args) {
  if (Args.size() != 3)
    return unsupported(E, "'" + text(E) + "'",
                       "write take(table, indices, axis)");
  std::optional<NodeId> Table = valueOf(eval(Args[0]));
  if (!Table)
    return Val::invalid();
  std::optional<NodeId> Indices = valueOf(eval(Args[1]));
  if (!Indices)
    return Val::invalid();
  std::optional<int> Axis = constAxis(Args[2], "take");
  if (!Axis)
    return Val::invalid();
  return Val::value(B.take(*Table, *Indices, *Axis, loc(E)));
}

Val ASTToGraph::evalRepeat(const CallExpr *E,
                           llvm::ArrayRef<const Expr *> Args) {
  if (Args.size() != 3)
    return unsupported(E, "'" + text(E) + "'",
                       "write repeat(value, count, axis)");
  std::optional<NodeId> V = valueOf(eval(Args[0]));
  if (!V)
    return Val::invalid();
  std::optional<NodeId> Count = valueOf(eval(Args[1]));
  if (!Count)
    return Val::invalid();
  std::optional<int> Axis = constAxis(Args[2], "repeat");
  if (!Axis)
    return Val::invalid();
  return Val::value(
      B.repeat(*V, castTo(*Count, DType::I64, Args[1]), *Axis, loc(E)));
}

Val ASTToGraph::evalConstruct(const CXXConstructExpr *E) {
  QualType T = E->getType();
  if (isPkClass(T, "Whole"))
    return Val::make(Val::Whole);
  if (isPkClass(T, "KeepDims"))
    return Val::make(Val::KeepDims);
  if (isStdArray(T) && E->getNumArgs() == 1 &&
      E->getConstructor()->isCopyOrMoveConstructor()) {
    // A copy of a constant table (a helper's by-value parameter).
    Val V = eval(E->getArg(0));
    if (V.K == Val::Table || !V.ok())
      return V;
  }
  if (refType(T) || isPkClass(T, "Window")) {
    if (E->getNumArgs() == 1 && E->getConstructor()->isCopyOrMoveConstructor())
      return eval(E->getArg(0));
    return unsupported(E, "making a ref inside a kernel",
                       "take refs as kernel parameters");
  }
  if (isPkClass(T, "Array") || isPkClass(T, "WholeProxy")) {
    if (E->getNumArgs() >= 1 &&
        (E->getConstructor()->isCopyOrMoveConstructor() ||
         E->getConstructor()->isConvertingConstructor(false)) &&
        E->getNumArgs() == 1)
      return convert(eval(E->getArg(0)), E);
    if (E->getNumArgs() == 0) {
      // `pk::Array<T> t;` is a rank-0 array holding T{} (pk.h).
      std::optional<DType> D = dtypeOf(T);
      if (!D)
        return Val::invalid();
      return Val::value(B.constInt(0, *D, /*Weak=*/false, loc(E)));
    }
    return unsupported(E, "constructing a pk::Array from a shape or data",
                       "compute arrays from refs with pk operations; "
                       "broadcast_to(v, ref) makes one of a ref's shape");
  }
  if (dtypeOf(T) && E->getNumArgs() == 1)
    return convert(eval(E->getArg(0)), E);
  return unsupported(E, "an object of type '" + T.getAsString() + "'",
                     "kernels hold refs, pk arrays and arithmetic scalars");
}

} // namespace pk::frontend::lowering
