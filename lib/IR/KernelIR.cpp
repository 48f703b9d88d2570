//===- KernelIR.cpp - Kernel IR builders and printer ----------------------===//

#include "IR/KernelIR.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <set>

using namespace pk;
using namespace pk::kernel;

Stmt Stmt::comment(std::string Text) {
  Stmt S;
  S.K = Comment;
  S.Expr = std::move(Text);
  return S;
}

Stmt Stmt::let(std::string Type, std::string Name, std::string Expr) {
  Stmt S;
  S.K = Let;
  S.Type = std::move(Type);
  S.Name = std::move(Name);
  S.Expr = std::move(Expr);
  return S;
}

Stmt Stmt::var(std::string Type, std::string Name, std::string Expr) {
  Stmt S = let(std::move(Type), std::move(Name), std::move(Expr));
  S.K = Var;
  return S;
}

Stmt Stmt::assign(std::string Name, std::string Expr) {
  Stmt S;
  S.K = Assign;
  S.Name = std::move(Name);
  S.Expr = std::move(Expr);
  return S;
}

Stmt Stmt::compute(unsigned LoopStmt, IndexMode Index) {
  Stmt S;
  S.K = Compute;
  S.LoopStmt = LoopStmt;
  S.Index = Index;
  return S;
}

Stmt Stmt::accInit(unsigned Reduce) {
  Stmt S;
  S.K = AccInit;
  S.LoopStmt = Reduce;
  return S;
}

Stmt Stmt::accUpdate(unsigned Reduce, std::string Value) {
  Stmt S;
  S.K = AccUpdate;
  S.LoopStmt = Reduce;
  S.Value = std::move(Value);
  return S;
}

Stmt Stmt::accFinal(unsigned Reduce, std::string Count) {
  Stmt S;
  S.K = AccFinal;
  S.LoopStmt = Reduce;
  S.Expr = std::move(Count);
  return S;
}

Stmt Stmt::warpReduce(unsigned Reduce, std::string Lanes) {
  Stmt S;
  S.K = WarpReduce;
  S.LoopStmt = Reduce;
  S.Expr = std::move(Lanes);
  return S;
}

Stmt Stmt::blockReduce(unsigned Reduce, std::string Scratch,
                       std::string Threads) {
  Stmt S;
  S.K = BlockReduce;
  S.LoopStmt = Reduce;
  S.Name = std::move(Scratch);
  S.Expr = std::move(Threads);
  return S;
}

Stmt Stmt::forLoop(std::string Var, std::string Begin, std::string End,
                   std::string Step, std::vector<Stmt> Body) {
  Stmt S;
  S.K = For;
  S.Name = std::move(Var);
  S.Begin = std::move(Begin);
  S.End = std::move(End);
  S.Step = std::move(Step);
  S.Body = std::move(Body);
  return S;
}

Stmt Stmt::ifThen(std::string Cond, std::vector<Stmt> Body,
                  std::vector<Stmt> Else) {
  Stmt S;
  S.K = If;
  S.Expr = std::move(Cond);
  S.Body = std::move(Body);
  S.Else = std::move(Else);
  return S;
}

Stmt Stmt::staticIf(std::string Cond, std::vector<Stmt> Body,
                    std::vector<Stmt> Else) {
  Stmt S = ifThen(std::move(Cond), std::move(Body), std::move(Else));
  S.K = StaticIf;
  return S;
}

Stmt Stmt::barrier() {
  Stmt S;
  S.K = Barrier;
  return S;
}

Stmt Stmt::call(std::string Expr) {
  Stmt S;
  S.K = Call;
  S.Expr = std::move(Expr);
  return S;
}

Stmt Stmt::strides(IndexMode Index) {
  Stmt S;
  S.K = Strides;
  S.Index = Index;
  return S;
}

