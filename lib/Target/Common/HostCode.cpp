//===- HostCode.cpp - Pieces shared by the C++ and CUDA emitters ----------===//

#include "Target/Common/HostCode.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ErrorHandling.h"

#include <cassert>
#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;
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
  case Extent::Scalar:
    return fmt::format("int64_t({})", F.Params[E.Param].Name);
  case Extent::Linear:
    return "(" +
           formatLinear(
               E, [&](ExtentId A) { return extentExpr(F, A); }, " * ") +
           ")";
  case Extent::Product: {
    std::vector<std::string> Parts;
    if (E.Value != 1)
      Parts.push_back(std::to_string(E.Value));
    for (const Extent::Term &T : E.Terms)
      for (int64_t I = 0; I < T.Coef; ++I)
        Parts.push_back(extentExpr(F, T.Atom));
    return fmt::format("({})", fmt::join(Parts, " * "));
  }
  case Extent::Quotient: {
    // 0 where the divisor is 0: the reshape's guard rejects that call, but
    // the extents are computed before the guards run.
    std::string A = extentExpr(F, E.A), B = extentExpr(F, E.B);
    if (F.Extents.get(E.B).K == Extent::Const)
      return fmt::format("({} / {})", A, B); // never 0 (ExtentTable::div)
    return fmt::format("({1} == 0 ? int64_t(0) : {0} / {1})", A, B);
  }
  }
  return "0";
}

std::string target::naturalStride(const Function &F, unsigned Param,
                                  unsigned Axis) {
  // A window uses the strides of the buffer it cuts (a parameter, a
  // temporary or an alias); any other buffer its own.
  const unsigned Memory =
      F.Params[Param].isWindow() ? F.Params[Param].Root : Param;
  std::vector<std::string> Later;
  for (unsigned L = Axis + 1; L < F.Params[Memory].Rank; ++L)
    Later.push_back(extentVar(F, Memory, L));
  return Later.empty() ? "1" : fmt::format("{}", fmt::join(Later, " * "));
}

std::string target::dataExpr(const Function &F, unsigned Buffer) {
  const Param &P = F.Params[Buffer];
  if (P.isAlias())
    return dataExpr(F, P.Parent);
  if (!P.isWindow())
    return P.Name + ".data()";
  std::vector<std::string> Terms;
  for (unsigned K = 0; K < P.Rank; ++K) {
    if (F.Extents.isConst(P.RootOffset[K], 0))
      continue;
    std::string Stride = naturalStride(F, Buffer, K);
    std::string Offset = extentExpr(F, P.RootOffset[K]);
    Terms.push_back(Stride == "1" ? Offset
                                  : fmt::format("{} * {}", Offset, Stride));
  }
  std::string Base = dataExpr(F, P.Root);
  if (Terms.empty())
    return Base;
  return fmt::format("({} + {})", Base, fmt::join(Terms, " + "));
}

std::vector<unsigned> target::extentScalars(const Function &F) {
  std::set<unsigned> Found;
  for (size_t I = 0; I < F.Extents.size(); ++I)
    if (F.Extents.get(I).K == Extent::Scalar)
      Found.insert(F.Extents.get(I).Param);
  return {Found.begin(), Found.end()};
}

bool target::usesName(llvm::StringRef Text, llvm::StringRef Name) {
  auto IsIdent = [](char C) {
    return std::isalnum(static_cast<unsigned char>(C)) || C == '_';
  };
  for (size_t P = Text.find(Name); P != llvm::StringRef::npos;
       P = Text.find(Name, P + 1)) {
    bool Before = P > 0 && IsIdent(Text[P - 1]);
    bool After =
        P + Name.size() < Text.size() && IsIdent(Text[P + Name.size()]);
    if (!Before && !After)
      return true;
  }
  return false;
}

