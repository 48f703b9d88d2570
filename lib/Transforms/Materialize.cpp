//===- Materialize.cpp - Keep values in memory between fused groups -------===//
//
// One fused group is one loop form (lib/Transforms/Fusion.cpp): an
// elementwise nest, a reduction nest over one set of axes, a matrix product
// with its prologue and epilogue, or attention. A value whose consumer needs
// another form — a matmul of a matmul, a reduction over a matmul's result
// or over other axes, a transposed product, two different products in one
// expression, a reduced value stored into a ref of another rank — is kept in a
// pk-managed buffer (a Temp parameter): a store writes it in the producer's
// group and the consumer loads it.
//
// The rule (docs/design.md, "Materialisation"):
//  * Conflicts are found bottom-up, one at a time; each is fixed by one
//    buffer and the search starts again, until none is left.
//  * At a conflict between a consumer and the reductions in its operand's
//    cone, the buffer holds either the operand itself (the whole
//    elementwise chain above the reductions is computed once, in the
//    producer's group) or, when that moves fewer bytes, the conflicting
//    reductions' results (each extended by the elementwise chain above it
//    that keeps its shape), counting the chain the consumer then recomputes
//    per evaluation of the operand (a product's prologue, once per tile):
//    RMSNorm feeding a projection keeps the [rows, 1] statistic, not a
//    normalised copy of x; two transcendentals above a mean feeding a
//    product keep the operand. Symbolic extents are taken as 1024
//    (constants as they are).
//  * Every non-store use of a buffered value loads the buffer; stores of the
//    value itself keep computing it in the producer's group (next to the
//    buffer's store), so storing a hidden activation costs no copy.
//  * Attention (IR/AttentionPattern.h) is one loop form: its cone is not
//    searched unless another store also needs its values.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace pk;
using namespace pk::ir;

namespace {

/// A signature and whether it is a matmul's (a matmul's group takes no
/// other reductions: they would turn its product into dot products).
struct Form {
  ReduceSignature Sig;
  bool MatMul = false;
  bool operator<(const Form &O) const {
    return std::tie(Sig, MatMul) < std::tie(O.Sig, O.MatMul);
  }
  bool operator==(const Form &O) const {
    return Sig == O.Sig && MatMul == O.MatMul;
  }
};

/// The cost model of a buffer choice (docs/design.md, "What is buffered, by
/// cost"), in bytes moved per call: a buffer is written once and read once;
/// the elementwise chain between buffered reductions and the operand that
/// needs them is recomputed each time the consumer evaluates an element of
/// the operand, at kFlopsPerByte (about the balance of a CPU core, 190
/// GFLOP/s against 12 GB/s, and of an H100, 67 TFLOP/s against 3.35 TB/s),
/// a transcendental counting kCostlyFlops (pk::vm's exp is about 15 vector
/// instructions).
constexpr double kFlopsPerByte = 16, kCostlyFlops = 16;
/// A matmul consumer evaluates its left operand once per column tile and
/// its right one once per row tile: at most ceil(extent / kProductTile)
/// times (the GPU's tiles; the CPU's are wider, 768 to 4096 columns).
constexpr double kProductTile = 128;

/// Elements of a value's extent `E` (each symbolic extent taken as 1024).
double estimatedExtent(const Function &F, ExtentId E) {
  const Extent &X = F.Extents.get(E);
  return X.K == Extent::Const ? static_cast<double>(X.Value) : 1024.0;
}

/// Elements of a value, with each symbolic extent taken as 1024.
double estimatedSize(const Function &F, const Shape &Sh) {
  double N = 1;
  for (ExtentId E : Sh)
    N *= estimatedExtent(F, E);
  return N;
}

/// `B` bytes, rounded, in the largest unit that keeps them above 1.
std::string bytesText(double B) {
  if (B >= 1 << 20)
    return fmt::format("{:.3g} MiB", B / (1 << 20));
  if (B >= 1 << 10)
    return fmt::format("{:.3g} KiB", B / (1 << 10));
  return fmt::format("{:.3g} bytes", B);
}

/// How often a consumer evaluates each element of its operand `I`.
double evaluationsOf(const Function &F, const Node &Consumer, unsigned I) {
  if (Consumer.Kind != NodeKind::MatMul || Consumer.rank() < 2)
    return 1;
  const unsigned R = Consumer.rank();
  // Operand a is read once per column tile of the result, b once per row
  // tile.
  ExtentId Across = Consumer.Sh[I == 0 ? R - 1 : R - 2];
  return std::max(1.0, std::ceil(estimatedExtent(F, Across) / kProductTile));
}

/// One buffer to add: the value, the stores whose operand it replaces (the
/// non-store uses are always replaced), and why.
struct Decision {
  std::vector<NodeId> Values;
  std::vector<NodeId> Stores; ///< stores whose operand loads the buffer
  std::string Why;
};

class Materializer {
public:
  explicit Materializer(Function &F) : F(F) {}

