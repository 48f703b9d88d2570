//===- LowerToLoops.cpp - Fused groups to loop nests ----------------------===//
//
// A group becomes one nest over the shape of its first store's ref. Its body
// is the union of the stores' cones in SSA order, one statement per node;
// broadcast_to disappears (each load indexes with its own axis map, so a
// smaller value is simply read at the projected index). Stores to refs whose
// extents are other symbols make the nest conditional on those extents being
// equal at run time; the fallback runs one nest per store in an order that
// reads every ref before it is overwritten.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

#include <set>

using namespace pk;
using namespace pk::ir;
using loop::AxisMap;
using loop::Nest;
using loop::Stmt;

namespace {

/// Hands out C++ identifiers unique within one kernel body.
class NameGen {
public:
  explicit NameGen(const Function &F) {
    for (const Param &P : F.Params)
      Taken.insert(P.Name);
  }
  std::string get(llvm::StringRef Hint) {
    std::string Base;
    for (char C : Hint)
      Base += llvm::isAlnum(C) || C == '_' ? C : '_';
    // pk_ names belong to the emitters; keep user names clear of them.
    if (Base.empty() || llvm::isDigit(Base[0]) ||
        llvm::StringRef(Base).starts_with("pk_"))
      Base = "t" + Base;
    std::string Name = Base;
    for (unsigned N = 1; !Taken.insert(Name).second; ++N)
      Name = fmt::format("{}_{}", Base, N);
    return Name;
  }

private:
  std::set<std::string> Taken;
};

class Lowering {
public:
  Lowering(const Function &F, const FusionPlan &Plan)
      : F(F), Plan(Plan), Names(F) {}

  loop::Program run() {
    loop::Program P;
    P.F = &F;
    for (unsigned G = 0; G < Plan.Groups.size(); ++G)
      P.Nests.push_back(lowerGroup(G, Plan.Groups[G].Stores));
    return P;
  }

private:
  std::vector<ExtentId> refShape(unsigned Param) {
    std::vector<ExtentId> S;
    for (unsigned A = 0; A < F.Params[Param].Rank; ++A)
      S.push_back(F.Extents.dim(Param, A));
    return S;
  }

  Nest lowerGroup(unsigned G, const std::vector<NodeId> &Stores) {
    std::vector<ExtentId> Domain = refShape(F.Nodes[Stores[0]].Param);
    Nest N = buildNest(G, Stores, Domain);
    for (NodeId S : llvm::ArrayRef(Stores).drop_front()) {
      std::vector<ExtentId> Other = refShape(F.Nodes[S].Param);
      for (size_t K = 0; K < Other.size(); ++K)
        if (Other[K] != Domain[K])
          N.FuseConds.push_back({Other[K], Domain[K]});
    }
    if (!N.FuseConds.empty())
      buildUnfused(N, Stores);
    return N;
  }

  /// One nest per store, ordered so that no store overwrites a ref a later
  /// one still reads.
  void buildUnfused(Nest &N, const std::vector<NodeId> &Stores) {
    std::vector<NodeId> Left = Stores, Order;
    while (!Left.empty()) {
      auto Ready = llvm::find_if(Left, [&](NodeId S) {
        unsigned Written = F.Nodes[S].Param;
        return llvm::none_of(Left, [&](NodeId R) {
          return R != S && Plan.StoreReads.at(R).count(Written);
        });
      });
      if (Ready == Left.end()) {
        std::vector<std::string> Refs;
        for (NodeId S : Left)
          Refs.push_back(F.Params[F.Nodes[S].Param].Name);
        N.UnfusedError = fmt::format(
            "{}: pkc fuses the stores to {} into one loop, which needs their "
            "shapes to be equal (the unfused order would overwrite values "
            "still to be read)",
            F.Name, fmt::join(Refs, ", "));
        return;
      }
      Order.push_back(*Ready);
      Left.erase(Ready);
    }
    for (NodeId S : Order)
      N.Unfused.push_back(buildNest(N.Group, {S}, refShape(F.Nodes[S].Param)));
  }

  Nest buildNest(unsigned G, const std::vector<NodeId> &Stores,
                 const std::vector<ExtentId> &Domain) {
    Nest N;
    N.Group = G;
    N.Domain = Domain;
    std::set<NodeId> Cone;
    std::vector<NodeId> Work(Stores.begin(), Stores.end());
    while (!Work.empty()) {
      NodeId V = Work.back();
      Work.pop_back();
      if (!Cone.insert(V).second)
        continue;
      const Node &Nd = F.Nodes[V];
      llvm::ArrayRef<NodeId> Ops = Nd.Operands;
      if (Nd.Kind == NodeKind::BroadcastTo)
        Ops = Ops.take_front(1);
      Work.insert(Work.end(), Ops.begin(), Ops.end());
    }
    std::map<NodeId, unsigned> StmtOf;
    for (NodeId V : Cone) { // std::set iterates in SSA order
      const Node &Nd = F.Nodes[V];
      if (Nd.Kind == NodeKind::BroadcastTo) {
        StmtOf[V] = StmtOf.at(Nd.Operands[0]);
        continue;
      }
      Stmt S;
      S.Type = Nd.Type;
      S.Line = Nd.Loc.Line;
      for (NodeId O : Nd.Operands)
        S.Args.push_back(StmtOf.at(O));
      switch (Nd.Kind) {
      case NodeKind::Load: {
        S.K = Stmt::Load;
        S.Param = Nd.Param;
        S.Name = Names.get(F.Params[Nd.Param].Name + "_v");
        unsigned R = F.Params[Nd.Param].Rank;
        for (unsigned K = 0; K < R; ++K) {
          ExtentId Mine = F.Extents.dim(Nd.Param, K);
          ExtentId Dom = Domain[Domain.size() - R + K];
          S.Axes.push_back(Mine == Dom                  ? AxisMap::Same
                           : F.Extents.isConst(Mine, 1) ? AxisMap::Broadcast
                                                        : AxisMap::Runtime);
        }
        break;
      }
      case NodeKind::ScalarParam:
        S.K = Stmt::Scalar;
        S.Param = Nd.Param;
        S.Name = F.Params[Nd.Param].Name;
        break;
      case NodeKind::Const:
        S.K = Stmt::Const;
        S.FloatValue = Nd.FloatValue;
        S.IntValue = Nd.IntValue;
        S.Name = Names.get(Nd.Name.empty() ? "c" : Nd.Name);
        break;
      case NodeKind::Elementwise:
        S.K = Stmt::Apply;
        S.Op = Nd.Op;
        S.Name = Names.get(Nd.Name.empty() ? "t" : Nd.Name);
        break;
      case NodeKind::Cast:
        S.K = Stmt::Cast;
        S.Name = Names.get(Nd.Name.empty() ? "t" : Nd.Name);
        break;
      case NodeKind::Store:
        S.K = Stmt::Store;
        S.Param = Nd.Param;
        N.Lines.push_back(Nd.Loc.Line);
        break;
      default:
        // fuse() reported it; never reached for a kernel without errors.
        llvm_unreachable("node kind not lowered to loops");
      }
      StmtOf[V] = N.Body.size();
      N.Body.push_back(std::move(S));
    }
    return N;
  }

  const Function &F;
  const FusionPlan &Plan;
  NameGen Names;
};

} // namespace

loop::Program pk::lowerToLoops(const Function &F, const FusionPlan &Plan) {
  return Lowering(F, Plan).run();
}