std::string
target::dropUnusedDecls(const std::string &Text,
                        llvm::function_ref<bool(llvm::StringRef)> Candidate) {
  std::string Current = Text;
  for (bool Changed = true; Changed;) {
    Changed = false;
    llvm::SmallVector<llvm::StringRef, 64> Split;
    llvm::StringRef(Current).split(Split, '\n');
    std::string Out;
    for (size_t I = 0; I < Split.size(); ++I) {
      llvm::StringRef Line = Split[I];
      llvm::StringRef Trimmed = Line.ltrim();
      llvm::StringRef Name = Trimmed.consume_front("const int64_t ")
                                 ? Trimmed.split(' ').first
                                 : llvm::StringRef();
      if (!Name.empty() && Candidate(Name)) {
        // Read anywhere in the rest of its scope: the following lines
        // indented at least as deep.
        size_t Depth = Line.size() - Line.ltrim().size();
        bool Used = false;
        for (size_t J = I + 1; J < Split.size() && !Used; ++J) {
          llvm::StringRef Next = Split[J];
          // Pragmas start in column 0 inside any scope.
          if (!Next.trim().empty() && !Next.starts_with("#") &&
              Next.size() - Next.ltrim().size() < Depth)
            break;
          Used = usesName(Next, Name);
        }
        if (!Used) {
          Changed = true;
          continue;
        }
      }
      Out += Line.str();
      if (I + 1 < Split.size())
        Out += "\n";
    }
    Current = std::move(Out);
  }
  return Current;
}

std::function<bool(llvm::StringRef)>
target::hostLocalCandidates(const Function &F) {
  std::vector<std::string> Views;
  for (unsigned P = 0; P < F.Params.size(); ++P)
    if (F.Params[P].isView())
      Views.push_back(fmt::format("pk_{}_", F.Params[P].Name));
  return [Views](llvm::StringRef Name) {
    llvm::StringRef Stem = Name.rtrim("0123456789");
    if (!Name.starts_with("pk_") || Stem.size() == Name.size())
      return false;
    if (Stem.ends_with("_s"))
      return true; // a stride
    return llvm::is_contained(Views, Stem);
  };
}

/// A C++ expression of type std::string that spells window or ref `P` as
/// the kernel wrote it, with the window bounds' run-time values
/// (`x.slice(0, 1, 4)`), as eager code labels a window.
static std::string runtimeSpelling(const Function &F, unsigned P) {
  using target::extentExpr;
  using target::stringLiteral;
  const Param &W = F.Params[P];
  if (!W.isWindow())
    return fmt::format("std::string({})", stringLiteral(W.Name));
  return fmt::format("{} + \".slice({}, \" + std::to_string({}) + \", \" + "
                     "std::to_string({}) + \")\"",
                     runtimeSpelling(F, W.Parent), W.WindowAxis,
                     extentExpr(F, W.Begin), extentExpr(F, W.End));
}

void target::emitWindowChecks(const Function &F, std::string &Out,
                              llvm::StringRef Indent) {
  for (unsigned P = 0; P < F.Params.size(); ++P) {
    const Param &W = F.Params[P];
    if (!W.isWindow())
      continue;
    std::vector<std::string> Parent;
    for (unsigned A = 0; A < W.Rank; ++A)
      Parent.push_back(extentVar(F, W.Parent, A));
    // A window of a window names its parent as the kernel spells it, built
    // only when the check fails.
    const std::string Name =
        F.Params[W.Parent].isWindow()
            ? fmt::format("[&] {{ return {}; }}",
                          runtimeSpelling(F, W.Parent))
            : stringLiteral(F.Params[W.Parent].Name);
    Out += fmt::format(
        "{}pk::rt::check_window({}, {}, {}, {}, {}, {{{}}}); // line {}\n",
        Indent, stringLiteral(F.Name), Name, W.WindowAxis,
        extentExpr(F, W.Begin), extentExpr(F, W.End), fmt::join(Parent, ", "),
        W.Loc.Line);
  }
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
                         llvm::StringRef Indent,
                         llvm::function_ref<bool(unsigned)> Skip) {
  for (unsigned P = 0; P < F.Params.size(); ++P)
    for (unsigned A = 0; A < F.Params[P].Rank; ++A)
      if (Skip && Skip(P))
        break;
      else if (F.Params[P].hasDerivedShape())
        Out += fmt::format("{}const int64_t {} = {};\n", Indent,
                           extentVar(F, P, A),
                           extentExpr(F, F.Params[P].TempShape[A]));
      else
        Out += fmt::format("{}const int64_t {} = {}.extent({});\n", Indent,
                           extentVar(F, P, A), F.Params[P].Name, A);
}