  unsigned run() {
    unsigned Added = 0;
    // Each round adds at least one buffer and removes a conflict; a kernel
    // has fewer conflicts than nodes.
    const size_t MaxRounds = F.Nodes.size() + 1;
    for (size_t Round = 0;; ++Round) {
      std::optional<Decision> D = findConflict();
      if (!D)
        return Added;
      if (Round == MaxRounds)
        llvm::report_fatal_error(llvm::Twine("pkc internal error: "
                                             "materialising the values of ") +
                                 F.Name + " does not converge");
      // Latest first: a buffer's two nodes go right after its value, so the
      // ids of the earlier values stay valid.
      std::sort(D->Values.rbegin(), D->Values.rend());
      for (NodeId V : D->Values)
        Added += materialize(V, D->Stores, D->Why);
    }
  }

private:
  /// Per node, the loop forms of the reductions in its cone (a buffer's load
  /// ends the cone).
  void computeForms() {
    Forms.assign(F.Nodes.size(), {});
    HasMatMul.assign(F.Nodes.size(), false);
    MatMuls.assign(F.Nodes.size(), {});
    for (NodeId V = 0; V < F.Nodes.size(); ++V) {
      const Node &N = F.Nodes[V];
      if (N.Dead || N.isStore())
        continue;
      for (NodeId O : valueOperands(N)) {
        Forms[V].insert(Forms[O].begin(), Forms[O].end());
        HasMatMul[V] = HasMatMul[V] || HasMatMul[O];
        MatMuls[V].insert(MatMuls[O].begin(), MatMuls[O].end());
      }
      if (N.Kind == NodeKind::MatMul)
        MatMuls[V].insert(V);
      if (N.Kind == NodeKind::Reduce || N.Kind == NodeKind::MatMul) {
        Forms[V].insert({reduceSignature(F, N), N.Kind == NodeKind::MatMul});
        HasMatMul[V] = HasMatMul[V] || N.Kind == NodeKind::MatMul;
      }
    }
  }

  /// Nodes computed by some store's group other than attention's.
  std::vector<bool> checkedNodes() {
    std::vector<NodeId> Roots;
    for (NodeId S = 0; S < F.Nodes.size(); ++S)
      if (!F.Nodes[S].Dead && F.Nodes[S].isStore() && !matchAttention(F, S))
        Roots.push_back(S);
    std::vector<bool> Checked(F.Nodes.size(), false);
    for (NodeId V : cone(F, Roots))
      Checked[V] = true;
    return Checked;
  }

  /// The reductions in the cone of `Root` reached without passing another
  /// reduction, whose form differs from `Keep` (all of them when Keep is
  /// empty).
  std::vector<NodeId> topReductions(NodeId Root, std::optional<Form> Keep) {
    std::vector<NodeId> Tops;
    walkCone(F, {Root}, [&](NodeId V, const Node &N) {
      if (N.Kind != NodeKind::Reduce && N.Kind != NodeKind::MatMul)
        return Walk::Operands;
      Form Mine{reduceSignature(F, N), N.Kind == NodeKind::MatMul};
      if (Keep && Mine == *Keep && !HasMatMul[V])
        return Walk::Operands; // one of the consumer's own reductions
      Tops.push_back(V);
      return Walk::Skip;
    });
    std::sort(Tops.begin(), Tops.end());
    return Tops;
  }

