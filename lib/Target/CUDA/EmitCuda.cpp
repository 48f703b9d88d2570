//===- EmitCuda.cpp - Kernel IR to CUDA kernels and launchers -------------===//
//
// A printer: every decision was made by the GPU schedule and Kernel IR
// lowering. Scalar statements are printed with the op table's CUDA column
// (shared with the CPU emitter through Target/Common); warp and block
// reductions expand to `__shfl_xor_sync` butterflies and a shared-memory
// step. The launcher checks the same entry guards as the CPU code before
// anything is launched, then per nest takes the first launch variant whose
// condition holds.
//
//===----------------------------------------------------------------------===//

#include "Target/CUDA/EmitCuda.h"
#include "Target/Common/HostCode.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <cctype>
#include <optional>

using namespace pk;
using namespace pk::ir;
using loop::Nest;
using namespace pk::target;

namespace {

/// The kernel's parameters as declared.
std::vector<std::string> refParams(const Function &F) {
  std::vector<std::string> Parts;
  for (const Param &P : F.Params)
    if (P.isArgument())
      Parts.push_back(fmt::format("{} {}", paramType(P), P.Name));
  return Parts;
}

std::vector<std::string> refArgs(const Function &F) {
  std::vector<std::string> Args;
  for (const Param &P : F.Params)
    if (P.isArgument())
      Args.push_back(P.Name);
  return Args;
}

bool hasTemporaries(const Function &F) {
  return llvm::any_of(F.Params, [](const Param &P) { return P.isTemp(); });
}

/// `void k(refs..., CUstream_st *pk_stream)`; with `Workspace`, the overload
/// that takes the caller's device memory for the temporaries.
std::string signature(const Function &F, bool WithDefault,
                      bool Workspace = false) {
  std::vector<std::string> Parts = refParams(F);
  if (Workspace) {
    Parts.push_back("void *pk_workspace");
    Parts.push_back("int64_t pk_workspace_bytes");
  }
  Parts.push_back(
      fmt::format("CUstream_st *pk_stream{}", WithDefault ? " = nullptr" : ""));
  return fmt::format("void {}({})", F.Name, fmt::join(Parts, ", "));
}

/// `int64_t k_workspace_bytes(refs...)`; the definition (whose `Body` is
/// given) names only the scalars its body reads (only the shapes matter:
/// a window bound such as `pos` moves no extent of a temporary).
std::string workspaceBytesSignature(const Function &F,
                                    std::optional<llvm::StringRef> Body) {
  if (!Body)
    return fmt::format("int64_t {}_workspace_bytes({})", F.Name,
                       fmt::join(refParams(F), ", "));
  // The body's code without its string literals (guard messages quote
  // the kernel's expressions).
  std::string Code;
  bool InString = false;
  for (size_t I = 0; I < Body->size(); ++I) {
    const char C = (*Body)[I];
    if (InString && C == '\\') {
      ++I;
      continue;
    }
    if (C == '"')
      InString = !InString;
    else if (!InString)
      Code += C;
  }
  std::vector<std::string> Parts;
  for (const Param &P : F.Params)
    if (P.isArgument())
      Parts.push_back(P.isRef() || usesName(Code, P.Name)
                          ? fmt::format("{} {}", paramType(P), P.Name)
                          : fmt::format("{} /*{}*/", paramType(P), P.Name));
  return fmt::format("int64_t {}_workspace_bytes({})", F.Name,
                     fmt::join(Parts, ", "));
}

/// The launcher template an instantiation of a kernel template
/// specializes: its template head and its parameters as the template
/// writes them.
std::string templateDeclaration(const Function &F) {
  const KernelTemplate &T = *F.Template;
  std::vector<std::string> Parts;
  for (size_t I = 0; I < F.Params.size(); ++I) {
    if (!F.Params[I].isArgument())
      continue;
    const std::string &Generic =
        I < T.ParamTypes.size() ? T.ParamTypes[I] : std::string();
    Parts.push_back(
        fmt::format("{} {}", Generic.empty() ? paramType(F.Params[I]) : Generic,
                    F.Params[I].Name));
  }
  Parts.push_back("CUstream_st *pk_stream = nullptr");
  return fmt::format("template <{}>\nvoid {}({});\n", T.Head, T.Name,
                     fmt::join(Parts, ", "));
}

/// `__shfl_xor_sync` of an accumulator; bool travels as int.
std::string shuffleXor(DType T, const std::string &V, const std::string &Lane) {
  if (T == DType::Bool)
    return fmt::format(
        "static_cast<bool>(__shfl_xor_sync(0xffffffffu, int({}), {}))", V,
        Lane);
  return fmt::format("__shfl_xor_sync(0xffffffffu, {}, {})", V, Lane);
}

/// Prints Kernel IR as CUDA.
class KernelPrinter {
public:
  KernelPrinter(const Function &F, const kernel::Kernel &K, std::string &Out)
      : F(F), K(K), N(*K.Nest), Out(Out) {}

