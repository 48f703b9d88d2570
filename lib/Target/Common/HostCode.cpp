//===- HostCode.cpp - Pieces shared by the C++ and CUDA emitters ----------===//

#include "Target/Common/HostCode.h"

#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;
using loop::AxisMap;
using loop::Nest;
using loop::Stmt;

std::string target::extentVar(const Function &F, unsigned Param,
                              unsigned Axis) {
  return fmt::format("pk_{}_{}", F.Params[Param].Name, Axis);
}

std::string target::strideVar(const Function &F, unsigned Param,
                              unsigned Axis) {
  return fmt::format("pk_{}_s{}", F.Params[Param].Name, Axis);
}

std::string target::pointerVar(const Function &F, unsigned Param) {
  return "pk_" + F.Params[Param].Name + "_ptr";
}

std::string target::indexVar(unsigned Axis) {
  return fmt::format("pk_i{}", Axis);
}

std::string target::extentExpr(const Function &F, ExtentId Id) {
  const Extent &E = F.Extents.get(Id);
  switch (E.K) {
  case Extent::Const:
    return std::to_string(E.Value);
  case Extent::Dim:
    return extentVar(F, E.Param, E.Axis);
  case Extent::Bcast:
    return fmt::format("pk::rt::bcast({}, {})", extentExpr(F, E.A),
                       extentExpr(F, E.B));
  }
  return "0";
}

std::string target::domainSize(const Function &F, const Nest &N) {
  if (N.Domain.empty())
    return "1";
  std::vector<std::string> Parts;
  for (ExtentId E : N.Domain)
    Parts.push_back(extentExpr(F, E));
  return fmt::format("{}", fmt::join(Parts, " * "));
}

std::string target::stringLiteral(llvm::StringRef Text) {
  std::string R = "\"";
  for (char C : Text) {
    if (C == '"' || C == '\\')
      R += '\\';
    if (C == '\n') {
      R += "\\n";
      continue;
    }
    R += C;
  }
  return R + "\"";
}

std::string target::literal(DType T, double FloatValue, int64_t IntValue) {
  switch (T) {
  case DType::Bool:
    return IntValue ? "true" : "false";
  case DType::I32:
    return std::to_string(IntValue);
  case DType::I64:
    return fmt::format("int64_t({})", IntValue);
  case DType::F32:
  case DType::F64: {
    const char *Suffix = T == DType::F32 ? "f" : "";
    const char *Cast = T == DType::F32 ? "float" : "double";
    if (std::isnan(FloatValue))
      return fmt::format("{}(NAN)", Cast);
    if (std::isinf(FloatValue))
      return fmt::format("{}({}INFINITY)", Cast, FloatValue < 0 ? "-" : "");
    // Shortest text that reads back as the same value of the type.
    std::string Text = T == DType::F32
                           ? fmt::format("{}", static_cast<float>(FloatValue))
                           : fmt::format("{}", FloatValue);
    if (Text.find_first_of(".e") == std::string::npos)
      Text += ".0";
    return Text + Suffix;
  }
  case DType::F16:
  case DType::BF16:
  case DType::I8:
  case DType::U8:
    llvm_unreachable("a value never has a storage-only dtype");
  }
  return "0";
}

void target::emitExtents(const Function &F, std::string &Out,
                         llvm::StringRef Indent) {
  for (unsigned P = 0; P < F.Params.size(); ++P)
    for (unsigned A = 0; A < F.Params[P].Rank; ++A)
      if (F.Params[P].isTemp())
        Out += fmt::format("{}const int64_t {} = {};\n", Indent,
                           extentVar(F, P, A),
                           extentExpr(F, F.Params[P].TempShape[A]));
      else
        Out += fmt::format("{}const int64_t {} = {}.extent({});\n", Indent,
                           extentVar(F, P, A), F.Params[P].Name, A);
}

namespace {

/// Where each temporary lives in the workspace: slots in order, each holding
/// temporaries whose lifetimes (first nest writing one to last nest reading
/// it) do not overlap, first fit in the order they are written.
struct WorkspaceLayout {
  std::vector<std::vector<unsigned>> Slots;
  std::map<unsigned, size_t> SlotOf;
  std::vector<unsigned> ByStart; ///< temporaries, in the order first written
};

WorkspaceLayout layoutWorkspace(const loop::Program &Prog) {
  const Function &F = *Prog.F;
  std::map<unsigned, std::pair<size_t, size_t>> Life;
  std::function<void(const Nest &, size_t)> Visit = [&](const Nest &N,
                                                        size_t I) {
    for (const Stmt &S : N.Body)
      if ((S.K == Stmt::Load || S.K == Stmt::Store) &&
          F.Params[S.Param].isTemp()) {
        auto [It, New] = Life.try_emplace(S.Param, I, I);
        It->second.first = std::min(It->second.first, I);
        It->second.second = std::max(It->second.second, I);
      }
    for (const Nest &U : N.Unfused)
      Visit(U, I);
  };
  for (size_t I = 0; I < Prog.Nests.size(); ++I)
    Visit(Prog.Nests[I], I);
  std::vector<std::pair<size_t, unsigned>> Starts;
  for (auto &[P, L] : Life)
    Starts.push_back({L.first, P});
  std::sort(Starts.begin(), Starts.end());
  WorkspaceLayout W;
  std::vector<size_t> SlotEnd;
  for (auto [Start, P] : Starts) {
    size_t S = 0;
    while (S < W.Slots.size() && SlotEnd[S] >= Start)
      ++S;
    if (S == W.Slots.size()) {
      W.Slots.emplace_back();
      SlotEnd.push_back(0);
    }
    W.Slots[S].push_back(P);
    SlotEnd[S] = Life[P].second;
    W.SlotOf[P] = S;
    W.ByStart.push_back(P);
  }
  return W;
}

std::string slotName(size_t S) { return fmt::format("pk_slot{}", S); }

} // namespace

std::string target::emitWorkspaceSlots(const loop::Program &Prog,
                                       std::string &Out,
                                       llvm::StringRef Indent) {
  const Function &F = *Prog.F;
  WorkspaceLayout W = layoutWorkspace(Prog);
  std::vector<std::string> Names;
  for (size_t S = 0; S < W.Slots.size(); ++S) {
    std::vector<std::string> Sizes;
    for (unsigned P : W.Slots[S]) {
      const Param &Pr = F.Params[P];
      std::vector<std::string> Ext;
      for (unsigned A = 0; A < Pr.Rank; ++A)
        Ext.push_back(extentVar(F, P, A));
      Sizes.push_back(fmt::format("pk::rt::buffer_bytes(sizeof({}), {{{}}})",
                                  dtypeCppName(Pr.Type), fmt::join(Ext, ", ")));
    }
    Out +=
        fmt::format("{}const int64_t {} = {};\n", Indent, slotName(S),
                    Sizes.size() == 1 ? Sizes[0]
                                      : fmt::format("std::max<int64_t>({{{}}})",
                                                    fmt::join(Sizes, ", ")));
    Names.push_back(slotName(S));
  }
  return Names.empty() ? "" : fmt::format("{}", fmt::join(Names, " + "));
}

