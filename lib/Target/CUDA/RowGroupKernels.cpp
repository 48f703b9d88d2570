//===- RowGroupKernels.cpp - Row reductions, a warp or block per row ------===//
//
// row-groups: kThreads threads share a row; each phase folds into per-thread
// accumulators, combined by warp shuffles and, past a warp, shared memory.
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

void NestsToKernels::rowGroups(const Nest &N, const NestPlan &P,
                               const std::string &Name,
                               kernel::NestKernels &Out) {
  std::vector<std::string> Args;
  kernel::Kernel K = newKernel(
      N, P, Name,
      fmt::format("reduction over axis {} of {}, kThreads threads per row",
                  fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain)),
      Args);
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
      if ((Root.K == LStmt::Reduce || (Root.K == LStmt::Store && Root.Inner)) &&
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
    K.Shared.push_back({"pk_smem", SharedType,
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
      "pk_row", "int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kThreads",
      "pk_rows", "int64_t(gridDim.x) * kRowsPerBlock", std::move(Loop)));

  kernel::LaunchStep Step;
  Step.Kernel = Name;
  Step.Args = Args;
  // The launch picks threads per row by the longest inner loop: the reduce
  // axes' extents in the domain are nominal (a matrix product's K is in its
  // Reduce statement only, Nest::Domain).
  std::vector<std::string> RowLens;
  for (unsigned R : reduces(N)) {
    std::string Len = lenOf(N.Body[R].LoopExtents);
    if (!llvm::is_contained(RowLens, Len))
      RowLens.push_back(Len);
  }
  if (P.Rows.size() > 1)
    Out.Launch.Setup.push_back(fmt::format(
        "const int64_t pk_row_len = {};",
        RowLens.size() == 1 ? RowLens.front()
                            : fmt::format("std::max<int64_t>({{{}}})",
                                          fmt::join(RowLens, ", "))));
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
