//===- ASTToGraph.h - The AST walker behind GraphBuilder --------*- C++ -*-===//
//
// The walk is an abstract interpreter over the AST: statements are executed
// in order (constant loops unrolled, constant `if`s resolved), expressions
// evaluate to a Val (an IR value, a ref, a tag), and every compile-time
// constant is a folded Const node, which is how loop conditions, axes and
// `if` conditions are decided.
//
// Split over four files: LowerExprs.cpp (values, refs, expressions,
// assignments), LowerCalls.cpp (pk ops, library calls, helper inlining),
// LowerTables.cpp (constant tables: const arrays of numbers) and
// GraphBuilder.cpp (statements, parameters, the kernel-level checks).
// Only lib/Frontend includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FRONTEND_ASTTOGRAPH_H
#define PK_FRONTEND_ASTTOGRAPH_H

#include "Frontend/ASTUtil.h"
#include "Frontend/Diagnostics.h"
#include "Frontend/GraphBuilder.h"
#include "IR/GraphIR.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/OperatorKinds.h"
#include "clang/Basic/SourceManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pk::frontend::lowering {

using namespace clang;
using ir::DType;
using ir::NodeId;

/// Unrolling limits: one loop, and all loops of a kernel together.
constexpr unsigned MaxLoopIterations = 4096;
constexpr unsigned MaxTotalIterations = 1u << 16;
constexpr unsigned MaxInlineDepth = 256;
/// Deeper expressions are reported instead of lowered: lowering recurses
/// once per level, and 10000 terms of `a + a + ...` overflowed the stack
/// (found by libFuzzer; under ASan 3000 did). A term of such a chain is
/// about four levels (operator call, temporaries, casts).
constexpr unsigned MaxExprDepth = 2000;
constexpr size_t MaxLabel = 40;

/// What an expression evaluates to.
struct Val {
  enum Kind : uint8_t {
    Invalid,    ///< an error was reported (or Clang already failed): be quiet
    Void,       ///< a void call, a store
    Value,      ///< an IR value: `Id`
    Ref,        ///< a ref parameter: `Param`
    Whole,      ///< the tag `_`
    KeepDims,   ///< the tag `keepdims`
    LazyScalar, ///< a scalar parameter not read yet: `Param`
    Uninit,     ///< a local declared without a value
    Table,      ///< a constant table (const array of numbers): `Param`
  };
  Kind K = Invalid;
  NodeId Id = 0;
  unsigned Param = 0;

  static Val invalid() { return {}; }
  static Val voidVal() { return make(Void); }
  static Val value(NodeId Id) {
    Val V = make(Value);
    V.Id = Id;
    return V;
  }
  static Val ref(unsigned P) {
    Val V = make(Ref);
    V.Param = P;
    return V;
  }
  static Val table(unsigned T) {
    Val V = make(Table);
    V.Param = T;
    return V;
  }
  static Val make(Kind K) {
    Val V;
    V.K = K;
    return V;
  }
  bool ok() const { return K != Invalid; }
};

enum class Flow { Normal, Break, Continue, Return };

/// An operand's dtype and whether it is a weak (C++ scalar) operand.
struct Operand {
  DType T;
  bool Weak;
};

/// C++'s usual arithmetic conversions over the five dtypes, normalised like
/// pk.h's Canon (bool and small integers promote to i32).
DType usual(DType A, DType B);
/// pk.h's Join: the weak-scalar promotion rule (design.md).
Operand join(Operand A, Operand B);
/// The op of a builtin binary operator on scalars, or null.
const ir::OpInfo *binaryOpFor(BinaryOperatorKind K);
/// The arithmetic operator of a compound assignment (`+=` -> "+"), or "".
llvm::StringRef compoundOpSpelling(OverloadedOperatorKind OO);
/// Strips what does not change a value: parens, temporaries, cleanups,
/// no-op and derived-to-base casts, copies.
const Expr *strip(const Expr *E);
/// True for std::array<T, N> (LowerTables.cpp).
bool isStdArray(QualType T);
/// The braced list `{a, b, ...}` an std::initializer_list argument was
/// written as, or null (LowerCalls.cpp).
const InitListExpr *braceList(const Expr *Arg);

