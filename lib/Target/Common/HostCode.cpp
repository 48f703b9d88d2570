//===- HostCode.cpp - Pieces shared by the C++ and CUDA emitters ----------===//

#include "Target/Common/HostCode.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <cmath>
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
  return "pk_" + F.Params[Param].Name;
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
  }
  return "0";
}

void target::emitExtents(const Function &F, std::string &Out,
                         llvm::StringRef Indent) {
  for (unsigned P = 0; P < F.Params.size(); ++P)
    for (unsigned A = 0; A < F.Params[P].Rank; ++A)
      Out += fmt::format("{}const int64_t {} = {}.extent({});\n", Indent,
                         extentVar(F, P, A), F.Params[P].Name, A);
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
        RefShape.push_back(F.Extents.dim(NB.Param, K));
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
    Out += fmt::format("{}if (!({})) // line {}\n", Indent, Cond, G.Loc.Line);
    Out += fmt::format("{}  pk::rt::shape_fail({}, {}, {}, {}, {}, {}, {}, "
                       "{});\n",
                       Indent, stringLiteral(F.Name), stringLiteral(What),
                       stringLiteral(labelOf(F, NA)), shapeList(F, NA.Sh),
                       stringLiteral(Rel), stringLiteral(LabelB),
                       Rel.empty() ? "{}" : ShapeB, stringLiteral(Tail));
  }
}

void target::emitStrides(const Function &F, const Nest &N, std::string &Out,
                         llvm::StringRef Indent) {
  std::set<unsigned> Done;
  for (const Stmt &S : N.Body) {
    if ((S.K != Stmt::Load && S.K != Stmt::Store) ||
        !Done.insert(S.Param).second)
      continue;
    unsigned R = F.Params[S.Param].Rank;
    for (unsigned K = 0; K < R; ++K) {
      std::vector<std::string> Later;
      for (unsigned L = K + 1; L < R; ++L)
        Later.push_back(extentVar(F, S.Param, L));
      std::string Natural =
          Later.empty() ? "1" : fmt::format("{}", fmt::join(Later, " * "));
      AxisMap M = S.K == Stmt::Store ? AxisMap::Same : S.Axes[K];
      std::string Value = M == AxisMap::Same ? Natural
                          : M == AxisMap::Broadcast
                              ? "0"
                              : fmt::format("({} == 1 ? 0 : {})",
                                            extentVar(F, S.Param, K), Natural);
      Out += fmt::format("{}const int64_t {} = {};\n", Indent,
                         strideVar(F, S.Param, K), Value);
    }
  }
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

/// The op's spelling for the backend and result dtype.
static llvm::StringRef spelling(const OpInfo &Info, target::Backend B,
                                DType T) {
  if (B == target::Backend::Cpu)
    return Info.Cpp;
  return T == DType::F64 ? Info.CudaF64 : Info.CudaF32;
}

void target::emitBody(const Function &F, const Nest &N, Backend B,
                      const std::function<std::string(const Stmt &)> &Index,
                      std::string &Out, llvm::StringRef Indent) {
  // Constants and scalar parameters are spelled inline where they are used.
  auto Ref = [&](unsigned I) -> std::string {
    const Stmt &S = N.Body[I];
    if (S.K == Stmt::Const)
      return literal(S.Type, S.FloatValue, S.IntValue);
    return S.Name;
  };
  for (const Stmt &S : N.Body) {
    llvm::StringRef Ty = dtypeCppName(S.Type);
    switch (S.K) {
    case Stmt::Const:
    case Stmt::Scalar:
      break;
    case Stmt::Load:
      Out += fmt::format("{}const {} {} = {}[{}];\n", Indent, Ty, S.Name,
                         pointerVar(F, S.Param), Index(S));
      break;
    case Stmt::Apply: {
      const OpInfo &Info = opInfo(S.Op);
      fmt::dynamic_format_arg_store<fmt::format_context> Args;
      for (unsigned I = 0; I < S.Args.size(); ++I)
        Args.push_back(Ref(S.Args[I]));
      Out += fmt::format(
          "{}const {} {} = {};\n", Indent, Ty, S.Name,
          fmt::vformat(fmt::string_view(spelling(Info, B, S.Type).data(),
                                        spelling(Info, B, S.Type).size()),
                       Args));
      break;
    }
    case Stmt::Cast:
      Out += fmt::format("{}const {} {} = static_cast<{}>({});\n", Indent, Ty,
                         S.Name, Ty, Ref(S.Args[0]));
      break;
    case Stmt::Store: {
      DType RefTy = F.Params[S.Param].Type;
      const Stmt &V = N.Body[S.Args[0]];
      std::string Value = Ref(S.Args[0]);
      if (V.Type != RefTy)
        Value = fmt::format("static_cast<{}>({})", dtypeCppName(RefTy), Value);
      Out += fmt::format("{}{}[{}] = {};\n", Indent, pointerVar(F, S.Param),
                         Index(S), Value);
      break;
    }
    }
  }
}
