//===- GroupedProductKernels.cpp - Grouped products as CUDA kernels -------===//
//
// grouped-product: llama2.c runq's Q8_0 x Q8_0 product merged with the sum
// of its per-group terms (Nest::Grouped), one output element per thread and
// step of the grid. Part of NestsToKernels (NestsToKernels.h).
//
//===----------------------------------------------------------------------===//

#include "Target/CUDA/NestsToKernels.h"
#include "Target/Common/HostCode.h"

#include <fmt/format.h>

#include <cassert>

using namespace pk;
using namespace pk::ir;
using namespace pk::target;
using namespace pk::cuda::detail;
using kernel::IndexMode;

void NestsToKernels::groupedProduct(const Nest &N, const NestPlan &P,
                                    const std::string &Name,
                                    kernel::NestKernels &Out) {
  assert(N.Grouped && N.Domain.size() == 4 && "a grouped nest");
  const loop::GroupedSum &G = *N.Grouped;
  std::vector<std::string> Args;
  kernel::Kernel K = newKernel(
      N, P, Name,
      fmt::format("integer products in groups over {}, one output element "
                  "per thread: per group an exact dot product over k and its "
                  "term, summed over the groups in order",
                  shapeToString(F, N.Domain)),
      Args);
  K.LaunchBounds = std::to_string(P.BlockX);
  // The product part: its reduction over k (the dot), the statements each
  // k needs (inner), those the dot needs once per group, and those after it.
  std::optional<unsigned> Dot;
  std::vector<bool> AfterDot(N.Body.size(), false);
  for (unsigned I = 0; I < G.Split; ++I) {
    const LStmt &S = N.Body[I];
    if (S.K == LStmt::Reduce) {
      Dot = I;
      AfterDot[I] = true;
      continue;
    }
    for (unsigned A : S.Args)
      AfterDot[I] = AfterDot[I] || AfterDot[A];
  }
  assert(Dot && "a grouped nest has its product's reduction");
  KStmts PerK, Before, After, Final;
  for (unsigned I = 0; I < G.Split; ++I) {
    const LStmt &S = N.Body[I];
    if (I == *Dot)
      continue;
    if (S.Inner)
      PerK.push_back(KStmt::compute(I, IndexMode::Indexed));
    else
      (AfterDot[I] ? After : Before)
          .push_back(KStmt::compute(I, IndexMode::Indexed));
  }
  PerK.push_back(KStmt::accUpdate(*Dot));
  const LStmt &D = N.Body[*Dot], &Sum = N.Body[G.Sum];
  KStmts Group = std::move(Before);
  Group.push_back(KStmt::accInit(*Dot));
  Group.push_back(KStmt::forLoop(indexVar(3), "0", lenOf(D.LoopExtents), "1",
                                 std::move(PerK)));
  Group.push_back(KStmt::accFinal(*Dot, lenOf(D.LoopExtents)));
  Group.insert(Group.end(), After.begin(), After.end());
  Group.push_back(KStmt::accUpdate(G.Sum));

  KStmts Row;
  unravelRow(N, "pk_row", Row);
  Row.push_back(KStmt::accInit(G.Sum));
  Row.push_back(KStmt::forLoop(indexVar(0), "0", lenOf(Sum.LoopExtents), "1",
                               std::move(Group)));
  Row.push_back(KStmt::accFinal(G.Sum, lenOf(Sum.LoopExtents)));
  for (unsigned I = G.Split; I < N.Body.size(); ++I)
    if (I != G.Sum)
      Row.push_back(KStmt::compute(I, IndexMode::Indexed));

  KStmts &B = K.Body;
  B.push_back(KStmt::strides(IndexMode::Indexed));
  B.push_back(KStmt::let("int64_t", "pk_rows", rowCount(F, N)));
  B.push_back(KStmt::forLoop(
      "pk_row", "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", "pk_rows",
      "int64_t(gridDim.x) * blockDim.x", std::move(Row)));
  const std::string Block = std::to_string(P.BlockX);
  Out.Launch.Work = rowCount(F, N);
  Out.Launch.Steps.push_back(
      {Name,
       Args,
       {{"", "", fmt::format("pk::cuda::detail::grid_for(pk_work, {})", Block),
         Block, "1", "0", "one output element per thread and step"}}});
  Out.Kernels.push_back(std::move(K));
}