/// Translates one kernel's AST into Graph IR nodes (the abstract
/// interpreter described above); GraphBuilder.cpp runs it per kernel.
class ASTToGraph {
public:
  ASTToGraph(const FunctionDecl *Kernel, ASTContext &Ctx, Reporter &Rep,
             ir::Function &F)
      : Kernel(Kernel), Ctx(Ctx), SM(Ctx.getSourceManager()), Rep(Rep), F(F),
        B(F), ErrorsAtStart(Rep.numErrors()) {}

  bool run();

private:
  struct Frame {
    const FunctionDecl *FD = nullptr; ///< null for the kernel itself
    llvm::DenseMap<const VarDecl *, Val> Env;
    std::optional<Val> Result;
  };
  /// Per ref parameter: what `ref[_]` reads now.
  struct RefState {
    bool Written = false;
    /// Stores to the ref's memory so far (its own and its windows'), and
    /// those of them to windows: once a window is written, reads of the
    /// ref are loads of its memory after those stores (Node::Version).
    unsigned Stores = 0, WindowStores = 0;
    std::optional<NodeId> Load;     ///< the entry value (In/InOut)
    std::optional<NodeId> ShapeSrc; ///< a load used only for its shape (Out)
    std::optional<NodeId> Stored;   ///< the value of the last store
    std::optional<NodeId> Current;  ///< Stored broadcast to the ref's shape
    const ParmVarDecl *Decl = nullptr;
  };

  // --- diagnostics ----------------------------------------------------------
  void error(const char *Id, const Stmt *At, const llvm::Twine &Msg,
             const llvm::Twine &Note = "", SourceLocation NoteLoc = {}) {
    // Highlight expressions; for statements the caret alone is clearer
    // than a range over the whole loop or block.
    SourceRange R = isa<Expr>(At) ? At->getSourceRange() : SourceRange();
    Rep.error(Id, At->getBeginLoc(), R, Msg.str(), Note.str(), NoteLoc);
  }
  void errorAt(const char *Id, SourceLocation L, SourceRange R,
               const llvm::Twine &Msg, const llvm::Twine &Note = "",
               SourceLocation NoteLoc = {}) {
    Rep.error(Id, L, R, Msg.str(), Note.str(), NoteLoc);
  }
  Val unsupported(const Stmt *At, const llvm::Twine &What,
                  const llvm::Twine &Note = "") {
    error(rule::Unsupported, At, What + " is not supported in a kernel",
          Note.isTriviallyEmpty()
              ? llvm::Twine("kernels are straight-line code over refs, pk "
                            "operations, scalars and inlined helpers")
              : Note);
    return Val::invalid();
  }
  Val notYet(const Stmt *At, const llvm::Twine &What, const llvm::Twine &Note) {
    error(rule::NotSupportedYet, At, What + " is not supported by pkc yet",
          Note);
    return Val::invalid();
  }
  std::string text(const Stmt *S, size_t Max = MaxLabel) const {
    return sourceText(S->getSourceRange(), Ctx, Max);
  }
  ir::SrcLoc loc(const Expr *E) const {
    return makeSrcLoc(E->getExprLoc(), SM);
  }
  ir::SrcLoc loc(const Stmt *S) const {
    return makeSrcLoc(S->getBeginLoc(), SM);
  }

  // --- environment ----------------------------------------------------------
  Frame &frame() { return Frames.back(); }
  /// A copy: the environment may grow (and rehash) while the caller
  /// evaluates more code.
  std::optional<Val> lookup(const VarDecl *VD) {
    auto It = frame().Env.find(VD);
    if (It == frame().Env.end())
      return std::nullopt;
    return It->second;
  }
  void bind(const VarDecl *VD, Val V) {
    if (V.K == Val::Value && VD->getIdentifier())
      B.setName(V.Id, VD->getName());
    frame().Env[VD] = V;
  }