  void print() {
    for (const std::string &Note : K.Notes)
      Out += "// " + Note + "\n";
    if (!K.TemplateParams.empty())
      Out += fmt::format("template <{}>\n", fmt::join(K.TemplateParams, ", "));
    std::string Body;
    stmts(K.Body, "  ", Body);
    Body = dropUnusedStrides(Body);
    // A launch passes every ref of the group; a kernel that does not read
    // one (the second stage of a full reduction reads no input) leaves its
    // parameter unnamed.
    std::vector<std::string> Params;
    for (const kernel::Param &P : K.Params)
      Params.push_back(usesName(Body, P.Name)
                           ? P.Type + " " + P.Name
                           : fmt::format("{} /*{}*/", P.Type, P.Name));
    Out +=
        fmt::format("__global__ void {}{}({}) {{\n",
                    K.LaunchBounds.empty()
                        ? ""
                        : fmt::format("__launch_bounds__({}) ", K.LaunchBounds),
                    K.Name, fmt::join(Params, ",\n    "));
    for (const kernel::SharedBuffer &B : K.Shared) {
      if (B.Dynamic)
        Out += fmt::format("  // {} elements, sized by the launcher.\n"
                           "  PK_DYNAMIC_SHARED({}, {});\n",
                           B.Count, dtypeCppName(B.Type), B.Name);
      else
        Out +=
            fmt::format("  __shared__ {}{} {}[{}];\n",
                        B.Align ? fmt::format("__align__({}) ", B.Align) : "",
                        dtypeCppName(B.Type), B.Name, B.Count);
    }
    Out += Body;
    Out += "}\n\n";
  }

  /// Prints `Body` into `Dest` instead of the output.
  void stmts(const std::vector<kernel::Stmt> &Body, const std::string &In,
             std::string &Dest) {
    std::swap(Dest, Out);
    stmts(Body, In);
    std::swap(Dest, Out);
  }

  /// Stride and index declarations (`const int64_t pk_x_s0 = ...;`,
  /// `pk_i1`) that nothing after them reads are dropped: nvcc warns about
  /// them, a kernel that only stores a scalar needs none of the input's
  /// strides, and a loop that reads shared memory needs no index.
  static std::string dropUnusedStrides(const std::string &Body) {
    return dropUnusedDecls(Body, [](llvm::StringRef Name) {
      llvm::StringRef Stem = Name.rtrim("0123456789");
      return Name.starts_with("pk_") && Stem.size() < Name.size() &&
             (Stem.ends_with("_s") || Stem == "pk_i");
    });
  }

private:
  std::string index(const loop::Stmt &S, kernel::IndexMode M) {
    switch (M) {
    case kernel::IndexMode::Flat:
      return "pk_i";
    case kernel::IndexMode::Strided:
      return stridedIndex(F, N, S);
    case kernel::IndexMode::Indexed:
      return indexedIndex(F, N, S);
    }
    return "";
  }

  void stmts(const std::vector<kernel::Stmt> &Body, const std::string &In) {
    for (const kernel::Stmt &S : Body)
      stmt(S, In);
  }