void target::emitTemporaries(const loop::Program &Prog, WorkspaceFrom From,
                             std::string &Out, llvm::StringRef Indent) {
  const Function &F = *Prog.F;
  WorkspaceLayout W = layoutWorkspace(Prog);
  if (W.ByStart.empty())
    return;
  Out += fmt::format("{}// Temporaries (pkc keeps these values in memory "
                     "between groups): one\n{}// workspace per call; "
                     "buffers whose lifetimes do not overlap share a slot.\n",
                     Indent, Indent);
  const std::string Total = emitWorkspaceSlots(Prog, Out, Indent);
  std::string Base;
  switch (From) {
  case WorkspaceFrom::CpuArena:
    Out +=
        fmt::format("{}pk::rt::Workspace pk_workspace({});\n", Indent, Total);
    Base = "pk_workspace.data()";
    break;
  case WorkspaceFrom::CudaScratch:
    Out += fmt::format("{}pk::cuda::detail::DeviceScratch<unsigned char> "
                       "pk_workspace({}, pk_stream, {});\n",
                       Indent, Total, stringLiteral(F.Name));
    Base = "pk_workspace.get()";
    break;
  case WorkspaceFrom::CudaCaller:
    Out += fmt::format(
        "{}if (pk_workspace_bytes < {} || (pk_workspace == nullptr && {} > "
        "0))\n"
        "{}  pk::cuda::detail::workspace_fail({}, pk_workspace_bytes, {});\n",
        Indent, Total, Total, Indent, stringLiteral(F.Name), Total);
    Base = "static_cast<unsigned char *>(pk_workspace)";
    break;
  }
  for (unsigned P : W.ByStart) {
    const Param &Pr = F.Params[P];
    size_t S = W.SlotOf[P];
    std::vector<std::string> Before;
    for (size_t K = 0; K < S; ++K)
      Before.push_back(slotName(K));
    std::string Offset =
        Before.empty() ? "" : fmt::format(" + {}", fmt::join(Before, " + "));
    std::vector<std::string> Ext;
    for (unsigned A = 0; A < Pr.Rank; ++A)
      Ext.push_back(extentVar(F, P, A));
    Out +=
        fmt::format("{}// {}: {}{} ({})\n", Indent, Pr.Name, dtypeName(Pr.Type),
                    shapeToString(F, Pr.TempShape), Pr.Why);
    Out += fmt::format(
        "{}const pk::InOut<{}, {}> {}(reinterpret_cast<{} *>({}{}), "
        "{{{}}});\n",
        Indent, dtypeCppName(Pr.Type), Pr.Rank, Pr.Name, dtypeCppName(Pr.Type),
        Base, Offset, fmt::join(Ext, ", "));
  }
}

/// The run-time shape of a node, as an initializer list.
static std::string shapeList(const Function &F, const Shape &S) {
  std::vector<std::string> Parts;
  for (ExtentId E : S)
    Parts.push_back(target::extentExpr(F, E));
  return fmt::format("{{{}}}", fmt::join(Parts, ", "));
}

/// How a guard message names a value: a parameter or local by its name, an
/// expression by its source text in parentheses, so that the shape that
/// follows reads as the whole expression's: `(a[_] * b[_])[5]`.
static std::string labelOf(const Function &F, const Node &N) {
  if (N.Kind == NodeKind::Load || N.Kind == NodeKind::ScalarParam)
    return F.Params[N.Param].Name;
  if (!N.Name.empty())
    return N.Name;
  if (!N.Label.empty())
    return "(" + N.Label + ")";
  return "value";
}

void target::emitGuards(const Function &F, std::string &Out,
                        llvm::StringRef Indent) {
  for (const Guard &G : F.Guards) {
    std::string A = extentExpr(F, G.A), B = extentExpr(F, G.B);
    std::string Cond;
    switch (G.K) {
    case Guard::Fits:
      Cond = fmt::format("{} == {} || {} == 1", A, B, A);
      break;
    case Guard::Equal:
      Cond = fmt::format("{} == {}", A, B);
      break;
    case Guard::NonZero:
      Cond = fmt::format("{} != 0", A);
      break;
    }
    const Node &NA = F.Nodes[G.NodeA], &NB = F.Nodes[G.NodeB];
    std::string What = "cannot broadcast", Rel = "against";
    std::string LabelB = labelOf(F, NB), ShapeB = shapeList(F, NB.Sh);
    if (NB.isStore()) {
      Rel = "to";
      LabelB = F.Params[NB.Param].Name;
      Shape RefShape;
      for (unsigned K = 0; K < F.Params[NB.Param].Rank; ++K)
        RefShape.push_back(refExtent(F, NB.Param, K));
      ShapeB = shapeList(F, RefShape);
    }
    if (G.K == Guard::Equal && G.NodeA == G.NodeB) {
      What = fmt::format("cannot squeeze axis {} of", G.Axis);
      Rel = "";
    } else if (G.K == Guard::Equal) {
      What = "matmul: the inner extents differ between";
      Rel = "and";
    } else if (G.K == Guard::NonZero) {
      What = fmt::format("{} of an empty axis ({}) of",
                         reduceKindName(NB.Reduction), G.Axis);
      Rel = "";
    }
    std::string Tail =
        G.K == Guard::Fits ? fmt::format(" (axis {})", G.Axis) : "";
    std::string TailArg = stringLiteral(Tail);
    // A matmul: both shapes may print alike when a label is a computed
    // value whose inner extent comes from another ref; name the two extents.
    if (G.K == Guard::Equal && G.NodeA != G.NodeB)
      TailArg = fmt::format("(\" (inner extents \" + std::to_string({}) + "
                            "\" and \" + std::to_string({}) + \")\").c_str()",
                            A, B);
    Out += fmt::format("{}if (!({})) // line {}\n", Indent, Cond, G.Loc.Line);
    Out += fmt::format("{}  pk::rt::shape_fail({}, {}, {}, {}, {}, {}, {}, "
                       "{});\n",
                       Indent, stringLiteral(F.Name), stringLiteral(What),
                       stringLiteral(labelOf(F, NA)), shapeList(F, NA.Sh),
                       stringLiteral(Rel), stringLiteral(LabelB),
                       Rel.empty() ? "{}" : ShapeB, TailArg);
  }
}