  // --- values -------------------------------------------------------------
  std::optional<DType> dtypeOf(QualType T) const { return valueDType(T, Ctx); }
  /// The IR value of \p V, materialising a lazy scalar parameter.
  std::optional<NodeId> valueOf(Val V);
  NodeId castTo(NodeId V, DType T, const Expr *At);
  /// Converts \p V to the value type of \p To (a cast node when needed).
  Val convert(Val V, const Expr *To) { return convertTo(V, To->getType(), To); }
  Val convertTo(Val V, QualType T, const Expr *At);
  NodeId constant(const APValue &V, QualType T, const Expr *At);
  std::optional<double> constValue(NodeId Id) const { return B.constValue(Id); }

  // --- refs -----------------------------------------------------------------
  const ir::Param &param(unsigned P) const { return F.Params[P]; }
  std::string refSpell(unsigned P) const {
    return refSpelling(param(P).Kind, param(P).Type, param(P).Rank);
  }
  NodeId entryLoad(unsigned P, const Expr *At);
  NodeId shapeSource(unsigned P, const Expr *At);
  Val readRef(unsigned P, const Expr *At);
  void storeRef(unsigned P, NodeId V, const Expr *At);
  bool isWholeIndex(const Expr *Idx) const {
    return isPkClass(Idx->getType(), "Whole");
  }

  // --- expressions ----------------------------------------------------------
  Val eval(const Expr *E);
  Val evalImpl(const Expr *E);
  std::optional<Val> tryFold(const Expr *E);
  Val evalCast(const CastExpr *E);
  Val evalDeclRef(const DeclRefExpr *E);
  Val evalUnary(const UnaryOperator *E);
  Val evalBinary(const BinaryOperator *E);
  Val evalConditional(const ConditionalOperator *E);
  Val evalOperatorCall(const CXXOperatorCallExpr *E);
  Val evalCall(const CallExpr *E);
  Val evalMemberCall(const CXXMemberCallExpr *E);
  Val evalConstruct(const CXXConstructExpr *E);
  Val evalSubscript(const Expr *E, const Expr *Base, const Expr *Idx);
  Val subscriptError(const Expr *E);
  Val evalAssign(const Expr *E, const Expr *LHS, const Expr *RHS,
                 llvm::StringRef CompoundOp, const CompoundAssignOperator *CA);
  Val evalIncDec(const UnaryOperator *E);
  Val evalPkCall(const FunctionDecl *FD, const CallExpr *E,
                 llvm::ArrayRef<const Expr *> Args);
  Val evalPkElementwise(const ir::OpInfo &Op, const Expr *E,
                        llvm::ArrayRef<const Expr *> Args);
  Val evalLibraryCall(const FunctionDecl *FD, const CallExpr *E,
                      llvm::ArrayRef<const Expr *> Args);
  Val inlineCall(const FunctionDecl *FD, const CallExpr *E,
                 llvm::ArrayRef<const Expr *> Args);
  std::optional<int> constAxis(const Expr *Arg, llvm::StringRef Op);
  /// `ref.extent(i)`: the run-time extent as an i64 value (a constant axis).
  Val evalExtent(const clang::CXXMemberCallExpr *E, const Expr *Ref);
  /// `ref.slice(axis, begin, end)` of a ref or a window: a window parameter
  /// (ir::ParamKind::Window), one per distinct parent, axis and bounds.
  Val evalWindow(const clang::CXXMemberCallExpr *E, const Expr *Ref);
  /// `slice(v, axis, begin, end)`: a window of the buffer when v is a read
  /// of one (constant negative bounds count from the end).
  Val evalSlice(const CallExpr *E, llvm::ArrayRef<const Expr *> Args);
  /// `reshape(v, {e0, e1, ...})`: a Reshape view (BufferViews.cpp).
  Val evalReshape(const CallExpr *E, llvm::ArrayRef<const Expr *> Args);
  /// `concat({a, b, ...}, axis)`.
  Val evalConcat(const CallExpr *E, llvm::ArrayRef<const Expr *> Args);
  Val evalTake(const CallExpr *E, llvm::ArrayRef<const Expr *> Args);
  Val evalRepeat(const CallExpr *E, llvm::ArrayRef<const Expr *> Args);
  /// The extent of the integer scalar expression `Arg`, or an error there.
  std::optional<ir::ExtentId> extentArg(const Expr *Arg, llvm::StringRef What);
  /// The window [Begin, End) along `Axis` (as written, checked here) of
  /// buffer `Parent`, reporting at `E`; nullopt after an error.
  std::optional<unsigned> windowOf(unsigned Parent, const Expr *AxisArg,
                                   const Expr *BeginArg, const Expr *EndArg,
                                   bool FromEnd, const Expr *E);
  /// The extent expression a window bound or reshape extent computes (sums,
  /// differences, products and quotients of integer constants, scalar
  /// parameters and extents), or nullopt.
  std::optional<ir::ExtentId> boundExtent(NodeId V) const;
  /// Builds `Op` over already evaluated operands cast to \p ComputeIn; the
  /// result has dtype \p Result.
  NodeId buildOp(ir::OpCode Op, llvm::ArrayRef<NodeId> Operands,
                 DType ComputeIn, DType Result, const Expr *At);

