//===- LowerToLoops.cpp - Fused groups to loop nests ----------------------===//
//
// A group becomes one nest over the shape of the refs it writes (and, for a
// reduction, the axes it reduces). Each value is lowered under an embedding
// (the domain axis of each of its axes) from the stores down to the loads:
// views, reductions and matrix products change the embedding, so a load's
// access map is the embedding it is reached with and broadcasting is index
// arithmetic, never a copy. Elementwise stores to refs whose extents are
// other symbols make the step conditional on those extents being equal at
// run time; the alternative runs one nest per store, in an order that reads
// every ref before it is overwritten.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <map>
#include <optional>
#include <set>

using namespace pk;
using namespace pk::ir;
using loop::AccessMap;
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

  /// Gives back a name `get` returned, so that it can be handed out again.
  void release(const std::string &Name) { Taken.erase(Name); }

private:
  std::set<std::string> Taken;
};

/// Turns each fused group of a FusionPlan into one Loop IR nest (or asks
/// the driver for a buffer when a group cannot be one nest).
class GroupsToNests {
public:
  GroupsToNests(const Function &F, const FusionPlan &Plan,
                std::vector<UserDiag> &Diags, std::optional<LoopRetry> *Retry)
      : F(F), Plan(Plan), Names(F), Diags(Diags), Retry(Retry) {}

  loop::Program run() {
    loop::Program P;
    P.F = &F;
    std::vector<std::vector<Nest>> Alternatives;
    for (unsigned G = 0; G < Plan.Groups.size(); ++G) {
      const FusionPlan::Group &Grp = Plan.Groups[G];
      loop::Step St;
      St.Nest = G;
      Alternatives.emplace_back();
      P.Nests.push_back(NestBuilder(*this, G, Grp.Stores, St).run());
      if (St.isConditional())
        buildUnfused(G, Grp.Stores, St, Alternatives.back());
      P.Steps.push_back(std::move(St));
    }
    // The alternatives' nests follow the steps' own.
    for (unsigned G = 0; G < Plan.Groups.size(); ++G)
      for (Nest &N : Alternatives[G]) {
        P.Steps[G].Otherwise.push_back(P.Nests.size());
        P.Nests.push_back(std::move(N));
      }
    return P;
  }

private:
  /// Builds the nest of a group's stores (all of them, or one for an
  /// alternative): each value is lowered under an embedding, which views,
  /// reductions and matrix products change on the way from a store down
  /// to the loads.
  class NestBuilder {
  public:
    NestBuilder(GroupsToNests &L, unsigned G, std::vector<NodeId> Stores,
                loop::Step &St)
        : NestBuilder(L, G, L.Plan.Groups[G], std::move(Stores), St) {}
    /// A nest of group G's stores lowered as the group `As` describes (an
    /// alternative of a reduction group's store that reduces nothing runs
    /// as an elementwise nest).
    NestBuilder(GroupsToNests &L, unsigned G, const FusionPlan::Group &As,
                std::vector<NodeId> Stores, loop::Step &St)
        : L(L), F(L.F), Grp(As), Stores(std::move(Stores)), GroupId(G),
          St(St) {}

    Nest run() {
      N.Group = GroupId;
      N.Indexed = true;
      N.ReduceAxes = Grp.ReduceAxes;
      if (Grp.Attention)
        return runAttention(*Grp.Attention);
      const Node &First = F.Nodes[Stores.front()];
      unsigned Rank =
          Grp.ReduceAxes.empty() ? F.Params[First.Param].Rank : Grp.Rank;
      for (unsigned A = 0; A < Rank; ++A)
        if (!isReduceAxis(A))
          Outer.push_back(A);
      // Loop bounds of the row axes come from the refs written (so every
      // element of every output is written); the reduce axes' entries are
      // nominal.
      N.Domain.assign(Rank, F.Extents.constant(1));
      bool HaveOuter = false;
      for (NodeId S : Stores) {
        std::vector<int> Dims = storeDims(F.Nodes[S]);
        if (Dims.empty() && F.Params[F.Nodes[S].Param].Rank != 0)
          return N; // reported
        for (size_t K = 0; K < Dims.size(); ++K) {
          ExtentId E = refExtent(F, F.Nodes[S].Param, K);
          unsigned D = Dims[K];
          if (isReduceAxis(D)) {
            N.Domain[D] = E;
            continue;
          }
          if (!HaveOuter)
            N.Domain[D] = E;
          else if (N.Domain[D] != E)
            St.When.push_back({E, N.Domain[D]});
        }
        HaveOuter = true;
      }
      for (NodeId S : Stores)
        lowerStore(S);
      deferStoresToReadRefs();
      if (!N.isReduction())
        finishElementwise();
      return N;
    }

