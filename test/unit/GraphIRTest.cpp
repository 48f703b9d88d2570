// Graph IR: the op table, the builder (with folding), extents, the printer
// and the verifier, without Clang.
#include "IR/GraphIR.h"
#include "IR/LoopIR.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

using namespace pk::ir;

namespace {

std::string printed(const Function &F) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  print(F, OS);
  return S;
}

TEST(OpTable, EveryRowIsConsistent) {
  for (const OpInfo &I : allOps()) {
    EXPECT_EQ(&opInfo(I.Code), &I) << I.Name.str();
    EXPECT_EQ(lookupOpBySource(I.Source), &I) << I.Source.str();
    EXPECT_GE(I.Arity, 1u);
    EXPECT_LE(I.Arity, 3u);
    // Every spelling uses each operand placeholder.
    for (unsigned A = 0; A < I.Arity; ++A) {
      std::string P = "{" + std::to_string(A) + "}";
      EXPECT_NE(I.Cpp.find(P), llvm::StringRef::npos) << I.Name.str();
      EXPECT_NE(I.CudaF32.find(P), llvm::StringRef::npos) << I.Name.str();
      EXPECT_NE(I.CudaF64.find(P), llvm::StringRef::npos) << I.Name.str();
    }
  }
  EXPECT_EQ(lookupOpBySource("where")->Code, OpCode::Select);
  EXPECT_EQ(lookupOpBySource("unary-")->Code, OpCode::Neg);
  EXPECT_EQ(lookupOpBySource("no_such_op"), nullptr);
  // The cost column drives the CPU schedule's buffer-or-recompute choice.
  EXPECT_EQ(opInfo(OpCode::Exp).Cost, OpCost::Costly);
  EXPECT_EQ(opInfo(OpCode::Tanh).Cost, OpCost::Costly);
  EXPECT_EQ(opInfo(OpCode::Add).Cost, OpCost::Cheap);
  EXPECT_EQ(opInfo(OpCode::Sqrt).Cost, OpCost::Cheap);
}

TEST(DTypeTable, EveryRowIsConsistent) {
  for (const DTypeInfo &I : allDTypes()) {
    EXPECT_EQ(&dtypeInfo(I.Code), &I) << I.Name.str();
    // A compute type computes in itself; only the 16-bit types (which
    // compute in float) and the 8-bit integers (in int32_t) are
    // storage-only.
    EXPECT_EQ(computeType(I.Compute), I.Compute) << I.Name.str();
    EXPECT_EQ(isStorageOnly(I.Code), I.Bytes < 4 && I.Code != DType::Bool)
        << I.Name.str();
    for (llvm::StringRef S : {I.CpuLoad, I.CpuStore, I.CudaLoad, I.CudaStore})
      EXPECT_NE(S.find("{0}"), llvm::StringRef::npos) << I.Name.str();
  }
  EXPECT_EQ(computeType(DType::F16), DType::F32);
  EXPECT_EQ(computeType(DType::BF16), DType::F32);
  EXPECT_EQ(dtypeCppName(DType::BF16), "pk::bfloat16");
  EXPECT_EQ(dtypeInfo(DType::F16).CudaStorage, "__half");
  EXPECT_FALSE(isFloat(DType::F16));
  EXPECT_EQ(throughStorageOp(DType::F16), OpCode::RoundF16);
  EXPECT_EQ(throughStorageOp(DType::BF16), OpCode::RoundBF16);
  EXPECT_EQ(computeType(DType::I8), DType::I32);
  EXPECT_EQ(computeType(DType::U8), DType::I32);
  EXPECT_EQ(dtypeCppName(DType::U8), "uint8_t");
  EXPECT_EQ(dtypeBytes(DType::I8), 1u);
  EXPECT_FALSE(isInteger(DType::I8)) << "a value is never 8-bit";
  EXPECT_EQ(throughStorageOp(DType::I8), OpCode::WrapI8);
  EXPECT_EQ(throughStorageOp(DType::U8), OpCode::WrapU8);
}

