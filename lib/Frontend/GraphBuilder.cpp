//===- GraphBuilder.cpp - One kernel's AST to Graph IR --------------------===//
//
// The statements of the AST walker (ASTToGraph.h) and the kernel itself:
// parameters, the return type, "every Out is written".
//
//===----------------------------------------------------------------------===//

#include "Frontend/GraphBuilder.h"
#include "Frontend/ASTToGraph.h"

using namespace clang;
using namespace pk;
using namespace pk::frontend;

ir::SrcLoc pk::frontend::makeSrcLoc(SourceLocation Loc,
                                    const SourceManager &SM) {
  ir::SrcLoc L;
  if (Loc.isInvalid())
    return L;
  L.Raw = Loc.getRawEncoding();
  PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Loc));
  if (P.isValid()) {
    L.Line = P.getLine();
    L.Col = P.getColumn();
  }
  return L;
}

namespace pk::frontend::lowering {

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

std::string ASTToGraph::dependenceOf(NodeId Id, bool &OnData) const {
  OnData = false;
  std::optional<unsigned> Scalar;
  std::vector<NodeId> Work{Id};
  std::vector<bool> Seen(F.Nodes.size());
  while (!Work.empty()) {
    NodeId N = Work.back();
    Work.pop_back();
    if (Seen[N])
      continue;
    Seen[N] = true;
    const ir::Node &Nd = F.node(N);
    if (Nd.Kind == ir::NodeKind::Extent)
      continue; // an extent depends on a shape, not on the data
    if (Nd.Kind == ir::NodeKind::Load)
      OnData = true;
    if (Nd.Kind == ir::NodeKind::ScalarParam && !Scalar)
      Scalar = Nd.Param;
    for (NodeId O : Nd.Operands)
      Work.push_back(O);
  }
  if (OnData)
    return "array data";
  if (Scalar)
    return "the scalar parameter '" + F.Params[*Scalar].Name + "'";
  return "a run-time value";
}

std::optional<bool> ASTToGraph::condition(const Expr *Cond,
                                          llvm::StringRef What, bool IsLoop) {
  std::optional<NodeId> Id = valueOf(eval(Cond));
  if (!Id)
    return std::nullopt;
  if (std::optional<double> C = constValue(*Id))
    return *C != 0;
  bool OnData = false;
  std::string Dep = dependenceOf(*Id, OnData);
  if (IsLoop && !OnData)
    error(rule::NonconstantLoop, Cond,
          "the trip count of this loop is not a compile-time constant: its "
          "condition depends on " +
              Dep,
          "pkc unrolls loops; bound them by a constant expression (a "
          "literal, a constexpr variable or a template argument)");
  else
    error(rule::DataDependentControl, Cond,
          What + " condition depends on " + Dep,
          "use where(mask, a, b) to choose per element");
  return std::nullopt;
}

Flow ASTToGraph::exec(const Stmt *S) {
  if (!S)
    return Flow::Normal;
  if (const auto *CS = dyn_cast<CompoundStmt>(S)) {
    for (const Stmt *Child : CS->body()) {
      Flow Fl = exec(Child);
      if (Fl != Flow::Normal)
        return Fl;
    }
    return Flow::Normal;
  }
  if (const auto *E = dyn_cast<Expr>(S)) {
    eval(E);
    return Flow::Normal;
  }
  if (const auto *DS = dyn_cast<DeclStmt>(S)) {
    for (const Decl *D : DS->decls()) {
      if (isa<DecompositionDecl>(D)) {
        unsupported(DS, "a structured binding");
        continue;
      }
      if (const auto *VD = dyn_cast<VarDecl>(D))
        execDecl(VD, DS);
      // Types, using-declarations, static_asserts: nothing to do.
    }
    return Flow::Normal;
  }
  if (isa<NullStmt>(S))
    return Flow::Normal;
  if (const auto *IS = dyn_cast<IfStmt>(S))
    return execIf(IS);
  if (const auto *FS = dyn_cast<ForStmt>(S))
    return execLoop(FS, FS->getInit(), FS->getCond(),
                    FS->getConditionVariableDeclStmt(), FS->getInc(),
                    FS->getBody(), false);
  if (const auto *WS = dyn_cast<WhileStmt>(S))
    return execLoop(WS, nullptr, WS->getCond(),
                    WS->getConditionVariableDeclStmt(), nullptr, WS->getBody(),
                    false);
  if (const auto *DS = dyn_cast<DoStmt>(S))
    return execLoop(DS, nullptr, DS->getCond(), nullptr, nullptr, DS->getBody(),
                    true);
  if (isa<BreakStmt>(S))
    return Flow::Break;
  if (isa<ContinueStmt>(S))
    return Flow::Continue;
  if (const auto *RS = dyn_cast<ReturnStmt>(S)) {
    const Expr *RV = RS->getRetValue();
    if (!RV)
      return Flow::Return;
    const FunctionDecl *FD = frame().FD;
    Val V = eval(RV);
    if (FD && !FD->getReturnType()->isVoidType() && V.ok())
      frame().Result = convertTo(V, FD->getReturnType(), RV);
    else if (FD && !FD->getReturnType()->isVoidType())
      frame().Result = Val::invalid();
    return Flow::Return;
  }
  if (const auto *AS = dyn_cast<AttributedStmt>(S))
    return exec(AS->getSubStmt());
  if (const auto *SS = dyn_cast<SwitchStmt>(S)) {
    if (SS->getInit())
      exec(SS->getInit());
    if (SS->getConditionVariableDeclStmt())
      exec(SS->getConditionVariableDeclStmt());
    if (condition(SS->getCond(), "'switch'", false))
      notYet(SS, "'switch'", "use if / if constexpr on the constant");
    SkippedCode = true;
    return Flow::Normal;
  }
  if (isa<GotoStmt>(S) || isa<IndirectGotoStmt>(S)) {
    unsupported(S, "'goto'",
                "use structured control flow with constant "
                "conditions, or where(mask, a, b)");
    SkippedCode = true;
    return Flow::Normal;
  }
  if (const auto *LS = dyn_cast<LabelStmt>(S)) {
    unsupported(S, "a label", "kernels have no goto");
    return exec(LS->getSubStmt());
  }
  if (isa<CXXTryStmt>(S)) {
    unsupported(S, "'try'",
                "kernels cannot throw or catch; shape errors are "
                "checked by pk at kernel entry");
    SkippedCode = true;
    return Flow::Normal;
  }
  if (isa<CXXForRangeStmt>(S)) {
    notYet(S, "a range-based 'for' loop",
           "write a counted loop with a constant trip count: "
           "for (int i = 0; i < N; ++i)");
    SkippedCode = true;
    return Flow::Normal;
  }
  if (isa<AsmStmt>(S)) {
    unsupported(S, "inline assembly");
    return Flow::Normal;
  }
  if (isa<CoroutineBodyStmt>(S) || isa<CoreturnStmt>(S)) {
    unsupported(S, "a coroutine");
    return Flow::Normal;
  }
  unsupported(S, llvm::Twine("this statement (") + S->getStmtClassName() + ")");
  return Flow::Normal;
}

Flow ASTToGraph::execDecl(const VarDecl *VD, const DeclStmt *At) {
  QualType T = VD->getType();
  std::string Name = VD->getNameAsString();
  QualType Bare = T.getNonReferenceType();
  // Arrays are constant tables, static constexpr ones too (no state).
  if (Bare->isArrayType() || isStdArray(Bare))
    return execTableDecl(VD, At);
  if (VD->isStaticLocal() || VD->getTLSKind() != VarDecl::TLS_None) {
    // `static constexpr float c = ...;` is a constant: reads fold.
    if ((VD->isConstexpr() || T.isConstQualified()) && isArithmeticScalar(T) &&
        VD->getInit() && VD->getInit()->isConstantInitializer(Ctx, false))
      return Flow::Normal;
    unsupported(At, "the static local variable '" + Name + "'",
                "kernels keep no state between calls; use a local or a "
                "constexpr constant");
    return Flow::Normal;
  }
  if (VD->isLocalExternDecl())
    return Flow::Normal;
  if (Bare->isAnyPointerType() || Bare->isMemberPointerType()) {
    unsupported(At, "the pointer variable '" + Name + "'",
                "kernels have no pointers; read refs with ref[_]");
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  if (isPkClass(Bare, "Window")) {
    // `auto w = cache.slice(1, 0, n);`: the window itself.
    Val V = VD->getInit() ? eval(VD->getInit()) : Val::invalid();
    bind(VD, V.K == Val::Ref ? V : Val::invalid());
    return Flow::Normal;
  }
  if (refType(Bare)) {
    unsupported(At, "the local ref variable '" + Name + "'",
                "use the kernel's parameter directly, or pass it to a helper");
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  if (const CXXRecordDecl *RD = recordOf(Bare); RD && RD->isLambda()) {
    unsupported(At, "the lambda '" + Name + "'",
                "write a helper function; it is inlined");
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  if (!dtypeOf(Bare)) {
    if (isPkClass(Bare, "Whole") || isPkClass(Bare, "KeepDims")) {
      frame().Env[VD] = isPkClass(Bare, "Whole") ? Val::make(Val::Whole)
                                                 : Val::make(Val::KeepDims);
      return Flow::Normal;
    }
    if (isArithmeticScalar(Bare))
      notYet(At,
             "the local '" + Name + "' of type '" + Bare.getAsString() + "'",
             "use float, double, int32_t, int64_t or bool");
    else if (!Bare->isDependentType())
      unsupported(At,
                  "the local variable '" + Name + "' of type '" +
                      Bare.getAsString() + "'",
                  "kernels hold pk arrays (auto t = x[_] * 2;) and "
                  "arithmetic scalars");
    frame().Env[VD] = Val::invalid();
    return Flow::Normal;
  }
  const Expr *Init = VD->getInit();
  if (!Init) {
    frame().Env[VD] = Val::make(Val::Uninit);
    return Flow::Normal;
  }
  if (T->isReferenceType()) {
    // A reference to a temporary is its value; one to a local would alias.
    const Expr *S = strip(Init);
    if (const auto *DR = dyn_cast<DeclRefExpr>(S))
      if (const auto *Other = dyn_cast<VarDecl>(DR->getDecl()))
        if (lookup(Other) && lookup(Other)->K != Val::Ref) {
          unsupported(At, "the reference '" + Name + "' to another local",
                      "copy the value: auto " + Name + " = " +
                          Other->getNameAsString() + ";");
          frame().Env[VD] = Val::invalid();
          return Flow::Normal;
        }
  }
  Val V = eval(Init);
  if (V.K == Val::Value || V.K == Val::LazyScalar)
    V = convertTo(V, Bare, Init);
  else if (V.K != Val::Uninit)
    V = Val::invalid(); // reported already, or not a value (quiet)
  bind(VD, V);
  return Flow::Normal;
}

Flow ASTToGraph::execIf(const IfStmt *S) {
  if (S->isConsteval()) {
    unsupported(S, "'if consteval'");
    return Flow::Normal;
  }
  if (S->getInit())
    exec(S->getInit());
  if (S->getConditionVariableDeclStmt())
    exec(S->getConditionVariableDeclStmt());
  std::optional<bool> C = condition(S->getCond(), "'if'", false);
  if (!C) {
    SkippedCode = true;
    return Flow::Normal;
  }
  return exec(*C ? S->getThen() : S->getElse());
}

Flow ASTToGraph::execLoop(const Stmt *Loop, const Stmt *Init, const Expr *Cond,
                          const DeclStmt *CondVar, const Expr *Inc,
                          const Stmt *Body, bool BodyFirst) {
  if (Init)
    exec(Init);
  for (unsigned N = 0;; ++N) {
    if (!BodyFirst || N > 0) {
      if (CondVar)
        exec(CondVar);
      if (Cond) {
        std::optional<bool> C = condition(Cond, "loop", true);
        if (!C) {
          SkippedCode = true;
          return Flow::Normal;
        }
        if (!*C)
          break;
      }
    }
    if (N >= MaxLoopIterations || ++TotalIterations > MaxTotalIterations) {
      error(rule::NonconstantLoop, Loop,
            N >= MaxLoopIterations
                ? "this loop runs more than " +
                      std::to_string(MaxLoopIterations) +
                      " iterations; pkc unrolls every loop"
                : "the loops of this kernel run more than " +
                      std::to_string(MaxTotalIterations) +
                      " iterations in all; pkc unrolls every loop",
            "keep unrolled loops short and express per-element work with "
            "array operations");
      SkippedCode = true;
      return Flow::Normal;
    }
    Flow Fl = exec(Body);
    if (Fl == Flow::Break)
      break;
    if (Fl == Flow::Return)
      return Fl;
    if (Inc)
      eval(Inc);
  }
  return Flow::Normal;
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

bool ASTToGraph::bindParams() {
  bool OK = true;
  unsigned Index = 0;
  for (const ParmVarDecl *PVD : Kernel->parameters()) {
    ++Index;
    QualType T = PVD->getType();
    std::string Name = PVD->getName().empty() ? "arg" + std::to_string(Index)
                                              : PVD->getNameAsString();
    SourceLocation L =
        PVD->getLocation().isValid() ? PVD->getLocation() : PVD->getBeginLoc();
    ir::SrcLoc Loc = makeSrcLoc(L, SM);
    auto Reject = [&](const llvm::Twine &Msg, const llvm::Twine &Note) {
      errorAt(rule::ParamKind, L, PVD->getSourceRange(), Msg, Note);
      frame().Env[PVD] = Val::invalid();
      OK = false;
    };
    const char *KindNote =
        "use In<T, R>, Out<T, R> or InOut<T, R> for arrays, or an arithmetic "
        "scalar (float, int64_t, ...) by value";
    if (T->isReferenceType()) {
      QualType P = T.getNonReferenceType().getUnqualifiedType();
      if (refType(P) || isArithmeticScalar(P))
        Reject("parameter '" + Name + "' is passed by reference",
               "pass refs and scalars by value: '" + P.getAsString() + " " +
                   Name + "'");
      else
        Reject("parameter '" + Name + "' of type '" + T.getAsString() +
                   "' is not a ref or a scalar",
               KindNote);
      continue;
    }
    if (std::optional<RefType> R = refType(T)) {
      std::optional<DType> E = elementDType(R->Element, Ctx);
      if (!E) {
        Reject("the element type '" + R->Element.getAsString() +
                   "' of parameter '" + Name + "' is not supported",
               "use float, double, int32_t, int64_t, bool, pk::half, "
               "pk::bfloat16, int8_t or uint8_t");
        continue;
      }
      unsigned P =
          B.addParam(Name, R->Kind, *E, static_cast<unsigned>(R->Rank), Loc);
      Refs.resize(F.Params.size());
      Refs[P].Decl = PVD;
      frame().Env[PVD] = Val::ref(P);
      continue;
    }
    if (isArithmeticScalar(T)) {
      std::optional<DType> D = scalarDType(T, Ctx);
      if (!D) {
        Reject("the scalar parameter '" + Name +
                   "' has the unsupported type '" + T.getAsString() + "'",
               "use float, double, int32_t, int64_t or bool");
        continue;
      }
      unsigned P = B.addParam(Name, ir::ParamKind::Scalar, *D, 0, Loc);
      Refs.resize(F.Params.size());
      Refs[P].Decl = PVD;
      Val V = Val::make(Val::LazyScalar);
      V.Param = P;
      frame().Env[PVD] = V;
      continue;
    }
    if (storage16DType(T)) {
      // 16-bit types are storage for refs; values compute in float, so a
      // 16-bit scalar would only be widened at entry. Saying so keeps the
      // kernel's signature honest about what it computes with.
      Reject("the scalar parameter '" + Name + "' has the 16-bit type '" +
                 T.getAsString() +
                 "'; pk::half and pk::bfloat16 are storage "
                 "types for refs, values compute in float",
             "take the scalar as 'float " + Name +
                 "' (callers' 16-bit values convert to float implicitly)");
      continue;
    }
    if (T->isAnyPointerType())
      Reject("parameter '" + Name + "' is a pointer", KindNote);
    else
      Reject("parameter '" + Name + "' of type '" + T.getAsString() +
                 "' is not a ref or a scalar",
             KindNote);
  }
  if (Kernel->isVariadic()) {
    errorAt(rule::ParamKind, Kernel->getLocation(), SourceRange(),
            "a kernel cannot be variadic",
            "take a fixed list of refs and scalars");
    OK = false;
  }
  return OK;
}

void ASTToGraph::checkOutsWritten() {
  for (unsigned P = 0; P < F.Params.size(); ++P) {
    const ir::Param &Pm = F.Params[P];
    if (Pm.Kind != ir::ParamKind::Out || Refs[P].Written)
      continue;
    const ParmVarDecl *D = Refs[P].Decl;
    errorAt(rule::OutUnwritten, D->getLocation(), D->getSourceRange(),
            "the Out parameter '" + Pm.Name + "' is never written",
            "write '" + Pm.Name + "[_] = ...', or make it " +
                refSpelling(ir::ParamKind::In, Pm.Type, Pm.Rank));
  }
}

void ASTToGraph::dropUnusedConstants() {
  // Folding leaves the constants it consumed (loop counters, axes, literals
  // folded into others) without users; they are the frontend's scratch work.
  std::vector<unsigned> Uses(F.Nodes.size());
  for (const ir::Node &N : F.Nodes)
    for (NodeId O : N.Operands)
      ++Uses[O];
  for (size_t I = 0; I < F.Nodes.size(); ++I)
    if (F.Nodes[I].Kind == ir::NodeKind::Const && !Uses[I])
      F.Nodes[I].Dead = true;
}

bool ASTToGraph::run() {
  Frames.emplace_back();
  QualType RT = Kernel->getReturnType();
  if (!RT->isVoidType()) {
    SourceRange R = Kernel->getReturnTypeSourceRange();
    errorAt(rule::ReturnType,
            R.isValid() ? R.getBegin() : Kernel->getLocation(), R,
            "the kernel '" + Kernel->getNameAsString() +
                "' must return void, not '" + RT.getAsString() + "'",
            "return results through Out<T, R> or InOut<T, R> parameters");
  }
  bindParams();
  exec(Kernel->getBody());
  if (!SkippedCode)
    checkOutsWritten();
  dropUnusedConstants();
  Frames.clear();
  return Rep.numErrors() == ErrorsAtStart;
}

} // namespace pk::frontend::lowering

bool pk::frontend::buildKernelGraph(const FunctionDecl *Kernel, ASTContext &Ctx,
                                    Reporter &Rep, ir::Function &F) {
  return lowering::ASTToGraph(Kernel, Ctx, Rep, F).run();
}