  private:
    /// An elementwise nest runs its statements in SSA order (an operand's
    /// node always precedes its users', so the order is valid), named in
    /// that order, which is the order of the source. It is `Indexed` only
    /// where an access map is not right-aligned (a view that moves axes) or
    /// an `index` is used; otherwise one flat or right-aligned loop runs it.
    void finishElementwise() {
      std::vector<unsigned> Order(N.Body.size());
      for (unsigned I = 0; I < Order.size(); ++I)
        Order[I] = I;
      std::stable_sort(Order.begin(), Order.end(), [&](unsigned A, unsigned B) {
        return N.Body[A].Node.value_or(0) < N.Body[B].Node.value_or(0);
      });
      std::vector<unsigned> NewIndex(Order.size());
      for (unsigned I = 0; I < Order.size(); ++I)
        NewIndex[Order[I]] = I;
      std::vector<Stmt> Body;
      for (unsigned I : Order) {
        Body.push_back(std::move(N.Body[I]));
        for (unsigned &A : Body.back().Args)
          A = NewIndex[A];
      }
      N.Body = std::move(Body);
      // Names in body order: give back this nest's, then take them again.
      auto Hint = [&](const Stmt &S) -> std::string {
        const Node &Nd = F.Nodes[*S.Node];
        if (S.K == Stmt::Load)
          return F.Params[S.Param].Name + "_v";
        if (Nd.Kind == NodeKind::Repeat) // its coordinate and index
          return S.K == Stmt::Index ? "idx" : S.K == Stmt::Const ? "c" : "rep";
        if (!Nd.Name.empty())
          return Nd.Name;
        return S.K == Stmt::Const    ? "c"
               : S.K == Stmt::Index  ? "idx"
               : S.K == Stmt::Extent ? "n"
                                     : "t";
      };
      auto Named = [](const Stmt &S) {
        return S.K != Stmt::Scalar && S.K != Stmt::Store && S.Node;
      };
      for (const Stmt &S : N.Body)
        if (Named(S))
          L.Names.release(S.Name);
      for (Stmt &S : N.Body)
        if (Named(S))
          S.Name = L.Names.get(Hint(S));
      N.Lines.clear();
      bool RightAligned = true;
      for (const Stmt &S : N.Body) {
        if (S.K == Stmt::Store)
          N.Lines.push_back(S.Line);
        if (S.K == Stmt::Index)
          RightAligned = false;
        if ((S.K == Stmt::Load || S.K == Stmt::Store) &&
            (!S.Map.isRightAligned(N.Domain.size()) ||
             !isContiguous(F, S.Param)))
          RightAligned = false;
      }
      N.Indexed = !RightAligned;
    }

    bool isReduceAxis(unsigned A) const {
      return llvm::is_contained(Grp.ReduceAxes, A);
    }

    /// The domain axis of each axis of a stored ref.
    std::vector<int> storeDims(const Node &S) {
      unsigned M = F.Params[S.Param].Rank;
      unsigned Rank = N.Domain.size();
      std::vector<int> Dims;
      if (M == Rank) {
        for (unsigned A = 0; A < Rank; ++A)
          Dims.push_back(A);
      } else if (M == Outer.size()) {
        Dims.assign(Outer.begin(), Outer.end());
      } else {
        // A reduced value stored into a ref of another rank: keep it in a
        // buffer, and store the buffer in a group of its own.
        NodeId Id = static_cast<NodeId>(&S - F.Nodes.data());
        retry({S.Operands[0],
               {Id},
               std::nullopt,
               fmt::format("stored at line {} into {}, whose rank is not "
                           "the reduction's",
                           S.Loc.Line, F.Params[S.Param].Name)},
              S,
              fmt::format("pkc cannot fuse the store to {} (rank {}) with a "
                          "reduction of rank-{} values over {} ax{} yet",
                          F.Params[S.Param].Name, M, Rank,
                          Grp.ReduceAxes.size(),
                          Grp.ReduceAxes.size() == 1 ? "is" : "es"));
      }
      return Dims;
    }

    /// A ref that the nest both reads and writes (an InOut) is written in a
    /// phase of its own after every other: earlier phases recompute values
    /// from its old contents, which must still be there. Its loads must
    /// index it exactly as its store does, or rows would read each other's
    /// new values.
    void deferStoresToReadRefs() {
      unsigned Last = 0;
      for (const Stmt &S : N.Body)
        Last = std::max(Last, S.Phase);
      for (Stmt &St : N.Body) {
        if (St.K != Stmt::Store)
          continue;
        bool Read = false;
        for (const Stmt &S : N.Body)
          if (S.K == Stmt::Load && S.Param == St.Param) {
            Read = true;
            if (!sameAxes(S.Map, St.Map)) {
              // Its old contents are read along other axes: copy them
              // first.
              retry({std::nullopt, {}, St.Param, ""}, F.Nodes[Stores.front()],
                    fmt::format("pkc cannot fuse the update of {}: it is "
                                "read along other axes than it is written",
                                F.Params[St.Param].Name));
              return;
            }
          }
        if (Read && N.isReduction())
          St.Phase = Last + 1;
      }
    }