  /// The highest node above `R` inside `Root`'s cone that computes an
  /// elementwise function of R with R's shape, whose other operands need
  /// no reduction or product (rsqrt(mean + eps), a residual x + a b):
  /// buffering it instead of R saves recomputing the chain per use. The
  /// chain stops below a node with another user, so the buffer holds what
  /// the other users read too (the residual, not its square).
  NodeId extendUp(NodeId R, NodeId Root) {
    std::vector<NodeId> InCone = cone(F, {Root});
    std::set<NodeId> Cone(InCone.begin(), InCone.end());
    NodeId Cur = R;
    for (;;) {
      std::optional<NodeId> Next;
      unsigned Users = 0;
      for (NodeId U = Cur + 1; U < F.Nodes.size(); ++U) {
        const Node &N = F.Nodes[U];
        if (N.Dead || !llvm::is_contained(valueOperands(N), Cur))
          continue;
        ++Users;
        bool Fits =
            Cone.count(U) &&
            (N.Kind == NodeKind::Elementwise || N.Kind == NodeKind::Cast) &&
            N.Sh == F.Nodes[Cur].Sh;
        for (NodeId O : valueOperands(N))
          Fits &= O == Cur || F.Nodes[O].rank() == 0 ||
                  (Forms[O].empty() && !HasMatMul[O]);
        if (Fits)
          Next = U;
      }
      if (Users != 1 || !Next)
        return Cur;
      Cur = *Next;
    }
  }

  /// Whether a value of `Operand`'s cone (not Operand itself) computed from
  /// one of `Tops` has a user outside that cone.
  bool sharedBeyond(NodeId Operand, const std::vector<NodeId> &Tops) {
    std::vector<NodeId> InCone = cone(F, {Operand});
    std::set<NodeId> Cone(InCone.begin(), InCone.end());
    for (NodeId U = 0; U < F.Nodes.size(); ++U) {
      const Node &N = F.Nodes[U];
      if (N.Dead || Cone.count(U))
        continue;
      for (NodeId O : valueOperands(N)) {
        if (O == Operand || !Cone.count(O))
          continue;
        std::vector<NodeId> Below = cone(F, {O});
        for (NodeId T : Tops)
          if (std::binary_search(Below.begin(), Below.end(), T))
            return true;
      }
    }
    return false;
  }

  /// Flops of one element of `Operand` computed from `Stops` (and loads):
  /// its elementwise ops, a transcendental counting kCostlyFlops.
  double chainFlops(NodeId Operand, const std::vector<NodeId> &Stops) {
    double Flops = 0;
    walkCone(F, {Operand}, [&](NodeId V, const Node &N) {
      if (llvm::is_contained(Stops, V) || N.Kind == NodeKind::Load ||
          N.Kind == NodeKind::Reduce || N.Kind == NodeKind::MatMul)
        return Walk::Skip;
      if (N.Kind == NodeKind::Elementwise)
        Flops += opInfo(N.Op).Cost == OpCost::Costly ? kCostlyFlops : 1;
      else if (N.Kind == NodeKind::Cast)
        Flops += 1;
      return Walk::Operands;
    });
    return Flops;
  }

  /// Buffer the operand, or the conflicting reductions below it when that
  /// moves fewer bytes, counting the chain above them that the consumer then
  /// recomputes `Evaluations` times per element (once is free: the
  /// producer would compute it once too).
  Decision operandOrTops(NodeId Operand, std::optional<Form> Keep,
                         std::string Why, double Evaluations = 1,
                         bool TopsOnly = false) {
    Decision D;
    D.Why = std::move(Why);
    std::vector<NodeId> Tops = topReductions(Operand, Keep);
    double OperandSize = estimatedSize(F, F.Nodes[Operand].Sh), TopsSize = 0;
    std::vector<NodeId> Extended;
    for (NodeId T : Tops) {
      NodeId E = extendUp(T, Operand);
      if (!llvm::is_contained(Extended, E))
        Extended.push_back(E);
    }
    for (NodeId E : Extended)
      TopsSize += estimatedSize(F, F.Nodes[E].Sh);
    // In bytes moved: each buffer written and read once (the same element
    // size on both sides), plus the chain recomputed by the consumer.
    const double Bytes = static_cast<double>(dtypeBytes(F.Nodes[Operand].Type));
    const double OperandBytes = 2 * Bytes * OperandSize;
    const double Recomputed = OperandSize * chainFlops(Operand, Extended) *
                              (Evaluations - 1) / kFlopsPerByte;
    const double TopsBytes = 2 * Bytes * TopsSize + Recomputed;
    // On a tie the reductions' side wins when a value computed from them
    // is used outside this operand too (a residual that is also squared for
    // a norm): its buffer then serves those users, and nothing downstream
    // has to compute the product again.
    bool Smaller =
        TopsBytes < OperandBytes ||
        (TopsBytes == OperandBytes && sharedBeyond(Operand, Extended));
    const bool Choice =
        !Extended.empty() && !llvm::is_contained(Extended, Operand);
    if (Choice && (TopsOnly || Smaller))
      D.Values = Extended;
    else
      D.Values = {Operand};
    // Where there was a choice, the figures that made it.
    if (Choice && !TopsOnly)
      D.Why += fmt::format(
          " (by cost, each symbolic extent as 1024: the operand {}, the "
          "reductions below it {}{})",
          bytesText(OperandBytes), bytesText(TopsBytes - Recomputed),
          Recomputed > 0
              ? fmt::format(" + {} for recomputing {} flops an element {} "
                            "more times",
                            bytesText(Recomputed),
                            chainFlops(Operand, Extended), Evaluations - 1)
              : "");
    return D;
  }

