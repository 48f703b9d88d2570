//===- ColumnKernels.cpp - Reductions over leading axes, by columns -------===//
//
// columns: x threads take consecutive kept elements, y threads slices of the
// reduced range, combined in shared memory.
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

void NestsToKernels::columns(const Nest &N, const NestPlan &P,
                             const std::string &Name,
                             kernel::NestKernels &Out) {
  std::vector<std::string> Args;
  kernel::Kernel K = newKernel(
      N, P, Name,
      fmt::format("reduction over axis {} of {}, {} x {} threads per block",
                  fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain),
                  P.BlockX, P.BlockY),
      Args);
  int Threads = P.BlockX * P.BlockY;
  K.LaunchBounds = std::to_string(Threads);
  for (unsigned R : reduces(N))
    K.Shared.push_back({"pk_col_" + N.Body[R].Name,
                        accumulatorType(N, N.Body[R]), std::to_string(Threads),
                        false});
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
        fmt::format("{}[threadIdx.y * blockDim.x + threadIdx.x]", Part), Acc));
    Out.push_back(KStmt::barrier());
    Out.push_back(KStmt::assign(Acc, Part + "[threadIdx.x]"));
    Out.push_back(KStmt::forLoop(
        "pk_y", "1", "blockDim.y", "1",
        {KStmt::accUpdate(R, Part + "[pk_y * blockDim.x + threadIdx.x]")}));
    // The next phase (or row tile) writes the partials again.
    Out.push_back(KStmt::barrier());
  };
  KStmts Tile;
  Tile.push_back(KStmt::let("int64_t", "pk_row_raw", "pk_tile + threadIdx.x"));
  Tile.push_back(KStmt::let("bool", "pk_active", "pk_row_raw < pk_rows"));
  Tile.push_back(
      KStmt::let("int64_t", "pk_row", "pk_active ? pk_row_raw : pk_rows - 1"));
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

void NestsToKernels::columnSlices(
    const Nest &N, const NestPlan &P, const std::string &Name,
    const std::function<void(unsigned, KStmts &)> &Combine,
    kernel::NestKernels &Out) {
  std::vector<unsigned> Rs = reduces(N);
  const std::vector<ExtentId> &Key = N.Body[Rs.front()].LoopExtents;
  int Threads = P.BlockX * P.BlockY;

  std::vector<std::string> Args1;
  kernel::Kernel K1 = newKernel(
      N, P, Name + "_slices",
      fmt::format("reduction over axis {} of {}, stage 1: blocks along y "
                  "fold slices of the reduced range into partials",
                  fmt::join(N.ReduceAxes, ", "), shapeToString(F, N.Domain)),
      Args1, /*WithNotes=*/false);
  K1.LaunchBounds = std::to_string(Threads);
  for (unsigned R : Rs) {
    K1.Params.push_back(
        {accType(N, R) + " *__restrict__", "pk_slice_" + N.Body[R].Name});
    Args1.push_back("pk_slice_" + N.Body[R].Name + ".get()");
    K1.Shared.push_back({"pk_col_" + N.Body[R].Name,
                         accumulatorType(N, N.Body[R]), std::to_string(Threads),
                         false});
  }
  KStmts &B1 = K1.Body;
  B1.push_back(KStmt::strides(IndexMode::Indexed));
  B1.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
  KStmts Tile;
  Tile.push_back(KStmt::let("int64_t", "pk_row_raw", "pk_tile + threadIdx.x"));
  Tile.push_back(KStmt::let("bool", "pk_active", "pk_row_raw < pk_rows"));
  Tile.push_back(
      KStmt::let("int64_t", "pk_row", "pk_active ? pk_row_raw : pk_rows - 1"));
  unravelRow(N, "pk_row", Tile);
  // The row values the reductions' operands use (a row value that only
  // the stage-2 epilogue needs, like an accumulated output's old contents,
  // is read there).
  std::vector<bool> Needed(N.Body.size(), false);
  for (unsigned R : Rs)
    Needed[R] = true;
  for (unsigned I = N.Body.size(); I-- > 0;)
    if (Needed[I])
      for (unsigned A : N.Body[I].Args)
        Needed[A] = true;
  for (unsigned I = 0; I < N.Body.size(); ++I) {
    const LStmt &S = N.Body[I];
    if (!S.Inner && S.K != LStmt::Reduce && S.K != LStmt::Store &&
        S.Phase == 0 && Needed[I])
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
    Publish.push_back(
        KStmt::assign(fmt::format("pk_slice_{}[blockIdx.y * pk_rows + pk_row]",
                                  N.Body[R].Name),
                      accumulatorVar(N.Body[R])));
  }
  Tile.push_back(
      KStmt::ifThen("pk_active && threadIdx.y == 0", std::move(Publish)));
  B1.push_back(KStmt::forLoop("pk_tile", "int64_t(blockIdx.x) * blockDim.x",
                              "pk_rows", "int64_t(gridDim.x) * blockDim.x",
                              std::move(Tile)));

  std::vector<std::string> Args2;
  kernel::Kernel K2 = newKernel(
      N, P, Name + "_fold",
      "stage 2: one thread per kept element folds the slices, then the row "
      "values and stores",
      Args2, /*WithNotes=*/false);
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
  L.SplitSteps.push_back({K2.Name,
                          Args2,
                          {{"", "", "pk::cuda::detail::grid_for(pk_work, 256)",
                            "256", "1", "0", "one thread per kept element"}}});
  Out.Kernels.push_back(std::move(K1));
  Out.Kernels.push_back(std::move(K2));
}