    /// The access map of a ref under an embedding (the domain axis of each
    /// of its axes, -1 for index 0). A loaded axis may broadcast at run
    /// time unless its extent is the loop's (a row axis of the same
    /// extent); a stored one never does (the step checked the stores'
    /// extents equal).
    AccessMap mapOf(unsigned Param, const std::vector<int> &Emb,
                    bool Stored) const {
      AccessMap M;
      for (size_t K = 0; K < Emb.size(); ++K) {
        loop::AxisAccess A;
        A.Axis = Emb[K];
        A.MayBroadcast = !Stored && Emb[K] >= 0 &&
                         (isReduceAxis(Emb[K]) ||
                          refExtent(F, Param, K) != N.Domain[Emb[K]]);
        M.Axes.push_back(A);
      }
      return M;
    }

    static bool sameAxes(const AccessMap &A, const AccessMap &B) {
      if (A.rank() != B.rank())
        return false;
      for (unsigned K = 0; K < A.rank(); ++K)
        if (A.Axes[K].Axis != B.Axes[K].Axis)
          return false;
      return true;
    }

    void report(const Node &At, std::string Message) {
      L.Diags.push_back({At.Loc, "pk-not-supported-yet", std::move(Message),
                         "write the value to an Out ref of the reduced "
                         "shape and use it in a second kernel"});
    }

    /// The group cannot be one nest as planned: ask the driver for a buffer
    /// (or a copy of a ref) and to partition again. Without a driver to ask
    /// (unit tests), `Message` is reported.
    void retry(LoopRetry R, const Node &At, std::string Message) {
      if (!L.Retry) {
        report(At, std::move(Message));
        return;
      }
      if (!*L.Retry)
        *L.Retry = std::move(R);
    }

    unsigned add(Stmt S) {
      N.Body.push_back(std::move(S));
      return N.Body.size() - 1;
    }

    /// The phase from which a statement's value can be used.
    unsigned available(unsigned I) const {
      const Stmt &S = N.Body[I];
      return S.K == Stmt::Reduce ? S.Phase + 1 : S.Phase;
    }

    void lowerStore(NodeId Id) {
      const Node &S = F.Nodes[Id];
      std::vector<int> Dims = storeDims(S);
      if (Dims.size() != F.Params[S.Param].Rank)
        return;
      const Node &V = F.Nodes[S.Operands[0]];
      std::vector<int> VDims(Dims.end() - V.rank(), Dims.end());
      std::optional<unsigned> Value = lower(S.Operands[0], VDims);
      if (!Value)
        return;
      Stmt St;
      St.K = Stmt::Store;
      St.Node = Id;
      St.Type = S.Type;
      St.Param = S.Param;
      St.Line = S.Loc.Line;
      St.Args = {*Value};
      St.Map = mapOf(S.Param, Dims, /*Stored=*/true);
      for (size_t K = 0; K < Dims.size(); ++K)
        if (isReduceAxis(Dims[K])) {
          St.Inner = true;
          St.LoopExtents.push_back(refExtent(F, S.Param, K));
        }
      St.Phase = available(*Value);
      N.Lines.push_back(S.Loc.Line);
      add(std::move(St));
    }

    /// The memo key of a value under an embedding. An axis of extent 1 is
    /// read at index 0 whatever it is aligned with: forget its alignment, so
    /// that one value used through different views (m and squeeze(m, -1))
    /// is computed once.
    std::pair<NodeId, std::vector<int>> memoKey(NodeId Id,
                                                std::vector<int> Emb) const {
      const Node &Nd = F.Nodes[Id];
      for (size_t K = 0; K < Emb.size() && K < Nd.Sh.size(); ++K)
        if (F.Extents.isConst(Nd.Sh[K], 1))
          Emb[K] = -1;
      return {Id, std::move(Emb)};
    }

    std::optional<unsigned> lower(NodeId Id, const std::vector<int> &E) {
      auto Key = memoKey(Id, E);
      const std::vector<int> &Emb = Key.second;
      if (auto It = Memo.find(Key); It != Memo.end())
        return It->second;
      std::optional<unsigned> R = lowerImpl(Id, Emb);
      if (R)
        Memo[Key] = *R;
      return R;
    }

    std::vector<int> rightAligned(const std::vector<int> &Emb, NodeId Of) {
      unsigned R = F.Nodes[Of].rank();
      return std::vector<int>(Emb.end() - R, Emb.end());
    }