  void stmt(const kernel::Stmt &S, const std::string &In) {
    using KS = kernel::Stmt;
    const loop::Stmt &L = N.Body[S.LoopStmt];
    switch (S.K) {
    case KS::Comment:
      Out += fmt::format("{}// {}\n", In, S.Expr);
      break;
    case KS::Let:
      // `T *const p`: the pointer is what stays constant.
      if (llvm::StringRef(S.Type).ends_with("*"))
        Out += fmt::format("{}{}const {} = {};\n", In, S.Type, S.Name, S.Expr);
      else
        Out += fmt::format("{}const {} {} = {};\n", In, S.Type, S.Name, S.Expr);
      break;
    case KS::Var:
      Out += fmt::format("{}{} {} = {};\n", In, S.Type, S.Name, S.Expr);
      break;
    case KS::Assign:
      Out += fmt::format("{}{} = {};\n", In, S.Name, S.Expr);
      break;
    case KS::Compute:
      emitStmt(
          F, N, L, Backend::Cuda,
          [&](const loop::Stmt &X) { return index(X, S.Index); }, Out, In);
      break;
    case KS::AccInit: {
      DType T = accumulatorType(N, L);
      Out += fmt::format("{}{} {} = {};\n", In, dtypeCppName(T),
                         accumulatorVar(L), accumulatorInit(L, T));
      break;
    }
    case KS::AccUpdate: {
      DType T = accumulatorType(N, L);
      std::string V = S.Value;
      if (V.empty()) {
        V = valueRef(N, L.Args[0]);
        if (N.Body[L.Args[0]].Type != T)
          V = fmt::format("static_cast<{}>({})", dtypeCppName(T), V);
      }
      std::string A = accumulatorVar(L);
      if (L.Reduction == ReduceKind::Sum || L.Reduction == ReduceKind::Mean)
        Out += fmt::format("{}{};\n", In, sumUpdate(T, A, V));
      else
        Out += fmt::format("{}{} = {};\n", In, A,
                           combineAccumulators(L.Reduction, T, A, V));
      break;
    }
    case KS::AccFinal: {
      llvm::StringRef Ty = dtypeCppName(L.Type);
      std::string V = accumulatorVar(L);
      if (L.Reduction == ReduceKind::Mean)
        V = fmt::format("{} / static_cast<{}>({})", V,
                        dtypeCppName(accumulatorType(N, L)), S.Expr);
      Out += fmt::format("{}const {} {} = static_cast<{}>({});\n", In, Ty,
                         L.Name, Ty, V);
      break;
    }
    case KS::WarpReduce: {
      std::string A = accumulatorVar(L);
      Out += fmt::format(
          "{}for (int pk_o = ({}) / 2; pk_o > 0; pk_o /= 2)\n"
          "{}  {} = {};\n",
          In, S.Expr, In, A,
          combineAccumulators(L.Reduction, accumulatorType(N, L), A,
                              shuffleXor(accumulatorType(N, L), A, "pk_o")));
      break;
    }
    case KS::BlockReduce: {
      // Warp totals to shared memory, then every warp folds them with one
      // more butterfly, so every thread holds the block's total.
      DType T = accumulatorType(N, L);
      std::string A = accumulatorVar(L);
      Out += fmt::format("{}if (threadIdx.x % 32 == 0)\n{}  {}[threadIdx.x / "
                         "32] = {};\n",
                         In, In, S.Name, A);
      Out += In + "__syncthreads();\n";
      Out += fmt::format("{}{} = threadIdx.x % 32 < ({}) / 32 ? {}[threadIdx.x "
                         "% 32] : {};\n",
                         In, A, S.Expr, S.Name, accumulatorInit(L, T));
      Out += fmt::format(
          "{}for (int pk_o = 16; pk_o > 0; pk_o /= 2)\n"
          "{}  {} = {};\n",
          In, In, A,
          combineAccumulators(L.Reduction, T, A, shuffleXor(T, A, "pk_o")));
      Out += In + "__syncthreads(); // " + S.Name + " is written again next\n";
      break;
    }
    case KS::For:
      if (S.Unroll)
        Out += In + "#pragma unroll\n";
      Out += fmt::format(
          "{}for ({} {} = {}; {} < {}; {}) {{\n", In,
          S.Unroll ? "int" : "int64_t", S.Name, S.Begin, S.Name, S.End,
          S.Step == "1" ? "++" + S.Name
                        : fmt::format("{} += {}", S.Name, S.Step));
      stmts(S.Body, In + "  ");
      Out += In + "}\n";
      break;
    case KS::If:
    case KS::StaticIf:
      Out += fmt::format("{}if {}({}) {{\n", In,
                         S.K == KS::StaticIf ? "constexpr " : "", S.Expr);
      stmts(S.Body, In + "  ");
      if (!S.Else.empty()) {
        Out += In + "} else {\n";
        stmts(S.Else, In + "  ");
      }
      Out += In + "}\n";
      break;
    case KS::Barrier:
      Out += In + "__syncthreads();\n";
      break;
    case KS::Call:
      Out += In + S.Expr + ";\n";
      break;
    case KS::Strides:
      if (S.Index == kernel::IndexMode::Strided)
        emitStrides(F, N, Out, In);
      else
        emitIndexedStrides(F, N, Out, In);
      break;
    }
  }