  /// Two products one group runs as a dual product (loop::GemmPattern::Dual,
  /// pk::rt::gemm_dual): the same node as their left operand, the same rank
  /// and type. Their extents along n may differ where one broadcasts (the
  /// nest runs over both, as for any elementwise combination).
  bool dualProducts(const std::set<NodeId> &Products) const {
    if (Products.size() != 2)
      return false;
    const Node &P = F.Nodes[*Products.begin()],
               &Q = F.Nodes[*Products.rbegin()];
    return P.Operands[0] == Q.Operands[0] && P.rank() == Q.rank() &&
           P.Type == Q.Type;
  }

  std::string line(const Node &N) const {
    return N.Loc.Line ? fmt::format(" at line {}", N.Loc.Line) : "";
  }

  /// A product (or a view of one) that is directly the operand of another
  /// product or seen through a view: attention's q, kᵀ, v and output, a
  /// chain of linears. These are buffered before any other conflict is
  /// looked at, so that attention is recognised in what is left (its
  /// scores are then never stored).
  std::optional<Decision> findDirectProduct() {
    computeForms();
    std::vector<bool> Checked = checkedNodes();
    auto IsProduct = [&](NodeId V) {
      return F.Nodes[V].Kind == NodeKind::MatMul;
    };
    for (NodeId C = 0; C < F.Nodes.size(); ++C) {
      const Node &N = F.Nodes[C];
      if (N.Dead || !Checked[C])
        continue;
      if (N.Kind == NodeKind::View && IsProduct(N.Operands[0]) &&
          !N.Map.isIdentity(N.rank()))
        return Decision{{N.Operands[0]},
                        {},
                        fmt::format("a matmul's result viewed{}", line(N))};
      if (N.Kind == NodeKind::MatMul)
        for (unsigned I = 0; I < 2; ++I)
          if (IsProduct(N.Operands[I]))
            return operandOrTops(N.Operands[I], std::nullopt,
                                 fmt::format("operand {} of the matmul{}",
                                             I == 0 ? "a" : "b", line(N)),
                                 evaluationsOf(F, N, I));
    }
    return std::nullopt;
  }

