//===- LowerToKernels.cpp - GPU Tile IR to Kernel IR ----------------------===//
//
// Each strategy of the GPU schedule becomes kernels with explicit threads:
//
//  * grid-stride: `pk_i` runs from the thread's global index in steps of the
//    grid; with `kVector` each step moves 16 bytes per ref (float4/double2)
//    through a fully unrolled lane loop, and a scalar loop takes the tail.
//  * row-groups: `kThreads` threads share a row (`pk_lane` is a thread's
//    place in it). Each phase strides over the reduced range by kThreads,
//    folds into per-thread accumulators, then combines them: a butterfly of
//    `__shfl_xor_sync` within the warp (every lane ends with the total), and
//    for kThreads > 32 the warps' totals through shared memory and one more
//    butterfly. Row stores are made by lane 0. With `kShared` the values the
//    schedule keeps are stored to dynamic shared memory by the phase that
//    first computes them, at the same index by the same thread, so no
//    barrier is needed before a later phase reads them back.
//  * columns: x threads take consecutive kept elements, y threads slices of
//    the reduced range; the slices combine in shared memory. Threads past
//    the last row compute the last row again (so every thread reaches every
//    barrier and no load is out of bounds) and store nothing.
//  * two-stage: blocks fold grid-stride shares into one partial each (in a
//    scratch buffer the launcher allocates on the stream), then one block
//    folds the partials, finalises and stores.
//
//===----------------------------------------------------------------------===//

#include "Target/CUDA/LowerToKernels.h"
#include "IR/Gemm.h"
#include "Target/Common/HostCode.h"

#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <cassert>
#include <functional>
#include <map>
#include <optional>
#include <set>

using namespace pk;
using namespace pk::ir;
using namespace pk::target;
using gpu::NestPlan;
using gpu::Strategy;
using kernel::IndexMode;
using KStmt = kernel::Stmt;
using KStmts = std::vector<kernel::Stmt>;
using loop::Nest;
using LStmt = loop::Stmt;

namespace {

/// `float4` / `double2`: the 16-byte vector type of a dtype.
std::string vectorType(DType T, int Width) {
  return fmt::format("{}{}", T == DType::F64 ? "double" : "float", Width);
}

std::string product(const std::vector<std::string> &Parts) {
  if (Parts.empty())
    return "1";
  return fmt::format("{}", fmt::join(Parts, " * "));
}

/// Turns each scheduled nest of a GPU Tile IR program into Kernel IR:
/// threads, shared memory, barriers, reductions and the launch plan.
class NestsToKernels {
public:
  explicit NestsToKernels(const gpu::Program &Plan)
      : Plan(Plan), F(*Plan.Loops->F), T(Plan.Target) {}

  kernel::Program run() {
    kernel::Program K;
    K.Loops = Plan.Loops;
    for (size_t I = 0; I < Plan.Nests.size(); ++I)
      K.Nests.push_back(lowerNest(
          Plan.Loops->Nests[I], Plan.Nests[I],
          fmt::format("pk_{}_g{}", F.Symbol.empty() ? F.Name : F.Symbol,
                      Plan.Loops->Nests[I].Group)));
    return K;
  }

private:
  kernel::NestKernels lowerNest(const Nest &N, const NestPlan &P,
                                const std::string &Name) {
    kernel::NestKernels K;
    switch (P.Kind) {
    case Strategy::GridStride:
      gridStride(N, P, Name, K);
      break;
    case Strategy::GridStrideIndexed:
      gridStrideIndexed(N, P, Name, K);
      break;
    case Strategy::RowGroups:
      rowGroups(N, P, Name, K);
      break;
    case Strategy::Columns:
      columns(N, P, Name, K);
      break;
    case Strategy::TwoStage:
      twoStage(N, P, Name, K);
      break;
    case Strategy::Gemm:
      gemm(N, P, Name, K);
      break;
    case Strategy::Attention:
      attention(N, P, Name, K);
      break;
    }
    for (size_t U = 0; U < N.Unfused.size(); ++U)
      K.Unfused.push_back(lowerNest(N.Unfused[U], P.Unfused[U],
                                    fmt::format("{}_u{}", Name, U)));
    return K;
  }

  //===--------------------------------------------------------------------===//
  // Parameters and shared pieces
  //===--------------------------------------------------------------------===//

  /// Pointers of the refs a nest uses, every ref's extents and the scalars
  /// it uses, as kernel parameters and as the launcher's arguments.
  void addNestParams(const Nest &N, kernel::Kernel &K,
                     std::vector<std::string> &Args) {
    std::set<unsigned> Refs, Scalars;
    for (const LStmt &S : N.Body) {
      if (S.K == LStmt::Load || S.K == LStmt::Store)
        Refs.insert(S.Param);
      if (S.K == LStmt::Scalar)
        Scalars.insert(S.Param);
    }
    for (unsigned R : Refs) {
      const Param &Pr = F.Params[R];
      const char *Const = Pr.Kind == ParamKind::In ? "const " : "";
      const std::string Storage = storageType(Pr.Type, Backend::Cuda);
      K.Params.push_back({fmt::format("{}{} *__restrict__", Const, Storage),
                          pointerVar(F, R)});
      // pk::half and pk::bfloat16 reach the kernels as __half and
      // __nv_bfloat16 (the .pk.cu checks that their layouts agree).
      if (Storage == dtypeCppName(Pr.Type))
        Args.push_back(Pr.Name + ".data()");
      else
        Args.push_back(fmt::format("reinterpret_cast<{}{} *>({}.data())", Const,
                                   Storage, Pr.Name));
    }
    // Every ref's extents, not only those of the refs the nest touches: a
    // loop bound may be a broadcast of extents of refs read elsewhere
    // (bcast(x.0, y.0)). The printer leaves the unused ones unnamed.
    for (unsigned R = 0; R < F.Params.size(); ++R)
      for (unsigned A = 0; F.Params[R].isRef() && A < F.Params[R].Rank; ++A) {
        K.Params.push_back({"const int64_t", extentVar(F, R, A)});
        Args.push_back(extentVar(F, R, A));
      }
    for (unsigned S : Scalars) {
      K.Params.push_back(
          {fmt::format("const {}", dtypeCppName(F.Params[S].Type)),
           F.Params[S].Name});
      Args.push_back(F.Params[S].Name);
    }
  }

  kernel::Kernel newKernel(const Nest &N, const std::string &Name,
                           std::string Summary) {
    kernel::Kernel K;
    K.Name = Name;
    K.Nest = &N;
    K.Notes.push_back(fmt::format("Group {} of {} ({}:{}): {}", N.Group, F.Name,
                                  llvm::sys::path::filename(F.File).str(),
                                  N.Lines.empty() ? 0 : N.Lines.front(),
                                  std::move(Summary)));
    return K;
  }

  /// Lets for the domain indices `Axes` (outermost first) from the flat
  /// index `Flat` over their extents `Extents`. Each index is its own
  /// expression, so the printer can drop the ones a loop does not read.
  void unravel(const std::string &Flat, const std::vector<unsigned> &Axes,
               const std::vector<std::string> &Extents, KStmts &Out) {
    for (size_t K = 0; K < Axes.size(); ++K) {
      std::vector<std::string> Later(Extents.begin() + K + 1, Extents.end());
      std::string E = Flat;
      if (!Later.empty())
        E = Later.size() == 1 ? fmt::format("{} / {}", Flat, Later[0])
                              : fmt::format("{} / ({})", Flat, product(Later));
      if (K > 0)
        E = fmt::format("{}{} % {}", Later.empty() ? "" : "(",
                        Later.empty() ? E : E + ")", Extents[K]);
      Out.push_back(KStmt::let("int64_t", indexVar(Axes[K]), E));
    }
  }

  void unravelRow(const Nest &N, const std::string &Row, KStmts &Out) {
    std::vector<unsigned> Rows = rowAxes(N);
    std::vector<std::string> Extents;
    for (unsigned A : Rows)
      Extents.push_back(extentExpr(F, N.Domain[A]));
    unravel(Row, Rows, Extents, Out);
  }

  std::string lenOf(const std::vector<ExtentId> &Key) {
    std::vector<std::string> Parts;
    for (ExtentId E : Key)
      Parts.push_back(extentExpr(F, E));
    return product(Parts);
  }

  //===--------------------------------------------------------------------===//
  // Elementwise
  //===--------------------------------------------------------------------===//

