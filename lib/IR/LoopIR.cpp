//===- LoopIR.cpp - Loop IR printer and verifier --------------------------===//

#include "IR/LoopIR.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::loop;

int AccessMap::axisOf(int A) const {
  for (unsigned K = 0; K < Axes.size(); ++K)
    if (Axes[K].Axis == A)
      return K;
  return -1;
}

bool AccessMap::isGather() const {
  return llvm::any_of(Axes, [](const AxisAccess &A) { return A.Gathered; });
}

bool AccessMap::isRightAligned(unsigned DomainRank) const {
  if (rank() > DomainRank || isGather())
    return false;
  for (unsigned K = 0; K < rank(); ++K)
    if (Axes[K].Axis >= 0 &&
        Axes[K].Axis != static_cast<int>(DomainRank - rank() + K))
      return false;
  return true;
}

bool Nest::canFlatten() const {
  for (const Stmt &S : Body)
    if (S.K == Stmt::Load) {
      if (S.Map.rank() != Domain.size())
        return false;
      for (const AxisAccess &A : S.Map.Axes)
        if (A.Axis < 0)
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

/// `i1` for an axis addressed by domain axis 1, `i1?` when it may
/// broadcast at run time (index 0 where its extent is 1), `0` for index 0.
static std::string accessToString(const AccessMap &M) {
  std::vector<std::string> Parts;
  for (const AxisAccess &A : M.Axes)
    Parts.push_back(
        A.Gathered   ? std::string("*")
        : A.Axis < 0 ? std::string("0")
                     : fmt::format("i{}{}", A.Axis, A.MayBroadcast ? "?" : ""));
  return fmt::format("[{}]", fmt::join(Parts, ", "));
}

std::string pk::loop::describe(const ir::Function &F, const Nest &N,
                               const Stmt &S) {
  std::string Text;
  llvm::raw_string_ostream Out(Text);
  auto Arg = [&](unsigned J) { return N.Body[S.Args[J]].Name; };
  switch (S.K) {
  case Stmt::Load:
    Out << S.Name << " = load " << F.Params[S.Param].Name
        << accessToString(S.Map);
    if (S.Map.isGather())
      Out << " at " << Arg(0); // the index of the gathered axis (*)
    break;
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
  case Stmt::Extent:
    Out << S.Name << " = extent " << ir::extentToString(F, S.Ext);
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
    Out << "store " << F.Params[S.Param].Name << accessToString(S.Map) << ", "
        << Arg(0);
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

unsigned Program::stepOf(unsigned I) const {
  for (unsigned S = 0; S < Steps.size(); ++S)
    if (Steps[S].Nest == I || llvm::is_contained(Steps[S].Otherwise, I))
      return S;
  return 0;
}

static void printNest(const Program &P, unsigned I, llvm::raw_ostream &OS,
                      unsigned Indent) {
  const ir::Function &F = *P.F;
  const Nest &N = P.Nests[I];
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << I << " for " << ir::shapeToString(F, N.Domain);
  if (N.isReduction())
    OS << " reduce axes [" << fmt::format("{}", fmt::join(N.ReduceAxes, ", "))
       << "]";
  if (N.Grouped)
    OS << ", grouped: " << N.Body[N.Grouped->Sum].Name << " adds "
       << N.Body[N.Grouped->Term].Name << " over axis 0";
  OS << " {";
  if (!N.Lines.empty())
    OS << "  ; line" << (N.Lines.size() > 1 ? "s " : " ")
       << fmt::format("{}", fmt::join(N.Lines, ", "));
  OS << "\n";
  for (size_t J = 0; J < N.Body.size(); ++J) {
    const Stmt &S = N.Body[J];
    OS << Pad << "  ";
    if (N.Indexed)
      OS << (S.Inner ? fmt::format("[inner {}] ", S.Phase)
                     : fmt::format("[row {}] ", S.Phase));
    OS << describe(F, N, S) << "\n";
  }
  OS << Pad << "}\n";
}

/// `m.0 == v.0 && m.0 == p.0`: a step's condition, or a home's.
static std::string
conditionToString(const ir::Function &F,
                  llvm::ArrayRef<std::pair<ExtentId, ExtentId>> When) {
  std::vector<std::string> Conds;
  for (auto &[A, B] : When)
    Conds.push_back(ir::extentToString(F, A) +
                    " == " + ir::extentToString(F, B));
  return fmt::format("{}", fmt::join(Conds, " && "));
}

void pk::loop::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.F;
  OS << "loops @" << F.QualifiedName << " {\n";
  for (const Buffer &B : P.Buffers) {
    const ir::Param &Pr = F.Params[B.Param];
    OS << "  buffer " << Pr.Name << " : " << ir::dtypeName(Pr.Type)
       << ir::shapeToString(F, ir::refShape(F, B.Param)) << " "
       << ir::paramKindName(Pr.Kind);
    if (Pr.isTemp() && B.Slot >= 0)
      OS << fmt::format(", steps {}..{}, workspace slot {}", B.FirstStep,
                        B.LastStep, B.Slot);
    if (B.Home)
      OS << fmt::format(
          "{} in {}{}", B.Slot >= 0 ? "; or" : ",", F.Params[*B.Home].Name,
          B.HomeWhen.empty() ? "" : " if " + conditionToString(F, B.HomeWhen));
    OS << "\n";
  }
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    const Step &S = P.Steps[I];
    OS << "  step " << I << ": group " << P.Nests[S.Nest].Group;
    if (S.isConditional())
      OS << " fused if " << conditionToString(F, S.When);
    if (S.CopiesHomedTemp)
      OS << " unless " << F.Params[*S.CopiesHomedTemp].Name << " is in "
         << F.Params[*P.Buffers[bufferOf(P, *S.CopiesHomedTemp)].Home].Name;
    OS << "\n";
    printNest(P, S.Nest, OS, 2);
    if (!S.Otherwise.empty()) {
      OS << "  else unfused {\n";
      for (unsigned U : S.Otherwise)
        printNest(P, U, OS, 4);
      OS << "  }\n";
    } else if (S.isConditional()) {
      OS << "  else error \"" << S.OtherwiseError << "\"\n";
    }
  }
  OS << "}\n";
}

unsigned pk::loop::bufferOf(const Program &P, unsigned Param) {
  for (unsigned I = 0; I < P.Buffers.size(); ++I)
    if (P.Buffers[I].Param == Param)
      return I;
  return P.Buffers.size();
}

void pk::loop::removeStep(Program &P, unsigned Step) {
  std::set<unsigned> Gone(P.Steps[Step].Otherwise.begin(),
                          P.Steps[Step].Otherwise.end());
  Gone.insert(P.Steps[Step].Nest);
  std::vector<unsigned> NewIndex(P.Nests.size(), 0);
  std::vector<Nest> Kept;
  for (unsigned N = 0; N < P.Nests.size(); ++N) {
    if (Gone.count(N))
      continue;
    NewIndex[N] = Kept.size();
    Kept.push_back(std::move(P.Nests[N]));
  }
  P.Nests = std::move(Kept);
  P.Steps.erase(P.Steps.begin() + Step);
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    P.Steps[I].Nest = I;
    for (unsigned &N : P.Steps[I].Otherwise)
      N = NewIndex[N];
  }
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
    if (S.K == Stmt::Load || S.K == Stmt::Store) {
      const ir::Param &Pr = P.F->Params[S.Param];
      if (S.Map.rank() != Pr.Rank)
        return fmt::format("nest {}: {} of {} maps {} axes, rank is {}",
                           N.Group, S.K == Stmt::Load ? "load" : "store",
                           Pr.Name, S.Map.rank(), Pr.Rank);
      for (const AxisAccess &A : S.Map.Axes)
        if (A.Axis >= static_cast<int>(N.Domain.size()))
          return fmt::format("nest {}: {} indexed by axis {} of a domain of "
                             "rank {}",
                             N.Group, Pr.Name, A.Axis, N.Domain.size());
      if (!N.Indexed && !S.Map.isRightAligned(N.Domain.size()))
        return fmt::format("nest {}: {} of {} is not right-aligned in a "
                           "nest that is not indexed",
                           N.Group, S.K == Stmt::Load ? "load" : "store",
                           Pr.Name);
    }
    if (S.K == Stmt::Load || S.K == Stmt::Store) {
      auto B = llvm::find_if(
          P.Buffers, [&](const Buffer &B) { return B.Param == S.Param; });
      if (B == P.Buffers.end())
        return fmt::format("nest {}: {} is not a buffer of the program",
                           N.Group, P.F->Params[S.Param].Name);
    }
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
  return "";
}

std::string pk::loop::verify(const Program &P) {
  // Every nest belongs to exactly one step: its own or an alternative.
  std::vector<unsigned> Uses(P.Nests.size(), 0);
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    const Step &S = P.Steps[I];
    if (S.Nest != I)
      return fmt::format("step {} runs nest {}, not its own", I, S.Nest);
    if (!S.Otherwise.empty() && !S.isConditional())
      return fmt::format("step {} has alternatives but no condition", I);
    for (unsigned N : S.Otherwise) {
      if (N < P.Steps.size() || N >= P.Nests.size())
        return fmt::format("step {}: alternative nest {} out of range", I, N);
      if (P.Nests[N].Group != P.Nests[I].Group)
        return fmt::format("step {}: alternative nest {} of another group", I,
                           N);
    }
    Uses[S.Nest]++;
    for (unsigned N : S.Otherwise)
      Uses[N]++;
  }
  for (unsigned N = 0; N < P.Nests.size(); ++N)
    if (Uses[N] != 1)
      return fmt::format("nest {} is run by {} steps", N, Uses[N]);
  for (const Buffer &B : P.Buffers) {
    // Only a temporary always in its home ref has no slot.
    if (P.F->Params[B.Param].isTemp() && !B.alwaysHome() &&
        (B.Slot < 0 || static_cast<unsigned>(B.Slot) >= P.NumSlots ||
         B.FirstStep > B.LastStep))
      return fmt::format("temporary {} has no slot or lifetime",
                         P.F->Params[B.Param].Name);
    if (B.Home &&
        (!P.F->Params[B.Param].isTemp() || !P.F->Params[*B.Home].isArgument()))
      return fmt::format("buffer {} is homed in {}, not a temporary in a ref",
                         P.F->Params[B.Param].Name, P.F->Params[*B.Home].Name);
  }
  for (const Step &S : P.Steps)
    if (S.CopiesHomedTemp) {
      unsigned B = bufferOf(P, *S.CopiesHomedTemp);
      if (B == P.Buffers.size() || !P.Buffers[B].homeWhenFits())
        return fmt::format("a step copies {}, which has no run-time home",
                           P.F->Params[*S.CopiesHomedTemp].Name);
    }
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
