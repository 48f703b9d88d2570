//===- TwoStageKernels.cpp - Full reductions in two launches --------------===//
//
// two-stage: per-block partials in a scratch buffer, then one block folds
// them, finalises and stores.
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

void NestsToKernels::twoStage(const Nest &N, const NestPlan &P,
                              const std::string &Name,
                              kernel::NestKernels &Out) {
  std::vector<unsigned> Rs = reduces(N);
  const std::vector<ExtentId> &Key = N.Body[Rs.front()].LoopExtents;
  std::string Len = lenOf(Key);
  std::string Block = std::to_string(P.BlockX);

  // Stage 1: per-block partials.
  std::vector<std::string> Args1;
  kernel::Kernel K1 =
      newKernel(N, P, Name + "_partials",
                fmt::format("full reduction of {}, stage 1: each block "
                            "folds a grid-stride share into one partial",
                            shapeToString(F, N.Domain)),
                Args1);
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
    if (!S.Inner && S.K != LStmt::Reduce && S.K != LStmt::Store && S.Phase == 0)
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
  std::vector<std::string> Args2;
  kernel::Kernel K2 = newKernel(
      N, P, Name + "_final",
      "stage 2: one block folds the partials, then the row values and "
      "stores",
      Args2, /*WithNotes=*/false);
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
  L.Setup.push_back(fmt::format("const int64_t pk_nparts = std::min<int64_t>("
                                "pk::cuda::detail::grid_for(pk_len, {}), {});",
                                Block, P.MaxPartials));
  for (unsigned R : Rs)
    L.Setup.push_back(
        fmt::format("pk::cuda::detail::DeviceScratch<{}> pk_part_{}(pk_nparts, "
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