    /// A statement for `Nd`, named after its local variable if it has one,
    /// else after `Hint` ("" for statements that need no name).
    Stmt fromNode(const Node &Nd, Stmt::Kind K, llvm::StringRef Hint) {
      Stmt S;
      S.Node = static_cast<NodeId>(&Nd - F.Nodes.data());
      S.K = K;
      S.Type = Nd.Type;
      S.Line = Nd.Loc.Line;
      if (!Hint.empty())
        S.Name = L.Names.get(Nd.Name.empty() ? Hint : llvm::StringRef(Nd.Name));
      return S;
    }

    /// Inner/phase of a computed statement from its arguments.
    void inherit(Stmt &S) {
      for (unsigned A : S.Args) {
        S.Inner |= N.Body[A].K != Stmt::Reduce && N.Body[A].Inner;
        S.Phase = std::max(S.Phase, available(A));
      }
    }

    std::optional<unsigned> lowerImpl(NodeId Id, const std::vector<int> &Emb) {
      const Node &Nd = F.Nodes[Id];
      switch (Nd.Kind) {
      case NodeKind::Load: {
        Stmt S = fromNode(Nd, Stmt::Load, "");
        S.Name = L.Names.get(F.Params[Nd.Param].Name + "_v");
        S.Param = Nd.Param;
        S.Map = mapOf(Nd.Param, Emb, /*Stored=*/false);
        for (int D : Emb)
          S.Inner |= D >= 0 && isReduceAxis(D);
        return add(std::move(S));
      }
      case NodeKind::ScalarParam: {
        Stmt S = fromNode(Nd, Stmt::Scalar, "");
        S.Name = F.Params[Nd.Param].Name;
        S.Param = Nd.Param;
        return add(std::move(S));
      }
      case NodeKind::Extent: {
        Stmt S = fromNode(Nd, Stmt::Extent, "n");
        S.Ext = Nd.Ext;
        return add(std::move(S));
      }
      case NodeKind::Const: {
        Stmt S = fromNode(Nd, Stmt::Const, "c");
        S.FloatValue = Nd.FloatValue;
        S.IntValue = Nd.IntValue;
        return add(std::move(S));
      }
      case NodeKind::Elementwise:
      case NodeKind::Cast: {
        Stmt S = fromNode(
            Nd, Nd.Kind == NodeKind::Cast ? Stmt::Cast : Stmt::Apply, "t");
        S.Op = Nd.Op;
        for (NodeId O : Nd.Operands) {
          std::optional<unsigned> A = lower(O, rightAligned(Emb, O));
          if (!A)
            return std::nullopt;
          S.Args.push_back(*A);
        }
        inherit(S);
        return add(std::move(S));
      }
      case NodeKind::View: {
        // No statement: operand axis k is indexed by the domain axis of
        // the view's axis Map.Source[k] (-1: extent 1, index 0).
        std::vector<int> Inner;
        for (int S : Nd.Map.Source)
          Inner.push_back(S < 0 ? -1 : Emb[S]);
        return lower(Nd.Operands[0], Inner);
      }
      case NodeKind::Index: {
        int R = Nd.rank();
        int K = Nd.Axes[0] < 0 ? Nd.Axes[0] + R : Nd.Axes[0];
        return coordinate(Nd, K, Emb);
      }
      case NodeKind::MatMul:
        return lowerMatMul(Id, Emb);
      case NodeKind::Take:
        return lowerTake(Id, Emb);
      case NodeKind::Repeat:
        return lowerRepeat(Id, Emb);
      case NodeKind::Reduce: {
        // The operand is embedded canonically; the result must be used
        // along the axes it was not reduced over.
        unsigned Rank = N.Domain.size();
        std::vector<int> Canonical;
        for (unsigned A = 0; A < Rank; ++A)
          Canonical.push_back(A);
        std::vector<int> Expect;
        for (unsigned A = 0; A < Rank; ++A)
          if (!isReduceAxis(A))
            Expect.push_back(A);
          else if (Nd.KeepDims)
            Expect.push_back(-2); // extent 1: any embedding
        bool Fits = Expect.size() == Emb.size();
        for (size_t K = 0; Fits && K < Emb.size(); ++K)
          Fits = Expect[K] == -2 || Expect[K] == Emb[K] ||
                 F.Extents.isConst(Nd.Sh[K], 1);
        if (!Fits) {
          retry({Id,
                 {},
                 std::nullopt,
                 fmt::format("a reduction's result used at line {} along "
                             "other axes than the ones it keeps",
                             Nd.Loc.Line)},
                Nd,
                "pkc cannot compile this use of a reduction yet: its "
                "result is broadcast along other axes than the ones it "
                "keeps");
          return std::nullopt;
        }
        std::optional<unsigned> A = lower(Nd.Operands[0], Canonical);
        if (!A)
          return std::nullopt;
        Stmt S = fromNode(Nd, Stmt::Reduce, reduceKindName(Nd.Reduction));
        S.Reduction = Nd.Reduction;
        S.Args = {*A};
        S.Phase = available(*A);
        for (unsigned Ax : Grp.ReduceAxes)
          S.LoopExtents.push_back(F.Nodes[Nd.Operands[0]].Sh[Ax]);
        return add(std::move(S));
      }
      default:
        report(Nd, "pkc cannot compile this operation in a fused loop yet");
        return std::nullopt;
      }
    }

