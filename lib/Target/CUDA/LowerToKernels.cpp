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
// The strategies live in one file each (NestsToKernels.h lists them); this
// file has what they share and the entry point.
//
//===----------------------------------------------------------------------===//

#include "Target/CUDA/LowerToKernels.h"
#include "IR/Gemm.h"
#include "Target/CUDA/NestsToKernels.h"
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
using namespace pk::cuda::detail;
using gpu::Strategy;
using kernel::IndexMode;

/// `float4` / `double2`: the 16-byte vector type of a dtype.
std::string pk::cuda::detail::vectorType(DType T, int Width) {
  return fmt::format("{}{}", T == DType::F64 ? "double" : "float", Width);
}

std::string pk::cuda::detail::product(const std::vector<std::string> &Parts) {
  if (Parts.empty())
    return "1";
  return fmt::format("{}", fmt::join(Parts, " * "));
}

kernel::Program NestsToKernels::run() {
  kernel::Program K;
  K.Loops = Plan.Loops;
  const loop::Program &Loops = *Plan.Loops;
  // pk_<kernel>_g<group>, and _u<k> for the k-th alternative of its step.
  std::vector<std::string> Names(Loops.Nests.size());
  for (const loop::Step &St : Loops.Steps) {
    Names[St.Nest] =
        fmt::format("pk_{}_g{}", F.Symbol.empty() ? F.Name : F.Symbol,
                    Loops.Nests[St.Nest].Group);
    for (size_t U = 0; U < St.Otherwise.size(); ++U)
      Names[St.Otherwise[U]] = fmt::format("{}_u{}", Names[St.Nest], U);
  }
  for (size_t I = 0; I < Plan.Nests.size(); ++I)
    K.Nests.push_back(lowerNest(Loops.Nests[I], Plan.Nests[I], Names[I]));
  return K;
}

kernel::NestKernels NestsToKernels::lowerNest(const Nest &N, const NestPlan &P,
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
  case Strategy::GroupedProduct:
    groupedProduct(N, P, Name, K);
    break;
  }
  return K;
}

void NestsToKernels::addNestParams(const Nest &N, kernel::Kernel &K,
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
    const char *Const = Pr.isReadOnly() ? "const " : "";
    const std::string Storage = storageType(Pr.Type, Backend::Cuda);
    K.Params.push_back(
        {fmt::format("{}{} *__restrict__", Const, Storage), pointerVar(F, R)});
    // pk::half and pk::bfloat16 reach the kernels as __half and
    // __nv_bfloat16 (the .pk.cu checks that their layouts agree).
    if (Storage == dtypeCppName(Pr.Type))
      Args.push_back(dataExpr(F, R));
    else
      Args.push_back(fmt::format("reinterpret_cast<{}{} *>({})", Const, Storage,
                                 dataExpr(F, R)));
  }
  // Every ref's extents, not only those of the refs the nest touches: a
  // loop bound may be a broadcast of extents of refs read elsewhere
  // (bcast(x.0, y.0)). The printer leaves the unused ones unnamed.
  // (A temporary no nest addresses any more has none: fuseGroupedSums.)
  for (unsigned R = 0; R < F.Params.size(); ++R)
    for (unsigned A = 0; F.Params[R].isRef() && A < F.Params[R].Rank &&
                         !isUnaddressedTemp(*Plan.Loops, R);
         ++A) {
      K.Params.push_back({"const int64_t", extentVar(F, R, A)});
      Args.push_back(extentVar(F, R, A));
    }
  // The scalars that extents are computed from (window bounds): a loop
  // bound may be one.
  for (unsigned S : extentScalars(F))
    Scalars.insert(S);
  for (unsigned S : Scalars) {
    K.Params.push_back({fmt::format("const {}", dtypeCppName(F.Params[S].Type)),
                        F.Params[S].Name});
    Args.push_back(F.Params[S].Name);
  }
}

kernel::Kernel NestsToKernels::newKernel(const Nest &N, const NestPlan &P,
                                         const std::string &Name,
                                         std::string Summary,
                                         std::vector<std::string> &Args,
                                         bool WithNotes) {
  kernel::Kernel K;
  K.Name = Name;
  K.Nest = &N;
  K.Notes.push_back(fmt::format("Group {} of {} ({}:{}): {}", N.Group, F.Name,
                                llvm::sys::path::filename(F.File).str(),
                                N.Lines.empty() ? 0 : N.Lines.front(),
                                std::move(Summary)));
  if (WithNotes)
    K.Notes.insert(K.Notes.end(), P.Notes.begin(), P.Notes.end());
  addNestParams(N, K, Args);
  return K;
}

void NestsToKernels::unravel(const std::string &Flat,
                             const std::vector<unsigned> &Axes,
                             const std::vector<std::string> &Extents,
                             KStmts &Out) {
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

void NestsToKernels::unravelRow(const Nest &N, const std::string &Row,
                                KStmts &Out) {
  std::vector<unsigned> Rows = rowAxes(N);
  std::vector<std::string> Extents;
  for (unsigned A : Rows)
    Extents.push_back(extentExpr(F, N.Domain[A]));
  unravel(Row, Rows, Extents, Out);
}

std::string NestsToKernels::lenOf(const std::vector<ExtentId> &Key) {
  std::vector<std::string> Parts;
  for (ExtentId E : Key)
    Parts.push_back(extentExpr(F, E));
  return product(Parts);
}

std::set<unsigned>
NestsToKernels::needed(const Nest &N, const std::vector<unsigned> &Roots,
                       const std::set<unsigned> &Materialised) {
  return loop::innerCone(N, Roots,
                         [&](unsigned I) { return Materialised.count(I) > 0; });
}

void NestsToKernels::guarded(const std::string &Guard, KStmt S, KStmts &Out) {
  if (Guard.empty())
    Out.push_back(std::move(S));
  else
    Out.push_back(KStmt::ifThen(Guard, {std::move(S)}));
}

KStmts NestsToKernels::phaseLoop(const Nest &N,
                                 const std::vector<ExtentId> &Key,
                                 const std::vector<unsigned> &Roots,
                                 const Cooperation &C,
                                 const std::set<unsigned> &Materialised,
                                 bool StoreShared) {
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

KStmts NestsToKernels::phases(const Nest &N, const Cooperation &C) {
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
        Out.push_back(
            KStmt::staticIf("kShared", std::move(Kept), std::move(Recomputed)));
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

std::vector<unsigned> NestsToKernels::reduces(const Nest &N) {
  std::vector<unsigned> R;
  for (unsigned I = 0; I < N.Body.size(); ++I)
    if (N.Body[I].K == LStmt::Reduce)
      R.push_back(I);
  return R;
}

std::string NestsToKernels::accType(const Nest &N, unsigned R) {
  return dtypeCppName(accumulatorType(N, N.Body[R])).str();
}

kernel::Program pk::cuda::lowerToKernels(const gpu::Program &Plan) {
  return NestsToKernels(Plan).run();
}
