//===- GridStrideKernels.cpp - Elementwise nests as CUDA kernels ----------===//
//
// grid-stride and grid-stride-indexed: one element per thread and step of
// the grid, 16-byte vector accesses on the aligned flat path.
// Part of NestsToKernels (NestsToKernels.h).
//
//===----------------------------------------------------------------------===//

#include "IR/Gemm.h"
#include "Target/CUDA/NestsToKernels.h"
#include "Target/Common/HostCode.h"

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

void NestsToKernels::gridStride(const Nest &N, const NestPlan &P,
                                const std::string &Name,
                                kernel::NestKernels &Out) {
  std::string FlatCond = N.canFlatten() ? flatCondition(F, N) : "";
  bool FlatFlag = N.canFlatten() && !FlatCond.empty();
  bool Flat = N.canFlatten() && !FlatFlag;
  int VW = P.VectorWidth;
  std::vector<std::string> Args;
  kernel::Kernel K =
      newKernel(N, P, Name,
                fmt::format("elementwise over {}, grid-stride loop, {}",
                            shapeToString(F, N.Domain),
                            Flat       ? "contiguous indexing"
                            : FlatFlag ? "contiguous indexing when no operand "
                                         "broadcasts"
                                       : "broadcast index arithmetic"),
                Args);
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
  FlatPart.push_back(KStmt::forLoop("pk_i",
                                    VW > 1 ? "pk_tail + pk_first" : "pk_first",
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
    StridedPart.push_back(
        KStmt::forLoop("pk_i", "pk_first", "pk_n", "pk_step", std::move(Loop)));
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
        Ptrs.push_back(dataExpr(F, S.Param));
    std::string When = fmt::format("pk::cuda::detail::aligned({}, {})",
                                   T.VectorBytes, fmt::join(Ptrs, ", "));
    if (FlatFlag)
      When = FlatCond + " && " + When;
    Step.Variants.push_back(
        {When, "true",
         fmt::format("pk::cuda::detail::grid_for(pk_work, {} * {})", Block, VW),
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
        {"", "", fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block),
         Block, "1", "0", "one element per thread and step"});
  }
  Out.Launch.Work = domainSize(F, N);
  Out.Launch.Steps.push_back(std::move(Step));
  Out.Kernels.push_back(std::move(K));
}

KStmts NestsToKernels::vectorLoop(const Nest &N, int VW) {
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
      Lane.push_back(KStmt::assign(pointerVar(F, S.Param) + "_st[pk_l]",
                                   convertValue(N.Body[S.Args[0]].Type,
                                                F.Params[S.Param].Type,
                                                valueRef(N, S.Args[0]))));
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
    Loop.push_back(KStmt::assign(fmt::format("reinterpret_cast<{} *>({})[pk_v]",
                                             vectorType(Ty, VW), Ptr),
                                 fmt::format("make_{}({})", vectorType(Ty, VW),
                                             fmt::join(Lanes, ", "))));
  }
  KStmts Out;
  Out.push_back(KStmt::forLoop("pk_v", "pk_first", fmt::format("pk_n / {}", VW),
                               "pk_step", std::move(Loop)));
  return Out;
}

void NestsToKernels::gridStrideIndexed(const Nest &N, const NestPlan &P,
                                       const std::string &Name,
                                       kernel::NestKernels &Out) {
  std::vector<std::string> Args;
  kernel::Kernel K =
      newKernel(N, P, Name,
                fmt::format("elementwise over {}, one thread per element, "
                            "grid-stride loop",
                            shapeToString(F, N.Domain)),
                Args);
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
       {{"", "", fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block),
         Block, "1", "0", "one element per thread and step"}}});
  Out.Kernels.push_back(std::move(K));
}
