//===- LoopIR.cpp - Loop IR printer and verifier --------------------------===//

#include "IR/LoopIR.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::loop;

bool Nest::canFlatten() const {
  for (const Stmt &S : Body)
    if (S.K == Stmt::Load) {
      if (S.Axes.size() != Domain.size())
        return false;
      for (AxisMap M : S.Axes)
        if (M == AxisMap::Broadcast)
          return false;
    }
  return true;
}

unsigned Nest::numPhases() const {
  unsigned N = 0;
  for (const Stmt &S : Body)
    if (S.Inner)
      N = std::max(N, S.Phase + 1);
  return N;
}

static llvm::StringRef axisMapName(AxisMap M) {
  switch (M) {
  case AxisMap::Same:
    return "same";
  case AxisMap::Broadcast:
    return "bcast";
  case AxisMap::Runtime:
    return "runtime";
  }
  return "?";
}

std::string pk::loop::describe(const ir::Function &F, const Nest &N,
                               const Stmt &S) {
  std::string Text;
  llvm::raw_string_ostream Out(Text);
  auto Arg = [&](unsigned J) { return N.Body[S.Args[J]].Name; };
  switch (S.K) {
  case Stmt::Load: {
    std::vector<std::string> Maps;
    for (AxisMap M : S.Axes)
      Maps.push_back(axisMapName(M).str());
    if (N.Indexed) {
      Maps.clear();
      for (int D : S.Dims)
        Maps.push_back(D < 0 ? "0" : fmt::format("i{}", D));
    }
    Out << S.Name << " = load " << F.Params[S.Param].Name << "["
        << fmt::format("{}", fmt::join(Maps, ", ")) << "]";
    break;
  }
  case Stmt::Scalar:
    Out << S.Name << " = param " << F.Params[S.Param].Name;
    break;
  case Stmt::Const:
    Out << S.Name << " = const "
        << (S.Type == DType::F32
                ? fmt::format("{}", static_cast<float>(S.FloatValue))
            : ir::isFloat(S.Type) ? fmt::format("{}", S.FloatValue)
                                  : std::to_string(S.IntValue));
    break;
  case Stmt::Apply: {
    Out << S.Name << " = " << ir::opInfo(S.Op).Name << " ";
    for (size_t J = 0; J < S.Args.size(); ++J)
      Out << (J ? ", " : "") << Arg(J);
    break;
  }
  case Stmt::Cast:
    Out << S.Name << " = cast " << Arg(0);
    break;
  case Stmt::Store:
    Out << "store " << F.Params[S.Param].Name << ", " << Arg(0);
    break;
  case Stmt::Reduce: {
    std::vector<std::string> Ext;
    for (ExtentId E : S.LoopExtents)
      Ext.push_back(ir::extentToString(F, E));
    Out << S.Name << " = reduce." << ir::reduceKindName(S.Reduction) << " "
        << Arg(0) << " over [" << fmt::format("{}", fmt::join(Ext, ", "))
        << "]";
    break;
  }
  case Stmt::Index:
    Out << S.Name << " = index i" << S.Axis;
    if (!S.LoopExtents.empty())
      Out << " (0 where " << ir::extentToString(F, S.LoopExtents[0])
          << " is 1)";
    break;
  }
  if (S.K != Stmt::Store)
    Out << " : " << ir::dtypeName(S.Type);
  Out.flush();
  return Text;
}

static void printNest(const Program &P, const Nest &N, llvm::raw_ostream &OS,
                      unsigned Indent) {
  const ir::Function &F = *P.F;
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << N.Group << " for " << ir::shapeToString(F, N.Domain);
  if (N.isReduction())
    OS << " reduce axes [" << fmt::format("{}", fmt::join(N.ReduceAxes, ", "))
       << "]";
  OS << " {";
  if (!N.Lines.empty())
    OS << "  ; line" << (N.Lines.size() > 1 ? "s " : " ")
       << fmt::format("{}", fmt::join(N.Lines, ", "));
  OS << "\n";
  for (auto &[A, B] : N.FuseConds)
    OS << Pad << "  fused if " << ir::extentToString(F, A)
       << " == " << ir::extentToString(F, B) << "\n";
  for (size_t I = 0; I < N.Body.size(); ++I) {
    const Stmt &S = N.Body[I];
    OS << Pad << "  ";
    if (N.Indexed)
      OS << (S.Inner ? fmt::format("[inner {}] ", S.Phase)
                     : fmt::format("[row {}] ", S.Phase));
    OS << describe(F, N, S) << "\n";
  }
  if (!N.Unfused.empty()) {
    OS << Pad << "  else unfused {\n";
    for (const Nest &U : N.Unfused)
      printNest(P, U, OS, Indent + 4);
    OS << Pad << "  }\n";
  } else if (!N.UnfusedError.empty()) {
    OS << Pad << "  else error \"" << N.UnfusedError << "\"\n";
  }
  OS << Pad << "}\n";
}

