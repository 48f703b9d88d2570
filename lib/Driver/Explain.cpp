//===- Explain.cpp - pkc --explain: what pkc did with a kernel, and why ---===//
//
// A report for users, not a dump of an IR: the fusion groups in execution
// order and why each is separate, the buffers pkc keeps between them, each
// group's CPU and GPU schedule in one line with the reasons the schedules give,
// and the memory traffic of one call as multiples of each ref's size. The
// traffic counts what the code issues: a row that a later phase reads again
// counts again on the CPU (where it usually comes from L1/L2) unless a row
// buffer holds the value, and on the GPU unless shared memory holds it (when
// the block's rows fit).
//
//===----------------------------------------------------------------------===//

#include "Driver/Explain.h"

#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <map>
#include <set>

using namespace pk;
using namespace pk::ir;
using loop::Nest;
using LStmt = loop::Stmt;

namespace {

std::string groupSignature(const Function &F, const FusionPlan &Plan,
                           unsigned Index) {
  const FusionPlan::Group &G = Plan.Groups[Index];
  if (G.Attention)
    return "attention: softmax over the keys of q kT, times v (one online-"
           "softmax pass per query row, no [t, s] buffer)";
  if (G.MatMul) {
    // Two products of one operand in one group: a dual product.
    unsigned Products = 0;
    for (NodeId I = 0; I < F.Nodes.size(); ++I) {
      auto It = Plan.GroupOf.find(I);
      Products += !F.Nodes[I].Dead && F.Nodes[I].Kind == NodeKind::MatMul &&
                  It != Plan.GroupOf.end() && It->second == Index;
    }
    if (Products == 2)
      return fmt::format("two matrix products of one operand (a dual product: "
                         "rank-{} products summed over axis {}) and their "
                         "epilogue",
                         G.Rank, fmt::join(G.ReduceAxes, ", "));
    return fmt::format("a matrix product (rank-{} products summed over axis "
                       "{}) and its epilogue",
                       G.Rank, fmt::join(G.ReduceAxes, ", "));
  }
  if (G.ReduceAxes.empty()) {
    const Node &S = F.node(G.Stores.front());
    return fmt::format("elementwise stores of rank {}", F.Params[S.Param].Rank);
  }
  return fmt::format("reduces rank-{} values over axis {}", G.Rank,
                     fmt::join(G.ReduceAxes, ", "));
}

/// Reads and writes of each ref by one nest, counting a ref read by the
/// loops of k phases k times, except where `Kept` values are read back
/// from a buffer instead of being recomputed.
struct Traffic {
  std::map<unsigned, unsigned> Reads, Writes;
};

void countNest(const Nest &N, const std::set<unsigned> &Kept, Traffic &T) {
  if (!N.Indexed || !N.isReduction()) {
    std::set<unsigned> Loaded, Stored;
    for (const LStmt &S : N.Body) {
      if (S.K == LStmt::Load)
        Loaded.insert(S.Param);
      if (S.K == LStmt::Store)
        Stored.insert(S.Param);
    }
    for (unsigned R : Loaded)
      ++T.Reads[R];
    for (unsigned R : Stored)
      ++T.Writes[R];
    return;
  }
  // Per phase: the inner statements its loops need (a kept value computed
  // by an earlier phase is read back, its operands are not needed).
  std::set<unsigned> Materialised;
  std::map<unsigned, unsigned> Reads;
  std::set<unsigned> RowLoads;
  unsigned Last = 0;
  for (const LStmt &S : N.Body)
    Last = std::max(Last, S.Phase);
  for (unsigned P = 0; P <= Last; ++P) {
    std::vector<unsigned> Roots;
    for (unsigned R = 0; R < N.Body.size(); ++R) {
      const LStmt &Root = N.Body[R];
      if (Root.Phase == P &&
          (Root.K == LStmt::Reduce || (Root.K == LStmt::Store && Root.Inner)))
        Roots.push_back(R);
    }
    std::set<unsigned> Need =
                           loop::innerCone(N, Roots,
                                           [&](unsigned I) {
                                             return Materialised.count(I) > 0;
                                           }),
                       LoadedHere;
    for (unsigned I : Need)
      if (N.Body[I].K == LStmt::Load && !Materialised.count(I))
        LoadedHere.insert(N.Body[I].Param);
    for (unsigned I : Need)
      if (Kept.count(I))
        Materialised.insert(I);
    for (unsigned R : LoadedHere)
      ++Reads[R];
  }
  for (const LStmt &S : N.Body) {
    if (S.K == LStmt::Load && !S.Inner)
      RowLoads.insert(S.Param);
    if (S.K == LStmt::Store)
      T.Writes[S.Param] = T.Writes[S.Param] + 1;
  }
  for (unsigned R : RowLoads)
    Reads[R] = std::max(Reads[R], 1u);
  for (auto [R, K] : Reads)
    T.Reads[R] += K;
}

} // namespace