/// Declares the stride of every axis of every ref the nest reads or writes;
/// `Value(S, K, Natural)` picks the expression from the natural
/// (row-major) stride.
static void
declareStrides(const Function &F, const Nest &N, std::string &Out,
               llvm::StringRef Indent,
               const std::function<std::string(const Stmt &, unsigned,
                                               const std::string &)> &Value) {
  std::set<unsigned> Done;
  for (const Stmt &S : N.Body) {
    if ((S.K != Stmt::Load && S.K != Stmt::Store) ||
        !Done.insert(S.Param).second)
      continue;
    unsigned R = F.Params[S.Param].Rank;
    for (unsigned K = 0; K < R; ++K) {
      std::vector<std::string> Later;
      for (unsigned L = K + 1; L < R; ++L)
        Later.push_back(target::extentVar(F, S.Param, L));
      std::string Natural =
          Later.empty() ? "1" : fmt::format("{}", fmt::join(Later, " * "));
      Out +=
          fmt::format("{}const int64_t {} = {};\n", Indent,
                      target::strideVar(F, S.Param, K), Value(S, K, Natural));
    }
  }
}

void target::emitAliasChecks(const Function &F, std::string &Out,
                             llvm::StringRef Indent) {
  std::vector<std::string> Spans;
  bool AnyWritten = false;
  for (const Param &P : F.Params) {
    if (!P.isRef() || P.isTemp())
      continue;
    AnyWritten |= P.isWritable();
    Spans.push_back(
        fmt::format("{{{}, {}.data(), {}.size() * int64_t(sizeof({})), "
                    "{}}}",
                    stringLiteral(P.Name), P.Name, P.Name, dtypeCppName(P.Type),
                    P.isWritable() ? "true" : "false"));
  }
  if (!AnyWritten || Spans.size() < 2)
    return;
  Out += fmt::format("{}// Refs may not alias: checked before any write.\n",
                     Indent);
  Out += fmt::format("{}pk::rt::check_no_alias({}, {{\n{}  {}}});\n", Indent,
                     stringLiteral(F.Name), Indent,
                     fmt::join(Spans, fmt::format(",\n{}  ", Indent)));
}

void target::emitStrides(const Function &F, const Nest &N, std::string &Out,
                         llvm::StringRef Indent) {
  declareStrides(F, N, Out, Indent,
                 [&](const Stmt &S, unsigned K, const std::string &Natural) {
                   AxisMap M = S.K == Stmt::Store ? AxisMap::Same : S.Axes[K];
                   if (M == AxisMap::Same)
                     return Natural;
                   if (M == AxisMap::Broadcast)
                     return std::string("0");
                   return fmt::format("({} == 1 ? 0 : {})",
                                      extentVar(F, S.Param, K), Natural);
                 });
}

std::string target::flatCondition(const Function &F, const Nest &N) {
  std::vector<std::string> Conds;
  std::set<std::string> Seen;
  for (const Stmt &S : N.Body) {
    if (S.K != Stmt::Load)
      continue;
    for (unsigned K = 0; K < S.Axes.size(); ++K)
      if (S.Axes[K] == AxisMap::Runtime) {
        std::string C = fmt::format("{} == {}", extentVar(F, S.Param, K),
                                    extentExpr(F, N.Domain[K]));
        if (Seen.insert(C).second)
          Conds.push_back(C);
      }
  }
  return fmt::format("{}", fmt::join(Conds, " && "));
}

std::string target::fuseCondition(const Function &F, const Nest &N) {
  std::vector<std::string> Conds;
  for (auto &[A, B] : N.FuseConds)
    Conds.push_back(
        fmt::format("{} == {}", extentExpr(F, A), extentExpr(F, B)));
  return fmt::format("{}", fmt::join(Conds, " && "));
}

std::string target::stridedIndex(const Function &F, const Nest &N,
                                 const Stmt &S) {
  unsigned R = F.Params[S.Param].Rank;
  if (R == 0)
    return "0";
  std::vector<std::string> Terms;
  for (unsigned K = 0; K < R; ++K)
    Terms.push_back(fmt::format("{} * {}", indexVar(N.Domain.size() - R + K),
                                strideVar(F, S.Param, K)));
  return fmt::format("{}", fmt::join(Terms, " + "));
}

/// The op's spelling for the backend and result dtype (and, in C++, for a
/// value computed once per row).
static llvm::StringRef spelling(const OpInfo &Info, target::Backend B, DType T,
                                bool PerRow = false) {
  if (B == target::Backend::Cpu)
    return PerRow ? Info.CppScalar : Info.Cpp;
  return T == DType::F64 ? Info.CudaF64 : Info.CudaF32;
}

/// Applies a DTypes.def conversion template to one operand.
static std::string convert(llvm::StringRef Template, const std::string &X) {
  return fmt::format(
      fmt::runtime(std::string_view(Template.data(), Template.size())), X);
}

std::string target::paramType(const Param &P) {
  if (!P.isRef())
    return dtypeCppName(P.Type).str();
  const char *Kind = P.Kind == ParamKind::In    ? "In"
                     : P.Kind == ParamKind::Out ? "Out"
                                                : "InOut";
  return fmt::format("pk::{}<{}, {}>", Kind, dtypeCppName(P.Type), P.Rank);
}

std::string target::storageType(DType T, Backend B) {
  const DTypeInfo &Info = dtypeInfo(T);
  return (B == Backend::Cpu ? Info.CpuStorage : Info.CudaStorage).str();
}

std::string target::loadValue(DType T, Backend B, const std::string &Elem) {
  const DTypeInfo &Info = dtypeInfo(T);
  return convert(B == Backend::Cpu ? Info.CpuLoad : Info.CudaLoad, Elem);
}

std::string target::storeValue(DType T, DType ValueType, Backend B,
                               const std::string &Value) {
  const DTypeInfo &Info = dtypeInfo(T);
  std::string V = Value;
  if (ValueType != Info.Compute)
    V = fmt::format("static_cast<{}>({})", dtypeCppName(Info.Compute), V);
  return convert(B == Backend::Cpu ? Info.CpuStore : Info.CudaStore, V);
}

std::string target::applyOp(OpCode Op, Backend B, DType T,
                            llvm::ArrayRef<std::string> Args) {
  fmt::dynamic_format_arg_store<fmt::format_context> Store;
  for (const std::string &A : Args)
    Store.push_back(A);
  llvm::StringRef Spelling = spelling(opInfo(Op), B, T);
  return fmt::vformat(fmt::string_view(Spelling.data(), Spelling.size()),
                      Store);
}

std::string target::indexValue(const Function &F, const Stmt &S) {
  if (S.LoopExtents.empty())
    return target::indexVar(S.Axis);
  // Broadcast along the axis when its extent is 1.
  return fmt::format("({} == 1 ? 0 : {})",
                     target::extentExpr(F, S.LoopExtents[0]),
                     target::indexVar(S.Axis));
}

