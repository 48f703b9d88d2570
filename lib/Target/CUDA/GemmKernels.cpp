//===- GemmKernels.cpp - Matrix products as tiled CUDA kernels ------------===//
//
// gemm: shared-memory tiles of A and B per K step, a register tile of C per
// thread; the prologue runs while a tile is loaded, the epilogue on the
// finished tile.
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

int NestsToKernels::vectorColumns(DType T, int TN) {
  int V = 16 / static_cast<int>(dtypeBytes(T));
  while (V > 1 && TN % V != 0)
    V /= 2;
  return V;
}

int NestsToKernels::contiguousAxis(const Nest &N,
                                   const std::vector<unsigned> &Stmts) {
  for (unsigned I : Stmts)
    if (N.Body[I].K == LStmt::Load && N.Body[I].Map.rank() != 0)
      return N.Body[I].Map.Axes.back().Axis;
  return -1;
}

void NestsToKernels::gemm(const Nest &N, const NestPlan &P,
                          const std::string &Name, kernel::NestKernels &Out) {
  std::optional<loop::GemmPattern> Match = loop::matchGemm(N);
  assert(Match && "the schedule said gemm");
  const loop::GemmPattern &G = *Match;
  std::vector<std::string> Args;
  kernel::Kernel K =
      newKernel(N, P, Name,
                fmt::format("matrix product over {}, a BM x BN tile of C "
                            "per block, TM x TN per thread",
                            shapeToString(F, N.Domain)),
                Args);
  K.TemplateParams = {"int BM", "int BN", "int TM", "int TN", "int VB"};
  K.LaunchBounds = std::to_string(P.BlockX);
  const int BK = P.GemmBK;
  const std::string Ty = dtypeCppName(G.Type).str();
  K.Shared.push_back(
      {"pk_as", G.Type, fmt::format("2 * {} * (BM + 4)", BK), false, 16});
  K.Shared.push_back(
      {"pk_bs", G.Type, fmt::format("2 * {} * (BN + 4)", BK), false, 16});
  // A dual product (two products of the same A, GemmPattern::Dual): the
  // second B's tiles and a second register tile, the same A tile for both.
  const bool Dual = G.Dual.has_value();
  if (Dual)
    K.Shared.push_back(
        {"pk_bs2", G.Type, fmt::format("2 * {} * (BN + 4)", BK), false, 16});
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
  Tile.push_back(
      KStmt::let("int64_t", "pk_m0", "pk_tile / pk_tiles_n % pk_tiles_m * BM"));
  Tile.push_back(KStmt::let("int64_t", "pk_n0", "pk_tile % pk_tiles_n * BN"));
  Tile.push_back(KStmt::var(Ty, "pk_acc[TM][TN]", "{}"));
  if (Dual)
    Tile.push_back(KStmt::var(Ty, "pk_acc2[TM][TN]", "{}"));

  // One operand's tile (Rows x Cols) into shared memory, zeros past the
  // edges. Consecutive threads take consecutive elements along the axis
  // the operand's first load steps through contiguously (its ref's last
  // axis), so a warp's loads coalesce for a transposed operand too.
  auto Stage = [&](const char *What, const std::string &Rows,
                   const std::string &Cols, unsigned RowAxis,
                   const std::string &Row0, const std::string &RowEnd,
                   unsigned ColAxis, const std::string &Col0,
                   const std::string &ColEnd,
                   const std::function<std::string(const std::string &,
                                                   const std::string &)> &Slot,
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
    Load.push_back(KStmt::assign(
        "pk_v", convertValue(N.Body[Value].Type, G.Type, valueRef(N, Value))));
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
  auto StageB = [&](const char *What, const char *Shared,
                    const std::vector<unsigned> &Stmts, unsigned Value,
                    const std::string &Buf) {
    return Stage(
        What, BKs, "BN", G.KAxis, "pk_k0", Kext, G.NAxis, "pk_n0", Ncols,
        [&, Shared](const std::string &R, const std::string &C) {
          return fmt::format("{}[{} * {} + ({}) * (BN + 4) + {}]", Shared, Buf,
                             BSize, R, C);
        },
        Stmts, Value);
  };
  auto StageInto = [&](const std::string &Buf) {
    KStmts Out;
    if (Dual)
      Out = StageB("B2[k0.., n0..] -> pk_bs2", "pk_bs2", G.Dual->BStmts,
                   G.Dual->B, Buf);
    for (KStmts Part :
         {Stage(
              "A[m0.., k0..] -> pk_as (k-major)", "BM", BKs, G.MAxis, "pk_m0",
              M, G.KAxis, "pk_k0", Kext,
              [&](const std::string &R, const std::string &C) {
                return fmt::format("pk_as[{} * {} + ({}) * (BM + 4) + {}]", Buf,
                                   ASize, C, R);
              },
              G.AStmts, G.A),
          Stage(
              "B[k0.., n0..] -> pk_bs", BKs, "BN", G.KAxis, "pk_k0", Kext,
              G.NAxis, "pk_n0", Ncols,
              [&](const std::string &R, const std::string &C) {
                return fmt::format("pk_bs[{} * {} + ({}) * (BN + 4) + {}]", Buf,
                                   BSize, R, C);
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
  // One product's step: its B registers from its shared tile, then the TM
  // x TN multiply-adds into its register tile (both unrolled).
  auto MultiplyBy = [&](const char *Shared, const char *Regs, const char *Acc) {
    KStmt LoadB = KStmt::forLoop(
        "pk_g", "0", "TN / VB", "1",
        {KStmt::call(fmt::format(
            "pk::cuda::detail::load_lanes<VB>(&{}[pk_cur * {} + pk_kk * "
            "(BN + 4) + pk_g * (BN / TN) * VB + pk_tx * VB], &{}[pk_g * VB])",
            Shared, BSize, Regs))});
    KStmt Fma = KStmt::forLoop(
        "pk_c", "0", "TN", "1",
        {KStmt::assign(
            fmt::format("{}[pk_r][pk_c]", Acc),
            fmt::format("{}[pk_r][pk_c] + pk_a[pk_r] * {}[pk_c]", Acc, Regs))});
    KStmt Rows = KStmt::forLoop("pk_r", "0", "TM", "1", {Fma});
    for (KStmt *L : {&LoadB, &Fma, &Rows})
      L->Unroll = true;
    Rows.Body[0].Unroll = true;
    Inner.push_back(std::move(LoadB));
    Inner.push_back(std::move(Rows));
  };
  MultiplyBy("pk_bs", "pk_b", "pk_acc");
  if (Dual) {
    // The second product: its B registers from pk_bs2, the same A ones.
    Inner.push_back(KStmt::var(Ty, "pk_b2[TN]", "{}"));
    MultiplyBy("pk_bs2", "pk_b2", "pk_acc2");
  }
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
  if (Dual)
    Elem.push_back(
        KStmt::let(Ty, N.Body[G.Dual->Reduce].Name, "pk_acc2[pk_r][pk_c]"));
  for (unsigned I : G.Epilogue)
    if (I != G.Reduce && !(Dual && I == G.Dual->Reduce))
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
    Out.Launch.Setup.push_back(
        fmt::format("const int64_t {} = {}(({} + {}) / {}) * (({} + {}) / {});",
                    Tiles, Batch, M, T.BM - 1, T.BM, Ncols, T.BN - 1, T.BN));
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