  void gridStride(const Nest &N, const NestPlan &P, const std::string &Name,
                  kernel::NestKernels &Out) {
    std::string FlatCond = N.canFlatten() ? flatCondition(F, N) : "";
    bool FlatFlag = N.canFlatten() && !FlatCond.empty();
    bool Flat = N.canFlatten() && !FlatFlag;
    int VW = P.VectorWidth;
    kernel::Kernel K = newKernel(
        N, Name,
        fmt::format("elementwise over {}, grid-stride loop, {}",
                    shapeToString(F, N.Domain),
                    Flat       ? "contiguous indexing"
                    : FlatFlag ? "contiguous indexing when no operand "
                                 "broadcasts"
                               : "broadcast index arithmetic"));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    if (FlatFlag) {
      K.Params.push_back({"const bool", "pk_flat"});
      Args.push_back("(" + FlatCond + ")");
    }
    if (VW > 1)
      K.TemplateParams.push_back("bool kVector");
    K.LaunchBounds = std::to_string(P.BlockX);
    KStmts &B = K.Body;
    B.push_back(KStmt::let("int64_t", "pk_n", domainSize(F, N)));
    B.push_back(KStmt::let("int64_t", "pk_first",
                           "int64_t(blockIdx.x) * blockDim.x + threadIdx.x"));
    B.push_back(
        KStmt::let("int64_t", "pk_step", "int64_t(gridDim.x) * blockDim.x"));

    KStmts FlatPart;
    if (VW > 1) {
      FlatPart.push_back(KStmt::staticIf("kVector", vectorLoop(N, VW)));
      FlatPart.push_back(
          KStmt::let("int64_t", "pk_tail",
                     fmt::format("kVector ? pk_n / {0} * {0} : 0", VW)));
    }
    KStmts Scalar;
    for (unsigned I = 0; I < N.Body.size(); ++I)
      Scalar.push_back(KStmt::compute(I, IndexMode::Flat));
    FlatPart.push_back(
        KStmt::forLoop("pk_i", VW > 1 ? "pk_tail + pk_first" : "pk_first",
                       "pk_n", "pk_step", std::move(Scalar)));

    KStmts StridedPart;
    if (!Flat) {
      StridedPart.push_back(KStmt::strides(IndexMode::Strided));
      KStmts Loop;
      std::vector<unsigned> Axes;
      std::vector<std::string> Extents;
      for (unsigned A = 0; A < N.Domain.size(); ++A) {
        Axes.push_back(A);
        Extents.push_back(extentExpr(F, N.Domain[A]));
      }
      unravel("pk_i", Axes, Extents, Loop);
      for (unsigned I = 0; I < N.Body.size(); ++I)
        Loop.push_back(KStmt::compute(I, IndexMode::Strided));
      StridedPart.push_back(KStmt::forLoop("pk_i", "pk_first", "pk_n",
                                           "pk_step", std::move(Loop)));
    }
    if (Flat)
      B.insert(B.end(), FlatPart.begin(), FlatPart.end());
    else if (FlatFlag)
      B.push_back(KStmt::ifThen("pk_flat", FlatPart, StridedPart));
    else
      B.insert(B.end(), StridedPart.begin(), StridedPart.end());

    kernel::LaunchStep Step;
    Step.Kernel = Name;
    Step.Args = Args;
    std::string Block = std::to_string(P.BlockX);
    if (VW > 1) {
      std::vector<std::string> Ptrs;
      std::set<unsigned> Seen;
      for (const LStmt &S : N.Body)
        if ((S.K == LStmt::Load || S.K == LStmt::Store) &&
            Seen.insert(S.Param).second)
          Ptrs.push_back(F.Params[S.Param].Name + ".data()");
      std::string When = fmt::format("pk::cuda::detail::aligned({}, {})",
                                     T.VectorBytes, fmt::join(Ptrs, ", "));
      if (FlatFlag)
        When = FlatCond + " && " + When;
      Step.Variants.push_back(
          {When, "true",
           fmt::format("pk::cuda::detail::grid_for(pk_work, {} * {})", Block,
                       VW),
           Block, "1", "0",
           fmt::format("{} elements per access: every pointer is {}-byte "
                       "aligned",
                       VW, T.VectorBytes)});
      Step.Variants.push_back(
          {"", "false",
           fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block), Block,
           "1", "0", "scalar accesses"});
    } else {
      Step.Variants.push_back(
          {"", "",
           fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block), Block,
           "1", "0", "one element per thread and step"});
    }
    Out.Launch.Work = domainSize(F, N);
    Out.Launch.Steps.push_back(std::move(Step));
    Out.Kernels.push_back(std::move(K));
  }

  /// `VW` elements per step: one vector load per ref read, the lanes
  /// computed by an unrolled loop, one vector store per ref written.
  KStmts vectorLoop(const Nest &N, int VW) {
    KStmts Loop;
    std::vector<unsigned> Loaded, Stored;
    for (const LStmt &S : N.Body) {
      if (S.K == LStmt::Load && !llvm::is_contained(Loaded, S.Param))
        Loaded.push_back(S.Param);
      if (S.K == LStmt::Store && !llvm::is_contained(Stored, S.Param))
        Stored.push_back(S.Param);
    }
    static const char *const Member[] = {"x", "y", "z", "w"};
    for (unsigned R : Loaded) {
      DType Ty = F.Params[R].Type;
      std::string Ptr = pointerVar(F, R);
      Loop.push_back(
          KStmt::let(vectorType(Ty, VW), Ptr + "_v",
                     fmt::format("reinterpret_cast<const {} *>({})[pk_v]",
                                 vectorType(Ty, VW), Ptr)));
      std::vector<std::string> Lanes;
      for (int L = 0; L < VW; ++L)
        Lanes.push_back(fmt::format("{}_v.{}", Ptr, Member[L]));
      Loop.push_back(KStmt::let(dtypeCppName(Ty).str(),
                                fmt::format("{}_ld[{}]", Ptr, VW),
                                fmt::format("{{{}}}", fmt::join(Lanes, ", "))));
    }
    for (unsigned R : Stored)
      Loop.push_back(KStmt::var(dtypeCppName(F.Params[R].Type).str(),
                                fmt::format("{}_st[{}]", pointerVar(F, R), VW),
                                "{}"));
    KStmts Lane;
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const LStmt &S = N.Body[I];
      if (S.K == LStmt::Load) {
        Lane.push_back(KStmt::let(dtypeCppName(S.Type).str(), S.Name,
                                  pointerVar(F, S.Param) + "_ld[pk_l]"));
      } else if (S.K == LStmt::Store) {
        DType RefTy = F.Params[S.Param].Type;
        std::string V = valueRef(N, S.Args[0]);
        if (N.Body[S.Args[0]].Type != RefTy)
          V = fmt::format("static_cast<{}>({})", dtypeCppName(RefTy), V);
        Lane.push_back(KStmt::assign(pointerVar(F, S.Param) + "_st[pk_l]", V));
      } else {
        Lane.push_back(KStmt::compute(I, IndexMode::Flat));
      }
    }
    KStmt LaneLoop =
        KStmt::forLoop("pk_l", "0", std::to_string(VW), "1", std::move(Lane));
    LaneLoop.Unroll = true;
    Loop.push_back(std::move(LaneLoop));
    for (unsigned R : Stored) {
      DType Ty = F.Params[R].Type;
      std::string Ptr = pointerVar(F, R);
      std::vector<std::string> Lanes;
      for (int L = 0; L < VW; ++L)
        Lanes.push_back(fmt::format("{}_st[{}]", Ptr, L));
      Loop.push_back(
          KStmt::assign(fmt::format("reinterpret_cast<{} *>({})[pk_v]",
                                    vectorType(Ty, VW), Ptr),
                        fmt::format("make_{}({})", vectorType(Ty, VW),
                                    fmt::join(Lanes, ", "))));
    }
    KStmts Out;
    Out.push_back(KStmt::forLoop("pk_v", "pk_first",
                                 fmt::format("pk_n / {}", VW), "pk_step",
                                 std::move(Loop)));
    return Out;
  }

  void gridStrideIndexed(const Nest &N, const NestPlan &P,
                         const std::string &Name, kernel::NestKernels &Out) {
    kernel::Kernel K =
        newKernel(N, Name,
                  fmt::format("elementwise over {}, one thread per element, "
                              "grid-stride loop",
                              shapeToString(F, N.Domain)));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    K.LaunchBounds = std::to_string(P.BlockX);
    KStmts &B = K.Body;
    B.push_back(KStmt::strides(IndexMode::Indexed));
    B.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
    KStmts Loop;
    unravelRow(N, "pk_row", Loop);
    for (unsigned I = 0; I < N.Body.size(); ++I)
      Loop.push_back(KStmt::compute(I, IndexMode::Indexed));
    B.push_back(KStmt::forLoop(
        "pk_row", "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", "pk_rows",
        "int64_t(gridDim.x) * blockDim.x", std::move(Loop)));
    std::string Block = std::to_string(P.BlockX);
    Out.Launch.Work = rowCount(F, N);
    Out.Launch.Steps.push_back(
        {Name,
         Args,
         {{"", "",
           fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block), Block,
           "1", "0", "one element per thread and step"}}});
    Out.Kernels.push_back(std::move(K));
  }

  //===--------------------------------------------------------------------===//
  // Phases of a reduction nest, shared by row-groups and columns
  //===--------------------------------------------------------------------===//

  /// How the threads of a group cooperate on one row.
  struct Cooperation {
    std::string Start, Step; ///< the reduced range, strided over threads
    /// Appends the statements that combine the threads' accumulators of
    /// reduce `R` so that every thread of the group holds the result.
    std::function<void(unsigned R, KStmts &)> Combine;
    std::string RowStoreGuard;   ///< who makes row stores
    std::string InnerStoreGuard; ///< "" = every thread
    /// Values kept in shared memory under `kShared` (row-groups only).
    std::vector<unsigned> Shared;
  };

  /// The inner statements the roots need; a value in `Materialised` is read
  /// back from shared memory instead of being recomputed.
  std::set<unsigned> needed(const Nest &N, const std::vector<unsigned> &Roots,
                            const std::set<unsigned> &Materialised) {
    std::set<unsigned> Need;
    std::vector<unsigned> Work;
    for (unsigned R : Roots)
      Work.insert(Work.end(), N.Body[R].Args.begin(), N.Body[R].Args.end());
    while (!Work.empty()) {
      unsigned I = Work.back();
      Work.pop_back();
      const LStmt &S = N.Body[I];
      if (!S.Inner || S.K == LStmt::Reduce || !Need.insert(I).second)
        continue;
      if (Materialised.count(I))
        continue;
      Work.insert(Work.end(), S.Args.begin(), S.Args.end());
    }
    return Need;
  }

  static void guarded(const std::string &Guard, KStmt S, KStmts &Out) {
    if (Guard.empty())
      Out.push_back(std::move(S));
    else
      Out.push_back(KStmt::ifThen(Guard, {std::move(S)}));
  }

  /// One loop over the reduced range for `Roots`.
  KStmts phaseLoop(const Nest &N, const std::vector<ExtentId> &Key,
                   const std::vector<unsigned> &Roots, const Cooperation &C,
                   const std::set<unsigned> &Materialised, bool StoreShared) {
    KStmts Body;
    std::vector<unsigned> Axes(N.ReduceAxes.begin(),
                               N.ReduceAxes.begin() + Key.size());
    std::vector<std::string> Extents;
    for (ExtentId E : Key)
      Extents.push_back(extentExpr(F, E));
    unravel("pk_j", Axes, Extents, Body);
    for (unsigned I : needed(N, Roots, Materialised)) {
      const LStmt &S = N.Body[I];
      if (Materialised.count(I)) {
        Body.push_back(KStmt::let(dtypeCppName(S.Type).str(), S.Name,
                                  fmt::format("pk_sh_{}[pk_j]", S.Name)));
        continue;
      }
      Body.push_back(KStmt::compute(I, IndexMode::Indexed));
      if (StoreShared && llvm::is_contained(C.Shared, I))
        Body.push_back(
            KStmt::assign(fmt::format("pk_sh_{}[pk_j]", S.Name), S.Name));
    }
    for (unsigned R : Roots) {
      if (N.Body[R].K == LStmt::Store)
        guarded(C.InnerStoreGuard, KStmt::compute(R, IndexMode::Indexed), Body);
      else
        Body.push_back(KStmt::accUpdate(R));
    }
    KStmts Out;
    Out.push_back(
        KStmt::forLoop("pk_j", C.Start, lenOf(Key), C.Step, std::move(Body)));
    return Out;
  }

  /// Every phase of a row: row values, the loops over the reduced range,
  /// the combines, the finals and the stores.
  KStmts phases(const Nest &N, const Cooperation &C) {
    KStmts Out;
    std::set<unsigned> Materialised; // stored to shared memory already
    unsigned Last = 0;
    for (const LStmt &S : N.Body)
      Last = std::max(Last, S.Phase);
    for (unsigned P = 0; P <= Last; ++P) {
      for (unsigned I = 0; I < N.Body.size(); ++I) {
        const LStmt &S = N.Body[I];
        if (S.Inner || S.K == LStmt::Reduce || S.Phase != P)
          continue;
        if (S.K == LStmt::Store)
          guarded(C.RowStoreGuard, KStmt::compute(I, IndexMode::Indexed), Out);
        else
          Out.push_back(KStmt::compute(I, IndexMode::Indexed));
      }
      std::vector<unsigned> Roots;
      for (unsigned I = 0; I < N.Body.size(); ++I) {
        const LStmt &S = N.Body[I];
        if (S.Phase == P &&
            (S.K == LStmt::Reduce || (S.K == LStmt::Store && S.Inner)))
          Roots.push_back(I);
      }
      std::vector<std::vector<ExtentId>> Keys;
      for (unsigned R : Roots)
        if (!llvm::is_contained(Keys, N.Body[R].LoopExtents))
          Keys.push_back(N.Body[R].LoopExtents);
      for (const std::vector<ExtentId> &Key : Keys) {
        std::vector<unsigned> Mine;
        for (unsigned R : Roots)
          if (N.Body[R].LoopExtents == Key)
            Mine.push_back(R);
        std::vector<std::string> Extents;
        for (ExtentId E : Key)
          Extents.push_back(extentExpr(F, E));
        Out.push_back(KStmt::comment(fmt::format(
            "Phase {}: {} over [{}]", P,
            N.Body[Mine.front()].K == LStmt::Reduce ? "reduce" : "store",
            fmt::join(Extents, ", "))));
        for (unsigned R : Mine)
          if (N.Body[R].K == LStmt::Reduce)
            Out.push_back(KStmt::accInit(R));
        // With kShared, values an earlier phase kept are read back; the
        // other instantiation recomputes them.
        KStmts Kept = phaseLoop(N, Key, Mine, C, Materialised, true);
        KStmts Recomputed = phaseLoop(N, Key, Mine, C, {}, false);
        std::set<unsigned> NowStored;
        for (unsigned I : needed(N, Mine, Materialised))
          if (!Materialised.count(I) && llvm::is_contained(C.Shared, I))
            NowStored.insert(I);
        bool UsesShared =
            !NowStored.empty() ||
            llvm::any_of(needed(N, Mine, Materialised),
                         [&](unsigned I) { return Materialised.count(I) > 0; });
        if (UsesShared)
          Out.push_back(KStmt::staticIf("kShared", std::move(Kept),
                                        std::move(Recomputed)));
        else
          Out.insert(Out.end(), Recomputed.begin(), Recomputed.end());
        Materialised.insert(NowStored.begin(), NowStored.end());
        for (unsigned R : Mine)
          if (N.Body[R].K == LStmt::Reduce)
            C.Combine(R, Out);
        for (unsigned R : Mine)
          if (N.Body[R].K == LStmt::Reduce)
            Out.push_back(KStmt::accFinal(R, lenOf(Key)));
      }
    }
    return Out;
  }

  std::vector<unsigned> reduces(const Nest &N) {
    std::vector<unsigned> R;
    for (unsigned I = 0; I < N.Body.size(); ++I)
      if (N.Body[I].K == LStmt::Reduce)
        R.push_back(I);
    return R;
  }

  std::string accType(const Nest &N, unsigned R) {
    return dtypeCppName(accumulatorType(N, N.Body[R])).str();
  }

  //===--------------------------------------------------------------------===//
  // Row groups: a warp or a block per row
  //===--------------------------------------------------------------------===//

  void rowGroups(const Nest &N, const NestPlan &P, const std::string &Name,
                 kernel::NestKernels &Out) {
    kernel::Kernel K = newKernel(
        N, Name,
        fmt::format("reduction over axis {} of {}, kThreads threads per row",
                    fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain)));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    K.TemplateParams.push_back("int kThreads");

    // Shared row values of one dtype: one dynamic buffer holds
    // kRowsPerBlock rows of each. Every loop that stores or reads them must
    // run over the same length (checked by the launcher), so a thread reads
    // back exactly the elements it stored.
    Cooperation C;
    std::vector<std::string> Lengths; // of the loops that use them
    DType SharedType = DType::F32;
    for (unsigned V : P.SharedRowValues) {
      if (!C.Shared.empty() && N.Body[V].Type != SharedType)
        continue;
      SharedType = N.Body[V].Type;
      C.Shared.push_back(V);
      for (unsigned R = 0; R < N.Body.size(); ++R) {
        const LStmt &Root = N.Body[R];
        if ((Root.K == LStmt::Reduce ||
             (Root.K == LStmt::Store && Root.Inner)) &&
            needed(N, {R}, {}).count(V)) {
          std::string Len = lenOf(Root.LoopExtents);
          if (!llvm::is_contained(Lengths, Len))
            Lengths.push_back(Len);
        }
      }
    }
    if (!C.Shared.empty())
      K.TemplateParams.push_back("bool kShared");
    K.LaunchBounds = "kThreads < 256 ? 256 : kThreads";

    KStmts &B = K.Body;
    B.push_back(KStmt::let("int", "kRowsPerBlock",
                           "kThreads < 256 ? 256 / kThreads : 1"));
    B.push_back(KStmt::strides(IndexMode::Indexed));
    B.push_back(KStmt::let("int", "pk_lane", "threadIdx.x % kThreads"));
    B.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
    std::string SharedLen = Lengths.empty() ? "0" : Lengths.front();
    if (!C.Shared.empty()) {
      K.Shared.push_back(
          {"pk_smem", SharedType,
           fmt::format("kRowsPerBlock * {}{}",
                       C.Shared.size() == 1
                           ? ""
                           : fmt::format("{} * ", C.Shared.size()),
                       SharedLen),
           true});
      B.push_back(KStmt::let("int64_t", "pk_shared_len", SharedLen));
      for (size_t I = 0; I < C.Shared.size(); ++I)
        B.push_back(KStmt::let(
            fmt::format("{} *", dtypeCppName(SharedType)),
            "pk_sh_" + N.Body[C.Shared[I]].Name,
            C.Shared.size() == 1
                ? "pk_smem + int64_t(threadIdx.x / kThreads) * pk_shared_len"
                : fmt::format("pk_smem + (int64_t(threadIdx.x / kThreads) * "
                              "{} + {}) * pk_shared_len",
                              C.Shared.size(), I)));
    }
    for (unsigned R : reduces(N))
      K.Shared.push_back({"pk_red_" + N.Body[R].Name,
                          accumulatorType(N, N.Body[R]), "32", false});
    C.Start = "pk_lane";
    C.Step = "kThreads";
    C.RowStoreGuard = "pk_lane == 0";
    C.Combine = [&](unsigned R, KStmts &Out) {
      Out.push_back(KStmt::warpReduce(R, "kThreads < 32 ? kThreads : 32"));
      Out.push_back(KStmt::staticIf(
          "(kThreads > 32)",
          {KStmt::blockReduce(R, "pk_red_" + N.Body[R].Name, "kThreads")}));
    };
    KStmts Loop;
    unravelRow(N, "pk_row", Loop);
    KStmts Ph = phases(N, C);
    Loop.insert(Loop.end(), Ph.begin(), Ph.end());
    B.push_back(KStmt::forLoop(
        "pk_row",
        "int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kThreads",
        "pk_rows", "int64_t(gridDim.x) * kRowsPerBlock", std::move(Loop)));

    kernel::LaunchStep Step;
    Step.Kernel = Name;
    Step.Args = Args;
    std::vector<std::string> RowLen;
    for (unsigned A : N.ReduceAxes)
      RowLen.push_back(extentExpr(F, N.Domain[A]));
    if (P.Rows.size() > 1)
      Out.Launch.Setup.push_back(
          fmt::format("const int64_t pk_row_len = {};", product(RowLen)));
    if (!C.Shared.empty())
      Out.Launch.Setup.push_back(fmt::format(
          "const int64_t pk_shared_row_bytes = {}{} * sizeof({});", SharedLen,
          C.Shared.size() == 1 ? "" : fmt::format(" * {}", C.Shared.size()),
          dtypeCppName(SharedType)));
    for (size_t I = 0; I < P.Rows.size(); ++I) {
      int Threads = P.Rows[I].Threads;
      int Block = std::max(Threads, 256);
      int RowsPerBlock = Block / Threads;
      std::string Fits = P.Rows[I].UpTo > 0 && I + 1 < P.Rows.size()
                             ? fmt::format("pk_row_len <= {}", P.Rows[I].UpTo)
                             : "";
      std::string Grid =
          fmt::format("pk::cuda::detail::grid_for(pk_work, {})", RowsPerBlock);
      std::string Who =
          Threads == T.WarpSize
              ? fmt::format("a warp per row, {} rows per block", RowsPerBlock)
              : fmt::format("a block of {} threads per row", Threads);
      if (!C.Shared.empty()) {
        std::string Bytes =
            RowsPerBlock == 1
                ? std::string("pk_shared_row_bytes")
                : fmt::format("{} * pk_shared_row_bytes", RowsPerBlock);
        std::string SharedFits =
            fmt::format("{} <= {}", Bytes, T.SharedBytesPerBlock);
        for (size_t L = 1; L < Lengths.size(); ++L)
          SharedFits += fmt::format(" && {} == {}", Lengths[L], Lengths[0]);
        Step.Variants.push_back(
            {Fits.empty() ? SharedFits : Fits + " && " + SharedFits,
             fmt::format("{}, true", Threads), Grid, std::to_string(Block), "1",
             Bytes, Who + ", kept values in shared memory"});
        Step.Variants.push_back({Fits, fmt::format("{}, false", Threads), Grid,
                                 std::to_string(Block), "1", "0",
                                 Who + ", kept values recomputed"});
      } else {
        Step.Variants.push_back({Fits, std::to_string(Threads), Grid,
                                 std::to_string(Block), "1", "0", Who});
      }
    }
    Out.Launch.Work = rowCount(F, N);
    Out.Launch.Steps.push_back(std::move(Step));
    Out.Kernels.push_back(std::move(K));
  }

  //===--------------------------------------------------------------------===//
  // Columns: the last axis kept
  //===--------------------------------------------------------------------===//

  void columns(const Nest &N, const NestPlan &P, const std::string &Name,
               kernel::NestKernels &Out) {
    kernel::Kernel K = newKernel(
        N, Name,
        fmt::format("reduction over axis {} of {}, {} x {} threads per block",
                    fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain),
                    P.BlockX, P.BlockY));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    int Threads = P.BlockX * P.BlockY;
    K.LaunchBounds = std::to_string(Threads);
    for (unsigned R : reduces(N))
      K.Shared.push_back({"pk_col_" + N.Body[R].Name,
                          accumulatorType(N, N.Body[R]),
                          std::to_string(Threads), false});
    KStmts &B = K.Body;
    B.push_back(KStmt::strides(IndexMode::Indexed));
    B.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
    Cooperation C;
    C.Start = "threadIdx.y";
    C.Step = "blockDim.y";
    C.RowStoreGuard = "pk_active && threadIdx.y == 0";
    C.InnerStoreGuard = "pk_active";
    C.Combine = [&](unsigned R, KStmts &Out) {
      const LStmt &S = N.Body[R];
      std::string Part = "pk_col_" + S.Name;
      std::string Acc = accumulatorVar(S);
      Out.push_back(KStmt::assign(
          fmt::format("{}[threadIdx.y * blockDim.x + threadIdx.x]", Part),
          Acc));
      Out.push_back(KStmt::barrier());
      Out.push_back(KStmt::assign(Acc, Part + "[threadIdx.x]"));
      Out.push_back(KStmt::forLoop(
          "pk_y", "1", "blockDim.y", "1",
          {KStmt::accUpdate(R, Part + "[pk_y * blockDim.x + threadIdx.x]")}));
      // The next phase (or row tile) writes the partials again.
      Out.push_back(KStmt::barrier());
    };
    KStmts Tile;
    Tile.push_back(
        KStmt::let("int64_t", "pk_row_raw", "pk_tile + threadIdx.x"));
    Tile.push_back(KStmt::let("bool", "pk_active", "pk_row_raw < pk_rows"));
    Tile.push_back(KStmt::let("int64_t", "pk_row",
                              "pk_active ? pk_row_raw : pk_rows - 1"));
    unravelRow(N, "pk_row", Tile);
    KStmts Ph = phases(N, C);
    Tile.insert(Tile.end(), Ph.begin(), Ph.end());
    B.push_back(KStmt::forLoop("pk_tile", "int64_t(blockIdx.x) * blockDim.x",
                               "pk_rows", "int64_t(gridDim.x) * blockDim.x",
                               std::move(Tile)));
    Out.Launch.Work = rowCount(F, N);
    Out.Launch.Steps.push_back(
        {Name,
         Args,
         {{"", "",
           fmt::format("pk::cuda::detail::grid_for(pk_work, {})", P.BlockX),
           std::to_string(P.BlockX), std::to_string(P.BlockY), "0",
           fmt::format("{} kept elements per block, the reduced range in {} "
                       "slices",
                       P.BlockX, P.BlockY)}}});
    Out.Kernels.push_back(std::move(K));
    if (P.MaxPartials > 0)
      columnSlices(N, P, Name, C.Combine, Out);
  }

  /// A one-phase column reduction over a long reduced range: blocks along y
  /// take slices of it and write partials per kept element; a second kernel
  /// folds the slices, finalises and stores. Taken by the launcher when the
  /// column tiles alone would leave SMs idle.
  void columnSlices(const Nest &N, const NestPlan &P, const std::string &Name,
                    const std::function<void(unsigned, KStmts &)> &Combine,
                    kernel::NestKernels &Out) {
    std::vector<unsigned> Rs = reduces(N);
    const std::vector<ExtentId> &Key = N.Body[Rs.front()].LoopExtents;
    int Threads = P.BlockX * P.BlockY;

    kernel::Kernel K1 = newKernel(
        N, Name + "_slices",
        fmt::format("reduction over axis {} of {}, stage 1: blocks along y "
                    "fold slices of the reduced range into partials",
                    fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain)));
    std::vector<std::string> Args1;
    addNestParams(N, K1, Args1);
    K1.LaunchBounds = std::to_string(Threads);
    for (unsigned R : Rs) {
      K1.Params.push_back(
          {accType(N, R) + " *__restrict__", "pk_slice_" + N.Body[R].Name});
      Args1.push_back("pk_slice_" + N.Body[R].Name + ".get()");
      K1.Shared.push_back({"pk_col_" + N.Body[R].Name,
                           accumulatorType(N, N.Body[R]),
                           std::to_string(Threads), false});
    }
    KStmts &B1 = K1.Body;
    B1.push_back(KStmt::strides(IndexMode::Indexed));
    B1.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
    KStmts Tile;
    Tile.push_back(
        KStmt::let("int64_t", "pk_row_raw", "pk_tile + threadIdx.x"));
    Tile.push_back(KStmt::let("bool", "pk_active", "pk_row_raw < pk_rows"));
    Tile.push_back(KStmt::let("int64_t", "pk_row",
                              "pk_active ? pk_row_raw : pk_rows - 1"));
    unravelRow(N, "pk_row", Tile);
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const LStmt &S = N.Body[I];
      if (!S.Inner && S.K != LStmt::Reduce && S.K != LStmt::Store &&
          S.Phase == 0)
        Tile.push_back(KStmt::compute(I, IndexMode::Indexed));
    }
    for (unsigned R : Rs)
      Tile.push_back(KStmt::accInit(R));
    Cooperation C;
    C.Start = "int64_t(blockIdx.y) * blockDim.y + threadIdx.y";
    C.Step = "int64_t(gridDim.y) * blockDim.y";
    KStmts Loop = phaseLoop(N, Key, Rs, C, {}, false);
    Tile.insert(Tile.end(), Loop.begin(), Loop.end());
    KStmts Publish;
    for (unsigned R : Rs) {
      Combine(R, Tile);
      Publish.push_back(KStmt::assign(
          fmt::format("pk_slice_{}[blockIdx.y * pk_rows + pk_row]",
                      N.Body[R].Name),
          accumulatorVar(N.Body[R])));
    }
    Tile.push_back(
        KStmt::ifThen("pk_active && threadIdx.y == 0", std::move(Publish)));
    B1.push_back(KStmt::forLoop("pk_tile", "int64_t(blockIdx.x) * blockDim.x",
                                "pk_rows", "int64_t(gridDim.x) * blockDim.x",
                                std::move(Tile)));

    kernel::Kernel K2 = newKernel(
        N, Name + "_fold",
        "stage 2: one thread per kept element folds the slices, then the row "
        "values and stores");
    std::vector<std::string> Args2;
    addNestParams(N, K2, Args2);
    for (unsigned R : Rs) {
      K2.Params.push_back({"const " + accType(N, R) + " *__restrict__",
                           "pk_slice_" + N.Body[R].Name});
      Args2.push_back("pk_slice_" + N.Body[R].Name + ".get()");
    }
    K2.Params.push_back({"const int64_t", "pk_slices"});
    Args2.push_back("pk_slices");
    K2.LaunchBounds = "256";
    KStmts &B2 = K2.Body;
    B2.push_back(KStmt::strides(IndexMode::Indexed));
    B2.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
    KStmts Row;
    unravelRow(N, "pk_row", Row);
    for (unsigned R : Rs) {
      Row.push_back(KStmt::accInit(R));
      Row.push_back(KStmt::forLoop(
          "pk_s", "0", "pk_slices", "1",
          {KStmt::accUpdate(R, fmt::format("pk_slice_{}[pk_s * pk_rows + "
                                           "pk_row]",
                                           N.Body[R].Name))}));
      Row.push_back(KStmt::accFinal(R, lenOf(Key)));
    }
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const LStmt &S = N.Body[I];
      if (!S.Inner && S.K != LStmt::Reduce)
        Row.push_back(KStmt::compute(I, IndexMode::Indexed));
    }
    B2.push_back(KStmt::forLoop(
        "pk_row", "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", "pk_rows",
        "int64_t(gridDim.x) * blockDim.x", std::move(Row)));

    kernel::NestLaunch &L = Out.Launch;
    L.Setup.push_back(fmt::format(
        "const int64_t pk_slices = pk::cuda::detail::column_slices(pk_work, "
        "{}, {}, {}, {});",
        lenOf(Key), P.BlockX, P.BlockY, P.MaxPartials));
    L.SplitWhen = "pk_slices > 1";
    for (unsigned R : Rs)
      L.SplitSetup.push_back(fmt::format(
          "pk::cuda::detail::DeviceScratch<{}> pk_slice_{}(pk_slices * "
          "pk_work, pk_stream, {});",
          accType(N, R), N.Body[R].Name, stringLiteral(F.Name)));
    L.SplitSteps.push_back(
        {K1.Name,
         Args1,
         {{"", "",
           fmt::format("dim3(pk::cuda::detail::grid_for(pk_work, {}), "
                       "unsigned(pk_slices))",
                       P.BlockX),
           std::to_string(P.BlockX), std::to_string(P.BlockY), "0",
           "column tiles x slices of the reduced range"}}});
    L.SplitSteps.push_back(
        {K2.Name,
         Args2,
         {{"", "", "pk::cuda::detail::grid_for(pk_work, 256)", "256", "1", "0",
           "one thread per kept element"}}});
    Out.Kernels.push_back(std::move(K1));
    Out.Kernels.push_back(std::move(K2));
  }

  //===--------------------------------------------------------------------===//
  // Gemm: shared-memory tiles, register tiles
  //===--------------------------------------------------------------------===//

  /// B's columns per vector read of a register tile: as many as fit 16
  /// bytes and divide TN.
  static int vectorColumns(DType T, int TN) {
    int V = 16 / static_cast<int>(dtypeBytes(T));
    while (V > 1 && TN % V != 0)
      V /= 2;
    return V;
  }

  /// The domain axis along which the first load among `Stmts` reads
  /// consecutive elements (the one indexing its ref's last axis), -1 when
  /// there is none.
  static int contiguousAxis(const Nest &N, const std::vector<unsigned> &Stmts) {
    for (unsigned I : Stmts)
      if (N.Body[I].K == LStmt::Load && !N.Body[I].Dims.empty())
        return N.Body[I].Dims.back();
    return -1;
  }

  /// A BM x BN tile of C per block (grid-stride over the tiles of every
  /// batch), K in steps of BK: the block stages A[BM x BK] (transposed, so
  /// a thread's TM rows are contiguous) and B[BK x BN] in shared memory,
  /// each row padded by 4 elements so that the staging stores of a warp hit
  /// 32 different banks; every thread then accumulates its TM x TN register
  /// tile: TM consecutive rows, and TN columns strided by BN / TN, so that
  /// the 16 threads of a row read 16 consecutive banks of pk_bs and store
  /// consecutive elements. The epilogue runs on the registers and stores
  /// each element once.
  void gemm(const Nest &N, const NestPlan &P, const std::string &Name,
            kernel::NestKernels &Out) {
    std::optional<loop::GemmPattern> Match = loop::matchGemm(N);
    assert(Match && "the schedule said gemm");
    const loop::GemmPattern &G = *Match;
    kernel::Kernel K =
        newKernel(N, Name,
                  fmt::format("matrix product over {}, a BM x BN tile of C "
                              "per block, TM x TN per thread",
                              shapeToString(F, N.Domain)));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    K.TemplateParams = {"int BM", "int BN", "int TM", "int TN", "int VB"};
    K.LaunchBounds = std::to_string(P.BlockX);
    const int BK = P.GemmBK;
    const std::string Ty = dtypeCppName(G.Type).str();
    K.Shared.push_back(
        {"pk_as", G.Type, fmt::format("2 * {} * (BM + 4)", BK), false, 16});
    K.Shared.push_back(
        {"pk_bs", G.Type, fmt::format("2 * {} * (BN + 4)", BK), false, 16});
    const std::string M = extentExpr(F, N.Domain[G.MAxis]);
    const std::string Ncols = extentExpr(F, N.Domain[G.NAxis]);
    const std::string Kext = extentExpr(F, G.K);
    // "b * " before a tile count, "" without batches.
    const std::string Batch =
        G.BatchAxis < 0 ? "" : extentExpr(F, N.Domain[G.BatchAxis]) + " * ";
    const std::string IM = indexVar(G.MAxis), IN = indexVar(G.NAxis),
                      IK = indexVar(G.KAxis);

    KStmts &B = K.Body;
    B.push_back(KStmt::strides(IndexMode::Indexed));
    B.push_back(KStmt::let("int", "pk_tx", "threadIdx.x % (BN / TN)"));
    B.push_back(KStmt::let("int", "pk_ty", "threadIdx.x / (BN / TN)"));
    B.push_back(KStmt::let("int64_t", "pk_tiles_m",
                           fmt::format("({} + BM - 1) / BM", M)));
    B.push_back(KStmt::let("int64_t", "pk_tiles_n",
                           fmt::format("({} + BN - 1) / BN", Ncols)));
    KStmts Tile;
    if (G.BatchAxis >= 0)
      Tile.push_back(KStmt::let("int64_t", indexVar(G.BatchAxis),
                                "pk_tile / (pk_tiles_m * pk_tiles_n)"));
    Tile.push_back(KStmt::let("int64_t", "pk_m0",
                              "pk_tile / pk_tiles_n % pk_tiles_m * BM"));
    Tile.push_back(KStmt::let("int64_t", "pk_n0", "pk_tile % pk_tiles_n * BN"));
    Tile.push_back(KStmt::var(Ty, "pk_acc[TM][TN]", "{}"));

    // One operand's tile (Rows x Cols) into shared memory, zeros past the
    // edges. Consecutive threads take consecutive elements along the axis
    // the operand's first load steps through contiguously (its ref's last
    // axis), so a warp's loads coalesce for a transposed operand too.
    auto Stage = [&](const char *What, const std::string &Rows,
                     const std::string &Cols, unsigned RowAxis,
                     const std::string &Row0, const std::string &RowEnd,
                     unsigned ColAxis, const std::string &Col0,
                     const std::string &ColEnd,
                     const std::function<std::string(
                         const std::string &, const std::string &)> &Slot,
                     const std::vector<unsigned> &Stmts, unsigned Value) {
      bool RowFast = contiguousAxis(N, Stmts) == static_cast<int>(RowAxis);
      std::string R = RowFast ? fmt::format("pk_e % {}", Rows)
                              : fmt::format("pk_e / {}", Cols);
      std::string C = RowFast ? fmt::format("pk_e / {}", Rows)
                              : fmt::format("pk_e % {}", Cols);
      KStmts Body;
      Body.push_back(KStmt::let("int64_t", indexVar(RowAxis),
                                fmt::format("{} + {}", Row0, R)));
      Body.push_back(KStmt::let("int64_t", indexVar(ColAxis),
                                fmt::format("{} + {}", Col0, C)));
      Body.push_back(KStmt::var(Ty, "pk_v", literal(G.Type, 0, 0)));
      KStmts Load;
      for (unsigned I : Stmts)
        Load.push_back(KStmt::compute(I, IndexMode::Indexed));
      std::string V = valueRef(N, Value);
      if (N.Body[Value].Type != G.Type)
        V = fmt::format("static_cast<{}>({})", Ty, V);
      Load.push_back(KStmt::assign("pk_v", V));
      Body.push_back(
          KStmt::ifThen(fmt::format("{} < {} && {} < {}", indexVar(RowAxis),
                                    RowEnd, indexVar(ColAxis), ColEnd),
                        std::move(Load)));
      Body.push_back(KStmt::assign(Slot(R, C), "pk_v"));
      KStmts Loop;
      Loop.push_back(
          KStmt::comment(fmt::format("{}, consecutive threads along {}", What,
                                     RowFast ? "its rows" : "its columns")));
      Loop.push_back(KStmt::forLoop("pk_e", "threadIdx.x",
                                    fmt::format("{} * {}", Rows, Cols),
                                    std::to_string(P.BlockX), std::move(Body)));
      return Loop;
    };
    const std::string BKs = std::to_string(BK);
    // Two buffers of each tile (double buffering): while the block
    // multiplies the tiles of step s from buffer s % 2, it stages step s +
    // 1 into the other, so one barrier per step separates them and the
    // global loads of the next step overlap this step's multiply-adds.
    const std::string ASize = fmt::format("{} * (BM + 4)", BK),
                      BSize = fmt::format("{} * (BN + 4)", BK);
    auto StageInto = [&](const std::string &Buf) {
      KStmts Out;
      for (KStmts Part :
           {Stage(
                "A[m0.., k0..] -> pk_as (k-major)", "BM", BKs, G.MAxis, "pk_m0",
                M, G.KAxis, "pk_k0", Kext,
                [&](const std::string &R, const std::string &C) {
                  return fmt::format("pk_as[{} * {} + ({}) * (BM + 4) + {}]",
                                     Buf, ASize, C, R);
                },
                G.AStmts, G.A),
            Stage(
                "B[k0.., n0..] -> pk_bs", BKs, "BN", G.KAxis, "pk_k0", Kext,
                G.NAxis, "pk_n0", Ncols,
                [&](const std::string &R, const std::string &C) {
                  return fmt::format("pk_bs[{} * {} + ({}) * (BN + 4) + {}]",
                                     Buf, BSize, R, C);
                },
                G.BStmts, G.B)})
        Out.insert(Out.end(), Part.begin(), Part.end());
      return Out;
    };
    Tile.push_back(KStmt::let("int64_t", "pk_steps",
                              fmt::format("({} + {}) / {}", Kext, BK - 1, BK)));
    KStmts First = {KStmt::let("int64_t", "pk_k0", "0")};
    for (KStmt &S : StageInto("0"))
      First.push_back(std::move(S));
    Tile.push_back(KStmt::ifThen("pk_steps > 0", std::move(First)));
    Tile.push_back(KStmt::barrier());

    KStmts Step;
    Step.push_back(KStmt::let("int64_t", "pk_cur", "pk_step % 2"));
    KStmts Next = {
        KStmt::let("int64_t", "pk_k0", fmt::format("(pk_step + 1) * {}", BK))};
    for (KStmt &S : StageInto("(1 - pk_cur)"))
      Next.push_back(std::move(S));
    Step.push_back(KStmt::ifThen("pk_step + 1 < pk_steps", std::move(Next)));
    // Register-tile reads: A's TM rows are consecutive, B's TN columns are
    // groups of VB consecutive ones, (BN / TN) * VB apart, so each read is
    // a 64- or 128-bit load and a row of 16 threads reads consecutive words.
    KStmts Inner;
    Inner.push_back(KStmt::var(Ty, "pk_a[TM]", "{}"));
    Inner.push_back(KStmt::var(Ty, "pk_b[TN]", "{}"));
    Inner.push_back(KStmt::call(fmt::format(
        "pk::cuda::detail::load_lanes<TM>(&pk_as[pk_cur * {} + pk_kk * (BM + "
        "4) + pk_ty * TM], pk_a)",
        ASize)));
    KStmt LoadB = KStmt::forLoop(
        "pk_g", "0", "TN / VB", "1",
        {KStmt::call(fmt::format(
            "pk::cuda::detail::load_lanes<VB>(&pk_bs[pk_cur * {} + pk_kk * "
            "(BN + 4) + pk_g * (BN / TN) * VB + pk_tx * VB], &pk_b[pk_g * VB])",
            BSize))});
    KStmt Fma = KStmt::forLoop(
        "pk_c", "0", "TN", "1",
        {KStmt::assign("pk_acc[pk_r][pk_c]", "pk_acc[pk_r][pk_c] + pk_a[pk_r] "
                                             "* pk_b[pk_c]")});
    KStmt Rows = KStmt::forLoop("pk_r", "0", "TM", "1", {Fma});
    for (KStmt *L : {&LoadB, &Fma, &Rows})
      L->Unroll = true;
    Rows.Body[0].Unroll = true;
    Inner.push_back(std::move(LoadB));
    Inner.push_back(std::move(Rows));
    KStmt KK =
        KStmt::forLoop("pk_kk", "0", std::to_string(BK), "1", std::move(Inner));
    KK.Unroll = true;
    Step.push_back(KStmt::comment("Each thread: its TM x TN tile += "
                                  "pk_as[:, rows] x pk_bs[:, columns]"));
    Step.push_back(std::move(KK));
    Step.push_back(KStmt::barrier());
    Tile.push_back(
        KStmt::forLoop("pk_step", "0", "pk_steps", "1", std::move(Step)));

    // The epilogue on the registers: the consumers and the stores.
    const LStmt &R = N.Body[G.Reduce];
    KStmts Elem;
    Elem.push_back(KStmt::let(Ty, R.Name, "pk_acc[pk_r][pk_c]"));
    for (unsigned I : G.Epilogue)
      if (I != G.Reduce)
        Elem.push_back(KStmt::compute(I, IndexMode::Indexed));
    KStmt Cols = KStmt::forLoop(
        "pk_c", "0", "TN", "1",
        {KStmt::let("int64_t", IN,
                    "pk_n0 + pk_c / VB * (BN / TN) * VB + pk_tx * VB + "
                    "pk_c % VB"),
         KStmt::ifThen(fmt::format("{} < {} && {} < {}", IM, M, IN, Ncols),
                       std::move(Elem))});
    Cols.Unroll = true;
    KStmt EpiRows = KStmt::forLoop(
        "pk_r", "0", "TM", "1",
        {KStmt::let("int64_t", IM, "pk_m0 + pk_ty * TM + pk_r"), Cols});
    EpiRows.Unroll = true;
    Tile.push_back(KStmt::comment("Epilogue: the consumers of the product, "
                                  "on the registers, then the stores"));
    Tile.push_back(std::move(EpiRows));
    B.push_back(KStmt::forLoop("pk_tile", "blockIdx.x",
                               fmt::format("{}pk_tiles_m * pk_tiles_n", Batch),
                               "gridDim.x", std::move(Tile)));

    kernel::LaunchStep LS;
    LS.Kernel = Name;
    LS.Args = Args;
    Out.Launch.Setup.push_back(
        "const int64_t pk_sms = pk::cuda::detail::sm_count();");
    for (size_t I = 0; I < P.GemmTiles.size(); ++I) {
      const gpu::GemmTile &T = P.GemmTiles[I];
      std::string Tiles = fmt::format("pk_tiles_{}x{}", T.BM, T.BN);
      Out.Launch.Setup.push_back(fmt::format(
          "const int64_t {} = {}(({} + {}) / {}) * (({} + {}) / {});", Tiles,
          Batch, M, T.BM - 1, T.BM, Ncols, T.BN - 1, T.BN));
      bool Last = I + 1 == P.GemmTiles.size();
      LS.Variants.push_back(
          {Last ? "" : fmt::format("{} >= pk_sms", Tiles),
           fmt::format("{}, {}, {}, {}, {}", T.BM, T.BN, T.TM, T.TN,
                       vectorColumns(G.Type, T.TN)),
           fmt::format("pk::cuda::detail::grid_for({}, 1)", Tiles),
           std::to_string(P.BlockX), "1", "0",
           fmt::format("{} x {} tiles, {} x {} per thread{}", T.BM, T.BN, T.TM,
                       T.TN, Last ? "" : ": enough of them for every SM")});
    }
    Out.Launch.Work = rowCount(F, N);
    Out.Launch.Steps.push_back(std::move(LS));
    Out.Kernels.push_back(std::move(K));
  }

  //===--------------------------------------------------------------------===//
  // Attention: a warp per query row, online softmax over the keys
  //===--------------------------------------------------------------------===//

  /// Per query row (batch, t) one warp runs the keys in order: the lanes
  /// split q . k over the head dimension (a butterfly leaves the sum in
  /// every lane, so all lanes take the same branches), update the running
  /// max pk_m and sum pk_l, and rescale their kCols output columns. Outputs
  /// wider than 32 kCols run in chunks, each recomputing the scores.
  void attention(const Nest &N, const NestPlan &P, const std::string &Name,
                 kernel::NestKernels &Out) {
    const loop::AttentionParts &A = *N.Attention;
    kernel::Kernel K = newKernel(
        N, Name,
        fmt::format("attention over {}: a warp per query row, kCols output "
                    "columns per lane",
                    shapeToString(F, N.Domain)));
    for (const std::string &Note : P.Notes)
      K.Notes.push_back(Note);
    std::vector<std::string> Args;
    addNestParams(N, K, Args);
    K.TemplateParams = {"int kCols"};
    K.LaunchBounds = std::to_string(P.BlockX);
    const int Warps = P.BlockX / T.WarpSize;
    const LStmt &QK = N.Body[A.QK];
    const DType DT = QK.Type;
    const std::string Ty = dtypeCppName(DT).str();
    auto Ext = [&](unsigned Axis) { return extentExpr(F, N.Domain[Axis]); };
    const std::string NegInf = fmt::format("-INFINITY");
    const std::string J = Ext(A.JAxis), Col = indexVar(A.JAxis);
    const std::string M = N.Body[A.Max].Name;
    auto Computes = [&](const std::vector<unsigned> &Stmts, KStmts &Into) {
      for (unsigned I : Stmts)
        Into.push_back(KStmt::compute(I, IndexMode::Indexed));
    };

    KStmts &B = K.Body;
    B.push_back(KStmt::strides(IndexMode::Indexed));
    B.push_back(KStmt::let("int", "pk_lane", "threadIdx.x % 32"));
    std::vector<unsigned> RowAxes;
    std::vector<std::string> RowExtents;
    if (A.BatchAxis >= 0) {
      RowAxes.push_back(A.BatchAxis);
      RowExtents.push_back(Ext(A.BatchAxis));
    }
    RowAxes.push_back(A.TAxis);
    RowExtents.push_back(Ext(A.TAxis));
    B.push_back(KStmt::let("int64_t", "pk_rows", product(RowExtents)));

    // One key: q . k, the score, the online softmax update.
    KStmts Key;
    Key.push_back(KStmt::accInit(A.QK));
    KStmts Dot;
    Computes(A.Dot, Dot);
    Dot.push_back(KStmt::accUpdate(A.QK));
    Key.push_back(KStmt::forLoop(indexVar(A.DAxis), "pk_lane", Ext(A.DAxis),
                                 "32", std::move(Dot)));
    Key.push_back(KStmt::warpReduce(A.QK, "32"));
    Key.push_back(KStmt::accFinal(A.QK, ""));
    Computes(A.ScoreStmts, Key);
    Key.push_back(KStmt::let(Ty, M,
                             applyOp(OpCode::Maximum, Backend::Cuda, DT,
                                     {"pk_m", valueRef(N, A.Score)})));
    KStmts Update;
    Update.push_back(KStmt::let(
        Ty, "pk_rescale",
        fmt::format("{} == pk_m ? {} : {}", M, literal(DT, 1, 1),
                    applyOp(OpCode::Exp, Backend::Cuda, DT, {"pk_m - " + M}))));
    Update.push_back(KStmt::compute(N.Body[A.Exp].Args[0], IndexMode::Indexed));
    Update.push_back(KStmt::compute(A.Exp, IndexMode::Indexed));
    Update.push_back(KStmt::assign(
        "pk_l", fmt::format("pk_l * pk_rescale + {}", N.Body[A.Exp].Name)));
    KStmts Lane;
    Computes(A.ValueStmts, Lane);
    unsigned EV = N.Body[A.Acc].Args[0];
    Lane.push_back(KStmt::compute(EV, IndexMode::Indexed));
    Lane.push_back(KStmt::assign(
        "pk_out[pk_u]",
        fmt::format("pk_out[pk_u] * pk_rescale + {}", N.Body[EV].Name)));
    KStmt Cols = KStmt::forLoop(
        "pk_u", "0", "kCols", "1",
        {KStmt::let("int64_t", Col, "pk_j0 + pk_lane + 32 * pk_u"),
         KStmt::ifThen(fmt::format("{} < {}", Col, J), std::move(Lane))});
    Cols.Unroll = true;
    Update.push_back(std::move(Cols));
    Update.push_back(KStmt::assign("pk_m", M));
    Key.push_back(KStmt::comment(
        "Online softmax: a masked key (-inf) before any other adds nothing"));
    Key.push_back(
        KStmt::ifThen(fmt::format("{} != {}", M, NegInf), std::move(Update)));

    KStmts Chunk;
    Chunk.push_back(KStmt::var(Ty, "pk_out[kCols]", "{}"));
    Chunk.push_back(KStmt::var(Ty, "pk_m", NegInf));
    Chunk.push_back(KStmt::var(Ty, "pk_l", literal(DT, 0, 0)));
    std::string KeyEnd = Ext(A.SAxis);
    if (A.CausalIndex) {
      // Causal: keys after the query's own are masked; stop there.
      Chunk.push_back(
          KStmt::let("int64_t", "pk_keys_visible",
                     fmt::format("{}{}", indexValue(F, N.Body[*A.CausalIndex]),
                                 A.CausalInclusive ? " + 1" : "")));
      Chunk.push_back(
          KStmt::let("int64_t", "pk_keys",
                     fmt::format("pk_keys_visible < {} ? pk_keys_visible : {}",
                                 KeyEnd, KeyEnd)));
      KeyEnd = "pk_keys";
    }
    Chunk.push_back(
        KStmt::forLoop(indexVar(A.SAxis), "0", KeyEnd, "1", std::move(Key)));
    Chunk.push_back(KStmt::let(Ty, N.Body[A.Sum].Name, "pk_l"));
    KStmts Store;
    Store.push_back(KStmt::let(Ty, N.Body[A.Acc].Name, "pk_out[pk_u]"));
    Computes(A.Epilogue, Store);
    KStmt Stores = KStmt::forLoop(
        "pk_u", "0", "kCols", "1",
        {KStmt::let("int64_t", Col, "pk_j0 + pk_lane + 32 * pk_u"),
         KStmt::ifThen(fmt::format("{} < {}", Col, J), std::move(Store))});
    Stores.Unroll = true;
    Chunk.push_back(std::move(Stores));

    KStmts Row;
    unravel("pk_row", RowAxes, RowExtents, Row);
    Row.push_back(
        KStmt::forLoop("pk_j0", "0", J, "32 * kCols", std::move(Chunk)));
    B.push_back(KStmt::forLoop(
        "pk_row",
        fmt::format("int64_t(blockIdx.x) * {} + threadIdx.x / 32", Warps),
        "pk_rows", fmt::format("int64_t(gridDim.x) * {}", Warps),
        std::move(Row)));

    kernel::LaunchStep LS;
    LS.Kernel = Name;
    LS.Args = Args;
    for (size_t I = 0; I < P.ColumnsPerLane.size(); ++I) {
      int C = P.ColumnsPerLane[I];
      bool Last = I + 1 == P.ColumnsPerLane.size();
      LS.Variants.push_back(
          {Last ? "" : fmt::format("{} <= {}", J, 32 * C), std::to_string(C),
           fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Warps),
           std::to_string(P.BlockX), "1", "0",
           Last ? fmt::format("{} output columns per lane, in chunks of {}", C,
                              32 * C)
                : fmt::format("{} output column{} per lane", C,
                              C == 1 ? "" : "s")});
    }
    Out.Launch.Work = product(RowExtents);
    Out.Launch.Steps.push_back(std::move(LS));
    Out.Kernels.push_back(std::move(K));
  }

  //===--------------------------------------------------------------------===//
  // Two stages: a full reduction
  //===--------------------------------------------------------------------===//

  void twoStage(const Nest &N, const NestPlan &P, const std::string &Name,
                kernel::NestKernels &Out) {
    std::vector<unsigned> Rs = reduces(N);
    const std::vector<ExtentId> &Key = N.Body[Rs.front()].LoopExtents;
    std::string Len = lenOf(Key);
    std::string Block = std::to_string(P.BlockX);

    // Stage 1: per-block partials.
    kernel::Kernel K1 =
        newKernel(N, Name + "_partials",
                  fmt::format("full reduction of {}, stage 1: each block "
                              "folds a grid-stride share into one partial",
                              shapeToString(F, N.Domain)));
    for (const std::string &Note : P.Notes)
      K1.Notes.push_back(Note);
    std::vector<std::string> Args1;
    addNestParams(N, K1, Args1);
    for (unsigned R : Rs) {
      K1.Params.push_back(
          {accType(N, R) + " *__restrict__", "pk_part_" + N.Body[R].Name});
      Args1.push_back("pk_part_" + N.Body[R].Name + ".get()");
      K1.Shared.push_back({"pk_red_" + N.Body[R].Name,
                           accumulatorType(N, N.Body[R]), "32", false});
    }
    K1.LaunchBounds = Block;
    KStmts &B1 = K1.Body;
    B1.push_back(KStmt::strides(IndexMode::Indexed));
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const LStmt &S = N.Body[I];
      if (!S.Inner && S.K != LStmt::Reduce && S.K != LStmt::Store &&
          S.Phase == 0)
        B1.push_back(KStmt::compute(I, IndexMode::Indexed));
    }
    for (unsigned R : Rs)
      B1.push_back(KStmt::accInit(R));
    Cooperation C;
    C.Start = "int64_t(blockIdx.x) * blockDim.x + threadIdx.x";
    C.Step = "int64_t(gridDim.x) * blockDim.x";
    KStmts Loop = phaseLoop(N, Key, Rs, C, {}, false);
    B1.insert(B1.end(), Loop.begin(), Loop.end());
    KStmts Publish;
    for (unsigned R : Rs) {
      B1.push_back(KStmt::warpReduce(R, "32"));
      B1.push_back(KStmt::blockReduce(R, "pk_red_" + N.Body[R].Name, Block));
      Publish.push_back(
          KStmt::assign(fmt::format("pk_part_{}[blockIdx.x]", N.Body[R].Name),
                        accumulatorVar(N.Body[R])));
    }
    B1.push_back(KStmt::ifThen("threadIdx.x == 0", std::move(Publish)));

    // Stage 2: one block folds the partials and runs the consumers.
    kernel::Kernel K2 = newKernel(
        N, Name + "_final",
        "stage 2: one block folds the partials, then the row values and "
        "stores");
    std::vector<std::string> Args2;
    addNestParams(N, K2, Args2);
    for (unsigned R : Rs) {
      K2.Params.push_back({"const " + accType(N, R) + " *__restrict__",
                           "pk_part_" + N.Body[R].Name});
      Args2.push_back("pk_part_" + N.Body[R].Name + ".get()");
      K2.Shared.push_back({"pk_red_" + N.Body[R].Name,
                           accumulatorType(N, N.Body[R]), "32", false});
    }
    K2.Params.push_back({"const int64_t", "pk_nparts"});
    Args2.push_back("pk_nparts");
    K2.LaunchBounds = Block;
    KStmts &B2 = K2.Body;
    B2.push_back(KStmt::strides(IndexMode::Indexed));
    for (unsigned R : Rs) {
      B2.push_back(KStmt::accInit(R));
      B2.push_back(KStmt::forLoop(
          "pk_p", "threadIdx.x", "pk_nparts", "blockDim.x",
          {KStmt::accUpdate(R, "pk_part_" + N.Body[R].Name + "[pk_p]")}));
      B2.push_back(KStmt::warpReduce(R, "32"));
      B2.push_back(KStmt::blockReduce(R, "pk_red_" + N.Body[R].Name, Block));
      B2.push_back(KStmt::accFinal(R, Len));
    }
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const LStmt &S = N.Body[I];
      if (S.Inner || S.K == LStmt::Reduce)
        continue;
      if (S.K == LStmt::Store)
        guarded("threadIdx.x == 0", KStmt::compute(I, IndexMode::Indexed), B2);
      else
        B2.push_back(KStmt::compute(I, IndexMode::Indexed));
    }

    kernel::NestLaunch &L = Out.Launch;
    L.Work = "1";
    L.Setup.push_back(fmt::format("const int64_t pk_len = {};", Len));
    L.Setup.push_back(
        fmt::format("const int64_t pk_nparts = std::min<int64_t>("
                    "pk::cuda::detail::grid_for(pk_len, {}), {});",
                    Block, P.MaxPartials));
    for (unsigned R : Rs)
      L.Setup.push_back(fmt::format(
          "pk::cuda::detail::DeviceScratch<{}> pk_part_{}(pk_nparts, "
          "pk_stream, {});",
          accType(N, R), N.Body[R].Name, stringLiteral(F.Name)));
    L.Steps.push_back(
        {K1.Name,
         Args1,
         {{"", "", "pk_nparts", Block, "1", "0", "one partial per block"}}});
    L.Steps.push_back(
        {K2.Name, Args2, {{"", "", "1", Block, "1", "0", "one block"}}});
    Out.Kernels.push_back(std::move(K1));
    Out.Kernels.push_back(std::move(K2));
  }

  const gpu::Program &Plan;
  const Function &F;
  const gpu::GpuTarget &T;
};

} // namespace

kernel::Program pk::cuda::lowerToKernels(const gpu::Program &Plan) {
  return NestsToKernels(Plan).run();
}