std::string target::valueRef(const Nest &N, unsigned I) {
  const Stmt &S = N.Body[I];
  if (S.K == Stmt::Const)
    return target::literal(S.Type, S.FloatValue, S.IntValue);
  return S.Name;
}

/// True when value I is `v - m` with m this nest's max reduction of v: v is
/// at most its row's max, so `v - m <= 0` (or NaN), and exp can skip its
/// overflow clamp (pk::vm::exp_nonpos, the same bits as exp there). This is
/// softmax's and logsumexp's exp(x - max(x)); the clamp was 15% of the loop.
static bool isMinusItsRowMax(const Nest &N, unsigned I) {
  const Stmt &Sub = N.Body[I];
  if (Sub.K != Stmt::Apply || Sub.Op != OpCode::Sub || Sub.Args.size() != 2)
    return false;
  const Stmt &M = N.Body[Sub.Args[1]];
  return M.K == Stmt::Reduce && M.Reduction == ReduceKind::Max &&
         M.Args.size() == 1 && M.Args[0] == Sub.Args[0];
}

void target::emitStmt(const Function &F, const Nest &N, const Stmt &S,
                      target::Backend B,
                      const std::function<std::string(const Stmt &)> &Index,
                      std::string &Out, llvm::StringRef Indent, bool PerRow) {
  llvm::StringRef Ty = dtypeCppName(S.Type);
  switch (S.K) {
  case Stmt::Const:
  case Stmt::Scalar:
  case Stmt::Reduce:
    break;
  case Stmt::Load:
    Out += fmt::format(
        "{}const {} {} = {};\n", Indent, Ty, S.Name,
        loadValue(
            F.Params[S.Param].Type, B,
            fmt::format("{}[{}]", target::pointerVar(F, S.Param), Index(S))));
    break;
  case Stmt::Index:
    Out += fmt::format("{}const int64_t {} = {};\n", Indent, S.Name,
                       target::indexValue(F, S));
    break;
  case Stmt::Apply: {
    const OpInfo &Info = opInfo(S.Op);
    fmt::dynamic_format_arg_store<fmt::format_context> Args;
    for (unsigned I = 0; I < S.Args.size(); ++I)
      Args.push_back(valueRef(N, S.Args[I]));
    llvm::StringRef Spelling = spelling(Info, B, S.Type, PerRow);
    if (B == Backend::Cpu && !PerRow && S.Op == OpCode::Exp &&
        isMinusItsRowMax(N, S.Args[0]))
      Spelling = "pk_vm::exp_nonpos({0})";
    Out += fmt::format(
        "{}const {} {} = {};\n", Indent, Ty, S.Name,
        fmt::vformat(fmt::string_view(Spelling.data(), Spelling.size()), Args));
    break;
  }
  case Stmt::Cast:
    Out += fmt::format("{}const {} {} = static_cast<{}>({});\n", Indent, Ty,
                       S.Name, Ty, valueRef(N, S.Args[0]));
    break;
  case Stmt::Store: {
    std::string Value =
        storeValue(F.Params[S.Param].Type, N.Body[S.Args[0]].Type, B,
                   valueRef(N, S.Args[0]));
    Out += fmt::format("{}{}[{}] = {};\n", Indent,
                       target::pointerVar(F, S.Param), Index(S), Value);
    break;
  }
  }
}

void target::emitBody(const Function &F, const Nest &N, Backend B,
                      const std::function<std::string(const Stmt &)> &Index,
                      std::string &Out, llvm::StringRef Indent) {
  for (const Stmt &S : N.Body)
    emitStmt(F, N, S, B, Index, Out, Indent);
}

void target::emitIndexedStrides(const Function &F, const Nest &N,
                                std::string &Out, llvm::StringRef Indent) {
  declareStrides(F, N, Out, Indent,
                 [&](const Stmt &S, unsigned K, const std::string &Natural) {
                   return fmt::format("({} == 1 ? 0 : {})",
                                      extentVar(F, S.Param, K), Natural);
                 });
}

std::vector<unsigned> target::rowAxes(const Nest &N) {
  std::vector<unsigned> Axes;
  for (unsigned A = 0; A < N.Domain.size(); ++A)
    if (!llvm::is_contained(N.ReduceAxes, A))
      Axes.push_back(A);
  return Axes;
}

std::string target::indexedWork(const Function &F, const Nest &N) {
  std::string Work = rowCount(F, N);
  for (const Stmt &S : N.Body)
    if (S.K == Stmt::Reduce) {
      for (ExtentId E : S.LoopExtents)
        Work = Work == "1" ? extentExpr(F, E) : Work + " * " + extentExpr(F, E);
      break;
    }
  return Work;
}

std::string target::unitStrideCondition(const Function &F, const Nest &N,
                                        unsigned Axis) {
  std::vector<unsigned> All(N.Body.size());
  for (unsigned I = 0; I < All.size(); ++I)
    All[I] = I;
  return unitStrideCondition(F, N, Axis, All);
}

std::string target::unitStrideCondition(const Function &F, const Nest &N,
                                        unsigned Axis,
                                        llvm::ArrayRef<unsigned> Stmts) {
  std::vector<std::string> Conds;
  for (unsigned I : Stmts) {
    const Stmt &S = N.Body[I];
    if (S.K != Stmt::Load)
      continue;
    for (size_t K = 0; K < S.Dims.size(); ++K)
      if (S.Dims[K] == static_cast<int>(Axis)) {
        std::string C = strideVar(F, S.Param, K) + " == 1";
        if (!llvm::is_contained(Conds, C))
          Conds.push_back(C);
      }
  }
  return fmt::format("{}", fmt::join(Conds, " && "));
}

std::string target::rowCount(const Function &F, const Nest &N) {
  std::vector<std::string> Parts;
  for (unsigned A : rowAxes(N))
    Parts.push_back(extentExpr(F, N.Domain[A]));
  if (Parts.empty())
    return "1";
  return fmt::format("{}", fmt::join(Parts, " * "));
}

/// The element index of a load or store; along `UnitAxis` the stride is
/// taken to be 1 (the caller checked it at run time, or it is a store, whose
/// index along an axis of extent 1 is 0 either way).
std::string target::indexedIndex(const Function &F, const Stmt &S, int UnitAxis,
                                 llvm::StringRef UnitIndex) {
  std::vector<std::string> Terms;
  for (size_t K = 0; K < S.Dims.size(); ++K) {
    if (S.Dims[K] < 0)
      continue;
    if (S.Dims[K] == UnitAxis)
      Terms.push_back(UnitIndex.empty() ? target::indexVar(S.Dims[K])
                                        : UnitIndex.str());
    else
      Terms.push_back(fmt::format("{} * {}", target::indexVar(S.Dims[K]),
                                  target::strideVar(F, S.Param, K)));
  }
  if (Terms.empty())
    return "0";
  return fmt::format("{}", fmt::join(Terms, " + "));
}

