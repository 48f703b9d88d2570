//===- RowLoops.cpp - The CPU loops of reduction nests --------------------===//
//
// What EmitCpp prints inside the loop over the rows of a reduction nest:
// row values, per phase an inner loop over the reduce axes (`#pragma omp
// simd` with reduction clauses, per-row buffers, streaming stores), and
// the column reduction's blocked loops. CPU only; what both backends print
// is in Target/Common/HostCode.
//
//===----------------------------------------------------------------------===//

#include "Target/CPU/RowLoops.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <utility>

using namespace pk;
using namespace pk::ir;
using namespace pk::target;
using loop::Nest;
using loop::Stmt;

/// Whether generated code \p Code names the identifier \p Name (not as part
/// of a longer identifier).
static bool mentionsIdentifier(llvm::StringRef Code, llvm::StringRef Name) {
  auto IsIdentChar = [](char C) { return llvm::isAlnum(C) || C == '_'; };
  for (size_t At = Code.find(Name); At != llvm::StringRef::npos;
       At = Code.find(Name, At + 1)) {
    const size_t End = At + Name.size();
    if ((At == 0 || !IsIdentChar(Code[At - 1])) &&
        (End == Code.size() || !IsIdentChar(Code[End])))
      return true;
  }
  return false;
}

void cpu::emitBody(const Function &F, const Nest &N,
                   const std::function<std::string(const Stmt &)> &Index,
                   std::string &Out, llvm::StringRef Indent) {
  for (const Stmt &S : N.Body)
    emitStmt(F, N, S, Backend::Cpu, Index, Out, Indent);
}

std::string cpu::indexedWork(const Function &F, const Nest &N) {
  std::string Work = rowCount(F, N);
  for (const Stmt &S : N.Body)
    if (S.K == Stmt::Reduce) {
      for (ExtentId E : S.LoopExtents)
        Work = Work == "1" ? extentExpr(F, E) : Work + " * " + extentExpr(F, E);
      break;
    }
  return Work;
}

std::string cpu::unitStrideCondition(const Function &F, const Nest &N,
                                     unsigned Axis) {
  std::vector<unsigned> All(N.Body.size());
  for (unsigned I = 0; I < All.size(); ++I)
    All[I] = I;
  return unitStrideCondition(F, N, Axis, All);
}

std::string cpu::unitStrideCondition(const Function &F, const Nest &N,
                                     unsigned Axis,
                                     llvm::ArrayRef<unsigned> Stmts) {
  std::vector<std::string> Conds;
  for (unsigned I : Stmts) {
    const Stmt &S = N.Body[I];
    if (S.K != Stmt::Load)
      continue;
    for (size_t K = 0; K < S.Map.rank(); ++K)
      if (S.Map.Axes[K].Axis == static_cast<int>(Axis)) {
        std::string C = strideVar(F, S.Param, K) + " == 1";
        if (!llvm::is_contained(Conds, C))
          Conds.push_back(C);
      }
  }
  return fmt::format("{}", fmt::join(Conds, " && "));
}