TEST(GraphIR, EightBitRefsLoadInt32AndWrapConstantsAsCppDoes) {
  Function F;
  F.Name = "k";
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::I8, 1);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::U8, 1);
  NodeId L = B.load(X);
  EXPECT_EQ(F.node(L).Type, DType::I32);
  NodeId W = B.elementwise(OpCode::WrapU8, {L}, DType::I32);
  B.store(Y, W);
  EXPECT_EQ(verify(F), "");
  EXPECT_NE(printed(F).find("wrap_u8"), std::string::npos) << printed(F);
  // Folding a wrap of a constant gives what the conversion gives.
  auto Folded = [&](OpCode Op, int64_t V) {
    return B.constValue(
        B.elementwise(Op, {B.constInt(V, DType::I32, true)}, DType::I32));
  };
  EXPECT_EQ(*Folded(OpCode::WrapI8, 128), -128);
  EXPECT_EQ(*Folded(OpCode::WrapI8, -129), 127);
  EXPECT_EQ(*Folded(OpCode::WrapU8, -1), 255);
  EXPECT_EQ(*Folded(OpCode::WrapU8, 300), 44);
  F.node(L).Type = DType::I8;
  EXPECT_NE(verify(F).find("storage-only dtype i8"), std::string::npos);
}

TEST(GraphIR, SixteenBitRefsLoadFloatAndStoreTheirType) {
  Function F;
  F.Name = "k";
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F16, 1);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::BF16, 1);
  NodeId L = B.load(X);
  EXPECT_EQ(F.node(L).Type, DType::F32);
  NodeId R = B.elementwise(OpCode::RoundF16, {L}, DType::F32);
  B.store(Y, R);
  EXPECT_EQ(verify(F), "");
  std::string Text = printed(F);
  EXPECT_NE(Text.find("round_f16"), std::string::npos) << Text;
  // A value of a storage-only dtype is a compiler bug.
  F.node(L).Type = DType::F16;
  EXPECT_NE(verify(F).find("storage-only dtype f16"), std::string::npos);
}

TEST(Extents, HashConsingAndBroadcastSimplification) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Y = B.addParam("y", ParamKind::In, DType::F32, 1);
  ExtentTable &T = F.Extents;
  ExtentId X1 = T.dim(X, 1), Y0 = T.dim(Y, 0), One = T.constant(1);
  EXPECT_EQ(T.dim(X, 1), X1);
  EXPECT_EQ(T.bcast(X1, X1), X1);
  EXPECT_EQ(T.bcast(One, Y0), Y0);
  EXPECT_EQ(T.bcast(Y0, One), Y0);
  ExtentId XY = T.bcast(X1, Y0);
  EXPECT_EQ(T.bcast(Y0, X1), XY) << "broadcast is commutative";
  EXPECT_EQ(T.bcast(XY, X1), XY) << "an extent already in the tree";
  EXPECT_EQ(extentToString(F, XY), "bcast(x.1, y.0)");
  EXPECT_EQ(shapeToString(F, {X1, One}), "[x.1, 1]");
}

TEST(Extents, LinearFormsOfWindowBounds) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Pos = B.addParam("pos", ParamKind::Scalar, DType::I64, 0);
  ExtentTable &T = F.Extents;
  ExtentId N = T.dim(X, 0), P = T.scalar(Pos), One = T.constant(1);
  ExtentId End = T.add(P, N);
  EXPECT_EQ(T.add(N, P), End) << "a sum is interned in one normal form";
  EXPECT_EQ(T.sub(End, P), N) << "(pos + x.0) - pos is x.0";
  EXPECT_TRUE(T.isConst(T.sub(N, T.sub(N, One)), 1)) << "x.0 - (x.0 - 1)";
  EXPECT_TRUE(T.isConst(T.sub(End, End), 0));
  EXPECT_EQ(T.scale(N, 1), N);
  EXPECT_EQ(T.sub(T.scale(N, 3), T.scale(N, 2)), N);
  EXPECT_EQ(extentToString(F, T.sub(P, N)), "pos - x.0");
  EXPECT_EQ(extentToString(F, T.sub(T.constant(0), N)), "-x.0");
  EXPECT_EQ(extentToString(F, T.add(T.scale(P, 2), T.sub(N, T.constant(3)))),
            "x.0 + 2*pos - 3");
}

