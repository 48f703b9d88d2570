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
  }
  return "?";
}

static void printNest(const ir::Function &F, const loop::Nest &N,
                      const NestPlan &P, llvm::raw_ostream &OS,
                      unsigned Indent) {
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << N.Group << " " << strategyName(P.Kind) << " over "
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
  for (size_t U = 0; U < P.Unfused.size(); ++U)
    printNest(F, N.Unfused[U], P.Unfused[U], OS, Indent + 2);
  OS << Pad << "}\n";
}

void gpu::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.Loops->F;
  OS << "schedule @" << F.QualifiedName << " (gpu) {\n";
  for (size_t I = 0; I < P.Nests.size(); ++I)
    printNest(F, P.Loops->Nests[I], P.Nests[I], OS, 2);
  OS << "}\n";
}