  const Function &F;
  const kernel::Kernel &K;
  const loop::Nest &N;
  std::string &Out;
};

class CudaEmitter {
public:
  explicit CudaEmitter(const kernel::Program &P) : P(P), F(*P.Loops->F) {}

  cuda::KernelText run() {
    cuda::KernelText T;
    // A kernel template's instantiation `scale<float>` specializes the
    // launcher template (a specialization takes no default arguments).
    if (F.Template) {
      T.TemplateDeclaration = templateDeclaration(F);
      T.Declaration = "template <> " + signature(F, false) + ";\n";
    } else {
      T.Declaration = signature(F, true) + ";\n";
    }
    // A kernel with temporaries also takes the caller's device memory for
    // them (a graph-captured loop then allocates nothing): the bytes it
    // needs at these shapes, and the overload that uses it.
    const bool CallerWorkspace = hasTemporaries(F) && !F.Template;
    if (CallerWorkspace)
      T.Declaration +=
          "/// Device bytes the temporaries of " + F.Name +
          " need at these shapes (checks\n/// the shapes first).\n" +
          workspaceBytesSignature(F, std::nullopt) + ";\n" + "/// " + F.Name +
          " with the temporaries in `pk_workspace` (at least "
          "\n/// " +
          F.Name +
          "_workspace_bytes(...) bytes of device memory, "
          "256-byte aligned as\n/// cudaMalloc's; it must stay valid until "
          "the work queued on pk_stream is done).\n" +
          signature(F, true, true) + ";\n";
    // A 16-bit ref's pointer is passed to the kernels as the CUDA type of
    // the same layout (DTypes.def), which this checks at compile time.
    for (const Param &Pr : F.Params) {
      const DTypeInfo &Info = dtypeInfo(Pr.Type);
      if (!Pr.isRef() || Info.CudaHeader.empty())
        continue;
      T.Prelude.push_back(fmt::format("#include <{}>", Info.CudaHeader));
      T.Prelude.push_back(fmt::format(
          "static_assert(sizeof({0}) == sizeof({1}) && alignof({0}) == "
          "alignof({1}),\n              \"{1} is passed to kernels as {0}\");",
          Info.CudaStorage, Info.Cpp));
    }
    std::string &L = T.Launcher;
    // A temporary no nest addresses (fuseGroupedSums) has nothing to size.
    auto Unaddressed = [&](unsigned Param) {
      return isUnaddressedTemp(*P.Loops, Param);
    };
    if (CallerWorkspace) {
      std::string Body;
      // Nor does one always in its home ref (no slot): only the slots are
      // sized here.
      emitExtents(F, Body, "  ", [&](unsigned Param) {
        unsigned B = loop::bufferOf(*P.Loops, Param);
        return Unaddressed(Param) || (B < P.Loops->Buffers.size() &&
                                      P.Loops->Buffers[B].alwaysHome());
      });
      emitGuards(F, Body, "  ");
      const std::string Total = emitWorkspaceSlots(*P.Loops, Body, "  ");
      Body += "  return " + (Total.empty() ? "0" : Total) + ";\n}\n\n";
      L += workspaceBytesSignature(F, llvm::StringRef(Body)) + " {\n" + Body;
      L += signature(F, false) + " {\n";
      L += fmt::format("  const int64_t pk_bytes = {}_workspace_bytes({});\n",
                       F.Name, fmt::join(refArgs(F), ", "));
      L += fmt::format("  pk::cuda::detail::DeviceScratch<unsigned char> "
                       "pk_scratch(pk_bytes, pk_stream, {});\n",
                       stringLiteral(F.Name));
      L += fmt::format(
          "  {}({}, pk_scratch.get(), pk_bytes, pk_stream);\n}}\n\n", F.Name,
          fmt::join(refArgs(F), ", "));
    }
    L += (F.Template ? "template <>\n" : "") +
         signature(F, false, CallerWorkspace) + " {\n";
    L += "  // Shape guards, checked on the host before any launch.\n";
    emitExtents(F, L, "  ", Unaddressed);
    emitWindowChecks(F, L, "  ");
    emitGuards(F, L, "  ");
    emitIndexChecks(F, L, "  ", /*OnDevice=*/true);
    emitStepChecks(*P.Loops, L, "  ");
    emitAliasChecks(F, L, "  ");
    emitTemporaries(*P.Loops,
                    CallerWorkspace ? WorkspaceFrom::CudaCaller
                                    : WorkspaceFrom::CudaScratch,
                    L, "  ");
    for (const loop::Step &St : P.Loops->Steps) {
      // The kernels of a step, its alternatives' after its own.
      kernels(P.Nests[St.Nest], T.Kernels);
      for (unsigned U : St.Otherwise)
        kernels(P.Nests[U], T.Kernels);
    }
    for (const loop::Step &St : P.Loops->Steps) {
      const Nest &N = P.Loops->Nests[St.Nest];
      L += fmt::format("  // Group {}: the store{} at line{} {}.\n", N.Group,
                       N.Lines.size() > 1 ? "s" : "",
                       N.Lines.size() > 1 ? "s" : "", fmt::join(N.Lines, ", "));
      if (St.CopiesHomedTemp) {
        // A copy into a temporary's home: nothing to do when it is there.
        L += fmt::format("  if (!{}) {{\n",
                         homeFlag(*P.Loops, *St.CopiesHomedTemp));
        launch(P.Nests[St.Nest].Launch, L, "    ");
        L += "  }\n";
        continue;
      }
      // A step without alternatives was checked at entry (emitStepChecks).
      if (St.Otherwise.empty()) {
        launch(P.Nests[St.Nest].Launch, L, "  ");
        continue;
      }
      L += fmt::format("  if ({}) {{\n", fuseCondition(F, St));
      launch(P.Nests[St.Nest].Launch, L, "    ");
      L += "  } else {\n";
      for (unsigned U : St.Otherwise)
        launch(P.Nests[U].Launch, L, "    ");
      L += "  }\n";
    }
    L += "}\n";
    L = dropUnusedDecls(L, hostLocalCandidates(F));
    return T;
  }

private:
  void kernels(const kernel::NestKernels &K, std::string &Out) {
    for (const kernel::Kernel &Ker : K.Kernels)
      KernelPrinter(F, Ker, Out).print();
  }