/// The accumulator type of a reduction: integer sums accumulate in int64
/// (the eager header does the same), everything else in the result type.
DType target::accumulatorType(const Nest &N, const Stmt &S) {
  if ((S.Reduction == ReduceKind::Sum || S.Reduction == ReduceKind::Mean) &&
      !isFloat(S.Type))
    return DType::I64;
  if (S.Reduction == ReduceKind::Max || S.Reduction == ReduceKind::Min)
    return N.Body[S.Args[0]].Type;
  return S.Type;
}

std::string target::accumulatorInit(const Stmt &S, DType T) {
  llvm::StringRef Ty = dtypeCppName(T);
  switch (S.Reduction) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return fmt::format("{}(0)", Ty);
  case ReduceKind::Max:
    if (T == DType::Bool)
      return "false";
    if (isFloat(T))
      return fmt::format("{}(-INFINITY)", Ty);
    // Literal limits: std::numeric_limits is host-only in CUDA.
    return T == DType::I32 ? "int32_t(-2147483647 - 1)"
                           : "int64_t(-9223372036854775807LL - 1)";
  case ReduceKind::Min:
    if (T == DType::Bool)
      return "true";
    if (isFloat(T))
      return fmt::format("{}(INFINITY)", Ty);
    return T == DType::I32 ? "int32_t(2147483647)"
                           : "int64_t(9223372036854775807LL)";
  }
  return "0";
}

std::string target::accumulatorVar(const Stmt &S) { return "pk_acc_" + S.Name; }