TEST(Extents, ProductsAndQuotientsOfReshapes) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned H = B.addParam("h", ParamKind::Scalar, DType::I64, 0);
  ExtentTable &T = F.Extents;
  ExtentId X0 = T.dim(X, 0), X1 = T.dim(X, 1), Hs = T.scalar(H);
  ExtentId Size = T.mul(X0, X1);
  EXPECT_EQ(T.mul(X1, X0), Size) << "a product is interned in one normal form";
  EXPECT_EQ(T.div(Size, X0), X1) << "x.0*x.1 / x.0 is x.1";
  EXPECT_EQ(T.div(Size, T.scale(X0, 2)), T.div(X1, T.constant(2)));
  EXPECT_TRUE(T.isConst(T.div(T.constant(12), T.constant(4)), 3));
  EXPECT_TRUE(T.isConst(T.mul(X0, T.constant(0)), 0));
  EXPECT_EQ(T.mul(T.constant(1), X0), X0);
  // [x.0, h, x.1/h] has x.0*h*(x.1/h) elements: not simplified to x.0*x.1
  // (x.1/h truncates), so the reshape's guard compares them at run time.
  ExtentId Split = T.mul(T.mul(X0, Hs), T.div(X1, Hs));
  EXPECT_NE(Split, Size);
  EXPECT_EQ(extentToString(F, Split), "x.0*h*(x.1/h)");
  EXPECT_EQ(extentToString(F, T.div(T.add(X0, X1), Hs)), "(x.0 + x.1)/h");
}

TEST(Builder, FoldsConstantsWithCppSemantics) {
  Function F;
  Builder B(F);
  NodeId Two = B.constInt(2, DType::I32, true);
  NodeId Three = B.constInt(3, DType::I32, true);
  NodeId Sum = B.elementwise(OpCode::Add, {Two, Three}, DType::I32);
  ASSERT_TRUE(B.constValue(Sum));
  EXPECT_EQ(*B.constValue(Sum), 5);
  NodeId Div = B.elementwise(
      OpCode::Div, {B.constInt(-7, DType::I32, true), Two}, DType::I32);
  EXPECT_EQ(*B.constValue(Div), -3) << "C++ truncates toward zero";
  NodeId Lt = B.elementwise(OpCode::Lt, {Two, Three}, DType::Bool);
  EXPECT_EQ(*B.constValue(Lt), 1);
  // Integer / and % fold as pk::scalar computes them at run time: by zero
  // they give 0, the most negative value over -1 wraps (remainder 0).
  NodeId Zero = B.constInt(0, DType::I32, true);
  NodeId MinusOne = B.constInt(-1, DType::I32, true);
  EXPECT_EQ(*B.constValue(B.elementwise(OpCode::Div, {Two, Zero}, DType::I32)),
            0);
  EXPECT_EQ(*B.constValue(B.elementwise(OpCode::Rem, {Two, Zero}, DType::I32)),
            0);
  NodeId Min32 = B.constInt(INT32_MIN, DType::I32, true);
  EXPECT_EQ(
      *B.constValue(B.elementwise(OpCode::Div, {Min32, MinusOne}, DType::I32)),
      INT32_MIN);
  EXPECT_EQ(
      *B.constValue(B.elementwise(OpCode::Rem, {Min32, MinusOne}, DType::I32)),
      0);
  NodeId Min64 = B.constInt(INT64_MIN, DType::I64, true);
  NodeId MinusOne64 = B.constInt(-1, DType::I64, true);
  EXPECT_EQ(*B.constValue(
                B.elementwise(OpCode::Div, {Min64, MinusOne64}, DType::I64)),
            static_cast<double>(INT64_MIN));
  // Float constants round to float.
  NodeId Third = B.constFloat(1.0 / 3.0, DType::F32, true);
  EXPECT_EQ(F.node(Third).FloatValue,
            static_cast<double>(static_cast<float>(1.0 / 3.0)));
  // Casts of constants fold; casts to the same type are no-ops.
  EXPECT_EQ(B.cast(Third, DType::F32), Third);
  EXPECT_EQ(
      *B.constValue(B.cast(B.constFloat(2.75, DType::F64, true), DType::I32)),
      2);
  // Float to integer folds as pk::scalar::convert runs: NaN 0, saturation.
  auto FoldCast = [&](double V, DType T) {
    return *B.constValue(B.cast(B.constFloat(V, DType::F64, true), T));
  };
  EXPECT_EQ(FoldCast(std::nan(""), DType::I32), 0);
  EXPECT_EQ(FoldCast(3e9, DType::I32), INT32_MAX);
  EXPECT_EQ(FoldCast(-2147483648.5, DType::I32), INT32_MIN);
  EXPECT_EQ(FoldCast(-2147483649.0, DType::I32), INT32_MIN);
  EXPECT_EQ(FoldCast(3e9, DType::I64), 3e9);
  EXPECT_EQ(FoldCast(-1e30, DType::I64), static_cast<double>(INT64_MIN));
  EXPECT_EQ(FoldCast(HUGE_VAL, DType::I64), static_cast<double>(INT64_MAX));
}