  // --- constant tables (LowerTables.cpp) ------------------------------------
  /// A const array of numbers, or a row of one: the constant node of each
  /// element, row-major, from Offset on; Dims are the extents left.
  struct Table {
    std::string Name; ///< as written, for messages
    std::shared_ptr<const std::vector<NodeId>> Elems;
    llvm::SmallVector<uint64_t, 2> Dims;
    size_t Offset = 0;
  };
  /// True for a C array or std::array (of those) of arithmetic elements;
  /// fills its extents and element type.
  bool tableShape(QualType T, llvm::SmallVectorImpl<uint64_t> &Dims,
                  QualType &Elem) const;
  /// A local (or static local) declared with an array type: a table when
  /// it is const with a constant initializer, else an error.
  Flow execTableDecl(const VarDecl *VD, const DeclStmt *At);
  /// The table of \p VD, a namespace-scope or static const array with a
  /// constant initializer (built on first use), or nullopt.
  std::optional<Val> globalTable(const VarDecl *VD);
  /// Builds a table from \p Init; reports the first element that is not a
  /// constant.
  std::optional<Val> buildTable(const VarDecl *VD, const Expr *Init);
  bool collectTable(const Expr *Init, QualType T, const VarDecl *VD,
                    std::vector<NodeId> &Out);
  /// `table[i]`: the element (or row) at a constant index.
  Val indexTable(const Expr *E, Val Tab, const Expr *Idx);
  /// `table.size()` and `std::size(table)`: its first extent.
  Val tableSize(const Expr *E, Val Tab);

  // --- statements -----------------------------------------------------------
  Flow exec(const Stmt *S);
  Flow execDecl(const VarDecl *VD, const DeclStmt *At);
  Flow execIf(const IfStmt *S);
  Flow execLoop(const Stmt *Loop, const Stmt *Init, const Expr *Cond,
                const DeclStmt *CondVar, const Expr *Inc, const Stmt *Body,
                bool BodyFirst);
  /// The value of a condition when it is a compile-time constant; reports
  /// [pk-data-dependent-control] or [pk-nonconstant-loop] otherwise.
  std::optional<bool> condition(const Expr *Cond, llvm::StringRef What,
                                bool IsLoop);
  /// What a non-constant value depends on, for messages.
  std::string dependenceOf(NodeId Id, bool &OnData) const;

  // --- kernel ---------------------------------------------------------------
  bool bindParams();
  void checkOutsWritten();
  void dropUnusedConstants();

  const FunctionDecl *Kernel;
  ASTContext &Ctx;
  const SourceManager &SM;
  Reporter &Rep;
  ir::Function &F;
  ir::Builder B;
  unsigned ErrorsAtStart;

  std::vector<Frame> Frames;
  std::vector<RefState> Refs;
  llvm::DenseMap<unsigned, NodeId> ScalarNodes;
  std::vector<Table> Tables;
  llvm::DenseMap<const VarDecl *, Val> GlobalTables;
  unsigned TotalIterations = 0;
  /// Code was skipped after an error (a data-dependent `if`, a loop that
  /// could not be unrolled): "never written" would be a follow-on error.
  bool SkippedCode = false;
  /// Nesting of eval() calls, bounded by MaxExprDepth.
  unsigned ExprDepth = 0;
  bool ReportedDepth = false;
};

} // namespace pk::frontend::lowering

#endif // PK_FRONTEND_ASTTOGRAPH_H