    /// The statements `Roots` need, in body order, stopping at (and
    /// leaving out) Reduce statements.
    std::vector<unsigned> closure(const std::vector<unsigned> &Roots) const {
      std::set<unsigned> Seen;
      walkArgs(N, Roots, [&](unsigned I, const Stmt &S) {
        if (S.K == Stmt::Reduce)
          return false;
        Seen.insert(I);
        return true;
      });
      return {Seen.begin(), Seen.end()};
    }

    Stmt make(Stmt::Kind K, DType T, llvm::StringRef Name,
              std::vector<unsigned> Args, unsigned Line) {
      Stmt S;
      S.K = K;
      S.Type = T;
      S.Name = L.Names.get(Name);
      S.Args = std::move(Args);
      S.Line = Line;
      return S;
    }

    /// A causal score: where(index(s) <= index(t), x, -inf) (or <, or the
    /// comparison mirrored; index(t) may be offset by a scalar, as a KV
    /// cache's `index(s, -2) + pos`): keys past t (+ offset) never count, so
    /// the key loop can stop there (the mask stays, for keys of equal
    /// score).
    void detectCausal(loop::AttentionParts &P) {
      const Stmt &S = N.Body[P.Score];
      if (S.K != Stmt::Apply || S.Op != OpCode::Select)
        return;
      const Stmt &Else = N.Body[S.Args[2]];
      const Stmt &Cond = N.Body[S.Args[0]];
      if (Else.K != Stmt::Const || !std::isinf(Else.FloatValue) ||
          Else.FloatValue > 0 || Cond.K != Stmt::Apply || Cond.Args.size() != 2)
        return;
      auto IndexOn = [&](unsigned I, unsigned Axis) {
        return N.Body[I].K == Stmt::Index &&
               N.Body[I].Axis == static_cast<int>(Axis);
      };
      unsigned L = Cond.Args[0], R = Cond.Args[1];
      // index(t) + offset (either order): the query's index and a scalar.
      std::optional<unsigned> Offset;
      auto Query = [&](unsigned &I) {
        const Stmt &Q = N.Body[I];
        if (Q.K != Stmt::Apply || Q.Op != OpCode::Add || Q.Args.size() != 2)
          return IndexOn(I, P.TAxis);
        for (int Side = 0; Side < 2; ++Side) {
          const unsigned Ix = Q.Args[Side], Off = Q.Args[1 - Side];
          const Stmt &O = N.Body[Off];
          if (IndexOn(Ix, P.TAxis) && !isFloat(O.Type) &&
              (O.K == Stmt::Scalar || O.K == Stmt::Const)) {
            I = Ix;
            Offset = Off;
            return true;
          }
        }
        return false;
      };
      // Normalise to `key OP query`.
      OpCode Op = Cond.Op;
      if (IndexOn(R, P.SAxis) && Query(L)) {
        std::swap(L, R);
        Op = Op == OpCode::Ge   ? OpCode::Le
             : Op == OpCode::Gt ? OpCode::Lt
                                : OpCode::Add; // anything else: no bound
      }
      if (!IndexOn(L, P.SAxis) || !(IndexOn(R, P.TAxis) || Query(R)) ||
          (Op != OpCode::Le && Op != OpCode::Lt))
        return;
      P.CausalIndex = R;
      P.CausalOffset = Offset;
      P.CausalInclusive = Op == OpCode::Le;
    }