TEST(Builder, DoesNotFoldTranscendentals) {
  Function F;
  Builder B(F);
  NodeId One = B.constFloat(1, DType::F32, true);
  NodeId E = B.elementwise(OpCode::Exp, {One}, DType::F32);
  EXPECT_FALSE(B.constValue(E))
      << "exp must run as the generated code runs it, not as the host's libm";
}

// Every view is one node; its index map says, per operand axis, which axis
// of the view indexes it (-1: an extent-1 axis the view drops).
TEST(IndexMap, EveryViewKindIsAMapOfAxes) {
  using V = llvm::SmallVector<int, 4>;
  EXPECT_EQ(viewMap(ViewKind::BroadcastTo, 0, 1, 3).Source, V({2}));
  EXPECT_EQ(viewMap(ViewKind::BroadcastTo, 0, 2, 2).Source, V({0, 1}));
  EXPECT_EQ(viewMap(ViewKind::ExpandDims, 0, 2, 3).Source, V({1, 2}));
  EXPECT_EQ(viewMap(ViewKind::ExpandDims, 2, 2, 3).Source, V({0, 1}));
  EXPECT_EQ(viewMap(ViewKind::Squeeze, 1, 3, 2).Source, V({0, -1, 1}));
  EXPECT_EQ(viewMap(ViewKind::Transpose, 0, 2, 2).Source, V({1, 0}));
  EXPECT_EQ(viewMap(ViewKind::Transpose, 0, 3, 3).Source, V({0, 2, 1}));

  EXPECT_TRUE(viewMap(ViewKind::BroadcastTo, 0, 1, 3).isBroadcast(3));
  EXPECT_FALSE(viewMap(ViewKind::BroadcastTo, 0, 1, 3).isIdentity(3));
  EXPECT_TRUE(viewMap(ViewKind::BroadcastTo, 0, 2, 2).isIdentity(2));
  // expand_dims at the front is a broadcast (NumPy right-aligns); inside
  // it is not, nor is a squeeze or a transpose.
  EXPECT_TRUE(viewMap(ViewKind::ExpandDims, 0, 2, 3).isBroadcast(3));
  EXPECT_FALSE(viewMap(ViewKind::ExpandDims, 2, 2, 3).isBroadcast(3));
  EXPECT_FALSE(viewMap(ViewKind::Squeeze, 1, 3, 2).isBroadcast(2));
  EXPECT_FALSE(viewMap(ViewKind::Transpose, 0, 2, 2).isBroadcast(2));
}

// The walkers every pass uses for cones: each node or statement once,
// Skip stops at a node, Stop ends the walk.
TEST(Walkers, ConesVisitOnceAndObeyTheVisitor) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 1);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 1);
  NodeId L = B.load(X);
  NodeId Sq = B.elementwise(OpCode::Mul, {L, L}, DType::F32);
  NodeId Sum = B.reduce(ReduceKind::Sum, Sq, {-1}, true, DType::F32);
  NodeId Out = B.elementwise(OpCode::Add, {Sq, Sum}, DType::F32);
  B.store(O, Out);
  std::vector<NodeId> Seen;
  EXPECT_TRUE(walkCone(F, {Out}, [&](NodeId V, const Node &N) {
    Seen.push_back(V);
    return N.Kind == NodeKind::Reduce ? Walk::Skip : Walk::Operands;
  }));
  std::sort(Seen.begin(), Seen.end());
  EXPECT_EQ(Seen, std::vector<NodeId>({L, Sq, Sum, Out}));
  unsigned Visits = 0;
  EXPECT_FALSE(walkCone(F, {Out}, [&](NodeId, const Node &N) {
    ++Visits;
    return N.Kind == NodeKind::Reduce ? Walk::Stop : Walk::Operands;
  }));
  EXPECT_LE(Visits, 4u);
  EXPECT_EQ(cone(F, {Sum}), std::vector<NodeId>({L, Sq, Sum}));

  // x, x * x, sum(x * x), x + sum, store: the inner loop of the store
  // recomputes x and x + sum, not the reduction's operand.
  pk::loop::Nest N;
  auto Add = [&](pk::loop::Stmt::Kind K, std::vector<unsigned> Args,
                 bool Inner) {
    pk::loop::Stmt S;
    S.K = K;
    S.Args = std::move(Args);
    S.Inner = Inner;
    N.Body.push_back(S);
  };
  Add(pk::loop::Stmt::Load, {}, true);
  Add(pk::loop::Stmt::Apply, {0, 0}, true);
  Add(pk::loop::Stmt::Reduce, {1}, false);
  Add(pk::loop::Stmt::Apply, {0, 2}, true);
  Add(pk::loop::Stmt::Store, {3}, true);
  EXPECT_EQ(pk::loop::innerCone(N, {4}), std::set<unsigned>({0, 3}));
  EXPECT_EQ(pk::loop::innerCone(N, {2}), std::set<unsigned>({0, 1}));
  // A kept value is read back: its operands are not needed.
  EXPECT_EQ(pk::loop::innerCone(N, {4}, [](unsigned I) { return I == 3; }),
            std::set<unsigned>({3}));
  std::vector<unsigned> Order;
  pk::loop::walkArgs(N, {4}, [&](unsigned I, const pk::loop::Stmt &S) {
    Order.push_back(I);
    return S.K != pk::loop::Stmt::Reduce;
  });
  // Not into the reduction: its operand x * x (1) is never visited.
  std::sort(Order.begin(), Order.end());
  EXPECT_EQ(Order, std::vector<unsigned>({0, 2, 3, 4}));
}