  std::optional<Decision> findConflict() {
    if (std::optional<Decision> D = findDirectProduct())
      return D;
    computeForms();
    std::vector<bool> Checked = checkedNodes();
    for (NodeId C = 0; C < F.Nodes.size(); ++C) {
      const Node &N = F.Nodes[C];
      if (N.Dead || !Checked[C])
        continue;
      switch (N.Kind) {
      case NodeKind::Reduce: {
        NodeId O = N.Operands[0];
        Form Mine{reduceSignature(F, N), false};
        bool Clash = HasMatMul[O];
        for (const Form &Fm : Forms[O])
          Clash |= !(Fm == Mine);
        if (Clash)
          return operandOrTops(
              O, Mine,
              fmt::format("reduced{} over other axes than it is computed "
                          "with",
                          line(N)));
        break;
      }
      case NodeKind::MatMul:
        for (unsigned I = 0; I < 2; ++I)
          if (!Forms[N.Operands[I]].empty())
            return operandOrTops(N.Operands[I], std::nullopt,
                                 fmt::format("operand {} of the matmul{}",
                                             I == 0 ? "a" : "b", line(N)),
                                 evaluationsOf(F, N, I));
        break;
      case NodeKind::View:
        // A product's tile is written in its own layout: only a view that
        // reads it unchanged (a broadcast to its own rank) stays fused.
        if (HasMatMul[N.Operands[0]] && !N.Map.isIdentity(N.rank()))
          return Decision{{N.Operands[0]},
                          {},
                          fmt::format("a matmul's result viewed{}", line(N))};
        break;
      case NodeKind::Elementwise:
      case NodeKind::Cast: {
        // A matmul's result broadcast to a higher rank, or operands of
        // different loop forms: buffer the smaller side.
        std::optional<NodeId> Pick;
        std::set<Form> All;
        std::set<NodeId> Products;
        for (NodeId O : valueOperands(N)) {
          All.insert(Forms[O].begin(), Forms[O].end());
          Products.insert(MatMuls[O].begin(), MatMuls[O].end());
        }
        // Two different products meet: one group runs one product, or two
        // of the same left operand (SwiGLU's silu(x Wg) * (x Wu), a dual
        // product); otherwise the smaller side is buffered.
        if (Products.size() > 1 && !dualProducts(Products))
          All.insert(Form{ReduceSignature{0, {}}, false});
        for (NodeId O : valueOperands(N))
          if (HasMatMul[O] && F.Nodes[O].rank() != N.rank())
            Pick = O;
        if (!Pick && All.size() > 1) {
          double Best = 0;
          for (NodeId O : valueOperands(N)) {
            if (Forms[O].empty())
              continue;
            double Size = estimatedSize(F, F.Nodes[O].Sh);
            if (!Pick || Size <= Best) {
              Pick = O;
              Best = Size;
            }
          }
        }
        if (Pick)
          return Decision{
              {*Pick},
              {},
              Products.size() > 1
                  ? fmt::format("combined{} with another matrix product",
                                line(N))
                  : fmt::format("combined{} with a value of another loop form",
                                line(N))};
        break;
      }
      case NodeKind::Store: {
        NodeId V = N.Operands[0];
        if (Forms[V].size() != 1)
          break;
        const Form &Fm = *Forms[V].begin();
        unsigned M = F.Params[N.Param].Rank, Rank = Fm.Sig.Rank,
                 Kept = Rank - Fm.Sig.Axes.size();
        // The stored value's axes must be the nest's (or its rows'): a
        // store that broadcasts a reduced value to a higher rank would
        // index the reduce axes.
        unsigned R = F.Nodes[V].rank();
        bool ValueFits = Fm.MatMul ? R == Kept : R == Rank || R == Kept;
        if (ValueFits && R == M)
          break;
        std::string Why = fmt::format("stored{} into {}, whose rank is not "
                                      "the reduction's",
                                      line(N), F.Params[N.Param].Name);
        // The value fits a nest of its own: buffer it, and the store copies
        // the buffer. Otherwise (a reduced value broadcast against another
        // of higher rank) buffer the reductions in it.
        if (ValueFits)
          return Decision{{V}, {C}, Why};
        return operandOrTops(V, std::nullopt, Why, /*Evaluations=*/1,
                             /*TopsOnly=*/true);
      }
      default:
        break;
      }
    }
    return std::nullopt;
  }