void pk::loop::print(const Program &P, llvm::raw_ostream &OS) {
  OS << "loops @" << P.F->QualifiedName << " {\n";
  for (const Nest &N : P.Nests)
    printNest(P, N, OS, 2);
  OS << "}\n";
}

static std::string verifyNest(const Program &P, const Nest &N) {
  bool HasStore = false;
  for (size_t I = 0; I < N.Body.size(); ++I) {
    const Stmt &S = N.Body[I];
    for (unsigned A : S.Args) {
      if (A >= I)
        return fmt::format("nest {}: statement {} uses {} before it", N.Group,
                           I, A);
      if (N.Body[A].K == Stmt::Store)
        return fmt::format("nest {}: statement {} uses a store", N.Group, I);
    }
    size_t Mapped = N.Indexed ? S.Dims.size() : S.Axes.size();
    if ((S.K == Stmt::Load || (N.Indexed && S.K == Stmt::Store)) &&
        Mapped != P.F->Params[S.Param].Rank)
      return fmt::format("nest {}: {} of {} maps {} axes, rank is {}", N.Group,
                         S.K == Stmt::Load ? "load" : "store",
                         P.F->Params[S.Param].Name, Mapped,
                         P.F->Params[S.Param].Rank);
    if (N.Indexed && (S.K == Stmt::Load || S.K == Stmt::Store))
      for (int D : S.Dims)
        if (D >= static_cast<int>(N.Domain.size()))
          return fmt::format("nest {}: {} indexed by axis {} of a domain of "
                             "rank {}",
                             N.Group, P.F->Params[S.Param].Name, D,
                             N.Domain.size());
    if (S.K == Stmt::Load && !N.Indexed && S.Axes.size() > N.Domain.size())
      return fmt::format("nest {}: load of {} has a higher rank than the "
                         "domain",
                         N.Group, P.F->Params[S.Param].Name);
    if (S.K == Stmt::Store) {
      HasStore = true;
      if (!P.F->Params[S.Param].isWritable())
        return fmt::format("nest {}: store to read-only {}", N.Group,
                           P.F->Params[S.Param].Name);
      if (!N.Indexed && P.F->Params[S.Param].Rank != N.Domain.size())
        return fmt::format("nest {}: store to {} of rank {} in a domain of "
                           "rank {}",
                           N.Group, P.F->Params[S.Param].Name,
                           P.F->Params[S.Param].Rank, N.Domain.size());
    }
  }
  if (!HasStore)
    return fmt::format("nest {} stores nothing", N.Group);
  for (const Nest &U : N.Unfused)
    if (std::string E = verifyNest(P, U); !E.empty())
      return E;
  return "";
}

std::string pk::loop::verify(const Program &P) {
  for (const Nest &N : P.Nests)
    if (std::string E = verifyNest(P, N); !E.empty())
      return E;
  return "";
}

void loop::walkArgs(const Nest &N, llvm::ArrayRef<unsigned> Roots,
                    llvm::function_ref<bool(unsigned, const Stmt &)> Visit) {
  std::vector<bool> Seen(N.Body.size(), false);
  std::vector<unsigned> Work(Roots.rbegin(), Roots.rend());
  while (!Work.empty()) {
    unsigned I = Work.back();
    Work.pop_back();
    if (Seen[I])
      continue;
    Seen[I] = true;
    if (Visit(I, N.Body[I]))
      Work.insert(Work.end(), N.Body[I].Args.rbegin(), N.Body[I].Args.rend());
  }
}

std::set<unsigned> loop::innerCone(const Nest &N,
                                   llvm::ArrayRef<unsigned> Roots,
                                   llvm::function_ref<bool(unsigned)> Kept) {
  std::vector<unsigned> Args;
  for (unsigned R : Roots)
    Args.insert(Args.end(), N.Body[R].Args.begin(), N.Body[R].Args.end());
  std::set<unsigned> Need;
  walkArgs(N, Args, [&](unsigned I, const Stmt &S) {
    if (!S.Inner || S.K == Stmt::Reduce)
      return false;
    Need.insert(I);
    return !(Kept && Kept(I));
  });
  return Need;
}