void cpu::emitRowBody(const Function &F, const Nest &N, std::string &Out,
                      const std::string &Indent,
                      llvm::ArrayRef<unsigned> RowBuffers, int UnitAxis,
                      llvm::ArrayRef<unsigned> Streamable) {
  auto Index = [&](const Stmt &S) { return indexedIndex(F, N, S, UnitAxis); };
  assert((Streamable.empty() || UnitAxis >= 0) &&
         "streaming stores need the CPU's unit-stride loops");
  // Stores the loop being printed writes to a chunk buffer (pk_stream_<ref>).
  std::set<unsigned> StreamNow;
  // Per-row buffers: thread-local scratch, sized by the reduced extent.
  std::set<unsigned> Buffered(RowBuffers.begin(), RowBuffers.end());
  // Buffered statement -> the extent of the loop that stored it.
  std::map<unsigned, ExtentId> Materialised;
  if (!RowBuffers.empty()) {
    std::vector<std::string> Extents;
    for (const Stmt &R : N.Body)
      if ((R.K == Stmt::Reduce || (R.K == Stmt::Store && R.Inner)) &&
          !R.LoopExtents.empty()) {
        std::string E = extentExpr(F, R.LoopExtents[0]);
        if (!llvm::is_contained(Extents, E))
          Extents.push_back(E);
      }
    std::string Size = Extents.front();
    for (size_t K = 1; K < Extents.size(); ++K)
      Size = fmt::format("std::max<int64_t>({}, {})", Size, Extents[K]);
    for (unsigned I : RowBuffers) {
      const Stmt &S = N.Body[I];
      Out += fmt::format(
          "{}{} *pk_buf_{} = pk::rt::row_scratch<{}>({}, {});\n", Indent,
          dtypeCppName(S.Type), S.Name, dtypeCppName(S.Type),
          std::distance(Buffered.begin(), Buffered.find(I)), Size);
    }
  }
  unsigned Last = 0;
  for (const Stmt &S : N.Body)
    Last = std::max(Last, S.Phase);
  // Prefetching (CPU, one row axis, unit strides): the last phase after the
  // first that has a vector reduction loop (softmax's exp and sum) computes
  // long enough to bring the next row's inputs in, so that row's first phase
  // (softmax's max) reads them from cache instead of waiting on memory.
  // Measured on logsumexp [2048, 4096]: 4.4 -> 3.5 ms (bench/README.md).
  unsigned PrefetchPhase = 0; // 0: none (phase 0 has no row before it)
  std::vector<unsigned> RowAxes = rowAxes(N);
  if (UnitAxis >= 0 && RowAxes.size() == 1 && N.ReduceAxes.size() == 1)
    for (const Stmt &S : N.Body)
      if (S.K == Stmt::Reduce && S.LoopExtents.size() == 1)
        PrefetchPhase = std::max(PrefetchPhase, S.Phase);
  for (unsigned P = 0; P <= Last; ++P) {
    // Row values (and row stores) that are ready in this phase: once per
    // row, outside the vector loops.
    for (const Stmt &S : N.Body)
      if (!S.Inner && S.K != Stmt::Reduce && S.Phase == P)
        emitStmt(F, N, S, Backend::Cpu, Index, Out, Indent, /*PerRow=*/true);
    // The inner loops of this phase, one per distinct set of extents.
    std::vector<unsigned> Roots;
    for (unsigned I = 0; I < N.Body.size(); ++I) {
      const Stmt &S = N.Body[I];
      if (S.Phase == P &&
          (S.K == Stmt::Reduce || (S.K == Stmt::Store && S.Inner)))
        Roots.push_back(I);
    }
    std::vector<std::vector<ExtentId>> LoopKeys;
    for (unsigned R : Roots)
      if (!llvm::is_contained(LoopKeys, N.Body[R].LoopExtents))
        LoopKeys.push_back(N.Body[R].LoopExtents);
    for (const std::vector<ExtentId> &Key : LoopKeys) {
      std::vector<unsigned> Mine;
      for (unsigned R : Roots)
        if (N.Body[R].LoopExtents == Key)
          Mine.push_back(R);
      // A buffered value an earlier loop stored is loaded here when that
      // loop ran over this loop's extent. Stored over another extent, it
      // broadcasts along the axis (the entry guards checked that one of
      // the two is 1 where they differ), and the storing loop may have run
      // no row at all (o0 [0, n] and o1 [1, n] from one row: fuzz seed
      // 10018 k24), so this loop recomputes it from its inputs, whose
      // strides broadcast the same way. The unit-stride copy runs only
      // where every extent along the axis is equal, so it loads.
      bool UnitStrideCopy = UnitAxis == static_cast<int>(N.ReduceAxes[0]);
      auto LoadedHere = [&](unsigned I) {
        auto It = Materialised.find(I);
        return It != Materialised.end() &&
               (It->second == Key[0] || UnitStrideCopy);
      };
      // The inner statements these roots need, recomputed in this loop
      // unless loaded.
      std::set<unsigned> Need = loop::innerCone(N, Mine, LoadedHere);
      // Float max/min use pk's NaN-propagating combiners and integer sums
      // pk's wrapping add (declared in <pk/runtime.h>); integer max/min use
      // OpenMP's own.
      std::vector<std::string> SumVars, IntSumVars, MaxVars, MinVars,
          IntMaxVars, IntMinVars;
      for (unsigned R : Mine) {
        const Stmt &S = N.Body[R];
        if (S.K != Stmt::Reduce)
          continue;
        DType T = accumulatorType(N, S);
        bool Float = isFloat(T);
        switch (S.Reduction) {
        case ReduceKind::Sum:
        case ReduceKind::Mean:
          (Float ? SumVars : IntSumVars).push_back(accumulatorVar(S));
          break;
        case ReduceKind::Max:
          (Float ? MaxVars : IntMaxVars).push_back(accumulatorVar(S));
          break;
        case ReduceKind::Min:
          (Float ? MinVars : IntMinVars).push_back(accumulatorVar(S));
          break;
        case ReduceKind::ArgMax:
        case ReduceKind::ArgMin:
          llvm_unreachable("expanded by expandArgReductions");
        }
      }
      // The loop body: inner statements, accumulator updates (into `Acc`),
      // inner stores. Records the values it stores into row buffers.
      std::vector<unsigned> StoredHere;
      auto EmitLoopBody =
          [&](const std::string &Pad,
              const std::function<std::string(const Stmt &)> &Acc,
              bool Record) {
            for (unsigned I : Need) {
              const Stmt &S = N.Body[I];
              std::string Axis = indexVar(N.ReduceAxes[0]);
              if (LoadedHere(I)) {
                Out += fmt::format("{}const {} {} = pk_buf_{}[{}];\n", Pad,
                                   dtypeCppName(S.Type), S.Name, S.Name, Axis);
                continue;
              }
              emitStmt(F, N, S, Backend::Cpu, Index, Out, Pad);
              if (Buffered.count(I) && !Materialised.count(I)) {
                Out += fmt::format("{}pk_buf_{}[{}] = {};\n", Pad, S.Name, Axis,
                                   S.Name);
                if (Record)
                  StoredHere.push_back(I);
              }
            }
            for (unsigned R : Mine) {
              const Stmt &S = N.Body[R];
              if (S.K == Stmt::Store && StreamNow.count(R)) {
                Out += fmt::format(
                    "{}pk_stream_{}[pk_l] = {};\n", Pad, F.Params[S.Param].Name,
                    storeValue(F.Params[S.Param].Type, N.Body[S.Args[0]].Type,
                               Backend::Cpu, valueRef(N, S.Args[0])));
                continue;
              }
              if (S.K == Stmt::Store) {
                emitStmt(F, N, S, Backend::Cpu, Index, Out, Pad);
                continue;
              }
              std::string A = Acc(S), V = valueRef(N, S.Args[0]);
              DType T = accumulatorType(N, S);
              switch (S.Reduction) {
              case ReduceKind::Sum:
              case ReduceKind::Mean:
                if (N.Body[S.Args[0]].Type != T)
                  V = fmt::format("static_cast<{}>({})", dtypeCppName(T), V);
                Out += fmt::format("{}{};\n", Pad, sumUpdate(T, A, V));
                break;
              case ReduceKind::Max:
                Out += fmt::format("{}{} = pk::scalar::maximum({}, {});\n", Pad,
                                   A, A, V);
                break;
              case ReduceKind::Min:
                Out += fmt::format("{}{} = pk::scalar::minimum({}, {});\n", Pad,
                                   A, A, V);
                break;
              case ReduceKind::ArgMax:
              case ReduceKind::ArgMin:
                llvm_unreachable("expanded by expandArgReductions");
              }
            }
          };
      // Declares pointers to the next row of each input that changes from
      // row to row (the row axis is the only one; a weight is the same for
      // every row and in cache already): -> (pointer, elements per line).
      auto DeclareNextRowInputs = [&](const std::string &Pad) {
        std::vector<std::pair<std::string, int64_t>> Next;
        unsigned RowAxis = RowAxes[0];
        std::set<unsigned> Seen;
        for (const Stmt &S : N.Body) {
          if (S.K != Stmt::Load || !S.Inner || !Seen.insert(S.Param).second)
            continue;
          int Row = S.Map.axisOf(RowAxis);
          if (Row < 0)
            continue;
          if (Next.empty()) {
            Out += fmt::format(
                "{}// Bring the next row's inputs in while this loop "
                "computes.\n",
                Pad);
            Out += fmt::format("{}const int64_t pk_next_row = {} + 1 < {} "
                               "? {} + 1 : {};\n",
                               Pad, indexVar(RowAxis),
                               extentExpr(F, N.Domain[RowAxis]),
                               indexVar(RowAxis), indexVar(RowAxis));
          }
          std::string Ptr = fmt::format("pk_{}_next", F.Params[S.Param].Name);
          Out += fmt::format("{}const auto *{} = {} + pk_next_row * {};\n", Pad,
                             Ptr, pointerVar(F, S.Param),
                             strideVar(F, S.Param, Row));
          Next.push_back(
              {Ptr,
               std::max<int64_t>(1, 64 / dtypeBytes(F.Params[S.Param].Type))});
        }
        return Next;
      };
      // A store loop with streamable stores: while `pk_stream` (declared by
      // the caller) the row is computed a chunk at a time into buffers that
      // are then streamed out (pk/stream.h); otherwise the plain loop, which
      // the caller prints after this and closes.
      auto EmitStreamedLoop = [&](const std::vector<unsigned> &Streamed,
                                  ExtentId Extent) {
        std::string E = extentExpr(F, Extent);
        std::vector<std::string> Names;
        for (unsigned R : Streamed)
          Names.push_back(F.Params[N.Body[R].Param].Name);
        auto Buffer = [&](unsigned R) {
          return "pk_stream_" + F.Params[N.Body[R].Param].Name;
        };
        auto At = [&](unsigned R) {
          const Stmt &S = N.Body[R];
          return fmt::format("&{}[{}]", pointerVar(F, S.Param),
                             indexedIndex(F, N, S, UnitAxis, "pk_c"));
        };
        Out += fmt::format("{}if (pk_stream) {{\n", Indent);
        Out += fmt::format(
            "{}  // Streaming stores (<pk/stream.h>): {} a chunk at a time "
            "through a\n{}  // buffer, whole cache lines stored without "
            "being read first.\n",
            Indent, fmt::join(Names, ", "), Indent);
        std::string Chunk =
            fmt::format("pk::rt::kStreamChunk<{}>",
                        storageType(F.Params[N.Body[Streamed[0]].Param].Type,
                                    Backend::Cpu));
        for (unsigned R : Streamed)
          Out += fmt::format(
              "{}  alignas(64) {} {}[{}];\n", Indent,
              storageType(F.Params[N.Body[R].Param].Type, Backend::Cpu),
              Buffer(R), Chunk);
        // Memory is idle while the row's last loop computes from cache and
        // streams out, unless an earlier phase prefetches already: fetch
        // the next row. Not before a later phase (add_rmsnorm's update of h
        // after y): there the prefetches made the kernel 1.1x slower than
        // streaming alone (bench/HISTORY.md, "Streaming stores").
        std::vector<std::pair<std::string, int64_t>> Prefetch;
        if (PrefetchPhase == 0 && P == Last && RowAxes.size() == 1)
          Prefetch = DeclareNextRowInputs(Indent + "  ");
        Out += fmt::format("{}  for (int64_t pk_c = 0, pk_len = 0; pk_c < {}; "
                           "pk_c += pk_len) {{\n",
                           Indent, E);
        Out +=
            fmt::format("{}    pk_len = pk::rt::stream_chunk({}, {} - pk_c);\n",
                        Indent, At(Streamed[0]), E);
        Out += "#pragma omp simd\n";
        Out += fmt::format(
            "{}    for (int64_t pk_l = 0; pk_l < pk_len; ++pk_l) {{\n", Indent);
        // The body goes to a string of its own first: the column index is
        // declared only where the body reads it (a row's value broadcast
        // along the row does not, and -Wunused-variable would say so).
        std::string Before = std::move(Out);
        Out.clear();
        StreamNow.insert(Streamed.begin(), Streamed.end());
        EmitLoopBody(
            Indent + "      ", [](const Stmt &S) { return accumulatorVar(S); },
            false);
        StreamNow.clear();
        std::string ChunkBody = std::exchange(Out, std::move(Before));
        const std::string Column = indexVar(N.ReduceAxes[0]);
        if (mentionsIdentifier(ChunkBody, Column))
          Out += fmt::format("{}      const int64_t {} = pk_c + pk_l;\n",
                             Indent, Column);
        Out += ChunkBody;
        Out += fmt::format("{}    }}\n", Indent);
        for (unsigned R : Streamed)
          Out += fmt::format("{}    pk::rt::stream_store({}, {}, pk_len);\n",
                             Indent, At(R), Buffer(R));
        for (const auto &[Ptr, Step] : Prefetch)
          Out += fmt::format("{}    for (int64_t pk_p = 0; pk_p < pk_len; "
                             "pk_p += {})\n{}      PK_PREFETCH({} + pk_c + "
                             "pk_p);\n",
                             Indent, Step, Indent, Ptr);
        Out += fmt::format("{}  }}\n{}}} else {{\n", Indent, Indent);
      };
      bool HasReduce = llvm::any_of(
          Mine, [&](unsigned R) { return N.Body[R].K == Stmt::Reduce; });
      if (Key.size() == 1 && HasReduce) {
        // Lane accumulators: Lanes partial results updated elementwise (no
        // loop-carried dependence), so both g++ and clang vectorise every
        // reduction, NaN-propagating max/min included, with several vector
        // accumulators in flight; combined after the loop. 16 lanes, but a
        // loop that only takes a max/min of cheap values is bound by the
        // latency of the NaN-propagating max (three dependent instructions):
        // there 64 lanes keep four AVX-512 (eight AVX2) chains in flight.
        // Measured (bench/README.md): 64 lanes speed up logsumexp's max loop
        // but slow rmsnorm's sum of squares at [4096, 768] by 1.5x.
        bool MaxMinOnly = llvm::all_of(Mine, [&](unsigned R) {
          const Stmt &S = N.Body[R];
          return S.K != Stmt::Reduce || S.Reduction == ReduceKind::Max ||
                 S.Reduction == ReduceKind::Min;
        });
        bool Costly = llvm::any_of(Need, [&](unsigned I) {
          const Stmt &S = N.Body[I];
          return S.K == Stmt::Apply && opInfo(S.Op).Cost == OpCost::Costly;
        });
        const int Lanes = MaxMinOnly && !Costly ? 64 : 16;
        std::string E = extentExpr(F, Key[0]);
        std::string I = indexVar(N.ReduceAxes[0]);
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          Out += fmt::format("{}{} pk_lanes_{}[{}];\n", Indent, dtypeCppName(T),
                             S.Name, Lanes);
          Out +=
              fmt::format("{}for (int pk_l = 0; pk_l < {}; ++pk_l)\n"
                          "{}  pk_lanes_{}[pk_l] = {};\n",
                          Indent, Lanes, Indent, S.Name, accumulatorInit(S, T));
        }
        Out += fmt::format("{}{{\n", Indent);
        std::vector<std::pair<std::string, int64_t>> Prefetch;
        if (P == PrefetchPhase && P > 0)
          Prefetch = DeclareNextRowInputs(Indent + "  ");
        Out += fmt::format("{}  const int64_t pk_main = {} - {} % {};\n",
                           Indent, E, E, Lanes);
        Out += fmt::format("{}  for (int64_t pk_blk = 0; pk_blk < pk_main; "
                           "pk_blk += {}) {{\n",
                           Indent, Lanes);
        for (const auto &[Ptr, Step] : Prefetch)
          for (int64_t L = 0; L < Lanes; L += Step)
            Out += L == 0
                       ? fmt::format("{}    PK_PREFETCH({} + pk_blk);\n",
                                     Indent, Ptr)
                       : fmt::format("{}    PK_PREFETCH({} + pk_blk + {});\n",
                                     Indent, Ptr, L);
        Out += "#pragma omp simd\n";
        Out +=
            fmt::format("{}    for (int64_t pk_l = 0; pk_l < {}; ++pk_l) {{\n",
                        Indent, Lanes);
        Out += fmt::format("{}      const int64_t {} = pk_blk + pk_l;\n",
                           Indent, I);
        EmitLoopBody(
            Indent + "      ",
            [](const Stmt &S) { return "pk_lanes_" + S.Name + "[pk_l]"; },
            true);
        Out += fmt::format("{}    }}\n{}  }}\n", Indent, Indent);
        // The tail: fewer than Lanes elements, one lane each (vectorised).
        Out += "#pragma omp simd\n";
        Out += fmt::format("{}  for (int64_t {} = pk_main; {} < {}; ++{}) {{\n",
                           Indent, I, I, E, I);
        EmitLoopBody(
            Indent + "    ",
            [&](const Stmt &S) {
              return fmt::format("pk_lanes_{}[{} - pk_main]", S.Name, I);
            },
            false);
        Out += fmt::format("{}  }}\n{}}}\n", Indent, Indent);
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          // Combined pairwise (a tree of depth log2(Lanes)) rather than in
          // one chain through every lane.
          const char *Combine = S.Reduction == ReduceKind::Max   ? "max_op"
                                : S.Reduction == ReduceKind::Min ? "min_op"
                                                                 : "sum_op";
          Out += fmt::format("{}const {} {} = pk::rt::combine_lanes<{}>("
                             "pk_lanes_{}, pk::rt::{}{{}});\n",
                             Indent, dtypeCppName(T), accumulatorVar(S), Lanes,
                             S.Name, Combine);
        }
      } else {
        for (unsigned R : Mine) {
          const Stmt &S = N.Body[R];
          if (S.K != Stmt::Reduce)
            continue;
          DType T = accumulatorType(N, S);
          Out += fmt::format("{}{} {} = {};\n", Indent, dtypeCppName(T),
                             accumulatorVar(S), accumulatorInit(S, T));
        }
        std::vector<unsigned> Streamed;
        for (unsigned R : Mine)
          if (llvm::is_contained(Streamable, R))
            Streamed.push_back(R);
        if (!Streamed.empty())
          EmitStreamedLoop(Streamed, Key[0]);
        std::string Pad = Streamed.empty() ? Indent : Indent + "  ";
        for (size_t K = 0; K < Key.size(); ++K) {
          unsigned Axis = N.ReduceAxes[K];
          if (K + 1 == Key.size()) {
            std::string Clauses;
            if (!SumVars.empty())
              Clauses +=
                  fmt::format(" reduction(+ : {})", fmt::join(SumVars, ", "));
            if (!IntSumVars.empty())
              Clauses += fmt::format(" reduction(pk_add : {})",
                                     fmt::join(IntSumVars, ", "));
            if (!MaxVars.empty())
              Clauses += fmt::format(" reduction(pk_max : {})",
                                     fmt::join(MaxVars, ", "));
            if (!MinVars.empty())
              Clauses += fmt::format(" reduction(pk_min : {})",
                                     fmt::join(MinVars, ", "));
            if (!IntMaxVars.empty())
              Clauses += fmt::format(" reduction(max : {})",
                                     fmt::join(IntMaxVars, ", "));
            if (!IntMinVars.empty())
              Clauses += fmt::format(" reduction(min : {})",
                                     fmt::join(IntMinVars, ", "));
            Out += fmt::format("#pragma omp simd{}\n", Clauses);
          }
          Out += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", Pad,
                             indexVar(Axis), indexVar(Axis),
                             extentExpr(F, Key[K]), indexVar(Axis));
          Pad += "  ";
        }
        EmitLoopBody(
            Pad, [](const Stmt &S) { return accumulatorVar(S); }, true);
        for (size_t K = Key.size(); K-- > 0;) {
          Pad.resize(Pad.size() - 2);
          Out += Pad + "}\n";
        }
        if (!Streamed.empty())
          Out += Indent + "}\n";
      }
      for (unsigned I : StoredHere)
        Materialised[I] = Key[0];
      // Finalise: mean divides by the number of elements reduced.
      for (unsigned R : Mine) {
        const Stmt &S = N.Body[R];
        if (S.K != Stmt::Reduce)
          continue;
        llvm::StringRef Ty = dtypeCppName(S.Type);
        std::string Value = accumulatorVar(S);
        if (S.Reduction == ReduceKind::Mean) {
          std::vector<std::string> Count;
          for (ExtentId E : Key)
            Count.push_back(extentExpr(F, E));
          Value = fmt::format("{} / static_cast<{}>({})", Value,
                              dtypeCppName(accumulatorType(N, S)),
                              fmt::join(Count, " * "));
        }
        Out += fmt::format("{}const {} {} = static_cast<{}>({});\n", Indent, Ty,
                           S.Name, Ty, Value);
      }
    }
  }
}

