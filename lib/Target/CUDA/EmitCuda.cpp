//===- EmitCuda.cpp - Loop IR to CUDA kernels and launchers ---------------===//
//
// Elementwise groups map to one thread per element in a grid-stride loop, so
// any size runs with a bounded grid. As on the CPU, a flat path indexes
// contiguously when every operand has the output's shape; otherwise each
// thread unravels its flat index into the domain's coordinates and indexes
// every load with its strides (0 on broadcast axes). The launcher checks the
// same entry guards as the CPU code before anything is launched.
//
//===----------------------------------------------------------------------===//

#include "Target/CUDA/EmitCuda.h"
#include "Target/Common/HostCode.h"

#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <set>

using namespace pk;
using namespace pk::ir;
using loop::Nest;
using loop::Stmt;
using namespace pk::target;

namespace {

std::string paramType(const Param &P) {
  if (!P.isRef())
    return dtypeCppName(P.Type).str();
  const char *Kind = P.Kind == ParamKind::In    ? "In"
                     : P.Kind == ParamKind::Out ? "Out"
                                                : "InOut";
  return fmt::format("pk::{}<{}, {}>", Kind, dtypeCppName(P.Type), P.Rank);
}

std::string signature(const Function &F, bool WithDefault) {
  std::vector<std::string> Parts;
  for (const Param &P : F.Params)
    Parts.push_back(fmt::format("{} {}", paramType(P), P.Name));
  Parts.push_back(
      fmt::format("CUstream_st *pk_stream{}", WithDefault ? " = nullptr" : ""));
  return fmt::format("void {}({})", F.Name, fmt::join(Parts, ", "));
}

class CudaEmitter {
public:
  explicit CudaEmitter(const loop::Program &P) : P(P), F(*P.F) {}

  cuda::KernelText run() {
    cuda::KernelText T;
    T.Declaration = signature(F, true) + ";\n";
    std::string &L = T.Launcher;
    L += signature(F, false) + " {\n";
    L += "  // Shape guards, checked on the host before any launch.\n";
    emitExtents(F, L, "  ");
    emitGuards(F, L, "  ");
    for (const Nest &N : P.Nests) {
      std::string Name = fmt::format("pk_{}_g{}", F.Name, N.Group);
      emitKernel(N, Name, T.Kernels);
      L += fmt::format("  // Group {}: the store{} at line{} {}.\n", N.Group,
                       N.Lines.size() > 1 ? "s" : "",
                       N.Lines.size() > 1 ? "s" : "", fmt::join(N.Lines, ", "));
      if (N.FuseConds.empty()) {
        emitLaunch(N, Name, L, "  ");
        continue;
      }
      if (N.Indexed) {
        L += fmt::format("  if (!({}))\n    pk::rt::shape_fail({});\n",
                         fuseCondition(F, N), stringLiteral(N.UnfusedError));
        emitLaunch(N, Name, L, "  ");
        continue;
      }
      L += fmt::format("  if ({}) {{\n", fuseCondition(F, N));
      emitLaunch(N, Name, L, "    ");
      L += "  } else {\n";
      if (!N.UnfusedError.empty())
        L += fmt::format("    pk::rt::shape_fail({});\n",
                         stringLiteral(N.UnfusedError));
      for (size_t U = 0; U < N.Unfused.size(); ++U) {
        std::string UName = fmt::format("{}_u{}", Name, U);
        emitKernel(N.Unfused[U], UName, T.Kernels);
        emitLaunch(N.Unfused[U], UName, L, "    ");
      }
      L += "  }\n";
    }
    L += "}\n";
    return T;
  }

private:
  /// What a nest's kernel takes, in order: pointers, extents, scalars.
  struct KernelParams {
    std::vector<unsigned> Refs;
    std::vector<std::pair<unsigned, unsigned>> Extents;
    std::vector<unsigned> Scalars;
  };