  /// The launches of `Steps`, each choosing its first matching variant.
  void steps(const std::vector<kernel::LaunchStep> &Steps, std::string &L,
             const std::string &In2) {
    for (const kernel::LaunchStep &Step : Steps) {
      auto Launch = [&](const kernel::LaunchVariant &V,
                        const std::string &Pad) {
        // Parenthesised: the template arguments' commas must not split
        // the macro's arguments.
        std::string Kernel =
            V.TemplateArgs.empty()
                ? Step.Kernel
                : fmt::format("({}<{}>)", Step.Kernel, V.TemplateArgs);
        std::string Block =
            V.BlockY == "1" ? V.Block
                            : fmt::format("dim3({}, {})", V.Block, V.BlockY);
        L += fmt::format("{}// {}\n", Pad, V.Why);
        L += fmt::format("{}PK_LAUNCH({}, {}, {}, {}, pk_stream,\n{}          "
                         "{});\n",
                         Pad, Kernel, V.Grid, Block, V.SharedBytes, Pad,
                         fmt::join(Step.Args, ", "));
      };
      if (Step.Variants.size() == 1) {
        Launch(Step.Variants[0], In2);
      } else {
        for (size_t I = 0; I < Step.Variants.size(); ++I) {
          const kernel::LaunchVariant &V = Step.Variants[I];
          if (I == 0)
            L += fmt::format("{}if ({}) {{\n", In2, V.When);
          else if (!V.When.empty())
            L += fmt::format("{}}} else if ({}) {{\n", In2, V.When);
          else
            L += In2 + "} else {\n";
          Launch(V, In2 + "  ");
        }
        L += In2 + "}\n";
      }
      L += fmt::format("{}pk::cuda::detail::check_launch({});\n", In2,
                       stringLiteral(F.Name));
    }
  }

