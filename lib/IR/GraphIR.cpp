//===- GraphIR.cpp - Graph IR: tables, builder, printer, verifier ---------===//

#include "IR/GraphIR.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>

#include <cassert>
#include <cmath>

using namespace pk::ir;

static const DTypeInfo DTypeTable[] = {
#define PK_DTYPE(Code, Name, Cpp, Bytes, Compute, CpuStorage, CpuLoad,         \
                 CpuStore, CudaStorage, CudaLoad, CudaStore, CudaHeader)       \
  {DType::Code, Name,     Cpp,         Bytes,    DType::Compute, CpuStorage,   \
   CpuLoad,     CpuStore, CudaStorage, CudaLoad, CudaStore,      CudaHeader},
#include "IR/DTypes.def"
};

const DTypeInfo &pk::ir::dtypeInfo(DType T) {
  const DTypeInfo &Info = DTypeTable[static_cast<unsigned>(T)];
  assert(Info.Code == T && "DTypes.def rows out of order");
  return Info;
}

llvm::ArrayRef<DTypeInfo> pk::ir::allDTypes() { return DTypeTable; }

llvm::StringRef pk::ir::dtypeName(DType T) { return dtypeInfo(T).Name; }
llvm::StringRef pk::ir::dtypeCppName(DType T) { return dtypeInfo(T).Cpp; }
unsigned pk::ir::dtypeBytes(DType T) { return dtypeInfo(T).Bytes; }
DType pk::ir::computeType(DType T) { return dtypeInfo(T).Compute; }
bool pk::ir::isStorageOnly(DType T) { return computeType(T) != T; }

bool pk::ir::isFloat(DType T) { return T == DType::F32 || T == DType::F64; }
bool pk::ir::isInteger(DType T) { return T == DType::I32 || T == DType::I64; }

//===----------------------------------------------------------------------===//
// Op table
//===----------------------------------------------------------------------===//

static const OpInfo OpTable[] = {
#define PK_OP(Code, Name, Source, Arity, Result, Cpp, CppScalar, CudaF32,      \
              CudaF64, Integer, Cost)                                          \
  {OpCode::Code, Name,    Source,  Arity,   ResultRule::Result, Cpp,           \
   CppScalar,    CudaF32, CudaF64, Integer, OpCost::Cost},
#include "IR/Ops.def"
};

const OpInfo &pk::ir::opInfo(OpCode C) {
  return OpTable[static_cast<unsigned>(C)];
}

llvm::ArrayRef<OpInfo> pk::ir::allOps() { return OpTable; }

const OpInfo *pk::ir::lookupOpBySource(llvm::StringRef Source) {
  static const llvm::StringMap<const OpInfo *> BySource = [] {
    llvm::StringMap<const OpInfo *> M;
    for (const OpInfo &I : OpTable)
      M[I.Source] = &I;
    return M;
  }();
  auto It = BySource.find(Source);
  return It == BySource.end() ? nullptr : It->second;
}

OpCode pk::ir::throughStorageOp(DType T) {
  switch (T) {
  case DType::F16:
    return OpCode::RoundF16;
  case DType::BF16:
    return OpCode::RoundBF16;
  case DType::I8:
    return OpCode::WrapI8;
  case DType::U8:
    return OpCode::WrapU8;
  default:
    break;
  }
  llvm_unreachable("only the storage-only dtypes convert through storage");
}

llvm::StringRef pk::ir::reduceKindName(ReduceKind K) {
  switch (K) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::Mean:
    return "mean";
  case ReduceKind::ArgMax:
    return "argmax";
  case ReduceKind::ArgMin:
    return "argmin";
  }
  llvm_unreachable("bad reduction");
}

//===----------------------------------------------------------------------===//
// Extents
//===----------------------------------------------------------------------===//

ExtentId ExtentTable::intern(const Extent &E) const {
  if (E.K == Extent::Linear || E.K == Extent::Product) {
    std::vector<std::pair<int64_t, ExtentId>> Terms;
    for (const Extent::Term &T : E.Terms)
      Terms.emplace_back(T.Coef, T.Atom);
    // A product's key is told from a linear form's by a leading marker.
    if (E.K == Extent::Product)
      Terms.insert(Terms.begin(), {0, ExtentId(-1)});
    auto [It, Inserted] = LinearIndex.try_emplace(
        std::make_pair(E.Value, std::move(Terms)), Items.size());
    if (Inserted)
      Items.push_back(E);
    return It->second;
  }
  auto Key = std::make_tuple(static_cast<int>(E.K), E.Value, E.Param, E.Axis,
                             E.A, E.B);
  auto [It, Inserted] = Index.try_emplace(Key, Items.size());
  if (Inserted)
    Items.push_back(E);
  return It->second;
}

ExtentId ExtentTable::constant(int64_t V) const {
  Extent E;
  E.K = Extent::Const;
  E.Value = V;
  return intern(E);
}

ExtentId ExtentTable::dim(unsigned Param, unsigned Axis) const {
  Extent E;
  E.K = Extent::Dim;
  E.Param = Param;
  E.Axis = Axis;
  return intern(E);
}

ExtentId ExtentTable::scalar(unsigned Param) const {
  Extent E;
  E.K = Extent::Scalar;
  E.Param = Param;
  return intern(E);
}

ExtentId ExtentTable::linear(int64_t Value,
                             std::vector<Extent::Term> Terms) const {
  std::sort(Terms.begin(), Terms.end());
  std::vector<Extent::Term> Merged;
  for (const Extent::Term &T : Terms) {
    if (!Merged.empty() && Merged.back().Atom == T.Atom)
      Merged.back().Coef += T.Coef;
    else
      Merged.push_back(T);
    if (Merged.back().Coef == 0)
      Merged.pop_back();
  }
  if (Merged.empty())
    return constant(Value);
  if (Value == 0 && Merged.size() == 1 && Merged[0].Coef == 1)
    return Merged[0].Atom;
  Extent E;
  E.K = Extent::Linear;
  E.Value = Value;
  E.Terms = std::move(Merged);
  return intern(E);
}