  KernelParams paramsOf(const Nest &N) {
    KernelParams K;
    std::set<unsigned> Refs, Scalars;
    for (const Stmt &S : N.Body) {
      if (S.K == Stmt::Load || S.K == Stmt::Store)
        Refs.insert(S.Param);
      if (S.K == Stmt::Scalar)
        Scalars.insert(S.Param);
    }
    K.Refs.assign(Refs.begin(), Refs.end());
    K.Scalars.assign(Scalars.begin(), Scalars.end());
    for (unsigned R : K.Refs)
      for (unsigned A = 0; A < F.Params[R].Rank; ++A)
        K.Extents.push_back({R, A});
    return K;
  }

  bool needsFlatFlag(const Nest &N) {
    return N.canFlatten() && !flatCondition(F, N).empty();
  }

  void emitKernel(const Nest &N, const std::string &Name, std::string &Out) {
    KernelParams K = paramsOf(N);
    std::vector<std::string> Params;
    for (unsigned R : K.Refs) {
      const Param &Pr = F.Params[R];
      Params.push_back(fmt::format("{}{} *__restrict__ {}",
                                   Pr.Kind == ParamKind::In ? "const " : "",
                                   dtypeCppName(Pr.Type), pointerVar(F, R)));
    }
    for (auto [R, A] : K.Extents)
      Params.push_back(fmt::format("const int64_t {}", extentVar(F, R, A)));
    for (unsigned S : K.Scalars)
      Params.push_back(fmt::format(
          "const {} {}", dtypeCppName(F.Params[S].Type), F.Params[S].Name));
    bool FlatFlag = needsFlatFlag(N);
    if (FlatFlag)
      Params.push_back("const bool pk_flat");

    if (N.Indexed) {
      emitIndexedKernel(N, Name, Params, Out);
      return;
    }
    bool Flat = N.canFlatten() && !FlatFlag;
    Out += fmt::format(
        "// Group {} of {} ({}:{}): elementwise over {}, one thread per "
        "element,\n// grid-stride loop{}.\n",
        N.Group, F.Name, llvm::sys::path::filename(F.File).str(),
        N.Lines.empty() ? 0 : N.Lines.front(), shapeToString(F, N.Domain),
        Flat       ? ", contiguous indexing"
        : FlatFlag ? "; contiguous indexing when no operand broadcasts"
                   : "; broadcast index arithmetic");
    Out += fmt::format("__global__ void {}({}) {{\n", Name,
                       fmt::join(Params, ",\n    "));
    Out += fmt::format("  const int64_t pk_n = {};\n", domainSize(F, N));
    Out += "  const int64_t pk_first = int64_t(blockIdx.x) * blockDim.x + "
           "threadIdx.x;\n";
    Out += "  const int64_t pk_step = int64_t(gridDim.x) * blockDim.x;\n";
    auto FlatLoop = [&](const std::string &Indent) {
      Out += fmt::format("{}for (int64_t pk_i = pk_first; pk_i < pk_n; pk_i "
                         "+= pk_step) {{\n",
                         Indent);
      emitBody(
          F, N, Backend::Cuda, [](const Stmt &) { return std::string("pk_i"); },
          Out, Indent + "  ");
      Out += Indent + "}\n";
    };
    auto StridedLoop = [&](const std::string &Indent) {
      emitStrides(F, N, Out, Indent);
      Out += fmt::format("{}for (int64_t pk_i = pk_first; pk_i < pk_n; pk_i "
                         "+= pk_step) {{\n",
                         Indent);
      std::string In = Indent + "  ";
      unsigned R = N.Domain.size();
      if (R == 1) {
        Out += fmt::format("{}const int64_t {} = pk_i;\n", In, indexVar(0));
      } else if (R > 1) {
        Out += fmt::format("{}int64_t pk_rest = pk_i;\n", In);
        for (unsigned K = R; K-- > 1;) {
          std::string E = extentExpr(F, N.Domain[K]);
          Out += fmt::format("{}const int64_t {} = pk_rest % {};\n", In,
                             indexVar(K), E);
          Out += fmt::format("{}pk_rest /= {};\n", In, E);
        }
        Out += fmt::format("{}const int64_t {} = pk_rest;\n", In, indexVar(0));
      }
      emitBody(
          F, N, Backend::Cuda,
          [&](const Stmt &S) { return stridedIndex(F, N, S); }, Out, In);
      Out += Indent + "}\n";
    };
    if (Flat) {
      FlatLoop("  ");
    } else if (FlatFlag) {
      Out += "  if (pk_flat) {\n";
      FlatLoop("    ");
      Out += "  } else {\n";
      StridedLoop("    ");
      Out += "  }\n";
    } else {
      StridedLoop("  ");
    }
    Out += "}\n\n";
  }