bool target::isUnaddressedTemp(const loop::Program &P, unsigned Param) {
  const Function &F = *P.F;
  return F.Params[Param].isTemp() && rootOf(F, Param) == Param &&
         llvm::none_of(P.Buffers,
                       [&](const loop::Buffer &B) { return B.Param == Param; });
}

/// The temporaries of a program in the order they are first written (the
/// order their views are declared in).
static std::vector<const loop::Buffer *>
temporariesByStart(const loop::Program &Prog) {
  std::vector<const loop::Buffer *> Temps;
  for (const loop::Buffer &B : Prog.Buffers)
    if (Prog.F->Params[B.Param].isTemp())
      Temps.push_back(&B);
  std::stable_sort(Temps.begin(), Temps.end(),
                   [](const loop::Buffer *A, const loop::Buffer *B) {
                     return A->FirstStep < B->FirstStep;
                   });
  return Temps;
}

static std::string slotName(size_t S) { return fmt::format("pk_slot{}", S); }

std::string target::homeFlag(const loop::Program &P, unsigned Temp) {
  const loop::Buffer &B = P.Buffers[loop::bufferOf(P, Temp)];
  return fmt::format("pk_{}_in_{}", P.F->Params[Temp].Name,
                     P.F->Params[*B.Home].Name);
}