ExtentId ExtentTable::combine(ExtentId A, int64_t SignA, ExtentId B,
                              int64_t SignB) const {
  int64_t Value = 0;
  std::vector<Extent::Term> Terms;
  auto Take = [&](ExtentId Id, int64_t Sign) {
    const Extent &E = get(Id);
    if (E.K == Extent::Const) {
      Value += Sign * E.Value;
    } else if (E.K == Extent::Linear) {
      Value += Sign * E.Value;
      for (const Extent::Term &T : E.Terms)
        Terms.push_back({Sign * T.Coef, T.Atom});
    } else {
      Terms.push_back({Sign, Id});
    }
  };
  Take(A, SignA);
  Take(B, SignB);
  return linear(Value, std::move(Terms));
}

ExtentId ExtentTable::add(ExtentId A, ExtentId B) const {
  return combine(A, 1, B, 1);
}

ExtentId ExtentTable::sub(ExtentId A, ExtentId B) const {
  return combine(A, 1, B, -1);
}

ExtentId ExtentTable::scale(ExtentId A, int64_t C) const {
  return combine(A, C, constant(0), 0);
}

ExtentId ExtentTable::product(int64_t Value,
                              std::vector<Extent::Term> Terms) const {
  std::sort(Terms.begin(), Terms.end());
  std::vector<Extent::Term> Merged;
  for (const Extent::Term &T : Terms)
    if (!Merged.empty() && Merged.back().Atom == T.Atom)
      Merged.back().Coef += T.Coef;
    else if (T.Coef)
      Merged.push_back(T);
  if (Value == 0 || Merged.empty())
    return constant(Merged.empty() ? Value : 0);
  if (Merged.size() == 1 && Merged[0].Coef == 1)
    return scale(Merged[0].Atom, Value);
  Extent E;
  E.K = Extent::Product;
  E.Value = Value;
  E.Terms = std::move(Merged);
  return intern(E);
}

/// `Value * Π Terms` of an extent: its factors.
static void factors(const ExtentTable &T, ExtentId Id, int64_t &Value,
                    std::vector<Extent::Term> &Terms) {
  const Extent &E = T.get(Id);
  if (E.K == Extent::Const) {
    Value *= E.Value;
  } else if (E.K == Extent::Linear && E.Value == 0 && E.Terms.size() == 1) {
    // c * x: the constant and the atom.
    Value *= E.Terms[0].Coef;
    factors(T, E.Terms[0].Atom, Value, Terms);
  } else if (E.K == Extent::Product) {
    Value *= E.Value;
    Terms.insert(Terms.end(), E.Terms.begin(), E.Terms.end());
  } else {
    Terms.push_back({1, Id});
  }
}

ExtentId ExtentTable::mul(ExtentId A, ExtentId B) const {
  if (get(A).K == Extent::Const)
    return scale(B, get(A).Value);
  if (get(B).K == Extent::Const)
    return scale(A, get(B).Value);
  int64_t Value = 1;
  std::vector<Extent::Term> Terms;
  factors(*this, A, Value, Terms);
  factors(*this, B, Value, Terms);
  return product(Value, std::move(Terms));
}

ExtentId ExtentTable::div(ExtentId A, ExtentId B) const {
  int64_t VA = 1, VB = 1;
  std::vector<Extent::Term> TA, TB;
  factors(*this, A, VA, TA);
  factors(*this, B, VB, TB);
  // Cancel the factors B shares with A.
  std::vector<Extent::Term> Left;
  for (Extent::Term T : TB) {
    auto It = llvm::find_if(TA, [&](const Extent::Term &U) {
      return U.Atom == T.Atom && U.Coef > 0;
    });
    int64_t Common = It == TA.end() ? 0 : std::min(It->Coef, T.Coef);
    if (Common) {
      It->Coef -= Common;
      T.Coef -= Common;
    }
    if (T.Coef)
      Left.push_back(T);
  }
  if (VB != 0 && VA % VB == 0) {
    VA /= VB;
    VB = 1;
  }
  ExtentId Num = product(VA, TA);
  if (Left.empty() && VB == 1)
    return Num;
  ExtentId Den = product(VB, Left);
  if (get(Num).K == Extent::Const && get(Den).K == Extent::Const)
    return constant(get(Den).Value ? get(Num).Value / get(Den).Value : 0);
  Extent E;
  E.K = Extent::Quotient;
  E.A = Num;
  E.B = Den;
  return intern(E);
}

/// True when \p Needle occurs in the broadcast tree \p Hay.
static bool occursIn(const ExtentTable &T, ExtentId Needle, ExtentId Hay) {
  if (Needle == Hay)
    return true;
  const Extent &E = T.get(Hay);
  return E.K == Extent::Bcast &&
         (occursIn(T, Needle, E.A) || occursIn(T, Needle, E.B));
}

ExtentId ExtentTable::bcast(ExtentId A, ExtentId B) const {
  if (A == B || isConst(B, 1))
    return A;
  if (isConst(A, 1))
    return B;
  // bcast(bcast(x, y), x) = bcast(x, y): x already took part.
  if (occursIn(*this, B, A))
    return A;
  if (occursIn(*this, A, B))
    return B;
  const Extent &EA = get(A), &EB = get(B);
  // Two different constants (neither 1) cannot broadcast; keep the first and
  // let the Guards pass report it.
  if (EA.K == Extent::Const && EB.K == Extent::Const)
    return A;
  // Canonical order so that bcast(a, b) and bcast(b, a) intern equal.
  if (A > B)
    std::swap(A, B);
  Extent E;
  E.K = Extent::Bcast;
  E.A = A;
  E.B = B;
  return intern(E);
}

//===----------------------------------------------------------------------===//
// Constant folding (used while building)
//===----------------------------------------------------------------------===//