    /// Attention (IR/AttentionPattern.h) over [batch..., t, j, s, d]: the
    /// loads of q, k and v under their embeddings, q kᵀ as a reduce over d,
    /// the score as written, then the softmax and the product with v as
    /// reduces over s. The emitters run the last three as one online loop.
    Nest runAttention(const AttentionMatch &A) {
      const Node &PV = F.Nodes[A.PV], &QK = F.Nodes[A.QK];
      const unsigned R = PV.rank();
      loop::AttentionParts P;
      for (unsigned B = 0; B + 2 < R; ++B)
        P.BatchAxes.push_back(B);
      P.TAxis = R - 2;
      P.JAxis = R - 1;
      P.SAxis = R;
      P.DAxis = R + 1;
      // The keys: the score's last extent (q kᵀ's, or a mask's when k has
      // one row that broadcasts).
      P.Keys = F.Nodes[A.Score].Sh.back();
      P.HeadDim = F.Nodes[QK.Operands[0]].Sh.back();
      for (unsigned K = 0; K < R; ++K)
        Outer.push_back(K);
      const Node &St = F.Nodes[A.Store];
      N.Domain.assign(R + 2, F.Extents.constant(1));
      for (unsigned K = 0; K < R; ++K)
        N.Domain[K] = refExtent(F, St.Param, K);
      N.Domain[P.SAxis] = P.Keys;
      N.Domain[P.DAxis] = P.HeadDim;
      // An operand's embedding: its batch axes (the result's last ones,
      // aligned on the right), then two.
      auto Emb = [&](NodeId Of, int Row, int Col) {
        std::vector<int> E;
        for (unsigned B = R - F.Nodes[Of].rank(); B + 2 < R; ++B)
          E.push_back(B);
        E.push_back(Row);
        E.push_back(Col);
        return E;
      };
      const int T = P.TAxis, J = P.JAxis, S = P.SAxis, D = P.DAxis;
      std::optional<unsigned> Q =
          lower(QK.Operands[0], Emb(QK.Operands[0], T, D));
      std::optional<unsigned> K =
          Q ? lower(QK.Operands[1], Emb(QK.Operands[1], D, S)) : std::nullopt;
      if (!K)
        return N;
      const unsigned Line = QK.Loc.Line, Out = PV.Loc.Line;
      const DType Ty = PV.Type;
      unsigned Prod = add(make(Stmt::Apply, Ty, "qk_prod", {*Q, *K}, Line));
      N.Body[Prod].Op = OpCode::Mul;
      Stmt QKSum = make(Stmt::Reduce, Ty, "qk", {Prod}, Line);
      QKSum.LoopExtents = {P.HeadDim};
      P.QK = add(std::move(QKSum));
      Memo[memoKey(A.QK, Emb(A.QK, T, S))] = P.QK;
      std::optional<unsigned> Sc = lower(A.Score, Emb(A.Score, T, S));
      std::optional<unsigned> V =
          Sc ? lower(PV.Operands[1], Emb(PV.Operands[1], S, J)) : std::nullopt;
      if (!V)
        return N;
      P.Score = *Sc;
      P.Value = *V;
      const unsigned SmLine = F.Nodes[A.Max].Loc.Line;
      Stmt Max = make(Stmt::Reduce, Ty, "m", {P.Score}, SmLine);
      Max.Reduction = ReduceKind::Max;
      Max.LoopExtents = {P.Keys};
      P.Max = add(std::move(Max));
      unsigned Sub = add(make(Stmt::Apply, Ty, "t", {P.Score, P.Max}, SmLine));
      N.Body[Sub].Op = OpCode::Sub;
      P.Exp = add(make(Stmt::Apply, Ty, "e", {Sub}, SmLine));
      N.Body[P.Exp].Op = OpCode::Exp;
      Stmt Sum = make(Stmt::Reduce, Ty, "l", {P.Exp}, F.Nodes[A.Sum].Loc.Line);
      Sum.LoopExtents = {P.Keys};
      P.Sum = add(std::move(Sum));
      unsigned EV = add(make(Stmt::Apply, Ty, "ev", {P.Exp, P.Value}, Out));
      N.Body[EV].Op = OpCode::Mul;
      Stmt Acc = make(Stmt::Reduce, Ty, "acc", {EV}, Out);
      Acc.LoopExtents = {P.Keys};
      P.Acc = add(std::move(Acc));
      unsigned Div = add(make(Stmt::Apply, Ty, "out", {P.Acc, P.Sum}, Out));
      N.Body[Div].Op = OpCode::Div;
      Memo[memoKey(A.PV, Emb(A.PV, T, J))] = Div;
      lowerStore(A.Store);
      deferStoresToReadRefs();
      // The loops as the emitters run them; phases and inner flags for
      // --emit=loop: 0 the dot products, 1 the scores and their max, 2 the
      // exponentials, their sum and the sum with v, 3 the output.
      P.Dot = closure({Prod});
      P.ScoreStmts = closure({P.Score});
      P.ValueStmts = closure({P.Value});
      std::vector<unsigned> Stores;
      for (unsigned I = 0; I < N.Body.size(); ++I)
        if (N.Body[I].K == Stmt::Store)
          Stores.push_back(I);
      P.Epilogue = closure(Stores);
      detectCausal(P);
      auto Mark = [&](const std::vector<unsigned> &Stmts, unsigned Phase,
                      bool Inner) {
        for (unsigned I : Stmts) {
          N.Body[I].Phase = Phase;
          N.Body[I].Inner = Inner;
        }
      };
      Mark(P.Dot, 0, true);
      Mark({P.QK}, 0, false);
      Mark(P.ScoreStmts, 1, true);
      Mark({P.Max}, 1, false);
      Mark({Sub, P.Exp, EV}, 2, true);
      Mark(P.ValueStmts, 2, true);
      Mark({P.Sum, P.Acc}, 2, false);
      Mark(P.Epilogue, 3, false);
      N.Attention = std::move(P);
      return N;
    }