void cpu::emitColumnReduction(const Function &F, const Nest &N, int64_t Block,
                              std::string &Out, const std::string &Indent,
                              int UnitAxis) {
  unsigned Col = N.Domain.size() - 1;
  std::string I = indexVar(Col);
  auto Index = [&](const Stmt &S) { return indexedIndex(F, N, S, UnitAxis); };
  std::vector<unsigned> Reduces;
  std::set<unsigned> Need;
  for (unsigned R = 0; R < N.Body.size(); ++R)
    if (N.Body[R].K == Stmt::Reduce)
      Reduces.push_back(R);
  std::vector<unsigned> Operands;
  for (unsigned R : Reduces)
    Operands.push_back(N.Body[R].Args[0]);
  loop::walkArgs(N, Operands, [&](unsigned J, const Stmt &S) {
    if (S.K == Stmt::Reduce)
      return false;
    Need.insert(J);
    return true;
  });
  Out += fmt::format("{}// Columns inside, the reduced axes outside: "
                     "contiguous reads, one accumulator per column.\n",
                     Indent);
  Out += fmt::format("{}const int64_t pk_block = pk_col_end - pk_col_begin;\n",
                     Indent);
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    DType T = accumulatorType(N, S);
    Out += fmt::format("{}{} {}[{}];\n", Indent, dtypeCppName(T),
                       accumulatorVar(S), Block);
    Out +=
        fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c)\n"
                    "{}  {}[pk_c] = {};\n",
                    Indent, Indent, accumulatorVar(S), accumulatorInit(S, T));
  }
  std::string Pad = Indent;
  for (size_t K = 0; K < N.ReduceAxes.size(); ++K) {
    unsigned A = N.ReduceAxes[K];
    Out += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", Pad,
                       indexVar(A), indexVar(A),
                       extentExpr(F, N.Body[Reduces[0]].LoopExtents[K]),
                       indexVar(A));
    Pad += "  ";
  }
  Out += "#pragma omp simd\n";
  Out += fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c) {{\n",
                     Pad);
  Out += fmt::format("{}  const int64_t {} = pk_col_begin + pk_c;\n", Pad, I);
  for (unsigned J : Need)
    emitStmt(F, N, N.Body[J], Backend::Cpu, Index, Out, Pad + "  ");
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    std::string Acc = accumulatorVar(S) + "[pk_c]", V = valueRef(N, S.Args[0]);
    DType T = accumulatorType(N, S);
    if (S.Reduction == ReduceKind::Sum || S.Reduction == ReduceKind::Mean) {
      if (N.Body[S.Args[0]].Type != T)
        V = fmt::format("static_cast<{}>({})", dtypeCppName(T), V);
      Out += fmt::format("{}  {};\n", Pad, sumUpdate(T, Acc, V));
    } else {
      Out += fmt::format("{}  {} = pk::scalar::{}({}, {});\n", Pad, Acc,
                         S.Reduction == ReduceKind::Max ? "maximum" : "minimum",
                         Acc, V);
    }
  }
  Out += Pad + "}\n";
  for (size_t K = N.ReduceAxes.size(); K-- > 0;) {
    Pad.resize(Pad.size() - 2);
    Out += Pad + "}\n";
  }
  // Finalise per column, then the row values and stores.
  Out += fmt::format("{}for (int64_t pk_c = 0; pk_c < pk_block; ++pk_c) {{\n",
                     Indent);
  Out +=
      fmt::format("{}  const int64_t {} = pk_col_begin + pk_c;\n", Indent, I);
  for (unsigned R : Reduces) {
    const Stmt &S = N.Body[R];
    std::string Value = accumulatorVar(S) + "[pk_c]";
    if (S.Reduction == ReduceKind::Mean) {
      std::vector<std::string> Count;
      for (ExtentId E : S.LoopExtents)
        Count.push_back(extentExpr(F, E));
      Value = fmt::format("{} / static_cast<{}>({})", Value,
                          dtypeCppName(accumulatorType(N, S)),
                          fmt::join(Count, " * "));
    }
    Out +=
        fmt::format("{}  const {} {} = static_cast<{}>({});\n", Indent,
                    dtypeCppName(S.Type), S.Name, dtypeCppName(S.Type), Value);
  }
  for (const Stmt &S : N.Body)
    if (!S.Inner && S.K != Stmt::Reduce)
      emitStmt(F, N, S, Backend::Cpu, Index, Out, Indent + "  ");
  Out += Indent + "}\n";
}