  std::string tempName(const Node &V) {
    std::string Base;
    for (char C : V.Name)
      Base += llvm::isAlnum(C) || C == '_' ? C : '_';
    if (Base.empty() || llvm::isDigit(Base[0]))
      Base = V.Kind == NodeKind::MatMul   ? "mm"
             : V.Kind == NodeKind::Reduce ? reduceKindName(V.Reduction).str()
                                          : "t";
    Base += "_buf";
    std::string Name = Base;
    for (unsigned N = 2;; ++N) {
      bool Taken = llvm::any_of(F.Params,
                                [&](const Param &P) { return P.Name == Name; });
      if (!Taken)
        return Name;
      Name = fmt::format("{}{}", Base, N);
    }
  }

public:
  /// Adds the buffer of `V`: a store of V right after it and a load that
  /// every non-store use of V (and the stores `Redirect`) reads instead.
  unsigned materialize(NodeId V, llvm::ArrayRef<NodeId> Redirect,
                       const std::string &Why) {
    const Node Val = F.Nodes[V];
    // The buffer leaves out the axes a keepdims reduction in the value's
    // cone reduced (a statistic [T, 1] is kept as [T]): squeezes before its
    // store, expand_dims after its load. A loop over an extent-1 axis would
    // only cost an index and a stride the generated code never uses. Only
    // those: a reduction's rows store into a buffer of their own rank, so a
    // row axis that happens to be 1 ([1, 1], a single row's statistic)
    // stays; and nothing of a product's (its tile is stored unchanged or
    // not fused at all: a squeeze of it would be buffered again).
    std::set<unsigned> Reduced;
    bool Product = false;
    walkCone(F, {V}, [&](NodeId, const Node &N) {
      Product |= N.Kind == NodeKind::MatMul;
      if (N.Kind == NodeKind::Reduce && N.KeepDims && Reduced.empty() &&
          N.rank() == Val.rank()) {
        for (int A : N.Axes)
          Reduced.insert(A < 0 ? A + static_cast<int>(N.rank()) : A);
        for (unsigned A = 0; N.Axes.empty() && A < N.rank(); ++A)
          Reduced.insert(A); // over every axis
      }
      return N.Kind == NodeKind::Load ? Walk::Skip : Walk::Operands;
    });
    std::vector<unsigned> Unit;
    Shape Kept;
    for (unsigned A = 0; A < Val.rank(); ++A)
      if (F.Extents.isConst(Val.Sh[A], 1) && !Product && Reduced.count(A))
        Unit.push_back(A);
      else
        Kept.push_back(Val.Sh[A]);
    Param T;
    T.Name = tempName(Val);
    T.Kind = ParamKind::Temp;
    T.Type = Val.Type;
    // A value rounded to a 16-bit type (cast<pk::bfloat16>) is stored as
    // that type: the same values in half the bytes, and a product reading
    // the buffer knows it multiplies bfloat16 values (AMX, GemmOptions).
    if (Val.Kind == NodeKind::Elementwise && Val.Op == OpCode::RoundBF16)
      T.Type = DType::BF16;
    else if (Val.Kind == NodeKind::Elementwise && Val.Op == OpCode::RoundF16)
      T.Type = DType::F16;
    T.Rank = Kept.size();
    T.TempShape = Kept;
    T.Loc = Val.Loc;
    T.Why = Why;
    unsigned TP = F.Params.size();
    F.Params.push_back(T);

    // After V: squeeze..., store, load, expand_dims... (relative ids: the
    // first squeeze reads V, every other node the one before it).
    std::vector<Node> After;
    Shape Sh = Val.Sh;
    for (auto It = Unit.rbegin(); It != Unit.rend(); ++It) {
      Node Sq(NodeKind::View);
      Sq.View = ViewKind::Squeeze;
      Sq.Type = Val.Type;
      Sq.Axes = {static_cast<int>(*It)};
      Sq.Map = viewMap(ViewKind::Squeeze, *It, Sh.size(), Sh.size() - 1);
      Sh.erase(Sh.begin() + *It);
      Sq.Sh = Sh;
      Sq.Name = Val.Name;
      Sq.Label = Val.Label;
      Sq.Loc = Val.Loc;
      After.push_back(std::move(Sq));
    }
    Node St(NodeKind::Store);
    St.Type = Val.Type;
    St.Param = TP;
    St.Loc = Val.Loc;
    After.push_back(St);
    Node Ld(NodeKind::Load);
    Ld.Type = Val.Type;
    Ld.Param = TP;
    Ld.Sh = Kept;
    Ld.Name = Val.Name.empty() ? T.Name : Val.Name;
    Ld.Label = Val.Label.empty() ? T.Name : Val.Label;
    Ld.Loc = Val.Loc;
    After.push_back(Ld);
    for (unsigned A : Unit) {
      Node Ex(NodeKind::View);
      Ex.View = ViewKind::ExpandDims;
      Ex.Type = Val.Type;
      Ex.Axes = {static_cast<int>(A)};
      Ex.Map = viewMap(ViewKind::ExpandDims, A, Sh.size(), Sh.size() + 1);
      Sh.insert(Sh.begin() + A, Val.Sh[A]);
      Ex.Sh = Sh;
      Ex.Name = Ld.Name;
      Ex.Label = Ld.Label;
      Ex.Loc = Val.Loc;
      After.push_back(std::move(Ex));
    }
    const size_t LoadAt = Unit.size() + 1;

    // Rebuild the node list with those nodes after V.
    std::vector<Node> Old = std::move(F.Nodes);
    std::vector<NodeId> NewId(Old.size());
    F.Nodes.clear();
    F.Nodes.reserve(Old.size() + After.size());
    NodeId UseId = 0;
    for (NodeId I = 0; I < Old.size(); ++I) {
      Node N = std::move(Old[I]);
      bool Redirected = N.isStore() ? llvm::is_contained(Redirect, I) : true;
      for (NodeId &O : N.Operands)
        O = (O == V && Redirected && I > V) ? UseId : NewId[O];
      NewId[I] = F.Nodes.size();
      F.Nodes.push_back(std::move(N));
      if (I == V) {
        for (size_t K = 0; K < After.size(); ++K) {
          Node &A = After[K];
          if (K != LoadAt)
            A.Operands = {K == 0 ? NewId[V] : NodeId(F.Nodes.size() - 1)};
          F.Nodes.push_back(A);
        }
        UseId = F.Nodes.size() - 1;
      }
    }
    for (Guard &G : F.Guards) {
      G.NodeA = NewId[G.NodeA];
      G.NodeB = NewId[G.NodeB];
    }
    return 1;
  }

private:
  Function &F;
  std::vector<std::set<Form>> Forms;
  std::vector<bool> HasMatMul;
  /// The matmul nodes in each node's cone.
  std::vector<std::set<NodeId>> MatMuls;
};

} // namespace

