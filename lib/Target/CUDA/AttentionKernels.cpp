//===- AttentionKernels.cpp - Attention as one CUDA kernel ----------------===//
//
// attention: a warp per query row, an online softmax over the keys.
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

void NestsToKernels::attention(const Nest &N, const NestPlan &P,
                               const std::string &Name,
                               kernel::NestKernels &Out) {
  const loop::AttentionParts &A = *N.Attention;
  std::vector<std::string> Args;
  kernel::Kernel K = newKernel(
      N, P, Name,
      fmt::format("attention over {}: a warp per query row, kCols output "
                  "columns per lane",
                  shapeToString(F, N.Domain)),
      Args);
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
  for (unsigned Batch : A.BatchAxes) {
    RowAxes.push_back(Batch);
    RowExtents.push_back(Ext(Batch));
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
  Key.push_back(KStmt::forLoop(indexVar(A.DAxis), "pk_lane", Ext(A.DAxis), "32",
                               std::move(Dot)));
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
    Chunk.push_back(KStmt::let(
        "int64_t", "pk_keys_visible",
        fmt::format("{}{}{}", indexValue(F, N.Body[*A.CausalIndex]),
                    A.CausalOffset ? fmt::format(" + int64_t({})",
                                                 valueRef(N, *A.CausalOffset))
                                   : "",
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