  void launch(const kernel::NestLaunch &NL, std::string &L,
              const std::string &In) {
    // A nest that always runs (a full reduction stores its result even for
    // an empty input) needs no work check.
    bool Always = NL.Work == "1";
    L += In + "{\n";
    bool GridUsesWork = false;
    for (const kernel::LaunchStep &Step : NL.Steps)
      for (const kernel::LaunchVariant &V : Step.Variants)
        GridUsesWork |= llvm::StringRef(V.Grid).contains("pk_work");
    if (Always && GridUsesWork)
      L += fmt::format("{}  const int64_t pk_work = 1;\n", In);
    if (!Always) {
      L += fmt::format("{}  const int64_t pk_work = {};\n", In, NL.Work);
      L += fmt::format("{}  if (pk_work > 0) {{\n", In);
    }
    std::string In2 = In + (Always ? "  " : "    ");
    for (const std::string &S : NL.Setup)
      L += In2 + S + "\n";
    if (NL.SplitWhen.empty()) {
      steps(NL.Steps, L, In2);
    } else {
      L += fmt::format("{}if ({}) {{\n", In2, NL.SplitWhen);
      for (const std::string &S : NL.SplitSetup)
        L += In2 + "  " + S + "\n";
      steps(NL.SplitSteps, L, In2 + "  ");
      L += In2 + "} else {\n";
      steps(NL.Steps, L, In2 + "  ");
      L += In2 + "}\n";
    }
    for (const std::string &S : NL.Cleanup)
      L += In2 + S + "\n";
    if (!Always)
      L += In + "  }\n";
    L += In + "}\n";
  }

  const kernel::Program &P;
  const Function &F;
};

} // namespace

cuda::KernelText pk::cuda::emitCuda(const kernel::Program &P) {
  return CudaEmitter(P).run();
}

std::string pk::cuda::cudaFile(llvm::StringRef Source,
                               llvm::StringRef HeaderName,
                               llvm::ArrayRef<KernelText> Kernels) {
  std::string Out = fmt::format(
      "// Generated by pkc from {}. Do not edit: edit the kernels and "
      "rebuild.\n// CUDA kernels and their host launchers "
      "(pk::cuda::<kernel>).\n#include <pk/cuda.h>\n\n#include \"{}\"\n\n",
      Source, HeaderName);
  // Headers first, then the checks that use them; each line once.
  std::vector<std::string> Includes, Checks;
  for (const KernelText &K : Kernels)
    for (const std::string &Line : K.Prelude) {
      auto &To =
          llvm::StringRef(Line).starts_with("#include") ? Includes : Checks;
      if (!llvm::is_contained(To, Line))
        To.push_back(Line);
    }
  for (const std::string &Line : Includes)
    Out += Line + "\n";
  for (const std::string &Line : Checks)
    Out += Line + "\n";
  if (!Includes.empty() || !Checks.empty())
    Out += "\n";
  Out += "namespace {\n\n";
  for (const KernelText &K : Kernels)
    Out += K.Kernels;
  Out += "} // namespace\n\nnamespace pk::cuda {\n\n";
  for (const KernelText &K : Kernels)
    Out += K.Launcher + "\n";
  Out += "} // namespace pk::cuda\n";
  return Out;
}

std::string pk::cuda::cudaHeader(llvm::StringRef Source,
                                 llvm::ArrayRef<KernelText> Kernels) {
  std::string Out = fmt::format(
      "// Generated by pkc from {}. Do not edit.\n// Host launchers of the "
      "CUDA versions of its kernels: the refs point to device\n// memory; "
      "the work is queued on `pk_stream` (the default stream when null).\n"
      "#pragma once\n\n#include <pk/ref.h>\n\nstruct CUstream_st; // "
      "cudaStream_t\n\nnamespace pk::cuda {{\n\n",
      Source);
  std::vector<std::string> Templates;
  for (const KernelText &K : Kernels) {
    if (!K.TemplateDeclaration.empty() &&
        !llvm::is_contained(Templates, K.TemplateDeclaration)) {
      Templates.push_back(K.TemplateDeclaration);
      Out += K.TemplateDeclaration;
    }
    Out += K.Declaration;
  }
  Out += "\n} // namespace pk::cuda\n";
  return Out;
}
