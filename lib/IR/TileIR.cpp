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
  case LoopKind::Int8Product:
    return "int8-product";
  case LoopKind::Attention:
    return "attention";
  }
  return "?";
}

static void printNest(const ir::Function &F, unsigned I, const loop::Nest &N,
                      const NestSchedule &S, llvm::raw_ostream &OS,
                      unsigned Indent) {
  std::string Pad(Indent, ' ');
  OS << Pad << "nest " << I << " " << loopKindName(S.Kind) << " over "
     << ir::shapeToString(F, N.Domain);
  if (N.isReduction())
    OS << fmt::format(" reduce axes [{}], {} phase{}",
                      fmt::join(N.ReduceAxes, ", "), N.numPhases(),
                      N.numPhases() == 1 ? "" : "s");
  OS << " {\n";
  if (S.MinWorkForThreads > 0 && S.Kind == LoopKind::Gemm)
    OS << Pad << "  threads: C tiles when work >= " << S.MinWorkForThreads
       << "\n";
  else if (S.MinWorkForThreads > 0 && S.Kind == LoopKind::Int8Product)
    OS << Pad
       << "  threads: blocks of 16 columns when work >= " << S.MinWorkForThreads
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
  OS << Pad << "}\n";
}

void tile::print(const Program &P, llvm::raw_ostream &OS) {
  const ir::Function &F = *P.Loops->F;
  OS << "schedule @" << F.QualifiedName << " (cpu) {\n";
  for (size_t I = 0; I < P.Nests.size(); ++I)
    printNest(F, I, P.Loops->Nests[I], P.Nests[I], OS, 2);
  OS << "}\n";
}

namespace {

std::string verifyNest(const loop::Nest &N, const NestSchedule &S,
                       const std::string &Where) {
  bool Elementwise = S.Kind == LoopKind::Flat ||
                     S.Kind == LoopKind::FlatOrStrided ||
                     S.Kind == LoopKind::Strided;
  if ((S.Kind == LoopKind::Attention) != N.Attention.has_value())
    return fmt::format("{}: {} schedule for {} nest", Where,
                       loopKindName(S.Kind),
                       N.Attention ? "an attention" : "a non-attention");
  if (!N.Attention && Elementwise == N.isReduction())
    return fmt::format("{}: {} schedule for {} nest", Where,
                       loopKindName(S.Kind),
                       N.isReduction() ? "a reduction" : "an elementwise");
  if (S.Kind == LoopKind::Flat && !N.canFlatten())
    return fmt::format("{}: flat schedule for a nest that cannot be "
                       "flattened",
                       Where);
  if (S.Kind == LoopKind::Columns && S.ColumnBlock <= 0)
    return fmt::format("{}: columns schedule without a column block", Where);
  if (S.Kind != LoopKind::Rows &&
      (!S.RowBuffers.empty() || !S.StreamedStores.empty()))
    return fmt::format("{}: row buffers or streamed stores outside a rows "
                       "schedule",
                       Where);
  for (unsigned I : S.RowBuffers)
    if (I >= N.Body.size() || !N.Body[I].Inner)
      return fmt::format("{}: row buffer {} is not an inner statement", Where,
                         I);
  for (unsigned I : S.StreamedStores)
    if (I >= N.Body.size() || N.Body[I].K != loop::Stmt::Store)
      return fmt::format("{}: streamed store {} is not a store", Where, I);
  return "";
}

} // namespace

std::string tile::verify(const Program &P) {
  if (!P.Loops)
    return "no Loop IR";
  if (P.Nests.size() != P.Loops->Nests.size())
    return fmt::format("{} schedules for {} nests", P.Nests.size(),
                       P.Loops->Nests.size());
  for (size_t I = 0; I < P.Nests.size(); ++I) {
    std::string E =
        verifyNest(P.Loops->Nests[I], P.Nests[I], fmt::format("nest {}", I));
    if (!E.empty())
      return E;
  }
  return "";
}