unsigned pk::materialize(Function &F) { return Materializer(F).run(); }

unsigned pk::materializeValue(Function &F, NodeId V,
                              llvm::ArrayRef<NodeId> Redirect,
                              const std::string &Why) {
  Materializer(F).materialize(V, Redirect, Why);
  return F.Params.size() - 1;
}

unsigned pk::snapshotRef(Function &F, unsigned Ref) {
  const Param P = F.Params[Ref];
  Param T;
  T.Name = P.Name + "_old";
  for (unsigned N = 2;
       llvm::any_of(F.Params, [&](const Param &Q) { return Q.Name == T.Name; });
       ++N)
    T.Name = fmt::format("{}_old{}", P.Name, N);
  T.Kind = ParamKind::Temp;
  T.Type = computeType(P.Type);
  T.Rank = P.Rank;
  T.TempShape = refShape(F, Ref);
  T.Loc = P.Loc;
  T.Why = fmt::format("the old contents of {}, read after {} is overwritten",
                      P.Name, P.Name);
  unsigned TP = F.Params.size();
  F.Params.push_back(T);

  // copy = load(ref); store temp, copy; old = load(temp), right before the
  // first load it replaces. The copy reads the contents those loads read: a
  // window read after an earlier store to its ref keeps that load's version
  // (fuzz regression window_update_after_store), and sits after the store,
  // so fusion places the store's group first (window_update_cycle). Loads
  // of an older version (a window read before and after a store) keep
  // reading memory; if they conflict too, the driver asks again.
  unsigned Version = 0;
  for (const Node &N : F.Nodes)
    if (!N.Dead && N.Kind == NodeKind::Load && N.Param == Ref)
      Version = std::max(Version, N.Version);
  auto Replaced = [&](const Node &N) {
    return !N.Dead && N.Kind == NodeKind::Load && N.Param == Ref &&
           N.Version == Version;
  };
  NodeId At = 0;
  while (At < F.Nodes.size() && !Replaced(F.Nodes[At]))
    ++At;
  Node Copy(NodeKind::Load);
  Copy.Version = Version;
  Copy.Type = T.Type;
  Copy.Param = Ref;
  Copy.Sh = T.TempShape;
  Copy.Name = P.Name;
  Copy.Label = P.Name;
  Copy.Loc = P.Loc;
  Node St(NodeKind::Store);
  St.Type = T.Type;
  St.Param = TP;
  St.Operands = {At};
  St.Loc = P.Loc;
  Node Ld = Copy;
  Ld.Param = TP;
  Ld.Version = 0;

  const NodeId Shift = 3;
  std::vector<Node> Old = std::move(F.Nodes);
  F.Nodes.clear();
  auto Renumber = [&](NodeId O) { return O >= At ? O + Shift : O; };
  for (NodeId I = 0; I < Old.size(); ++I) {
    if (I == At) {
      F.Nodes.push_back(Copy);
      F.Nodes.push_back(St);
      F.Nodes.push_back(Ld);
    }
    Node N = Old[I];
    for (NodeId &O : N.Operands)
      O = Replaced(Old[O]) ? At + 2 : Renumber(O);
    F.Nodes.push_back(std::move(N));
  }
  if (At == Old.size())
    llvm::report_fatal_error(llvm::Twine("pkc internal error: no load of ") +
                             P.Name + " to copy in " + F.Name);
  for (Guard &G : F.Guards) {
    G.NodeA = Renumber(G.NodeA);
    G.NodeB = Renumber(G.NodeB);
  }
  return TP;
}