namespace {
/// Reads a Const node as double or int64 and applies C++ semantics of the
/// node's dtype.
double asDouble(const Node &N) {
  return isFloat(N.Type) ? N.FloatValue : static_cast<double>(N.IntValue);
}

/// Normalises an integer to the range of its dtype (C++ conversion).
int64_t wrapInt(int64_t V, DType T) {
  switch (T) {
  case DType::Bool:
    return V != 0;
  case DType::I32:
    return static_cast<int32_t>(V);
  default:
    return V;
  }
}

double roundFloat(double V, DType T) {
  return T == DType::F32 ? static_cast<double>(static_cast<float>(V)) : V;
}

/// Folds integer ops as the generated code computes them (in i64; the
/// caller wraps to the node's dtype): overflow wraps, and `/` and `%` by
/// zero give 0 as pk::scalar::div and rem do. Returns false for ops that
/// are not folded.
bool foldInt(OpCode Op, llvm::ArrayRef<int64_t> A, int64_t &R) {
  auto U = [](int64_t X) { return static_cast<uint64_t>(X); };
  switch (Op) {
  case OpCode::Add:
    R = static_cast<int64_t>(U(A[0]) + U(A[1]));
    return true;
  case OpCode::Sub:
    R = static_cast<int64_t>(U(A[0]) - U(A[1]));
    return true;
  case OpCode::Mul:
    R = static_cast<int64_t>(U(A[0]) * U(A[1]));
    return true;
  case OpCode::Div: // x / -1 is -x, which wraps for the i64 minimum
    R = A[1] == 0    ? 0
        : A[1] == -1 ? static_cast<int64_t>(0 - U(A[0]))
                     : A[0] / A[1];
    return true;
  case OpCode::Rem:
    R = (A[1] == 0 || A[1] == -1) ? 0 : A[0] % A[1];
    return true;
  case OpCode::Neg:
    R = static_cast<int64_t>(0 - U(A[0]));
    return true;
  case OpCode::Lt:
    R = A[0] < A[1];
    return true;
  case OpCode::Le:
    R = A[0] <= A[1];
    return true;
  case OpCode::Gt:
    R = A[0] > A[1];
    return true;
  case OpCode::Ge:
    R = A[0] >= A[1];
    return true;
  case OpCode::Eq:
    R = A[0] == A[1];
    return true;
  case OpCode::Ne:
    R = A[0] != A[1];
    return true;
  case OpCode::And:
    R = A[0] && A[1];
    return true;
  case OpCode::Or:
    R = A[0] || A[1];
    return true;
  case OpCode::Not:
    R = !A[0];
    return true;
  case OpCode::Abs: // the minimum is its own absolute value (it wraps)
    R = A[0] < 0 ? static_cast<int64_t>(0 - U(A[0])) : A[0];
    return true;
  case OpCode::Maximum:
    R = A[0] > A[1] ? A[0] : A[1];
    return true;
  case OpCode::Minimum:
    R = A[0] < A[1] ? A[0] : A[1];
    return true;
  case OpCode::Clamp:
    R = std::min(std::max(A[0], A[1]), A[2]);
    return true;
  case OpCode::Select:
    R = A[0] ? A[1] : A[2];
    return true;
  case OpCode::WrapI8:
    R = static_cast<int8_t>(A[0]);
    return true;
  case OpCode::WrapU8:
    R = static_cast<uint8_t>(A[0]);
    return true;
  default:
    return false;
  }
}

/// Folds float ops exactly as the generated code would compute them for
/// the arithmetic and comparisons; transcendental functions are not folded
/// (their generated implementation may differ from the host's libm).
bool foldFloat(OpCode Op, llvm::ArrayRef<double> A, double &R) {
  switch (Op) {
  case OpCode::Add:
    R = A[0] + A[1];
    return true;
  case OpCode::Sub:
    R = A[0] - A[1];
    return true;
  case OpCode::Mul:
    R = A[0] * A[1];
    return true;
  case OpCode::Div:
    R = A[0] / A[1];
    return true;
  case OpCode::Neg:
    R = -A[0];
    return true;
  case OpCode::Lt:
    R = A[0] < A[1];
    return true;
  case OpCode::Le:
    R = A[0] <= A[1];
    return true;
  case OpCode::Gt:
    R = A[0] > A[1];
    return true;
  case OpCode::Ge:
    R = A[0] >= A[1];
    return true;
  case OpCode::Eq:
    R = A[0] == A[1];
    return true;
  case OpCode::Ne:
    R = A[0] != A[1];
    return true;
  case OpCode::Select:
    R = A[0] != 0 ? A[1] : A[2];
    return true;
  default:
    return false;
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

NodeId Builder::add(Node N) {
  F.Nodes.push_back(std::move(N));
  return F.Nodes.size() - 1;
}

llvm::StringRef pk::ir::viewKindName(ViewKind K) {
  switch (K) {
  case ViewKind::BroadcastTo:
    return "broadcast_to";
  case ViewKind::ExpandDims:
    return "expand_dims";
  case ViewKind::Squeeze:
    return "squeeze";
  case ViewKind::Transpose:
    return "transpose";
  case ViewKind::Permute:
    return "permute_dims";
  case ViewKind::Reshape:
    return "reshape";
  case ViewKind::Slice:
    return "slice";
  }
  llvm_unreachable("bad view kind");
}

bool pk::ir::IndexMap::isBroadcast(unsigned ViewRank) const {
  if (Source.size() > ViewRank)
    return false;
  unsigned Off = ViewRank - Source.size();
  for (unsigned K = 0; K < Source.size(); ++K)
    if (Source[K] != static_cast<int>(K + Off))
      return false;
  return true;
}

bool pk::ir::IndexMap::isIdentity(unsigned ViewRank) const {
  return Source.size() == ViewRank && isBroadcast(ViewRank);
}

IndexMap pk::ir::viewMap(ViewKind K, unsigned Axis, unsigned OperandRank,
                         unsigned ViewRank) {
  IndexMap M;
  for (unsigned A = 0; A < OperandRank; ++A) {
    int S = static_cast<int>(A);
    switch (K) {
    case ViewKind::BroadcastTo:
      S += static_cast<int>(ViewRank) - static_cast<int>(OperandRank);
      break;
    case ViewKind::ExpandDims:
      S += A >= Axis ? 1 : 0;
      break;
    case ViewKind::Squeeze:
      S = A == Axis ? -1 : A > Axis ? S - 1 : S;
      break;
    case ViewKind::Transpose:
      if (OperandRank >= 2 && A + 2 >= OperandRank)
        S = static_cast<int>(2 * OperandRank - 3 - A);
      break;
    case ViewKind::Permute: // its map comes from the axes: permuteMap()
      break;
    }
    M.Source.push_back(S);
  }
  return M;
}

llvm::ArrayRef<NodeId> pk::ir::valueOperands(const Node &N) {
  llvm::ArrayRef<NodeId> Ops = N.Operands;
  if (N.Kind == NodeKind::View)
    return Ops.take_front(1);
  // Only shapes: index's operand, an extent's value, and reshape's and
  // slice's scalar extents (the View case above).
  if (N.Kind == NodeKind::Index || N.Kind == NodeKind::Extent)
    return {};
  return Ops;
}

ReduceSignature pk::ir::reduceSignature(const Function &F, const Node &N) {
  if (N.Kind == NodeKind::MatMul)
    return {N.rank() + 1, {N.rank()}};
  unsigned Rank = F.Nodes[N.Operands[0]].rank();
  ReduceSignature S{Rank, {}};
  for (int A : N.Axes)
    S.Axes.push_back(A < 0 ? A + static_cast<int>(Rank) : A);
  if (N.Axes.empty())
    for (unsigned A = 0; A < Rank; ++A)
      S.Axes.push_back(A);
  std::sort(S.Axes.begin(), S.Axes.end());
  return S;
}

bool pk::ir::walkCone(const Function &F, llvm::ArrayRef<NodeId> Roots,
                      llvm::function_ref<Walk(NodeId, const Node &)> Visit) {
  std::vector<bool> Seen(F.Nodes.size(), false);
  std::vector<NodeId> Work(Roots.rbegin(), Roots.rend());
  while (!Work.empty()) {
    NodeId V = Work.back();
    Work.pop_back();
    if (Seen[V])
      continue;
    Seen[V] = true;
    switch (Visit(V, F.Nodes[V])) {
    case Walk::Stop:
      return false;
    case Walk::Skip:
      break;
    case Walk::Operands:
      for (NodeId O : valueOperands(F.Nodes[V]))
        Work.push_back(O);
      break;
    }
  }
  return true;
}

std::vector<NodeId> pk::ir::cone(const Function &F,
                                 llvm::ArrayRef<NodeId> Roots) {
  std::vector<bool> In(F.Nodes.size(), false);
  walkCone(F, Roots, [&](NodeId V, const Node &) {
    In[V] = true;
    return Walk::Operands;
  });
  std::vector<NodeId> Out;
  for (NodeId V = 0; V < F.Nodes.size(); ++V)
    if (In[V])
      Out.push_back(V);
  return Out;
}

ExtentId pk::ir::refExtent(const Function &F, unsigned Param, unsigned Axis) {
  const ir::Param &P = F.Params[Param];
  return P.hasDerivedShape() ? P.TempShape[Axis] : F.Extents.dim(Param, Axis);
}

unsigned pk::ir::rootOf(const Function &F, unsigned Param) {
  const ir::Param &P = F.Params[Param];
  if (P.isWindow())
    return rootOf(F, P.Root);
  if (P.isAlias())
    return rootOf(F, P.Parent);
  return Param;
}

bool pk::ir::isContiguous(const Function &F, unsigned Param) {
  const ir::Param &P = F.Params[Param];
  if (P.isAlias())
    return true; // of a contiguous buffer (BufferViews.cpp)
  return !P.isWindow() || (P.WindowAxis == 0 && isContiguous(F, P.Parent));
}

Shape pk::ir::refShape(const Function &F, unsigned Param) {
  Shape S;
  for (unsigned A = 0; A < F.Params[Param].Rank; ++A)
    S.push_back(refExtent(F, Param, A));
  return S;
}

unsigned Builder::addParam(llvm::StringRef Name, ParamKind K, DType T,
                           unsigned Rank, SrcLoc Loc) {
  Param P;
  P.Name = Name.str();
  P.Kind = K;
  P.Type = T;
  P.Rank = K == ParamKind::Scalar ? 0 : Rank;
  P.Loc = Loc;
  F.Params.push_back(std::move(P));
  return F.Params.size() - 1;
}

NodeId Builder::scalarParam(unsigned Param, SrcLoc Loc) {
  Node N(NodeKind::ScalarParam);
  N.Type = F.Params[Param].Type;
  N.Param = Param;
  N.Weak = true;
  N.Name = F.Params[Param].Name;
  N.Label = N.Name;
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::extentValue(ExtentId E, SrcLoc Loc) {
  const Extent &X = F.Extents.get(E);
  if (X.K == Extent::Const)
    return constInt(X.Value, DType::I64, /*Weak=*/false, Loc);
  Node N(NodeKind::Extent);
  N.Type = DType::I64;
  N.Ext = E;
  N.Label = extentToString(F, E);
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::constFloat(double V, DType T, bool Weak, SrcLoc Loc) {
  Node N(NodeKind::Const);
  N.Type = T;
  if (isFloat(T))
    N.FloatValue = roundFloat(V, T);
  else
    N.IntValue = wrapInt(static_cast<int64_t>(V), T);
  N.Weak = Weak;
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::constInt(int64_t V, DType T, bool Weak, SrcLoc Loc) {
  Node N(NodeKind::Const);
  N.Type = T;
  if (isFloat(T))
    N.FloatValue = roundFloat(static_cast<double>(V), T);
  else
    N.IntValue = wrapInt(V, T);
  N.Weak = Weak;
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::load(unsigned Param, SrcLoc Loc) {
  Node N(NodeKind::Load);
  // A 16-bit ref's elements are read as float: storage is not compute.
  N.Type = computeType(F.Params[Param].Type);
  N.Param = Param;
  N.Name = F.Params[Param].Name;
  N.Label = N.Name;
  N.Loc = Loc;
  return add(std::move(N));
}

std::optional<double> Builder::constValue(NodeId Id) const {
  const Node &N = F.Nodes[Id];
  if (N.Kind != NodeKind::Const)
    return std::nullopt;
  return asDouble(N);
}

NodeId Builder::elementwise(OpCode Op, llvm::ArrayRef<NodeId> Operands,
                            DType Result, SrcLoc Loc) {
  bool AllConst = llvm::all_of(
      Operands, [&](NodeId O) { return F.Nodes[O].Kind == NodeKind::Const; });
  if (AllConst) {
    bool Weak =
        llvm::all_of(Operands, [&](NodeId O) { return F.Nodes[O].Weak; });
    // The operands share one dtype (the frontend casts them); fold in it.
    DType In = F.Nodes[Operands.back()].Type;
    if (isFloat(In)) {
      llvm::SmallVector<double, 3> A;
      for (NodeId O : Operands)
        A.push_back(asDouble(F.Nodes[O]));
      double R;
      if (foldFloat(Op, A, R))
        return constFloat(isFloat(Result) ? roundFloat(R, Result) : R, Result,
                          Weak, Loc);
    } else {
      llvm::SmallVector<int64_t, 3> A;
      for (NodeId O : Operands)
        A.push_back(F.Nodes[O].IntValue);
      int64_t R;
      if (foldInt(Op, A, R))
        return constInt(wrapInt(R, Result), Result, Weak, Loc);
    }
  }
  Node N(NodeKind::Elementwise);
  N.Op = Op;
  N.Type = Result;
  N.Operands.assign(Operands.begin(), Operands.end());
  N.Weak = llvm::all_of(Operands, [&](NodeId O) { return F.Nodes[O].Weak; });
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::cast(NodeId V, DType T, SrcLoc Loc) {
  const Node &Src = F.Nodes[V];
  if (Src.Type == T)
    return V;
  if (Src.Kind == NodeKind::Const) {
    if (isFloat(Src.Type)) {
      if (isFloat(T))
        return constFloat(Src.FloatValue, T, Src.Weak, Loc);
      if (T == DType::Bool)
        return constInt(Src.FloatValue != 0, T, Src.Weak, Loc);
      // As pk::scalar::convert at run time: NaN is 0, values beyond the
      // integer type's range saturate, the rest truncate toward zero.
      if (T == DType::I32 || T == DType::I64) {
        const double V = Src.FloatValue;
        const double Limit =
            T == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
        const int64_t Max = T == DType::I32 ? INT32_MAX : INT64_MAX;
        const int64_t Min = T == DType::I32 ? INT32_MIN : INT64_MIN;
        const int64_t R = std::isnan(V)     ? 0
                          : V >= Limit      ? Max
                          : V <= -Limit - 1 ? Min
                                            : static_cast<int64_t>(V);
        return constInt(R, T, Src.Weak, Loc);
      }
    } else {
      return constInt(Src.IntValue, T, Src.Weak, Loc);
    }
  }
  Node N(NodeKind::Cast);
  N.Type = T;
  N.Operands = {V};
  N.Weak = Src.Weak;
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::reduce(ReduceKind K, NodeId V, llvm::ArrayRef<int> Axes,
                       bool KeepDims, DType Result, SrcLoc Loc) {
  Node N(NodeKind::Reduce);
  N.Reduction = K;
  N.Type = Result;
  N.Operands = {V};
  N.Axes.assign(Axes.begin(), Axes.end());
  N.KeepDims = KeepDims;
  N.Loc = Loc;
  return add(std::move(N));
}

/// A view of `V` written as `K`; inferShapes() fills in its map.
static Node viewNode(const Function &F, ViewKind K, NodeId V, SrcLoc Loc) {
  Node N(NodeKind::View);
  N.View = K;
  N.Type = F.Nodes[V].Type;
  N.Operands = {V};
  N.Loc = Loc;
  return N;
}

NodeId Builder::broadcastTo(NodeId V, NodeId ShapeOf, SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::BroadcastTo, V, Loc);
  N.Operands.push_back(ShapeOf);
  return add(std::move(N));
}

NodeId Builder::expandDims(NodeId V, int Axis, SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::ExpandDims, V, Loc);
  N.Axes = {Axis};
  return add(std::move(N));
}

NodeId Builder::squeeze(NodeId V, int Axis, SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::Squeeze, V, Loc);
  N.Axes = {Axis};
  return add(std::move(N));
}

NodeId Builder::transpose(NodeId V, SrcLoc Loc) {
  return add(viewNode(F, ViewKind::Transpose, V, Loc));
}

NodeId Builder::permuteDims(NodeId V, llvm::ArrayRef<int> Axes, SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::Permute, V, Loc);
  N.Axes.assign(Axes.begin(), Axes.end());
  return add(std::move(N));
}

NodeId Builder::reshape(NodeId V, llvm::ArrayRef<NodeId> Extents, int Infer,
                        SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::Reshape, V, Loc);
  N.Operands.append(Extents.begin(), Extents.end());
  N.Axes = {Infer};
  return add(std::move(N));
}

NodeId Builder::slice(NodeId V, int Axis, NodeId Begin, NodeId End,
                      SrcLoc Loc) {
  Node N = viewNode(F, ViewKind::Slice, V, Loc);
  N.Operands.append({Begin, End});
  N.Axes = {Axis};
  return add(std::move(N));
}

NodeId Builder::extentOf(NodeId V, int Axis, SrcLoc Loc) {
  Node N(NodeKind::Extent);
  N.Type = DType::I64;
  N.Operands = {V};
  N.Axes = {Axis};
  N.Loc = Loc;
  return add(std::move(N));
}

std::optional<ExtentId> pk::ir::scalarExtent(const Function &F, NodeId Id) {
  const Node &N = F.Nodes[Id];
  if (!isInteger(N.Type) || !N.Sh.empty())
    return std::nullopt;
  const ExtentTable &X = F.Extents;
  switch (N.Kind) {
  case NodeKind::Const:
    return X.constant(N.IntValue);
  case NodeKind::ScalarParam:
    return X.scalar(N.Param);
  case NodeKind::Extent: {
    if (N.Operands.empty())
      return N.Ext;
    // The extent of a ref read (`auto t = x[_]; t.extent(0)`, a helper's
    // parameter bound to one) is the ref's, known before shape inference;
    // a computed value's waits for inferShapes.
    const Node &V = F.Nodes[N.Operands[0]];
    if (V.Kind != NodeKind::Load || N.Axes.empty())
      return std::nullopt;
    const Param &P = F.Params[V.Param];
    const int Rank = static_cast<int>(P.Rank);
    const int A = N.Axes[0] < 0 ? N.Axes[0] + Rank : N.Axes[0];
    if (A < 0 || A >= Rank)
      return std::nullopt;
    return refExtent(F, V.Param, A);
  }
  case NodeKind::Cast:
    return scalarExtent(F, N.Operands[0]);
  case NodeKind::Elementwise: {
    if (N.Op == OpCode::Neg) {
      if (auto A = scalarExtent(F, N.Operands[0]))
        return X.sub(X.constant(0), *A);
      return std::nullopt;
    }
    if (N.Op != OpCode::Add && N.Op != OpCode::Sub && N.Op != OpCode::Mul &&
        N.Op != OpCode::Div)
      return std::nullopt;
    auto A = scalarExtent(F, N.Operands[0]);
    auto B = A ? scalarExtent(F, N.Operands[1]) : std::nullopt;
    if (!B)
      return std::nullopt;
    switch (N.Op) {
    case OpCode::Add:
      return X.add(*A, *B);
    case OpCode::Sub:
      return X.sub(*A, *B);
    case OpCode::Mul:
      return X.mul(*A, *B);
    default:
      return X.div(*A, *B);
    }
  }
  default:
    return std::nullopt;
  }
}

NodeId Builder::alongAxis(NodeKind K, llvm::ArrayRef<NodeId> Operands,
                          int Axis, SrcLoc Loc) {
  Node N(K);
  N.Type = F.Nodes[Operands.front()].Type;
  N.Operands.assign(Operands.begin(), Operands.end());
  N.Axes = {Axis};
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::concat(llvm::ArrayRef<NodeId> Parts, int Axis, SrcLoc Loc) {
  return alongAxis(NodeKind::Concat, Parts, Axis, Loc);
}

NodeId Builder::take(NodeId Table, NodeId Indices, int Axis, SrcLoc Loc) {
  return alongAxis(NodeKind::Take, {Table, Indices}, Axis, Loc);
}

NodeId Builder::repeat(NodeId V, NodeId Count, int Axis, SrcLoc Loc) {
  return alongAxis(NodeKind::Repeat, {V, Count}, Axis, Loc);
}

NodeId Builder::index(NodeId V, int Axis, SrcLoc Loc) {
  Node N(NodeKind::Index);
  N.Type = DType::I64;
  N.Operands = {V};
  N.Axes = {Axis};
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::matmul(NodeId A, NodeId B, DType Result, SrcLoc Loc) {
  Node N(NodeKind::MatMul);
  N.Type = Result;
  N.Operands = {A, B};
  N.Loc = Loc;
  return add(std::move(N));
}

NodeId Builder::store(unsigned Param, NodeId V, SrcLoc Loc) {
  Node N(NodeKind::Store);
  N.Type = F.Params[Param].Type;
  N.Param = Param;
  N.Operands = {V};
  N.Loc = Loc;
  return add(std::move(N));
}

void Builder::setName(NodeId Id, llvm::StringRef Name) {
  if (F.Nodes[Id].Name.empty())
    F.Nodes[Id].Name = Name.str();
}

void Builder::setLabel(NodeId Id, llvm::StringRef Label) {
  F.Nodes[Id].Label = Label.str();
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string pk::ir::extentToString(const Function &F, ExtentId Id) {
  const Extent &E = F.Extents.get(Id);
  switch (E.K) {
  case Extent::Const:
    return std::to_string(E.Value);
  case Extent::Dim:
    return fmt::format("{}.{}", F.Params[E.Param].Name, E.Axis);
  case Extent::Bcast:
    return fmt::format("bcast({}, {})", extentToString(F, E.A),
                       extentToString(F, E.B));
  case Extent::Scalar:
    return F.Params[E.Param].Name;
  case Extent::Product: {
    std::vector<std::string> Parts;
    if (E.Value != 1)
      Parts.push_back(std::to_string(E.Value));
    for (const Extent::Term &T : E.Terms)
      for (int64_t I = 0; I < T.Coef; ++I) {
        const Extent &A = F.Extents.get(T.Atom);
        std::string S = extentToString(F, T.Atom);
        Parts.push_back(A.K == Extent::Linear || A.K == Extent::Quotient
                            ? "(" + S + ")"
                            : S);
      }
    return fmt::format("{}", fmt::join(Parts, "*"));
  }
  case Extent::Quotient: {
    auto Wrap = [&](ExtentId Id) {
      std::string S = extentToString(F, Id);
      Extent::Kind K = F.Extents.get(Id).K;
      return K == Extent::Const || K == Extent::Dim || K == Extent::Scalar
                 ? S
                 : "(" + S + ")";
    };
    return Wrap(E.A) + "/" + Wrap(E.B);
  }
  case Extent::Linear:
    return formatLinear(
        E, [&](ExtentId A) { return extentToString(F, A); }, "*");
  }
  llvm_unreachable("bad extent");
}

std::string pk::ir::formatLinear(const Extent &E,
                                 llvm::function_ref<std::string(ExtentId)> Atom,
                                 llvm::StringRef Times) {
  std::string R;
  // Positive terms first: `hi - lo`, not `-lo + hi`.
  std::vector<Extent::Term> Terms = E.Terms;
  std::stable_partition(Terms.begin(), Terms.end(),
                        [](const Extent::Term &T) { return T.Coef > 0; });
  for (const Extent::Term &T : Terms) {
    int64_t C = T.Coef;
    R += R.empty() ? (C < 0 ? "-" : "") : (C < 0 ? " - " : " + ");
    C = C < 0 ? -C : C;
    R += C == 1 ? Atom(T.Atom) : fmt::format("{}{}{}", C, Times, Atom(T.Atom));
  }
  if (E.Value)
    R += fmt::format(" {} {}", E.Value < 0 ? "-" : "+",
                     E.Value < 0 ? -E.Value : E.Value);
  return R;
}

std::string pk::ir::shapeToString(const Function &F,
                                  llvm::ArrayRef<ExtentId> S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I) {
    if (I)
      R += ", ";
    R += extentToString(F, S[I]);
  }
  return R + "]";
}

llvm::StringRef pk::ir::paramKindName(ParamKind K) {
  switch (K) {
  case ParamKind::In:
    return "in";
  case ParamKind::Out:
    return "out";
  case ParamKind::InOut:
    return "inout";
  case ParamKind::Scalar:
    return "scalar";
  case ParamKind::Temp:
    return "temp";
  case ParamKind::Window:
    return "window";
  case ParamKind::Alias:
    return "alias";
  }
  llvm_unreachable("bad param kind");
}

static std::string formatConst(const Node &N) {
  if (N.Type == DType::Bool)
    return N.IntValue ? "true" : "false";
  if (isInteger(N.Type))
    return std::to_string(N.IntValue);
  // The shortest text that reads back as the same value of the type.
  if (N.Type == DType::F32)
    return fmt::format("{}", static_cast<float>(N.FloatValue));
  return fmt::format("{}", N.FloatValue);
}

static std::string nodeBody(const Function &F, const Node &N) {
  auto Ops = [&] {
    std::string R;
    for (size_t I = 0; I < N.Operands.size(); ++I)
      R += fmt::format("{}%{}", I ? ", " : "", N.Operands[I]);
    return R;
  };
  switch (N.Kind) {
  case NodeKind::ScalarParam:
    return fmt::format("param {}", F.Params[N.Param].Name);
  case NodeKind::Const:
    return fmt::format("const {}", formatConst(N));
  case NodeKind::Extent:
    if (!N.Operands.empty())
      return fmt::format("extent.of {} axis={}", Ops(), N.Axes[0]);
    return fmt::format("extent {}", extentToString(F, N.Ext));
  case NodeKind::Load:
    return N.Version ? fmt::format("load {} after={}", F.Params[N.Param].Name,
                                   N.Version)
                     : fmt::format("load {}", F.Params[N.Param].Name);
  case NodeKind::Elementwise:
    return fmt::format("{} {}", opInfo(N.Op).Name, Ops());
  case NodeKind::Cast:
    return fmt::format("cast {}", Ops());
  case NodeKind::Reduce:
    return fmt::format("reduce.{} {} axes=[{}]{}", reduceKindName(N.Reduction),
                       Ops(), fmt::join(N.Axes, ", "),
                       N.KeepDims ? " keepdims" : "");
  case NodeKind::View: {
    // `view.transpose %3 (d1, d0)`: per operand axis, the view's index
    // that reads it (0: a dropped extent-1 axis), once inferShapes() has
    // set the map; expand_dims and squeeze also show the axis as written.
    std::string Text = fmt::format("view.{} {}", viewKindName(N.View), Ops());
    if (N.View == ViewKind::Permute)
      Text += fmt::format(" axes=[{}]", fmt::join(N.Axes, ", "));
    else if (N.View == ViewKind::Slice && N.ViewExtents.size() < 2)
      Text += fmt::format(" axis={}", N.Axes[0]); // bounds: inferShapes
    else if (N.View == ViewKind::Slice)
      Text += fmt::format(" axis={} [{}, {})", N.Axes[0],
                          extentToString(F, N.ViewExtents[0]),
                          extentToString(F, N.ViewExtents[1]));
    else if (N.View == ViewKind::Reshape)
      Text += "";
    else if (!N.Axes.empty())
      Text += fmt::format(" axis={}", N.Axes[0]);
    std::vector<std::string> Index;
    for (int S : N.Map.Source)
      Index.push_back(S < 0 ? "0" : fmt::format("d{}", S));
    if (!Index.empty())
      Text += fmt::format(" ({})", fmt::join(Index, ", "));
    return Text;
  }
  case NodeKind::Index:
    return fmt::format("index {} axis={}", Ops(), N.Axes[0]);
  case NodeKind::MatMul:
    return fmt::format("matmul {}", Ops());
  case NodeKind::Concat:
    return fmt::format("concat {} axis={}", Ops(), N.Axes[0]);
  case NodeKind::Take:
    return fmt::format("take {} axis={}", Ops(), N.Axes[0]);
  case NodeKind::Repeat:
    return fmt::format("repeat {} axis={}", Ops(), N.Axes[0]);
  case NodeKind::Store:
    return fmt::format("store {}, {}", F.Params[N.Param].Name, Ops());
  }
  llvm_unreachable("bad node kind");
}

void pk::ir::print(const Function &F, llvm::raw_ostream &OS,
                   const llvm::DenseMap<NodeId, unsigned> *GroupOf) {
  OS << "func @" << F.QualifiedName << "(";
  bool First = true;
  for (size_t I = 0; I < F.Params.size(); ++I) {
    const Param &P = F.Params[I];
    if (!P.isArgument())
      continue;
    if (!First)
      OS << ", ";
    First = false;
    OS << paramKindName(P.Kind) << " " << P.Name << ": " << dtypeName(P.Type);
    if (P.isRef()) {
      OS << "[";
      for (unsigned A = 0; A < P.Rank; ++A)
        OS << (A ? ", " : "") << P.Name << "." << A;
      OS << "]";
    }
  }
  OS << ") {\n";
  for (const Param &P : F.Params)
    if (P.isAlias())
      OS << "  alias " << P.Name << " = " << F.Params[P.Parent].Name
         << shapeToString(F, P.TempShape) << "\n";
  for (const Param &P : F.Params)
    if (P.isWindow())
      OS << "  window " << P.Name << " = " << F.Params[P.Parent].Name
         << ".slice(" << P.WindowAxis << ", " << extentToString(F, P.Begin)
         << ", " << extentToString(F, P.End) << ")"
         << shapeToString(F, P.TempShape) << "\n";
  for (const Param &P : F.Params)
    if (P.isTemp())
      OS << "  temp " << P.Name << ": " << dtypeName(P.Type)
         << shapeToString(F, P.TempShape) << "  ; " << P.Why << "\n";
  for (const Guard &G : F.Guards) {
    static const char *const Kinds[] = {"fits",    "equal",  "nonzero",
                                        "reshape", "concat", "indices",
                                        "slice",   "repeat"};
    OS << "  guard " << Kinds[G.K] << " " << extentToString(F, G.A);
    if (G.K != Guard::NonZero && G.K != Guard::Indices && G.K != Guard::Repeat)
      OS << ", " << extentToString(F, G.B);
    OS << "  ; axis " << G.Axis;
    if (G.Loc.Line)
      OS << " line " << G.Loc.Line;
    OS << "\n";
  }
  for (size_t I = 0; I < F.Nodes.size(); ++I) {
    const Node &N = F.Nodes[I];
    if (N.Dead)
      continue;
    OS << "  ";
    if (!N.isStore())
      OS << "%" << I << " = ";
    OS << nodeBody(F, N);
    if (!N.isStore())
      OS << " : " << dtypeName(N.Type) << shapeToString(F, N.Sh);
    if (N.Weak && !N.isStore())
      OS << " weak";
    if (GroupOf) {
      auto It = GroupOf->find(I);
      if (It != GroupOf->end())
        OS << "  group=" << It->second;
    }
    if (!N.Name.empty() && N.Kind != NodeKind::Load &&
        N.Kind != NodeKind::ScalarParam)
      OS << "  ; " << N.Name;
    if (N.Loc.Line)
      OS << (N.Name.empty() || N.Kind == NodeKind::Load ||
                     N.Kind == NodeKind::ScalarParam
                 ? "  ; "
                 : " ")
         << "line " << N.Loc.Line;
    OS << "\n";
  }
  OS << "}\n";
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

std::string pk::ir::verify(const Function &F) {
  bool SeenTemp = false, SeenWindow = false;
  for (const Param &P : F.Params) {
    if ((SeenTemp || SeenWindow) && P.isArgument())
      return fmt::format("parameter {} follows a temporary or a view", P.Name);
    SeenTemp |= P.isTemp();
    SeenWindow |= P.isView();
    if (P.isWindow() &&
        (P.TempShape.size() != P.Rank || P.RootOffset.size() != P.Rank ||
         F.Params[P.Root].isWindow() || P.WindowAxis >= P.Rank))
      return fmt::format("window {} is malformed", P.Name);
    if (P.isAlias() &&
        (P.TempShape.size() != P.Rank || !isContiguous(F, P.Parent)))
      return fmt::format("alias {} is malformed", P.Name);
    if (P.isTemp() && P.TempShape.size() != P.Rank)
      return fmt::format("temporary {} has rank {} and {} extents", P.Name,
                         P.Rank, P.TempShape.size());
    if (P.isTemp() && isStorageOnly(P.Type) && P.Type != DType::BF16 &&
        P.Type != DType::F16)
      return fmt::format("temporary {} has an 8-bit dtype", P.Name);
  }
  for (size_t I = 0; I < F.Nodes.size(); ++I) {
    const Node &N = F.Nodes[I];
    if (N.Dead)
      continue;
    for (NodeId O : N.Operands) {
      if (O >= I)
        return fmt::format("%{} uses %{} before its definition", I, O);
      if (F.Nodes[O].Dead)
        return fmt::format("%{} uses dead %{}", I, O);
      if (F.Nodes[O].isStore())
        return fmt::format("%{} uses store %{} as a value", I, O);
    }
    if (!N.isStore() && isStorageOnly(N.Type))
      return fmt::format("%{} has the storage-only dtype {}", I,
                         dtypeName(N.Type));
    auto ExpectOperands = [&](size_t Count) -> std::string {
      if (N.Operands.size() != Count)
        return fmt::format("%{} has {} operands, expected {}", I,
                           N.Operands.size(), Count);
      return "";
    };
    std::string Err;
    switch (N.Kind) {
    case NodeKind::ScalarParam:
    case NodeKind::Load:
    case NodeKind::Store:
      if (N.Param >= F.Params.size())
        return fmt::format("%{} refers to parameter {} of {}", I, N.Param,
                           F.Params.size());
      if (N.Kind == NodeKind::ScalarParam && F.Params[N.Param].isRef())
        return fmt::format("%{}: param of a ref", I);
      if (N.Kind != NodeKind::ScalarParam && !F.Params[N.Param].isRef())
        return fmt::format("%{}: load/store of a scalar parameter", I);
      if (N.Kind == NodeKind::Store && !F.Params[N.Param].isWritable())
        return fmt::format("%{}: store to an In parameter", I);
      Err = ExpectOperands(N.Kind == NodeKind::Store ? 1 : 0);
      break;
    case NodeKind::Const:
      Err = ExpectOperands(0);
      break;
    case NodeKind::Extent:
      if (N.Operands.empty() && N.Ext >= F.Extents.size())
        return fmt::format("%{} names extent {} of {}", I, N.Ext,
                           F.Extents.size());
      if (N.Type != DType::I64 || N.rank() != 0)
        return fmt::format("%{}: an extent is an i64 of rank 0", I);
      Err = N.Operands.empty() ? "" : ExpectOperands(1);
      break;
    case NodeKind::Elementwise: {
      const OpInfo &Info = opInfo(N.Op);
      Err = ExpectOperands(Info.Arity);
      if (!Err.empty())
        break;
      if (Info.Result == ResultRule::Bool && N.Type != DType::Bool)
        return fmt::format("%{}: {} must give bool", I, Info.Name);
      size_t First = N.Op == OpCode::Select ? 1 : 0;
      if (N.Op == OpCode::Select && F.Nodes[N.Operands[0]].Type != DType::Bool)
        return fmt::format("%{}: select mask must be bool", I);
      DType Expect = Info.Result == ResultRule::Same
                         ? N.Type
                         : F.Nodes[N.Operands[First]].Type;
      for (size_t O = First; O < N.Operands.size(); ++O)
        if (F.Nodes[N.Operands[O]].Type != Expect)
          return fmt::format("%{}: operand {} of {} is {}, expected {}", I, O,
                             Info.Name, dtypeName(F.Nodes[N.Operands[O]].Type),
                             dtypeName(Expect));
      break;
    }
    case NodeKind::Cast:
    case NodeKind::Reduce:
    case NodeKind::Index:
      Err = ExpectOperands(1);
      break;
    case NodeKind::View: {
      Err = ExpectOperands(N.View == ViewKind::BroadcastTo ? 2
                           : N.View == ViewKind::Slice     ? 3
                           : N.View == ViewKind::Reshape
                               ? static_cast<unsigned>(N.Operands.size())
                               : 1);
      // The map, once inferShapes() has set it: one entry per operand
      // axis, each a distinct axis of the view or -1.
      const Node &Op = F.Nodes[N.Operands[0]];
      if (!Err.empty() || N.Map.Source.empty() || N.View == ViewKind::Reshape ||
          N.View == ViewKind::Slice)
        break;
      if (N.Map.Source.size() != Op.rank())
        return fmt::format("%{}: index map of {} entries for rank {}", I,
                           N.Map.Source.size(), Op.rank());
      std::vector<bool> Used(N.rank(), false);
      for (unsigned K = 0; K < N.Map.Source.size(); ++K) {
        int S = N.Map.Source[K];
        if (S >= static_cast<int>(N.rank()) || S < -1 || (S >= 0 && Used[S]))
          return fmt::format("%{}: bad index map entry {} for axis {}", I, S,
                             K);
        if (S >= 0)
          Used[S] = true;
      }
      break;
    }
    case NodeKind::MatMul:
      Err = ExpectOperands(2);
      break;
    case NodeKind::Concat:
      if (N.Operands.empty() || N.Axes.size() != 1)
        return fmt::format("%{}: concat of no values", I);
      break;
    case NodeKind::Take:
    case NodeKind::Repeat:
      Err = ExpectOperands(2);
      if (Err.empty() && N.Axes.size() != 1)
        return fmt::format("%{}: {} without an axis", I,
                           N.Kind == NodeKind::Take ? "take" : "repeat");
      break;
    }
    if (!Err.empty())
      return Err;
  }
  return "";
}

std::string pk::ir::paramSpelling(const Function &F, unsigned Param) {
  const ir::Param &P = F.Params[Param];
  if (!P.isWindow())
    return P.Name;
  return fmt::format("{}.slice({}, {}, {})", paramSpelling(F, P.Parent),
                     P.WindowAxis, extentToString(F, P.Begin),
                     extentToString(F, P.End));
}