std::string target::emitWorkspaceSlots(const loop::Program &Prog,
                                       std::string &Out,
                                       llvm::StringRef Indent) {
  const Function &F = *Prog.F;
  for (const loop::Buffer *B : temporariesByStart(Prog)) {
    if (!B->homeWhenFits())
      continue;
    // The axes whose extents are other symbols (HomeWhen), by the names
    // of the extents the copy compares.
    std::vector<std::string> Conds;
    for (unsigned K = 0; K < F.Params[*B->Home].Rank; ++K)
      if (refExtent(F, B->HomeVia, K) != refExtent(F, *B->Home, K))
        Conds.push_back(fmt::format("{} == {}", extentVar(F, B->HomeVia, K),
                                    extentVar(F, *B->Home, K)));
    Out +=
        fmt::format("{}// {} is computed in {}'s memory when they have "
                    "the same extents.\n",
                    Indent, F.Params[B->Param].Name, F.Params[*B->Home].Name);
    Out += fmt::format("{}const bool {} = {};\n", Indent,
                       homeFlag(Prog, B->Param), fmt::join(Conds, " && "));
  }
  std::vector<std::string> Names;
  for (unsigned S = 0; S < Prog.NumSlots; ++S) {
    std::vector<std::string> Sizes;
    for (const loop::Buffer *B : temporariesByStart(Prog)) {
      if (B->Slot != static_cast<int>(S))
        continue;
      const Param &Pr = F.Params[B->Param];
      std::vector<std::string> Ext;
      for (unsigned A = 0; A < Pr.Rank; ++A)
        Ext.push_back(extentVar(F, B->Param, A));
      std::string Bytes =
          fmt::format("pk::rt::buffer_bytes(sizeof({}), {{{}}})",
                      dtypeCppName(Pr.Type), fmt::join(Ext, ", "));
      if (B->Home)
        Bytes = fmt::format("({} ? int64_t(0) : {})", homeFlag(Prog, B->Param),
                            Bytes);
      Sizes.push_back(Bytes);
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
  std::vector<const loop::Buffer *> Temps = temporariesByStart(Prog);
  if (Temps.empty())
    return;
  if (Prog.NumSlots == 0)
    Out += fmt::format("{}// Temporaries (pkc keeps these values in memory "
                       "between groups), each\n{}// in the output ref it is "
                       "stored into whole: no workspace.\n",
                       Indent, Indent);
  else
    Out += fmt::format("{}// Temporaries (pkc keeps these values in memory "
                       "between groups): one\n{}// workspace per call; "
                       "buffers whose lifetimes do not overlap share a "
                       "slot.\n",
                       Indent, Indent);
  const std::string Total = emitWorkspaceSlots(Prog, Out, Indent);
  std::string Base;
  switch (From) {
  case WorkspaceFrom::CpuArena:
    if (!Total.empty())
      Out +=
          fmt::format("{}pk::rt::Workspace pk_workspace({});\n", Indent, Total);
    Base = "pk_workspace.data()";
    break;
  case WorkspaceFrom::CudaScratch:
    if (!Total.empty())
      Out += fmt::format("{}pk::cuda::detail::DeviceScratch<unsigned char> "
                         "pk_workspace({}, pk_stream, {});\n",
                         Indent, Total, stringLiteral(F.Name));
    Base = "pk_workspace.get()";
    break;
  case WorkspaceFrom::CudaCaller:
    // Every temporary always in its home ref: no workspace to check.
    if (Total.empty())
      Out += fmt::format(
          "{0}(void)pk_workspace;\n{0}(void)pk_workspace_bytes;\n", Indent);
    else
      Out += fmt::format(
          "{}if (pk_workspace_bytes < {} || (pk_workspace == nullptr && {} > "
          "0))\n"
          "{}  pk::cuda::detail::workspace_fail({}, pk_workspace_bytes, {});\n",
          Indent, Total, Total, Indent, stringLiteral(F.Name), Total);
    Base = "static_cast<unsigned char *>(pk_workspace)";
    break;
  }
  for (const loop::Buffer *B : Temps) {
    unsigned P = B->Param;
    const Param &Pr = F.Params[P];
    std::vector<std::string> Ext;
    for (unsigned A = 0; A < Pr.Rank; ++A)
      Ext.push_back(extentVar(F, P, A));
    std::string Data;
    if (B->Slot >= 0) {
      std::vector<std::string> Before;
      for (int K = 0; K < B->Slot; ++K)
        Before.push_back(slotName(K));
      std::string Offset =
          Before.empty() ? "" : fmt::format(" + {}", fmt::join(Before, " + "));
      Data = fmt::format("reinterpret_cast<{} *>({}{})", dtypeCppName(Pr.Type),
                         Base, Offset);
    }
    if (B->Home) {
      const std::string Home = dataExpr(F, *B->Home);
      Data = B->alwaysHome()
                 ? Home
                 : fmt::format("{} ? {} : {}", homeFlag(Prog, P), Home, Data);
    }
    Out += fmt::format(
        "{}// {}: {}{} ({}{})\n", Indent, Pr.Name, dtypeName(Pr.Type),
        shapeToString(F, Pr.TempShape), Pr.Why,
        !B->Home ? ""
        : B->alwaysHome()
            ? fmt::format("; in {}", F.Params[*B->Home].Name)
            : fmt::format("; in {} when it fits", F.Params[*B->Home].Name));
    Out += fmt::format("{}const pk::InOut<{}, {}> {}({}, {{{}}});\n", Indent,
                       dtypeCppName(Pr.Type), Pr.Rank, Pr.Name, Data,
                       fmt::join(Ext, ", "));
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

void target::emitIndexChecks(const Function &F, std::string &Out,
                             llvm::StringRef Indent, bool OnDevice) {
  for (const Guard &G : F.Guards) {
    if (G.K != Guard::Indices)
      continue;
    const Node &Table = F.Nodes[G.NodeA], &Ix = F.Nodes[G.NodeB];
    const std::string Head =
        fmt::format("{}, {}, {}, {}", stringLiteral(F.Name),
                    stringLiteral(F.Params[Table.Param].Name),
                    shapeList(F, Table.Sh), G.Axis);
    Out += fmt::format("{}// take at line {}: every index in [0, {}).\n",
                       Indent, G.Loc.Line, extentExpr(F, G.A));
    if (Ix.Kind == NodeKind::Load) {
      const std::string &Name = F.Params[Ix.Param].Name;
      Out += fmt::format("{}{}({}, {}, {}.data(), {}.size(){});\n", Indent,
                         OnDevice ? "pk::cuda::detail::check_take_device"
                                  : "pk::rt::check_take",
                         Head, stringLiteral(Name), Name, Name,
                         OnDevice ? ", pk_stream" : "");
      continue;
    }
    const std::string Value =
        Ix.Kind == NodeKind::ScalarParam
            ? fmt::format("int64_t({})", F.Params[Ix.Param].Name)
            : fmt::format("int64_t({})", Ix.IntValue);
    const std::string Label = Ix.Kind == NodeKind::ScalarParam
                                  ? F.Params[Ix.Param].Name
                                  : std::to_string(Ix.IntValue);
    Out += fmt::format("{}{{\n{}  const int64_t pk_index = {};\n{}  "
                       "pk::rt::check_take({}, {}, &pk_index, 1);\n{}}}\n",
                       Indent, Indent, Value, Indent, Head,
                       stringLiteral(Label), Indent);
  }
}

void target::emitGuards(const Function &F, std::string &Out,
                        llvm::StringRef Indent) {
  for (const Guard &G : F.Guards) {
    if (G.K == Guard::Indices)
      continue; // emitIndexChecks
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
    case Guard::Concat:
      Cond = fmt::format("{} == {}", A, B);
      break;
    case Guard::Indices:
      break;
    case Guard::Slice:
      Cond = fmt::format("0 <= {0} && {0} <= {1} && {1} <= {2}", A, B,
                         extentExpr(F, G.List[0]));
      break;
    case Guard::Repeat:
      Cond = fmt::format("{} >= 0", A);
      break;
    case Guard::Reshape: {
      std::vector<std::string> Parts, Known;
      for (size_t I = 0; I < G.List.size(); ++I) {
        if (static_cast<int>(I) == G.Infer)
          continue;
        std::string E = extentExpr(F, G.List[I]);
        if (F.Extents.get(G.List[I]).K != Extent::Const)
          Parts.push_back(fmt::format("{} >= 0", E));
        Known.push_back(E);
      }
      std::string K = Known.empty()
                          ? "int64_t(1)"
                          : fmt::format("({})", fmt::join(Known, " * "));
      Parts.push_back(G.Infer >= 0
                          ? fmt::format("{1} != 0 && {0} % {1} == 0", A, K)
                          : fmt::format("{} == {}", A, K));
      Cond = fmt::format("{}", fmt::join(Parts, " && "));
      break;
    }
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
    if (G.K == Guard::Reshape) {
      What = "reshape: cannot reshape";
      Rel = "into";
      LabelB = "";
      std::vector<std::string> Written;
      for (size_t I = 0; I < G.List.size(); ++I)
        Written.push_back(
            static_cast<int>(I) == G.Infer ? "-1" : extentExpr(F, G.List[I]));
      ShapeB = fmt::format("{{{}}}", fmt::join(Written, ", "));
    } else if (G.K == Guard::Concat) {
      What = "concat:";
      Rel = "does not fit";
    } else if (G.K == Guard::Slice) {
      What = fmt::format("slice: the bounds are outside axis {} of", G.Axis);
      Rel = "";
    } else if (G.K == Guard::Repeat) {
      What = "repeat of";
      Rel = "";
    } else if (G.K == Guard::Equal && G.NodeA == G.NodeB) {
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
        G.K == Guard::Fits ? fmt::format(" (axis {})", G.Axis)
        : G.K == Guard::Concat
            ? fmt::format(" (axis {}: the other extents must be equal)", G.Axis)
            : "";
    std::string TailArg = stringLiteral(Tail);
    // A matmul: both shapes may print alike when a label is a computed
    // value whose inner extent comes from another ref; name the two extents.
    if (G.K == Guard::Slice)
      TailArg = fmt::format(
          "(\" ([\" + std::to_string({0}) + \", \" + std::to_string({1}) + "
          "\"): it needs 0 <= begin <= end <= \" + std::to_string({2}) + "
          "\")\").c_str()",
          A, B, extentExpr(F, G.List[0]));
    if (G.K == Guard::Repeat)
      TailArg = fmt::format(
          "(\": the count \" + std::to_string({}) + \" is negative\").c_str()",
          A);
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
      std::string Natural = target::naturalStride(F, S.Param, K);
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
    if (!P.isRef() || !P.isArgument())
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
                   const loop::AxisAccess &A = S.Map.Axes[K];
                   if (A.Gathered)
                     return Natural;
                   if (A.Axis < 0)
                     return std::string("0");
                   if (!A.MayBroadcast)
                     return Natural;
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
    for (unsigned K = 0; K < S.Map.rank(); ++K)
      if (S.Map.Axes[K].MayBroadcast) {
        std::string C = fmt::format("{} == {}", extentVar(F, S.Param, K),
                                    extentExpr(F, N.Domain[K]));
        if (Seen.insert(C).second)
          Conds.push_back(C);
      }
  }
  return fmt::format("{}", fmt::join(Conds, " && "));
}

std::string target::fuseCondition(const Function &F, const loop::Step &S) {
  std::vector<std::string> Conds;
  for (auto &[A, B] : S.When)
    Conds.push_back(
        fmt::format("{} == {}", extentExpr(F, A), extentExpr(F, B)));
  return fmt::format("{}", fmt::join(Conds, " && "));
}

void target::emitStepChecks(const loop::Program &P, std::string &Out,
                            llvm::StringRef Indent) {
  for (const loop::Step &S : P.Steps)
    if (S.failsOtherwise())
      Out += fmt::format("{}if (!({}))\n{}  pk::rt::shape_fail({});\n", Indent,
                         fuseCondition(*P.F, S), Indent,
                         stringLiteral(S.OtherwiseError));
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
  if (isInteger(T) && !Info.Integer.empty())
    return Info.Integer;
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

std::string target::convertValue(DType From, DType To,
                                 const std::string &Value) {
  if (From == To)
    return Value;
  if (isFloat(From) && isInteger(To))
    return fmt::format("pk::scalar::convert<{}>({})", dtypeCppName(To), Value);
  return fmt::format("static_cast<{}>({})", dtypeCppName(To), Value);
}

std::string target::storeValue(DType T, DType ValueType, Backend B,
                               const std::string &Value) {
  const DTypeInfo &Info = dtypeInfo(T);
  return convert(B == Backend::Cpu ? Info.CpuStore : Info.CudaStore,
                 convertValue(ValueType, Info.Compute, Value));
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
  case Stmt::Extent:
    Out += fmt::format("{}const int64_t {} = {};\n", Indent, S.Name,
                       target::extentExpr(F, S.Ext));
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
    Out += fmt::format(
        "{}const {} {} = {};\n", Indent, Ty, S.Name,
        convertValue(N.Body[S.Args[0]].Type, S.Type, valueRef(N, S.Args[0])));
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
std::string target::indexedIndex(const Function &F, const Nest &N,
                                 const Stmt &S, int UnitAxis,
                                 llvm::StringRef UnitIndex) {
  std::vector<std::string> Terms;
  for (size_t K = 0; K < S.Map.rank(); ++K) {
    if (S.Map.Axes[K].Gathered) {
      // take's index (checked against the extent at entry).
      Terms.push_back(fmt::format("int64_t({}) * {}", N.Body[S.Args[0]].Name,
                                  target::strideVar(F, S.Param, K)));
      continue;
    }
    int Axis = S.Map.Axes[K].Axis;
    if (Axis < 0)
      continue;
    if (Axis == UnitAxis)
      Terms.push_back(UnitIndex.empty() ? target::indexVar(Axis)
                                        : UnitIndex.str());
    else
      Terms.push_back(fmt::format("{} * {}", target::indexVar(Axis),
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
  case ReduceKind::ArgMax:
  case ReduceKind::ArgMin:
    llvm_unreachable("expanded by expandArgReductions");
  }
  return "0";
}

std::string target::accumulatorVar(const Stmt &S) { return "pk_acc_" + S.Name; }

std::string target::combineAccumulators(ReduceKind K, DType T,
                                        const std::string &A,
                                        const std::string &B) {
  switch (K) {
  case ReduceKind::Max:
    return fmt::format("pk::scalar::maximum({}, {})", A, B);
  case ReduceKind::Min:
    return fmt::format("pk::scalar::minimum({}, {})", A, B);
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    break;
  case ReduceKind::ArgMax:
  case ReduceKind::ArgMin:
    llvm_unreachable("expanded by expandArgReductions");
  }
  if (T == DType::I32 || T == DType::I64)
    return fmt::format("pk::scalar::add({}, {})", A, B);
  return fmt::format("{} + {}", A, B);
}

std::string target::sumUpdate(DType T, const std::string &A,
                              const std::string &V) {
  if (T == DType::I32 || T == DType::I64)
    return fmt::format("{} = pk::scalar::add({}, {})", A, A, V);
  return fmt::format("{} += {}", A, V);
}
