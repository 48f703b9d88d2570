//===- GpuTileIR.cpp - GPU Tile IR printer --------------------------------===//

#include "IR/GpuTileIR.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::gpu;

llvm::StringRef gpu::strategyName(Strategy S) {
  switch (S) {
  case Strategy::GridStride:
    return "grid-stride";
  case Strategy::GridStrideIndexed:
    return "grid-stride-indexed";
  case Strategy::RowGroups:
    return "row-groups";
  case Strategy::Columns:
    return "columns";
  case Strategy::TwoStage:
    return "two-stage";
  case Strategy::Gemm:
    return "gemm";
  case Strategy::Attention:
    return "attention";
  case Strategy::GroupedProduct:
    return "grouped-product";
  }
  return "?";
}

static void printNest(const ir::Function &F, unsigned I, const loop::Nest &N,
                      const NestPlan &P, llvm::raw_ostream &OS,
                      unsigned Indent) {
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << I << " " << strategyName(P.Kind) << " over "
     << ir::shapeToString(F, N.Domain);
  if (N.isReduction())
    OS << fmt::format(" reduce axes [{}], {} phase{}",
                      fmt::join(N.ReduceAxes, ", "), N.numPhases(),
                      N.numPhases() == 1 ? "" : "s");
  OS << " {\n";
  if (P.VectorWidth > 1)
    OS << Pad << "  vector: " << P.VectorWidth << " elements per access\n";
  for (const RowThreads &R : P.Rows) {
    OS << Pad << "  threads per row: " << R.Threads;
    if (R.UpTo > 0)
      OS << " up to " << R.UpTo << " elements";
    OS << "\n";
  }
  for (unsigned V : P.SharedRowValues)
    OS << Pad << "  shared row value: " << N.Body[V].Name << "\n";
  if (P.BlockX)
    OS << Pad << "  block: " << P.BlockX << " x " << P.BlockY << "\n";
  for (const GemmTile &G : P.GemmTiles)
    OS << Pad << "  tile: " << G.BM << " x " << G.BN << " x " << P.GemmBK
       << ", " << G.TM << " x " << G.TN << " per thread\n";
  for (int C : P.ColumnsPerLane)
    OS << Pad << "  output columns per lane: " << C << "\n";
  if (P.MaxPartials)
    OS << Pad << "  partials: at most " << P.MaxPartials << "\n";
  for (const std::string &Note : P.Notes)
    OS << Pad << "  ; " << Note << "\n";
  OS << Pad << "}\n";
}

void gpu::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.Loops->F;
  OS << "schedule @" << F.QualifiedName << " (gpu) {\n";
  for (size_t I = 0; I < P.Nests.size(); ++I)
    printNest(F, I, P.Loops->Nests[I], P.Nests[I], OS, 2);
  OS << "}\n";
}

namespace {

std::string verifyNest(const loop::Nest &N, const NestPlan &S,
                       const GpuTarget &T, const std::string &Where) {
  bool Elementwise =
      S.Kind == Strategy::GridStride || S.Kind == Strategy::GridStrideIndexed;
  if ((S.Kind == Strategy::Attention) != N.Attention.has_value())
    return fmt::format("{}: {} plan for {} nest", Where, strategyName(S.Kind),
                       N.Attention ? "an attention" : "a non-attention");
  if ((S.Kind == Strategy::GroupedProduct) != N.Grouped.has_value())
    return fmt::format("{}: {} plan for {} nest", Where, strategyName(S.Kind),
                       N.Grouped ? "a grouped" : "a non-grouped");
  if (!N.Attention && Elementwise == N.isReduction())
    return fmt::format("{}: {} plan for {} nest", Where, strategyName(S.Kind),
                       N.isReduction() ? "a reduction" : "an elementwise");
  if (S.VectorWidth != 1 && S.VectorWidth != 2 && S.VectorWidth != 4)
    return fmt::format("{}: vector width {}", Where, S.VectorWidth);
  auto Fits = [&](int64_t Threads) {
    return Threads > 0 && Threads <= T.MaxThreadsPerBlock;
  };
  switch (S.Kind) {
  case Strategy::Gemm:
    if (S.GemmTiles.empty() || S.GemmBK <= 0)
      return fmt::format("{}: gemm plan without tiles", Where);
    for (const GemmTile &G : S.GemmTiles)
      if (G.TM <= 0 || G.TN <= 0 || G.BM % G.TM || G.BN % G.TN ||
          !Fits(int64_t(G.BM / G.TM) * (G.BN / G.TN)))
        return fmt::format("{}: gemm tile {}x{} of {}x{} per thread", Where,
                           G.BM, G.BN, G.TM, G.TN);
    break;
  case Strategy::RowGroups: {
    if (S.Rows.empty())
      return fmt::format("{}: row-groups plan without thread counts", Where);
    // Row lengths up to UpTo, increasing; the last entry covers the rest
    // (UpTo 0).
    int64_t Last = 0;
    for (size_t I = 0; I < S.Rows.size(); ++I) {
      const RowThreads &R = S.Rows[I];
      bool Covers = I + 1 == S.Rows.size() && R.UpTo == 0;
      if (!Fits(R.Threads) || (!Covers && R.UpTo <= Last))
        return fmt::format("{}: row threads {} up to {}", Where, R.Threads,
                           R.UpTo);
      Last = R.UpTo;
    }
    break;
  }
  case Strategy::Columns:
    if (S.BlockX <= 0 || S.BlockY <= 0 || !Fits(int64_t(S.BlockX) * S.BlockY))
      return fmt::format("{}: columns block {}x{}", Where, S.BlockX, S.BlockY);
    break;
  case Strategy::TwoStage:
    if (!Fits(S.BlockX) || S.MaxPartials <= 0)
      return fmt::format("{}: two-stage block {} with {} partials", Where,
                         S.BlockX, S.MaxPartials);
    break;
  default:
    break;
  }
  if (S.Kind != Strategy::RowGroups && !S.SharedRowValues.empty())
    return fmt::format("{}: shared row values outside a row-groups plan",
                       Where);
  for (unsigned I : S.SharedRowValues)
    if (I >= N.Body.size() || !N.Body[I].Inner)
      return fmt::format("{}: shared row value {} is not an inner statement",
                         Where, I);
  return "";
}

} // namespace

std::string gpu::verify(const Program &P) {
  if (!P.Loops)
    return "no Loop IR";
  if (P.Nests.size() != P.Loops->Nests.size())
    return fmt::format("{} plans for {} nests", P.Nests.size(),
                       P.Loops->Nests.size());
  for (size_t I = 0; I < P.Nests.size(); ++I) {
    std::string E = verifyNest(P.Loops->Nests[I], P.Nests[I], P.Target,
                               fmt::format("nest {}", I));
    if (!E.empty())
      return E;
  }
  return "";
}