namespace {

llvm::StringRef indexModeName(IndexMode M) {
  switch (M) {
  case IndexMode::Flat:
    return "flat";
  case IndexMode::Strided:
    return "strided";
  case IndexMode::Indexed:
    return "indexed";
  }
  return "?";
}

void printStmts(const ir::Function &F, const loop::Nest &N,
                const std::vector<Stmt> &Body, llvm::raw_ostream &OS,
                unsigned Indent) {
  std::string Pad(Indent, ' ');
  for (const Stmt &S : Body) {
    const loop::Stmt &L = N.Body[S.LoopStmt];
    switch (S.K) {
    case Stmt::Comment:
      OS << Pad << "// " << S.Expr << "\n";
      break;
    case Stmt::Let:
      OS << Pad << "let " << S.Name << " : " << S.Type << " = " << S.Expr
         << "\n";
      break;
    case Stmt::Var:
      OS << Pad << "var " << S.Name << " : " << S.Type << " = " << S.Expr
         << "\n";
      break;
    case Stmt::Assign:
      OS << Pad << S.Name << " := " << S.Expr << "\n";
      break;
    case Stmt::Compute:
      OS << Pad << loop::describe(F, N, L);
      if (L.K == loop::Stmt::Load || L.K == loop::Stmt::Store)
        OS << "  @" << indexModeName(S.Index);
      OS << "\n";
      break;
    case Stmt::AccInit:
      OS << Pad << "acc." << ir::reduceKindName(L.Reduction) << " " << L.Name
         << " = identity\n";
      break;
    case Stmt::AccUpdate:
      OS << Pad << "acc." << ir::reduceKindName(L.Reduction) << " " << L.Name
         << " <- " << (S.Value.empty() ? N.Body[L.Args[0]].Name : S.Value)
         << "\n";
      break;
    case Stmt::AccFinal:
      OS << Pad << L.Name << " = final acc " << L.Name;
      if (L.Reduction == ir::ReduceKind::Mean)
        OS << " / (" << S.Expr << ")";
      OS << "\n";
      break;
    case Stmt::WarpReduce:
      OS << Pad << "warp.reduce." << ir::reduceKindName(L.Reduction) << " "
         << L.Name << " over " << S.Expr << " lanes (shfl.xor)\n";
      break;
    case Stmt::BlockReduce:
      OS << Pad << "block.reduce." << ir::reduceKindName(L.Reduction) << " "
         << L.Name << " over " << S.Expr << " threads via shared " << S.Name
         << "\n";
      break;
    case Stmt::For:
      OS << Pad << (S.Unroll ? "unrolled for " : "for ") << S.Name << " = "
         << S.Begin << " to " << S.End << " step " << S.Step << " {\n";
      printStmts(F, N, S.Body, OS, Indent + 2);
      OS << Pad << "}\n";
      break;
    case Stmt::If:
    case Stmt::StaticIf:
      OS << Pad << (S.K == Stmt::StaticIf ? "if constexpr " : "if ") << S.Expr
         << " {\n";
      printStmts(F, N, S.Body, OS, Indent + 2);
      if (!S.Else.empty()) {
        OS << Pad << "} else {\n";
        printStmts(F, N, S.Else, OS, Indent + 2);
      }
      OS << Pad << "}\n";
      break;
    case Stmt::Barrier:
      OS << Pad << "barrier\n";
      break;
    case Stmt::Call:
      OS << Pad << "call " << S.Expr << "\n";
      break;
    case Stmt::Strides:
      OS << Pad << "strides " << indexModeName(S.Index) << "\n";
      break;
    }
  }
}

void printNest(const ir::Function &F, const NestKernels &K,
               llvm::raw_ostream &OS, unsigned Indent) {
  std::string Pad(Indent, ' ');
  for (const Kernel &Ker : K.Kernels) {
    OS << Pad << "kernel " << Ker.Name;
    if (!Ker.TemplateParams.empty())
      OS << "<" << fmt::format("{}", fmt::join(Ker.TemplateParams, ", "))
         << ">";
    OS << "(";
    for (size_t I = 0; I < Ker.Params.size(); ++I)
      OS << (I ? ", " : "") << Ker.Params[I].Name;
    OS << ") {\n";
    for (const std::string &Note : Ker.Notes)
      OS << Pad << "  ; " << Note << "\n";
    for (const SharedBuffer &B : Ker.Shared)
      OS << Pad << "  shared " << (B.Dynamic ? "dynamic " : "") << B.Name
         << " : " << ir::dtypeName(B.Type) << "[" << B.Count << "]\n";
    printStmts(F, *Ker.Nest, Ker.Body, OS, Indent + 2);
    OS << Pad << "}\n";
  }
  const NestLaunch &L = K.Launch;
  if (L.Work == "1")
    OS << Pad << "launch {\n";
  else
    OS << Pad << "launch when " << L.Work << " > 0 {\n";
  for (const std::string &S : L.Setup)
    OS << Pad << "  " << S << "\n";
  auto PrintSteps = [&](const std::vector<LaunchStep> &Steps,
                        const std::string &In) {
    for (const LaunchStep &Step : Steps) {
      OS << In << Step.Kernel << ":\n";
      for (const LaunchVariant &V : Step.Variants)
        OS << In << "  "
           << (Step.Variants.size() == 1 ? ""
               : V.When.empty()          ? "else "
                                         : "if " + V.When + " ")
           << (V.TemplateArgs.empty() ? "" : "<" + V.TemplateArgs + "> ")
           << "grid " << V.Grid << " block " << V.Block
           << (V.BlockY == "1" ? "" : " x " + V.BlockY) << " shared "
           << V.SharedBytes << " bytes ; " << V.Why << "\n";
    }
  };
  if (!L.SplitWhen.empty()) {
    OS << Pad << "  if " << L.SplitWhen << " {\n";
    for (const std::string &S : L.SplitSetup)
      OS << Pad << "    " << S << "\n";
    PrintSteps(L.SplitSteps, Pad + "    ");
    OS << Pad << "  } else {\n";
    PrintSteps(L.Steps, Pad + "    ");
    OS << Pad << "  }\n";
  } else {
    PrintSteps(L.Steps, Pad + "  ");
  }
  for (const std::string &S : L.Cleanup)
    OS << Pad << "  " << S << "\n";
  OS << Pad << "}\n";
}

} // namespace

