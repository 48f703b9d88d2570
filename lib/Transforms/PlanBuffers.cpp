//===- PlanBuffers.cpp - The buffers of a Loop IR program -----------------===//
//
// Lists every buffer the program's nests address (the ref parameters and the
// temporaries) and places the temporaries in one workspace: each lives from
// the first step that writes it to the last that reads it, and temporaries
// whose lifetimes do not overlap share a slot, first fit in the order they
// are first written. A 7-matmul layer holds its live buffers, not 7.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include <algorithm>
#include <map>

using namespace pk;
using namespace pk::ir;

void pk::planBuffers(loop::Program &P) {
  const Function &F = *P.F;
  std::map<unsigned, std::pair<unsigned, unsigned>> Life;
  auto Visit = [&](const loop::Nest &N, unsigned Step) {
    for (const loop::Stmt &S : N.Body)
      if ((S.K == loop::Stmt::Load || S.K == loop::Stmt::Store) &&
          F.Params[rootOf(F, S.Param)].isTemp()) {
        // A temporary lives while it or a view of it is read or written.
        auto [It, New] = Life.try_emplace(rootOf(F, S.Param), Step, Step);
        It->second.first = std::min(It->second.first, Step);
        It->second.second = std::max(It->second.second, Step);
      }
  };
  for (unsigned I = 0; I < P.Steps.size(); ++I) {
    Visit(P.Nests[P.Steps[I].Nest], I);
    for (unsigned U : P.Steps[I].Otherwise)
      Visit(P.Nests[U], I);
  }

  P.Buffers.clear();
  std::map<unsigned, size_t> BufferOf;
  for (unsigned I = 0; I < F.Params.size(); ++I) {
    const Param &Pr = F.Params[I];
    if (!Pr.isRef() || (Pr.isTemp() && !Life.count(I)))
      continue;
    BufferOf[I] = P.Buffers.size();
    loop::Buffer B;
    B.Param = I;
    if (Pr.isTemp())
      std::tie(B.FirstStep, B.LastStep) = Life[I];
    P.Buffers.push_back(B);
  }

  // First fit, in the order the temporaries are first written.
  std::vector<std::pair<unsigned, unsigned>> Starts;
  for (auto &[Param, L] : Life)
    Starts.push_back({L.first, Param});
  std::sort(Starts.begin(), Starts.end());
  std::vector<unsigned> SlotEnd;
  for (auto [Start, Param] : Starts) {
    unsigned S = 0;
    while (S < SlotEnd.size() && SlotEnd[S] >= Start)
      ++S;
    if (S == SlotEnd.size())
      SlotEnd.push_back(0);
    SlotEnd[S] = Life[Param].second;
    P.Buffers[BufferOf[Param]].Slot = static_cast<int>(S);
  }
  P.NumSlots = SlotEnd.size();
}