  /// One thread per row in a grid-stride loop; each thread runs the row's
  /// phases sequentially. (Warp- and block-per-row strategies are the
  /// [cuda] milestone's.)
  void emitIndexedKernel(const Nest &N, const std::string &Name,
                         const std::vector<std::string> &Params,
                         std::string &Out) {
    Out += fmt::format(
        "// Group {} of {} ({}:{}): {} over {}, one thread per row,\n"
        "// grid-stride loop over the rows.\n",
        N.Group, F.Name, llvm::sys::path::filename(F.File).str(),
        N.Lines.empty() ? 0 : N.Lines.front(),
        N.isReduction() ? fmt::format("reduction over axis {}",
                                      fmt::join(N.ReduceAxes, ", "))
                        : std::string("elementwise"),
        shapeToString(F, N.Domain));
    Out += fmt::format("__global__ void {}({}) {{\n", Name,
                       fmt::join(Params, ",\n    "));
    emitIndexedStrides(F, N, Out, "  ");
    std::vector<unsigned> Rows = rowAxes(N);
    Out += fmt::format("  const int64_t pk_rows = {};\n", rowCount(F, N));
    Out += "  const int64_t pk_step = int64_t(gridDim.x) * blockDim.x;\n";
    Out += "  for (int64_t pk_row = int64_t(blockIdx.x) * blockDim.x + "
           "threadIdx.x; pk_row < pk_rows;\n       pk_row += pk_step) {\n";
    if (!Rows.empty()) {
      Out += "    int64_t pk_rest = pk_row;\n";
      for (size_t K = Rows.size(); K-- > 0;) {
        std::string E = extentExpr(F, N.Domain[Rows[K]]);
        Out += fmt::format("    const int64_t {} = pk_rest % {};\n",
                           indexVar(Rows[K]), E);
        if (K > 0)
          Out += fmt::format("    pk_rest /= {};\n", E);
      }
    } else {
      Out += "    (void)pk_row;\n";
    }
    emitRowBody(F, N, Backend::Cuda, Out, "    ");
    Out += "  }\n}\n\n";
  }

  void emitLaunch(const Nest &N, const std::string &Name, std::string &L,
                  const std::string &Indent) {
    KernelParams K = paramsOf(N);
    std::vector<std::string> Args;
    for (unsigned R : K.Refs)
      Args.push_back(F.Params[R].Name + ".data()");
    for (auto [R, A] : K.Extents)
      Args.push_back(extentVar(F, R, A));
    for (unsigned S : K.Scalars)
      Args.push_back(F.Params[S].Name);
    if (needsFlatFlag(N))
      Args.push_back(fmt::format("({})", flatCondition(F, N)));
    L += fmt::format("{}{{\n", Indent);
    L +=
        fmt::format("{}  const int64_t pk_n = {};\n", Indent, domainSize(F, N));
    L += fmt::format("{}  if (pk_n > 0) {{\n", Indent);
    L += fmt::format("{}    PK_LAUNCH({}, pk::cuda::detail::grid_for(pk_n), "
                     "pk::cuda::detail::kBlock, 0, pk_stream,\n{}              "
                     "{});\n",
                     Indent, Name, Indent, fmt::join(Args, ", "));
    L += fmt::format("{}    pk::cuda::detail::check_launch({});\n", Indent,
                     stringLiteral(F.Name));
    L += fmt::format("{}  }}\n{}}}\n", Indent, Indent);
  }

  const loop::Program &P;
  const Function &F;
};

} // namespace

cuda::KernelText pk::cuda::emitCuda(const loop::Program &P) {
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
  for (const KernelText &K : Kernels)
    Out += K.Declaration;
  Out += "\n} // namespace pk::cuda\n";
  return Out;
}