void target::emitRowBody(const Function &F, const Nest &N, Backend B,
                         std::string &Out, const std::string &Indent,
                         llvm::ArrayRef<unsigned> RowBuffers, int UnitAxis,
                         llvm::ArrayRef<unsigned> Streamable) {
  auto Index = [&](const Stmt &S) { return indexedIndex(F, S, UnitAxis); };
  assert((Streamable.empty() || (B == Backend::Cpu && UnitAxis >= 0)) &&
         "streaming stores need the CPU's unit-stride loops");
  // Stores the loop being printed writes to a chunk buffer (pk_stream_<ref>).
  std::set<unsigned> StreamNow;
  // Per-row buffers: thread-local scratch, sized by the reduced extent.
  std::set<unsigned> Buffered(RowBuffers.begin(), RowBuffers.end());
  // Buffered statement -> the extent of the loop that stored it.
  std::map<unsigned, ExtentId> Materialised;
  if (!RowBuffers.empty()) {
    std::vector<std::string> Extents;
    for (const Stmt &R : N.Body)
      if ((R.K == Stmt::Reduce || (R.K == Stmt::Store && R.Inner)) &&
          !R.LoopExtents.empty()) {
        std::string E = extentExpr(F, R.LoopExtents[0]);
        if (!llvm::is_contained(Extents, E))
          Extents.push_back(E);
      }
    std::string Size = Extents.front();
    for (size_t K = 1; K < Extents.size(); ++K)
      Size = fmt::format("std::max<int64_t>({}, {})", Size, Extents[K]);
    for (unsigned I : RowBuffers) {
      const Stmt &S = N.Body[I];
      Out += fmt::format(
          "{}{} *pk_buf_{} = pk::rt::row_scratch<{}>({}, {});\n", Indent,
          dtypeCppName(S.Type), S.Name, dtypeCppName(S.Type),
          std::distance(Buffered.begin(), Buffered.find(I)), Size);
    }
  }
  unsigned Last = 0;
  for (const Stmt &S : N.Body)
    Last = std::max(Last, S.Phase);
  // Prefetching (CPU, one row axis, unit strides): the last phase after the
  // first that has a vector reduction loop (softmax's exp and sum) computes
  // long enough to bring the next row's inputs in, so that row's first phase
  // (softmax's max) reads them from cache instead of waiting on memory.
  // Measured on logsumexp [2048, 4096]: 4.4 -> 3.5 ms (bench/README.md).
  unsigned PrefetchPhase = 0; // 0: none (phase 0 has no row before it)
  std::vector<unsigned> RowAxes = rowAxes(N);
  if (B == Backend::Cpu && UnitAxis >= 0 && RowAxes.size() == 1 &&
      N.ReduceAxes.size() == 1)
    for (const Stmt &S : N.Body)
      if (S.K == Stmt::Reduce && S.LoopExtents.size() == 1)
        PrefetchPhase = std::max(PrefetchPhase, S.Phase);
  for (unsigned P = 0; P <= Last; ++P) {
    // Row values (and row stores) that are ready in this phase: once per
    // row, outside the vector loops.
    for (const Stmt &S : N.Body)
      if (!S.Inner && S.K != Stmt::Reduce && S.Phase == P)
        emitStmt(F, N, S, B, Index, Out, Indent, /*PerRow=*/true);
    // The inner loops of this phase, one per distinct set of extents.
    std::vector<unsigned> Roots;
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const Stmt &S = N.Body[I];
      if (S.Phase == P &&
          (S.K == Stmt::Reduce || (S.K == Stmt::Store && S.Inner)))
        Roots.push_back(I);
    }
    std::vector<std::vector<ExtentId>> LoopKeys;
    for (unsigned R : Roots)
      if (!llvm::is_contained(LoopKeys, N.Body[R].LoopExtents))
        LoopKeys.push_back(N.Body[R].LoopExtents);
    for (const std::vector<ExtentId> &Key : LoopKeys) {
      std::vector<unsigned> Mine;
      for (unsigned R : Roots)
        if (N.Body[R].LoopExtents == Key)
          Mine.push_back(R);
      // The inner statements these roots need, recomputed in this loop.
      std::set<unsigned> Need;
      std::vector<unsigned> Work;
      for (unsigned R : Mine)
        Work.insert(Work.end(), N.Body[R].Args.begin(), N.Body[R].Args.end());
      while (!Work.empty()) {
        unsigned I = Work.back();
        Work.pop_back();
        const Stmt &S = N.Body[I];
        if (!S.Inner || S.K == Stmt::Reduce || !Need.insert(I).second)
          continue;
        // A buffered value an earlier loop stored is loaded, not recomputed.
        if (Materialised.count(I))
          continue;
        Work.insert(Work.end(), S.Args.begin(), S.Args.end());
      }
      // Float max/min use pk's NaN-propagating combiners (declared in
      // <pk/runtime.h>); integers use OpenMP's own.
      std::vector<std::string> SumVars, MaxVars, MinVars, IntMaxVars,
          IntMinVars;
      for (unsigned R : Mine) {
        const Stmt &S = N.Body[R];
        if (S.K != Stmt::Reduce)
          continue;
        DType T = accumulatorType(N, S);
        bool Float = isFloat(T);
        switch (S.Reduction) {
        case ReduceKind::Sum:
        case ReduceKind::Mean:
          SumVars.push_back(accumulatorVar(S));
          break;
        case ReduceKind::Max:
          (Float ? MaxVars : IntMaxVars).push_back(accumulatorVar(S));
          break;
        case ReduceKind::Min:
          (Float ? MinVars : IntMinVars).push_back(accumulatorVar(S));
          break;
        }
      }
      // The loop body: inner statements, accumulator updates (into `Acc`),
      // inner stores. Records the values it stores into row buffers.
      std::vector<unsigned> StoredHere;
      auto EmitLoopBody =
          [&](const std::string &Pad,
              const std::function<std::string(const Stmt &)> &Acc,
              bool Record) {
            for (unsigned I : Need) {
              const Stmt &S = N.Body[I];
              std::string Axis = indexVar(N.ReduceAxes[0]);
              if (auto It = Materialised.find(I); It != Materialised.end()) {
                // Stored by a loop over another extent: that one is 1 (stride
                // 0). Not in the unit-stride copy: there every load along the
                // axis has extent > 1, and so has the loop that stored it.
                std::string At =
                    It->second == Key[0] ||
                            UnitAxis == static_cast<int>(N.ReduceAxes[0])
                        ? Axis
                        : fmt::format("{} * ({} == 1 ? 0 : 1)", Axis,
                                      extentExpr(F, It->second));
                Out += fmt::format("{}const {} {} = pk_buf_{}[{}];\n", Pad,
                                   dtypeCppName(S.Type), S.Name, S.Name, At);
                continue;
              }
              emitStmt(F, N, S, B, Index, Out, Pad);
              if (Buffered.count(I)) {
                Out += fmt::format("{}pk_buf_{}[{}] = {};\n", Pad, S.Name, Axis,
                                   S.Name);
                if (Record)
                  StoredHere.push_back(I);
              }
            }
            for (unsigned R : Mine) {
              const Stmt &S = N.Body[R];
              if (S.K == Stmt::Store && StreamNow.count(R)) {
                Out += fmt::format(
                    "{}pk_stream_{}[pk_l] = {};\n", Pad, F.Params[S.Param].Name,
                    storeValue(F.Params[S.Param].Type, N.Body[S.Args[0]].Type,
                               B, valueRef(N, S.Args[0])));
                continue;
              }
              if (S.K == Stmt::Store) {
                emitStmt(F, N, S, B, Index, Out, Pad);
                continue;
              }
              std::string A = Acc(S), V = valueRef(N, S.Args[0]);
              DType T = accumulatorType(N, S);
              switch (S.Reduction) {
              case ReduceKind::Sum:
              case ReduceKind::Mean:
                if (N.Body[S.Args[0]].Type != T)
                  V = fmt::format("static_cast<{}>({})", dtypeCppName(T), V);
                Out += fmt::format("{}{} += {};\n", Pad, A, V);
                break;
              case ReduceKind::Max:
                Out += fmt::format("{}{} = pk::scalar::maximum({}, {});\n", Pad,
                                   A, A, V);
                break;
              case ReduceKind::Min:
                Out += fmt::format("{}{} = pk::scalar::minimum({}, {});\n", Pad,
                                   A, A, V);
                break;
              }
            }
          };
      // Declares pointers to the next row of each input that changes from
      // row to row (the row axis is the only one; a weight is the same for
      // every row and in cache already): -> (pointer, elements per line).
      auto DeclareNextRowInputs = [&](const std::string &Pad) {
        std::vector<std::pair<std::string, int64_t>> Next;
        unsigned RowAxis = RowAxes[0];
        std::set<unsigned> Seen;
        for (const Stmt &S : N.Body) {
          if (S.K != Stmt::Load || !S.Inner || !Seen.insert(S.Param).second)
            continue;
          auto Row = llvm::find(S.Dims, static_cast<int>(RowAxis));
          if (Row == S.Dims.end())
            continue;
          if (Next.empty()) {
            Out += fmt::format(
                "{}// Bring the next row's inputs in while this loop "
                "computes.\n",
                Pad);
            Out += fmt::format("{}const int64_t pk_next_row = {} + 1 < {} "
                               "? {} + 1 : {};\n",
                               Pad, indexVar(RowAxis),
                               extentExpr(F, N.Domain[RowAxis]),
                               indexVar(RowAxis), indexVar(RowAxis));
          }
          std::string Ptr = fmt::format("pk_{}_next", F.Params[S.Param].Name);
          Out += fmt::format(
              "{}const auto *{} = {} + pk_next_row * {};\n", Pad, Ptr,
              pointerVar(F, S.Param),
              strideVar(F, S.Param, std::distance(S.Dims.begin(), Row)));
          Next.push_back(
              {Ptr,
               std::max<int64_t>(1, 64 / dtypeBytes(F.Params[S.Param].Type))});
        }
        return Next;
      };
      // A store loop with streamable stores: while `pk_stream` (declared by
      // the caller) the row is computed a chunk at a time into buffers that
      // are then streamed out (pk/stream.h); otherwise the plain loop, which
      // the caller prints after this and closes.
      auto EmitStreamedLoop = [&](const std::vector<unsigned> &Streamed,
                                  ExtentId Extent) {
        std::string E = extentExpr(F, Extent);
        std::vector<std::string> Names;
        for (unsigned R : Streamed)
          Names.push_back(F.Params[N.Body[R].Param].Name);
        auto Buffer = [&](unsigned R) {
          return "pk_stream_" + F.Params[N.Body[R].Param].Name;
        };
        auto At = [&](unsigned R) {
          const Stmt &S = N.Body[R];
          return fmt::format("&{}[{}]", pointerVar(F, S.Param),
                             indexedIndex(F, S, UnitAxis, "pk_c"));
        };
        Out += fmt::format("{}if (pk_stream) {{\n", Indent);
        Out += fmt::format(
            "{}  // Streaming stores (<pk/stream.h>): {} a chunk at a time "
            "through a\n{}  // buffer, whole cache lines stored without "
            "being read first.\n",
            Indent, fmt::join(Names, ", "), Indent);
        std::string Chunk = fmt::format(
            "pk::rt::kStreamChunk<{}>",
            storageType(F.Params[N.Body[Streamed[0]].Param].Type, B));
        for (unsigned R : Streamed)
          Out += fmt::format("{}  alignas(64) {} {}[{}];\n", Indent,
                             storageType(F.Params[N.Body[R].Param].Type, B),
                             Buffer(R), Chunk);
        // Memory is idle while the row's last loop computes from cache and
        // streams out, unless an earlier phase prefetches already: fetch
        // the next row. Not before a later phase (add_rmsnorm's update of h
        // after y): there the prefetches made the kernel 1.1x slower than
        // streaming alone (bench/HISTORY.md, "Streaming stores").
        std::vector<std::pair<std::string, int64_t>> Prefetch;
        if (PrefetchPhase == 0 && P == Last && RowAxes.size() == 1)
          Prefetch = DeclareNextRowInputs(Indent + "  ");
        Out += fmt::format("{}  for (int64_t pk_c = 0, pk_len = 0; pk_c < {}; "
                           "pk_c += pk_len) {{\n",
                           Indent, E);
        Out +=
            fmt::format("{}    pk_len = pk::rt::stream_chunk({}, {} - pk_c);\n",
                        Indent, At(Streamed[0]), E);
        Out += "#pragma omp simd\n";
        Out += fmt::format(
            "{}    for (int64_t pk_l = 0; pk_l < pk_len; ++pk_l) {{\n", Indent);
        Out += fmt::format("{}      const int64_t {} = pk_c + pk_l;\n", Indent,
                           indexVar(N.ReduceAxes[0]));
        StreamNow.insert(Streamed.begin(), Streamed.end());
        EmitLoopBody(
            Indent + "      ", [](const Stmt &S) { return accumulatorVar(S); },
            false);
        StreamNow.clear();
        Out += fmt::format("{}    }}\n", Indent);
        for (unsigned R : Streamed)
          Out += fmt::format("{}    pk::rt::stream_store({}, {}, pk_len);\n",
                             Indent, At(R), Buffer(R));
        for (const auto &[Ptr, Step] : Prefetch)
          Out += fmt::format("{}    for (int64_t pk_p = 0; pk_p < pk_len; "
                             "pk_p += {})\n{}      PK_PREFETCH({} + pk_c + "
                             "pk_p);\n",
                             Indent, Step, Indent, Ptr);
        Out += fmt::format("{}  }}\n{}}} else {{\n", Indent, Indent);
      };
      bool HasReduce = llvm::any_of(
          Mine, [&](unsigned R) { return N.Body[R].K == Stmt::Reduce; });
      if (B == Backend::Cpu && Key.size() == 1 && HasReduce) {
        // Lane accumulators: Lanes partial results updated elementwise (no
        // loop-carried dependence), so both g++ and clang vectorise every
        // reduction, NaN-propagating max/min included, with several vector
        // accumulators in flight; combined after the loop. 16 lanes, but a
        // loop that only takes a max/min of cheap values is bound by the
        // latency of the NaN-propagating max (three dependent instructions):
        // there 64 lanes keep four AVX-512 (eight AVX2) chains in flight.
        // Measured (bench/README.md): 64 lanes speed up logsumexp's max loop
        // but slow rmsnorm's sum of squares at [4096, 768] by 1.5x.
        bool MaxMinOnly = llvm::all_of(Mine, [&](unsigned R) {
          const Stmt &S = N.Body[R];
          return S.K != Stmt::Reduce || S.Reduction == ReduceKind::Max ||
                 S.Reduction == ReduceKind::Min;
        });
        bool Costly = llvm::any_of(Need, [&](unsigned I) {
          const Stmt &S = N.Body[I];
          return S.K == Stmt::Apply && opInfo(S.Op).Cost == OpCost::Costly;
        });
        const int Lanes = MaxMinOnly && !Costly ? 64 : 16;
        std::string E = extentExpr(F, Key[0]);
        std::string I = indexVar(N.ReduceAxes[0]);
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          Out += fmt::format("{}{} pk_lanes_{}[{}];\n", Indent, dtypeCppName(T),
                             S.Name, Lanes);
          Out +=
              fmt::format("{}for (int pk_l = 0; pk_l < {}; ++pk_l)\n"
                          "{}  pk_lanes_{}[pk_l] = {};\n",
                          Indent, Lanes, Indent, S.Name, accumulatorInit(S, T));
        }
        Out += fmt::format("{}{{\n", Indent);
        std::vector<std::pair<std::string, int64_t>> Prefetch;
        if (P == PrefetchPhase && P > 0)
          Prefetch = DeclareNextRowInputs(Indent + "  ");
        Out += fmt::format("{}  const int64_t pk_main = {} - {} % {};\n",
                           Indent, E, E, Lanes);
        Out += fmt::format("{}  for (int64_t pk_blk = 0; pk_blk < pk_main; "
                           "pk_blk += {}) {{\n",
                           Indent, Lanes);
        for (const auto &[Ptr, Step] : Prefetch)
          for (int64_t L = 0; L < Lanes; L += Step)
            Out += L == 0
                       ? fmt::format("{}    PK_PREFETCH({} + pk_blk);\n",
                                     Indent, Ptr)
                       : fmt::format("{}    PK_PREFETCH({} + pk_blk + {});\n",
                                     Indent, Ptr, L);
        Out += "#pragma omp simd\n";
        Out +=
            fmt::format("{}    for (int64_t pk_l = 0; pk_l < {}; ++pk_l) {{\n",
                        Indent, Lanes);
        Out += fmt::format("{}      const int64_t {} = pk_blk + pk_l;\n",
                           Indent, I);
        EmitLoopBody(
            Indent + "      ",
            [](const Stmt &S) { return "pk_lanes_" + S.Name + "[pk_l]"; },
            true);
        Out += fmt::format("{}    }}\n{}  }}\n", Indent, Indent);
        // The tail: fewer than Lanes elements, one lane each (vectorised).
        Out += "#pragma omp simd\n";
        Out += fmt::format("{}  for (int64_t {} = pk_main; {} < {}; ++{}) {{\n",
                           Indent, I, I, E, I);
        EmitLoopBody(
            Indent + "    ",
            [&](const Stmt &S) {
              return fmt::format("pk_lanes_{}[{} - pk_main]", S.Name, I);
            },
            false);
        Out += fmt::format("{}  }}\n{}}}\n", Indent, Indent);
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          // Combined pairwise (a tree of depth log2(Lanes)) rather than in
          // one chain through every lane.
          const char *Combine = S.Reduction == ReduceKind::Max   ? "max_op"
                                : S.Reduction == ReduceKind::Min ? "min_op"
                                                                 : "sum_op";
          Out += fmt::format("{}const {} {} = pk::rt::combine_lanes<{}>("
                             "pk_lanes_{}, pk::rt::{}{{}});\n",
                             Indent, dtypeCppName(T), accumulatorVar(S), Lanes,
                             S.Name, Combine);
        }
      } else {
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          Out += fmt::format("{}{} {} = {};\n", Indent, dtypeCppName(T),
                             accumulatorVar(S), accumulatorInit(S, T));
        }
        std::vector<unsigned> Streamed;
        for (unsigned R : Mine)
          if (llvm::is_contained(Streamable, R))
            Streamed.push_back(R);
        if (!Streamed.empty())
          EmitStreamedLoop(Streamed, Key[0]);
        std::string Pad = Streamed.empty() ? Indent : Indent + "  ";
        for (size_t K = 0; K < Key.size(); ++K) {
          unsigned Axis = N.ReduceAxes[K];
          if (B == Backend::Cpu && K + 1 == Key.size()) {
            std::string Clauses;
            if (!SumVars.empty())
              Clauses +=
                  fmt::format(" reduction(+ : {})", fmt::join(SumVars, ", "));
            if (!MaxVars.empty())
              Clauses += fmt::format(" reduction(pk_max : {})",
                                     fmt::join(MaxVars, ", "));
            if (!MinVars.empty())
              Clauses += fmt::format(" reduction(pk_min : {})",
                                     fmt::join(MinVars, ", "));
            if (!IntMaxVars.empty())
              Clauses += fmt::format(" reduction(max : {})",
                                     fmt::join(IntMaxVars, ", "));
            if (!IntMinVars.empty())
              Clauses += fmt::format(" reduction(min : {})",
                                     fmt::join(IntMinVars, ", "));
            Out += fmt::format("#pragma omp simd{}\n", Clauses);
          }
          Out += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", Pad,
                             indexVar(Axis), indexVar(Axis),
                             extentExpr(F, Key[K]), indexVar(Axis));
          Pad += "  ";
        }
        EmitLoopBody(
            Pad, [](const Stmt &S) { return accumulatorVar(S); }, true);
        for (size_t K = Key.size(); K-- > 0;) {
          Pad.resize(Pad.size() - 2);
          Out += Pad + "}\n";
        }
        if (!Streamed.empty())
          Out += Indent + "}\n";
      }
      for (unsigned I : StoredHere)
        Materialised[I] = Key[0];
      // Finalise: mean divides by the number of elements reduced.
      for (unsigned R : Mine) {
        const Stmt &S = N.Body[R];
        if (S.K != Stmt::Reduce)
          continue;
        llvm::StringRef Ty = dtypeCppName(S.Type);
        std::string Value = accumulatorVar(S);
        if (S.Reduction == ReduceKind::Mean) {
          std::vector<std::string> Count;
          for (ExtentId E : Key)
            Count.push_back(extentExpr(F, E));
          Value = fmt::format("{} / static_cast<{}>({})", Value,
                              dtypeCppName(accumulatorType(N, S)),
                              fmt::join(Count, " * "));
        }
        Out += fmt::format("{}const {} {} = static_cast<{}>({});\n", Indent, Ty,
                           S.Name, Ty, Value);
      }
    }
  }
}