/// The launches of one nest's plan: the fewest and the most a call makes
/// (a split reduction takes more steps).
std::pair<size_t, size_t> launchCount(const kernel::NestKernels &K) {
  size_t Lo = K.Launch.Steps.size(), Hi = Lo;
  if (!K.Launch.SplitWhen.empty()) {
    Lo = std::min(Lo, K.Launch.SplitSteps.size());
    Hi = std::max(Hi, K.Launch.SplitSteps.size());
  }
  return {Lo, Hi};
}

void driver::explain(const Function &F, const FusionPlan &Plan,
                     const tile::Program &Cpu, const gpu::Program &Gpu,
                     const kernel::Program &Kernels, llvm::raw_ostream &OS) {
  const loop::Program &Loops = *Cpu.Loops;
  OS << fmt::format("kernel {} ({}:{})\n", F.QualifiedName,
                    llvm::sys::path::filename(F.File).str(), F.Loc.Line);

  OS << fmt::format("\n  fusion: {} group{}, in execution order\n",
                    Plan.Groups.size(), Plan.Groups.size() == 1 ? "" : "s");
  for (size_t G = 0; G < Plan.Groups.size(); ++G) {
    const FusionPlan::Group &Gr = Plan.Groups[G];
    std::vector<std::string> Stores;
    for (NodeId S : Gr.Stores) {
      const Node &N = F.node(S);
      Stores.push_back(
          fmt::format("{} (line {})", F.Params[N.Param].Name, N.Loc.Line));
    }
    OS << fmt::format("    group {}: {}; stores {}\n", G,
                      groupSignature(F, Plan, G), fmt::join(Stores, ", "));
    if (G == 0)
      continue;
    // The buffers this group reads that earlier groups write.
    std::set<std::string> Needs;
    for (NodeId S : Gr.Stores)
      for (unsigned P : Plan.StoreReads.at(S))
        if (F.Params[P].isTemp())
          Needs.insert(F.Params[P].Name);
    if (!Needs.empty())
      OS << fmt::format("      separate from the groups before it: it reads "
                        "{}, which they write\n",
                        fmt::join(Needs, ", "));
    else
      OS << fmt::format("      separate from group {}: a group is one loop "
                        "nest over one iteration space, and {} {}\n",
                        G - 1, groupSignature(F, Plan, G - 1),
                        "is another one");
  }

  // The buffers pkc added (Materialize.cpp): who writes and reads each.
  std::vector<unsigned> Temps;
  for (unsigned P = 0; P < F.Params.size(); ++P)
    if (F.Params[P].isTemp())
      Temps.push_back(P);
  OS << fmt::format("\n  buffers: {} pk-managed temporar{}", Temps.size(),
                    Temps.size() == 1 ? "y" : "ies");
  OS << (Temps.empty() ? "\n"
                       : " (one workspace per call; buffers whose lifetimes "
                         "do not overlap share memory)\n");
  for (unsigned P : Temps) {
    const Param &T = F.Params[P];
    std::vector<std::string> Writers, Readers;
    for (size_t I = 0; I < Loops.Steps.size(); ++I) {
      bool W = false, R = false;
      std::vector<unsigned> Nests = {Loops.Steps[I].Nest};
      llvm::append_range(Nests, Loops.Steps[I].Otherwise);
      for (unsigned N : Nests)
        for (const LStmt &S : Loops.Nests[N].Body) {
          // Through its windows and aliases too.
          W |= S.K == LStmt::Store && rootOf(F, S.Param) == P;
          R |= S.K == LStmt::Load && rootOf(F, S.Param) == P;
        }
      if (W)
        Writers.push_back(std::to_string(I));
      if (R)
        Readers.push_back(std::to_string(I));
    }
    int64_t Elems = 1;
    bool Known = true;
    for (ExtentId E : T.TempShape) {
      const Extent &X = F.Extents.get(E);
      Known &= X.K == Extent::Const;
      Elems *= X.Value;
    }
    std::string Bytes =
        Known ? fmt::format("{} bytes", Elems * dtypeBytes(T.Type))
              : fmt::format("{} bytes per element", dtypeBytes(T.Type));
    auto B = llvm::find_if(Loops.Buffers,
                           [&](const loop::Buffer &B) { return B.Param == P; });
    std::string Slot = B == Loops.Buffers.end()
                           ? std::string("unused")
                           : fmt::format("workspace slot {}", B->Slot);
    if (B != Loops.Buffers.end() && B->Home)
      Slot =
          B->alwaysHome()
              ? fmt::format("in {}'s memory (no copy)", F.Params[*B->Home].Name)
              : fmt::format("in {}'s memory when their extents are "
                            "equal (no copy), else {}",
                            F.Params[*B->Home].Name, Slot);
    auto Groups = [](const std::vector<std::string> &G) {
      return G.empty()       ? std::string("no group")
             : G.size() == 1 ? "group " + G[0]
                             : fmt::format("groups {}", fmt::join(G, ", "));
    };
    OS << fmt::format("    {}: {}{}, {}; written by {}, read by {}; {}; {}\n",
                      T.Name, dtypeName(T.Type), shapeToString(F, T.TempShape),
                      Bytes, Groups(Writers), Groups(Readers), Slot, T.Why);
  }

  OS << "\n  schedule\n";
  for (size_t I = 0; I < Loops.Steps.size(); ++I) {
    const Nest &N = Loops.Nests[I];
    const tile::NestSchedule &C = Cpu.Nests[I];
    const gpu::NestPlan &G = Gpu.Nests[I];
    OS << fmt::format("    group {} over {}\n", N.Group,
                      shapeToString(F, N.Domain));
    std::string Threads =
        C.MinWorkForThreads <= 0 ? std::string("one thread")
        : C.Kind == tile::LoopKind::Gemm
            ? fmt::format("threads over C tiles from {} multiply-adds; "
                          "micro-kernel and blocking picked at run time",
                          C.MinWorkForThreads)
        : C.Kind == tile::LoopKind::Int8Product
            ? fmt::format("threads over blocks of 16 columns from {} "
                          "multiply-adds; dot products picked at run time",
                          C.MinWorkForThreads)
            : fmt::format("threads over the outermost {} loop{} from {} "
                          "elements",
                          C.ThreadedLoops, C.ThreadedLoops == 1 ? "" : "s",
                          C.MinWorkForThreads);
    OS << fmt::format("      cpu: {}; {}; vector loop: {}",
                      tile::loopKindName(C.Kind), Threads, C.Vector);
    if (C.ColumnBlock)
      OS << fmt::format("; column blocks of {}", C.ColumnBlock);
    for (unsigned B : C.RowBuffers)
      OS << fmt::format("; row buffer {}", N.Body[B].Name);
    std::vector<std::string> Streamed;
    for (unsigned St : C.StreamedStores)
      Streamed.push_back(F.Params[N.Body[St].Param].Name);
    if (!Streamed.empty())
      OS << fmt::format("; streaming stores for {} when a call's outputs "
                        "reach 3/4 of the last-level cache",
                        fmt::join(Streamed, ", "));
    OS << "\n";
    OS << fmt::format("      gpu: {}", gpu::strategyName(G.Kind));
    if (G.VectorWidth > 1)
      OS << fmt::format("; {} elements per access", G.VectorWidth);
    std::vector<std::string> Rows;
    for (const gpu::RowThreads &R : G.Rows)
      Rows.push_back(R.UpTo ? fmt::format("{} up to {}", R.Threads, R.UpTo)
                            : std::to_string(R.Threads));
    if (!Rows.empty())
      OS << fmt::format("; threads per row: {}", fmt::join(Rows, ", "));
    if (G.BlockX)
      OS << fmt::format("; block {}x{}", G.BlockX, G.BlockY);
    for (unsigned V : G.SharedRowValues)
      OS << fmt::format("; shared {}", N.Body[V].Name);
    if (G.Kind == gpu::Strategy::Columns && G.MaxPartials)
      OS << fmt::format("; up to {} slices of the reduced range over blocks "
                        "when the column tiles are few",
                        G.MaxPartials);
    if (G.Kind == gpu::Strategy::TwoStage)
      OS << fmt::format("; up to {} per-block partials, then one block",
                        G.MaxPartials);
    OS << "\n";
    if (I < Kernels.Nests.size()) {
      auto [Lo, Hi] = launchCount(Kernels.Nests[I]);
      OS << fmt::format("      gpu launches: {}{}\n", Lo,
                        Hi != Lo ? fmt::format(" to {} (a split over more "
                                               "blocks adds a pass)",
                                               Hi)
                                 : "");
    }
    const loop::Step &St = Loops.Steps[I];
    if (St.isConditional())
      OS << "      runs fused when the written refs' extents are equal at run "
            "time, "
         << (St.Otherwise.empty()
                 ? "else raises pk::ShapeError (checked at entry)"
                 : fmt::format("else one loop per store ({} nests)",
                               St.Otherwise.size()))
         << "\n";
  }

  // Memory traffic: multiples of each ref's size.
  Traffic CpuT, GpuT;
  for (size_t I = 0; I < Loops.Steps.size(); ++I) {
    const Nest &N = Loops.Nests[I];
    const tile::NestSchedule &C = Cpu.Nests[I];
    const gpu::NestPlan &G = Gpu.Nests[I];
    countNest(N, {C.RowBuffers.begin(), C.RowBuffers.end()}, CpuT);
    countNest(N, {G.SharedRowValues.begin(), G.SharedRowValues.end()}, GpuT);
  }
  size_t Lo = 0, Hi = 0;
  for (size_t I = 0; I < Loops.Steps.size(); ++I) {
    auto [L, H] = launchCount(Kernels.Nests[I]);
    Lo += L;
    Hi += H;
  }
  OS << fmt::format("\n  gpu: {}{} kernel launch{} per call, queued on the "
                    "caller's stream with no host synchronisation between "
                    "them\n",
                    Lo, Hi != Lo ? fmt::format(" to {}", Hi) : "",
                    Hi == 1 ? "" : "es");
  OS << "\n  memory traffic per call, in multiples of each ref's size (r "
        "read, w written; min: each input read once, each output written "
        "once)\n";
  OS << fmt::format("    {:<12} {:<6} {:<22} {:>5} {:>9} {:>9}\n", "ref",
                    "dtype", "size", "min", "cpu", "gpu");
  for (unsigned R = 0; R < F.Params.size(); ++R) {
    const Param &P = F.Params[R];
    if (!P.isRef())
      continue;
    std::vector<std::string> Ext;
    for (unsigned A = 0; A < P.Rank; ++A)
      Ext.push_back(fmt::format("{}.{}", P.Name, A));
    std::string Size = P.hasDerivedShape()
                           ? shapeToString(F, P.TempShape)
                           : fmt::format("[{}]", fmt::join(Ext, ", "));
    // A buffer is traffic a kernel written as separate calls would have
    // too; the minimum has none.
    Traffic MinT;
    if (CpuT.Reads[R] && !P.isTemp())
      MinT.Reads[R] = 1;
    if (CpuT.Writes[R] && !P.isTemp())
      MinT.Writes[R] = 1;
    auto Cell = [&](Traffic &T) {
      unsigned Rd = T.Reads[R], Wr = T.Writes[R];
      if (Rd && Wr)
        return fmt::format("{}r+{}w", Rd, Wr);
      if (!Rd && !Wr)
        return std::string("-");
      return Wr ? fmt::format("{}w", Wr) : fmt::format("{}r", Rd);
    };
    OS << fmt::format("    {:<12} {:<6} {:<22} {:>5} {:>9} {:>9}\n", P.Name,
                      dtypeName(P.Type), Size, Cell(MinT), Cell(CpuT),
                      Cell(GpuT));
  }
  OS << "    cpu: a row read again by a later phase comes from L1/L2 while "
        "it fits (a row buffer holds values that cost more than a load)\n";
  OS << "    gpu: counts the path where the block's rows fit in shared "
        "memory; longer rows read again from global memory (L2)\n";
  OS << "    a lower-rank operand broadcast over the rows (a weight) is read "
        "once per row from cache; counted once\n";
  if (llvm::any_of(Plan.Groups,
                   [](const FusionPlan::Group &G) { return G.MatMul; }))
    OS << "    matmul: each operand counted once; the tiled product reads A "
          "once per column tile (ceil(N / NC) on the CPU, ceil(N / BN) on "
          "CUDA) and B once per row tile, mostly from cache\n";
  if (llvm::any_of(Plan.Groups, [](const FusionPlan::Group &G) {
        return G.Attention.has_value();
      }))
    OS << "    attention: q and the output once; k and v once per query row, "
          "from cache while a head's rows fit\n";
  OS << "\n";
}