    /// The coordinate along axis K of value Nd (embedded as Emb): the loop
    /// index, or 0 where the value has extent 1.
    unsigned coordinate(const Node &Nd, unsigned K,
                        const std::vector<int> &Emb) {
      if (Emb[K] < 0) {
        Stmt S = fromNode(Nd, Stmt::Const, "c");
        S.Type = DType::I64;
        S.IntValue = 0;
        return add(std::move(S));
      }
      Stmt S = fromNode(Nd, Stmt::Index, "idx");
      S.Type = DType::I64;
      S.Axis = Emb[K];
      S.Inner = isReduceAxis(Emb[K]);
      // A value broadcast along the axis at run time (extent 1 there)
      // has coordinate 0 whatever the loop's index (found by the random
      // tests: test/fuzz/regressions/index_of_broadcast).
      if (isReduceAxis(Emb[K]) || N.Domain[Emb[K]] != Nd.Sh[K])
        S.LoopExtents = {Nd.Sh[K]};
      return add(std::move(S));
    }

    /// repeat(v, count, axis): one load of v (a buffer: BufferViews.cpp)
    /// whose index along the axis is the coordinate divided by the count,
    /// a gathered axis like take's. It is within v's extent by
    /// construction (coordinate < extent * count), so nothing is checked
    /// at entry but the count's sign.
    std::optional<unsigned> lowerRepeat(NodeId Id,
                                        const std::vector<int> &Emb) {
      const Node &Nd = F.Nodes[Id];
      const Node &Table = F.Nodes[Nd.Operands[0]];
      const int Ax = Nd.Axes[0];
      std::optional<unsigned> Count = lower(Nd.Operands[1], {});
      if (!Count)
        return std::nullopt;
      const unsigned Coord = coordinate(Nd, Ax, Emb);
      Stmt Div = fromNode(Nd, Stmt::Apply, "");
      Div.Name = L.Names.get("rep");
      Div.Type = DType::I64;
      Div.Op = ir::OpCode::Div;
      Div.Args = {Coord, *Count};
      inherit(Div);
      const unsigned At = add(std::move(Div));
      std::vector<int> TableEmb = Emb;
      TableEmb[Ax] = -1;
      Stmt S = fromNode(Nd, Stmt::Load, "");
      S.Name = L.Names.get(F.Params[Table.Param].Name + "_v");
      S.Param = Table.Param;
      S.Map = mapOf(Table.Param, TableEmb, /*Stored=*/false);
      S.Map.Axes[Ax].Gathered = true;
      S.Args = {At};
      for (int D : TableEmb)
        S.Inner |= D >= 0 && isReduceAxis(D);
      inherit(S);
      return add(std::move(S));
    }

    /// take(table, indices, axis): the indices under the result's axes
    /// axis..axis+rank(indices), then one load of the table whose gathered
    /// axis is indexed by their value (inferShapes made the table a load).
    std::optional<unsigned> lowerTake(NodeId Id, const std::vector<int> &Emb) {
      const Node &Nd = F.Nodes[Id];
      const Node &Table = F.Nodes[Nd.Operands[0]];
      const int Ax = Nd.Axes[0];
      const int IR = F.Nodes[Nd.Operands[1]].rank();
      std::vector<int> IndexEmb(Emb.begin() + Ax, Emb.begin() + Ax + IR);
      std::optional<unsigned> Ix = lower(Nd.Operands[1], IndexEmb);
      if (!Ix)
        return std::nullopt;
      std::vector<int> TableEmb(Emb.begin(), Emb.begin() + Ax);
      TableEmb.push_back(-1);
      TableEmb.insert(TableEmb.end(), Emb.begin() + Ax + IR, Emb.end());
      Stmt S = fromNode(Nd, Stmt::Load, "");
      S.Name = L.Names.get(F.Params[Table.Param].Name + "_v");
      S.Param = Table.Param;
      S.Map = mapOf(Table.Param, TableEmb, /*Stored=*/false);
      S.Map.Axes[Ax].Gathered = true;
      S.Args = {*Ix};
      for (int D : TableEmb)
        S.Inner |= D >= 0 && isReduceAxis(D);
      inherit(S);
      return add(std::move(S));
    }