void kernel::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.Loops->F;
  OS << "kernels @" << F.QualifiedName << " {\n";
  for (const NestKernels &K : P.Nests)
    printNest(F, K, OS, 2);
  OS << "}\n";
}

namespace {

class Verifier {
public:
  std::string run(const Program &P) {
    if (!P.Loops)
      return "no Loop IR";
    if (P.Nests.size() != P.Loops->Nests.size())
      return fmt::format("{} kernel sets for {} nests", P.Nests.size(),
                         P.Loops->Nests.size());
    for (size_t I = 0; I < P.Nests.size(); ++I)
      if (std::string E =
              nest(P.Loops->Nests[I], P.Nests[I], fmt::format("nest {}", I));
          !E.empty())
        return E;
    return "";
  }

private:
  std::string nest(const loop::Nest &N, const NestKernels &K,
                   const std::string &Where) {
    for (const Kernel &Kn : K.Kernels) {
      if (Kn.Name.empty() || !Names.insert(Kn.Name).second)
        return fmt::format("{}: kernel name '{}' is empty or taken", Where,
                           Kn.Name);
      if (!Kn.Nest)
        return fmt::format("{}: kernel {} has no nest", Where, Kn.Name);
      if (std::string E = stmts(*Kn.Nest, Kn.Body, Where + ", " + Kn.Name);
          !E.empty())
        return E;
    }
    for (const std::vector<LaunchStep> *Steps :
         {&K.Launch.Steps, &K.Launch.SplitSteps})
      for (const LaunchStep &L : *Steps) {
        auto It = llvm::find_if(
            K.Kernels, [&](const Kernel &Kn) { return Kn.Name == L.Kernel; });
        if (It == K.Kernels.end())
          return fmt::format("{}: a launch of unknown kernel {}", Where,
                             L.Kernel);
        if (L.Args.size() != It->Params.size())
          return fmt::format("{}: {} arguments for the {} parameters of {}",
                             Where, L.Args.size(), It->Params.size(), L.Kernel);
        if (L.Variants.empty())
          return fmt::format("{}: a launch of {} without a variant", Where,
                             L.Kernel);
      }
    if (K.Launch.SplitWhen.empty() != K.Launch.SplitSteps.empty())
      return fmt::format("{}: a split launch without its condition or steps",
                         Where);
    return "";
  }

  std::string stmts(const loop::Nest &N, const std::vector<Stmt> &Body,
                    const std::string &Where) {
    for (const Stmt &S : Body) {
      switch (S.K) {
      case Stmt::Compute:
      case Stmt::AccInit:
      case Stmt::AccUpdate:
      case Stmt::AccFinal:
      case Stmt::WarpReduce:
      case Stmt::BlockReduce:
        if (S.LoopStmt >= N.Body.size())
          return fmt::format("{}: statement {} of a nest of {}", Where,
                             S.LoopStmt, N.Body.size());
        if (S.K != Stmt::Compute && N.Body[S.LoopStmt].K != loop::Stmt::Reduce)
          return fmt::format("{}: accumulator of statement {}, not a "
                             "reduction",
                             Where, S.LoopStmt);
        break;
      case Stmt::For:
        if (S.Name.empty() || S.Begin.empty() || S.End.empty() ||
            S.Step.empty())
          return fmt::format("{}: a loop without its variable or bounds",
                             Where);
        break;
      default:
        break;
      }
      for (const std::vector<Stmt> *Inner : {&S.Body, &S.Else})
        if (std::string E = stmts(N, *Inner, Where); !E.empty())
          return E;
    }
    return "";
  }

  std::set<std::string> Names;
};

} // namespace

std::string kernel::verify(const Program &P) { return Verifier().run(P); }