void target::emitColumnReduction(const Function &F, const Nest &N,
                                 int64_t Block, std::string &Out,
                                 const std::string &Indent, int UnitAxis) {
  unsigned Col = N.Domain.size() - 1;
  std::string I = indexVar(Col);
  auto Index = [&](const Stmt &S) { return indexedIndex(F, S, UnitAxis); };
  std::vector<unsigned> Reduces;
  std::set<unsigned> Need;
  for (unsigned R = 0; R < N.Body.size(); ++R)
    if (N.Body[R].K == Stmt::Reduce)
      Reduces.push_back(R);
  std::vector<unsigned> Work;
  for (unsigned R : Reduces)
    Work.push_back(N.Body[R].Args[0]);
  while (!Work.empty()) {
    unsigned J = Work.back();
    Work.pop_back();
    const Stmt &S = N.Body[J];
    if (S.K == Stmt::Reduce || !Need.insert(J).second)
      continue;
    Work.insert(Work.end(), S.Args.begin(), S.Args.end());
  }
  Out += fmt::format("{}// Columns inside, the reduced axes outside: "
                     "contiguous reads, one accumulator per column.\n",
                     Indent);
  Out += fmt::format("{}const int64_t pk_block = pk_col_end - pk_col_begin;\n",
                     Indent);
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    DType T = accumulatorType(N, S);
    Out += fmt::format("{}{} {}[{}];\n", Indent, dtypeCppName(T),
                       accumulatorVar(S), Block);
    Out +=
        fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c)\n"
                    "{}  {}[pk_c] = {};\n",
                    Indent, Indent, accumulatorVar(S), accumulatorInit(S, T));
  }
  std::string Pad = Indent;
  for (size_t K = 0; K < N.ReduceAxes.size(); ++K) {
    unsigned A = N.ReduceAxes[K];
    Out += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", Pad,
                       indexVar(A), indexVar(A),
                       extentExpr(F, N.Body[Reduces[0]].LoopExtents[K]),
                       indexVar(A));
    Pad += "  ";
  }
  Out += "#pragma omp simd\n";
  Out += fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c) {{\n",
                     Pad);
  Out += fmt::format("{}  const int64_t {} = pk_col_begin + pk_c;\n", Pad, I);
  for (unsigned J : Need)
    emitStmt(F, N, N.Body[J], Backend::Cpu, Index, Out, Pad + "  ");
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    std::string Acc = accumulatorVar(S) + "[pk_c]", V = valueRef(N, S.Args[0]);
    DType T = accumulatorType(N, S);
    if (S.Reduction == ReduceKind::Sum || S.Reduction == ReduceKind::Mean) {
      if (N.Body[S.Args[0]].Type != T)
        V = fmt::format("static_cast<{}>({})", dtypeCppName(T), V);
      Out += fmt::format("{}  {} += {};\n", Pad, Acc, V);
    } else {
      Out += fmt::format("{}  {} = pk::scalar::{}({}, {});\n", Pad, Acc,
                         S.Reduction == ReduceKind::Max ? "maximum" : "minimum",
                         Acc, V);
    }
  }
  Out += Pad + "}\n";
  for (size_t K = N.ReduceAxes.size(); K-- > 0;) {
    Pad.resize(Pad.size() - 2);
    Out += Pad + "}\n";
  }
  // Finalise per column, then the row values and stores.
  Out += fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c) {{\n",
                     Indent);
  Out +=
      fmt::format("{}  const int64_t {} = pk_col_begin + pk_c;\n", Indent, I);
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    std::string Value = accumulatorVar(S) + "[pk_c]";
    if (S.Reduction == ReduceKind::Mean) {
      std::vector<std::string> Count;
      for (ExtentId E : S.LoopExtents)
        Count.push_back(extentExpr(F, E));
      Value = fmt::format("{} / static_cast<{}>({})", Value,
                          dtypeCppName(accumulatorType(N, S)),
                          fmt::join(Count, " * "));
    }
    Out +=
        fmt::format("{}  const {} {} = static_cast<{}>({});\n", Indent,
                    dtypeCppName(S.Type), S.Name, dtypeCppName(S.Type), Value);
  }
  for (const Stmt &S : N.Body)
    if (!S.Inner && S.K != Stmt::Reduce)
      emitStmt(F, N, S, Backend::Cpu, Index, Out, Indent + "  ");
  Out += Indent + "}\n";
}
