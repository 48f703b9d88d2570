//===- TileIR.cpp - Tile IR printer ---------------------------------------===//

#include "IR/TileIR.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace pk;
using namespace pk::tile;

llvm::StringRef tile::loopKindName(LoopKind K) {
  switch (K) {
  case LoopKind::Flat:
    return "flat";
  case LoopKind::FlatOrStrided:
    return "flat-or-strided";
  case LoopKind::Strided:
    return "strided";
  case LoopKind::Rows:
    return "rows";
  case LoopKind::Columns:
    return "columns";
  case LoopKind::Single:
    return "single";
  case LoopKind::Gemm:
    return "gemm";
  case LoopKind::Attention:
    return "attention";
  }
  return "?";
}

static void printNest(const ir::Function &F, const loop::Nest &N,
                      const NestSchedule &S, llvm::raw_ostream &OS,
                      unsigned Indent) {
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << N.Group << " " << loopKindName(S.Kind) << " over "
     << ir::shapeToString(F, N.Domain);
  if (N.isReduction())
    OS << fmt::format(" reduce axes [{}], {} phase{}",
                      fmt::join(N.ReduceAxes, ", "), N.numPhases(),
                      N.numPhases() == 1 ? "" : "s");
  OS << " {\n";
  if (S.MinWorkForThreads > 0 && S.Kind == LoopKind::Gemm)
    OS << Pad << "  threads: C tiles when work >= " << S.MinWorkForThreads
       << "\n";
  else if (S.MinWorkForThreads > 0)
    OS << Pad << "  threads: outermost " << S.ThreadedLoops << " loop"
       << (S.ThreadedLoops == 1 ? "" : "s")
       << " when work >= " << S.MinWorkForThreads << "\n";
  else
    OS << Pad << "  threads: none\n";
  OS << Pad << "  vector: " << S.Vector << "\n";
  if (S.Kind == LoopKind::Gemm)
    OS << Pad << "  blocking: at run time (cache sizes)\n";
  if (S.ColumnBlock)
    OS << Pad << "  column block: " << S.ColumnBlock << "\n";
  for (unsigned B : S.RowBuffers)
    OS << Pad << "  row buffer: " << N.Body[B].Name << "\n";
  for (unsigned St : S.StreamedStores)
    OS << Pad << "  streamed store: " << F.Params[N.Body[St].Param].Name
       << "\n";
  for (const std::string &Note : S.Notes)
    OS << Pad << "  ; " << Note << "\n";
  for (size_t U = 0; U < S.Unfused.size(); ++U)
    printNest(F, N.Unfused[U], S.Unfused[U], OS, Indent + 2);
  OS << Pad << "}\n";
}

void tile::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.Loops->F;
  OS << "schedule @" << F.QualifiedName << " (cpu) {\n";
  for (size_t I = 0; I < P.Nests.size(); ++I)
    printNest(F, P.Loops->Nests[I], P.Nests[I], OS, 2);
  OS << "}\n";
}