    /// matmul(a, b) in a nest over [batch..., m, n, k] reducing k: the sum
    /// over k of a[batch, m, k] * b[batch, k, n]. Like a reduction, its
    /// result is only available as a row value, used along the rows.
    std::optional<unsigned> lowerMatMul(NodeId Id,
                                        const std::vector<int> &Emb) {
      const Node &Nd = F.Nodes[Id];
      unsigned R = Nd.rank();
      bool Fits = Emb.size() == R && N.Domain.size() == R + 1;
      for (unsigned K = 0; Fits && K < R; ++K)
        Fits = Emb[K] == static_cast<int>(K) || F.Extents.isConst(Nd.Sh[K], 1);
      if (!Fits) {
        retry({Id,
               {},
               std::nullopt,
               fmt::format("a matmul's result used at line {} along other "
                           "axes than its own",
                           Nd.Loc.Line)},
              Nd,
              "pkc cannot compile this use of a matmul yet: its result feeds "
              "another matmul or a reduction, or is broadcast along other "
              "axes than its own");
        return std::nullopt;
      }
      int KAxis = static_cast<int>(R), MAxis = R - 2, NAxis = R - 1;
      auto Operand = [&](unsigned Op, int Row, int Col) {
        // Its batch axes are the result's last ones (aligned on the right).
        unsigned OR = F.Nodes[Nd.Operands[Op]].rank();
        std::vector<int> E;
        for (unsigned K = R - OR; K < R - 2; ++K)
          E.push_back(K);
        E.push_back(Row);
        E.push_back(Col);
        return lower(Nd.Operands[Op], E);
      };
      std::optional<unsigned> A = Operand(0, MAxis, KAxis);
      std::optional<unsigned> B = A ? Operand(1, KAxis, NAxis) : std::nullopt;
      if (!B)
        return std::nullopt;
      // Integer products are taken in int64, like the sum (and the eager
      // header): int32 products of large values would overflow.
      DType ProdType = isFloat(Nd.Type) ? Nd.Type : DType::I64;
      auto Widen = [&](unsigned V) {
        if (N.Body[V].Type == ProdType)
          return V;
        Stmt C = fromNode(Nd, Stmt::Cast, "");
        C.Name = L.Names.get(N.Body[V].Name + "_64");
        C.Type = ProdType;
        C.Args = {V};
        inherit(C);
        return add(std::move(C));
      };
      unsigned WA = Widen(*A), WB = Widen(*B);
      Stmt P = fromNode(Nd, Stmt::Apply, "");
      P.Name = L.Names.get("prod");
      P.Type = ProdType;
      P.Op = OpCode::Mul;
      P.Args = {WA, WB};
      inherit(P);
      P.Inner = true;
      unsigned Prod = add(std::move(P));
      Stmt S = fromNode(Nd, Stmt::Reduce, "acc");
      S.Reduction = ReduceKind::Sum;
      S.Args = {Prod};
      S.Phase = available(Prod);
      const Shape &ASh = F.Nodes[Nd.Operands[0]].Sh;
      S.LoopExtents.push_back(ASh.back());
      return add(std::move(S));
    }

    GroupsToNests &L;
    const Function &F;
    const FusionPlan::Group Grp;
    std::vector<NodeId> Stores;
    unsigned GroupId;
    loop::Step &St;
    Nest N;
    std::vector<unsigned> Outer;
    std::map<std::pair<NodeId, std::vector<int>>, unsigned> Memo;
  };

  /// One nest per store, ordered so that no store overwrites a ref a later
  /// one still reads.
  void buildUnfused(unsigned G, const std::vector<NodeId> &Stores,
                    loop::Step &St, std::vector<Nest> &Otherwise) {
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
        St.OtherwiseError = fmt::format(
            "{}: pkc fuses the stores to {} into one loop, which needs their "
            "shapes to be equal (the unfused order would overwrite values "
            "still to be read)",
            F.Name, fmt::join(Refs, ", "));
        return;
      }
      Order.push_back(*Ready);
      Left.erase(Ready);
    }
    for (NodeId S : Order) {
      loop::Step Own; // one store: no condition
      Nest Alone = NestBuilder(*this, G, {S}, Own).run();
      // In a reduction group, a store whose value reduces nothing (an
      // elementwise output fused with the reduction's rows) runs alone as
      // the elementwise nest it would have been in a group of its own.
      if (Alone.isReduction() && llvm::none_of(Alone.Body, [](const Stmt &X) {
            return X.K == Stmt::Reduce;
          })) {
        FusionPlan::Group Elementwise;
        Elementwise.Stores = {S};
        Alone = NestBuilder(*this, G, Elementwise, {S}, Own).run();
      }
      Otherwise.push_back(std::move(Alone));
    }
  }

  const Function &F;
  const FusionPlan &Plan;
  NameGen Names;
  std::vector<UserDiag> &Diags;
  std::optional<LoopRetry> *Retry;
};

} // namespace

loop::Program pk::lowerToLoops(const Function &F, const FusionPlan &Plan,
                               std::vector<UserDiag> &Diags,
                               std::optional<LoopRetry> *Retry) {
  return GroupsToNests(F, Plan, Diags, Retry).run();
}