TEST(Printer, ShowsParamsNodesAndNames) {
  Function F;
  F.Name = F.QualifiedName = "scale";
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 1);
  unsigned S = B.addParam("s", ParamKind::Scalar, DType::F32, 0);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 1);
  NodeId L = B.load(X);
  NodeId M = B.elementwise(OpCode::Mul, {L, B.scalarParam(S)}, DType::F32);
  B.setName(M, "t");
  B.store(O, M);
  EXPECT_EQ(printed(F), "func @scale(in x: f32[x.0], scalar s: f32, out o: "
                        "f32[o.0]) {\n"
                        "  %0 = load x : f32[]\n"
                        "  %1 = param s : f32[] weak\n"
                        "  %2 = mul %0, %1 : f32[]  ; t\n"
                        "  store o, %2\n"
                        "}\n");
}

TEST(Verifier, AcceptsWellFormedAndRejectsBrokenGraphs) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 1);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 1);
  NodeId L = B.load(X);
  B.store(O, B.elementwise(OpCode::Neg, {L}, DType::F32));
  EXPECT_EQ(verify(F), "");

  Function Bad = F;
  Bad.Nodes[1].Operands[0] = 1; // uses itself
  EXPECT_NE(verify(Bad).find("before its definition"), std::string::npos);

  Function BadType = F;
  BadType.Nodes[1].Type = DType::F64; // neg of f32 claiming f64
  EXPECT_NE(verify(BadType).find("expected f64"), std::string::npos);

  Function StoreIn = F;
  StoreIn.Nodes[2].Param = X;
  EXPECT_NE(verify(StoreIn).find("store to an In"), std::string::npos);

  // A view's map names distinct axes of the view, one per operand axis.
  Function V;
  Builder VB(V);
  unsigned Y = VB.addParam("y", ParamKind::In, DType::F32, 2);
  unsigned P = VB.addParam("p", ParamKind::Out, DType::F32, 2);
  NodeId YL = VB.load(Y);
  NodeId T = VB.transpose(YL);
  VB.store(P, T);
  V.Nodes[YL].Sh = {V.Extents.dim(Y, 0), V.Extents.dim(Y, 1)};
  V.Nodes[T].Sh = {V.Extents.dim(Y, 1), V.Extents.dim(Y, 0)};
  V.Nodes[T].Map = viewMap(ViewKind::Transpose, 0, 2, 2);
  EXPECT_EQ(verify(V), "");
  Function Twice = V;
  Twice.Nodes[T].Map.Source = {0, 0};
  EXPECT_NE(verify(Twice).find("bad index map entry 0 for axis 1"),
            std::string::npos);
  Function Short = V;
  Short.Nodes[T].Map.Source = {1};
  EXPECT_NE(verify(Short).find("index map of 1 entries for rank 2"),
            std::string::npos);
}

} // namespace
