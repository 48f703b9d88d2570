// The Graph IR passes and the lowering to Loop IR, each on small graphs
// built by hand (no Clang).
#include "Transforms/Passes.h"
#include "IR/LoopIR.h"
#include "Target/CPU/EmitCpp.h"
#include "Target/CUDA/EmitCuda.h"
#include "Target/CUDA/LowerToKernels.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace pk;
using namespace pk::ir;

namespace {

/// x[T, D] + b[D] stored into y[T, D].
struct BiasKernel {
  Function F;
  unsigned X, Bias, Y;
  NodeId Sum, Store;
  BiasKernel() {
    F.Name = F.QualifiedName = "bias";
    Builder B(F);
    X = B.addParam("x", ParamKind::In, DType::F32, 2);
    Bias = B.addParam("b", ParamKind::In, DType::F32, 1);
    Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
    NodeId LX = B.load(X), LB = B.load(Bias);
    Sum = B.elementwise(OpCode::Add, {LX, LB}, DType::F32);
    Store = B.store(Y, Sum);
  }
};

TEST(InferShapes, BroadcastsRightAligned) {
  BiasKernel K;
  EXPECT_TRUE(inferShapes(K.F).empty());
  EXPECT_EQ(shapeToString(K.F, K.F.node(K.Sum).Sh), "[x.0, bcast(x.1, b.0)]");
}

TEST(InferShapes, ReportsConstantExtentsThatCannotBroadcast) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 1);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 2);
  NodeId L = B.load(X);
  NodeId E = B.expandDims(L, 0); // [1, x.0]
  NodeId R = B.reduce(ReduceKind::Sum, B.load(X), {0}, true, DType::F32);
  NodeId T = B.expandDims(R, -1); // [1, 1]
  (void)T;
  B.setLabel(E, "e");
  NodeId C3 = B.expandDims(E, 0); // [1, 1, x.0]
  B.store(O, C3);                 // rank 3 into rank 2
  std::vector<UserDiag> D = inferShapes(F);
  ASSERT_EQ(D.size(), 1u);
  EXPECT_EQ(D[0].Id, "pk-shape");
  EXPECT_NE(D[0].Message.find("rank 3"), std::string::npos) << D[0].Message;
}

TEST(InferShapes, AxisOutOfRange) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  B.reduce(ReduceKind::Sum, B.load(X), {2}, false, DType::F32);
  std::vector<UserDiag> D = inferShapes(F);
  ASSERT_EQ(D.size(), 1u);
  EXPECT_EQ(D[0].Message, "axis 2 is out of range for a value of rank 2");
  EXPECT_EQ(D[0].Note, "valid axes are -2..1 (negative counts from the end)");
}

TEST(InferShapes, ReductionShapes) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 3);
  NodeId L = B.load(X);
  NodeId R1 = B.reduce(ReduceKind::Sum, L, {-1}, true, DType::F32);
  NodeId R2 = B.reduce(ReduceKind::Max, L, {0, 2}, false, DType::F32);
  NodeId R3 = B.reduce(ReduceKind::Mean, L, {}, false, DType::F32);
  ASSERT_TRUE(inferShapes(F).empty());
  EXPECT_EQ(shapeToString(F, F.node(R1).Sh), "[x.0, x.1, 1]");
  EXPECT_EQ(shapeToString(F, F.node(R2).Sh), "[x.1]");
  EXPECT_EQ(shapeToString(F, F.node(R3).Sh), "[]");
}

TEST(DeriveGuards, OneGuardPerRunTimeBroadcast) {
  BiasKernel K;
  inferShapes(K.F);
  deriveGuards(K.F);
  // b.0 must fit x.1 (the add), and the sum must fit y (two axes).
  std::vector<std::string> G;
  for (const Guard &Gd : K.F.Guards)
    G.push_back(extentToString(K.F, Gd.A) + " -> " + extentToString(K.F, Gd.B));
  EXPECT_EQ(G, (std::vector<std::string>{"b.0 -> bcast(x.1, b.0)", "x.0 -> y.0",
                                         "bcast(x.1, b.0) -> y.1"}));
}

TEST(DeriveGuards, NoGuardWhenShapesAreTheSameSymbols) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::InOut, DType::F32, 1);
  NodeId L = B.load(X);
  B.store(X, B.elementwise(OpCode::Mul, {L, L}, DType::F32));
  inferShapes(F);
  deriveGuards(F);
  EXPECT_TRUE(F.Guards.empty());
}

TEST(Canonicalize, MergesCommonSubexpressionsAndDropsDeadCode) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 1);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 1);
  NodeId L1 = B.load(X), L2 = B.load(X);
  NodeId Sq = B.elementwise(OpCode::Mul, {L1, L2}, DType::F32);
  NodeId Unused = B.elementwise(OpCode::Exp, {L1}, DType::F32);
  NodeId First = B.store(O, L1); // overwritten below: dead
  B.store(O, Sq);
  inferShapes(F);
  canonicalize(F);
  EXPECT_TRUE(F.node(L2).Dead) << "second load of x merged into the first";
  EXPECT_EQ(F.node(Sq).Operands[0], L1);
  EXPECT_EQ(F.node(Sq).Operands[1], L1);
  EXPECT_TRUE(F.node(Unused).Dead);
  EXPECT_TRUE(F.node(First).Dead);
  EXPECT_EQ(verify(F), "");
}

TEST(Fusion, GroupsByRankAndOrdersReadsBeforeWrites) {
  Function F;
  Builder B(F);
  unsigned W = B.addParam("w", ParamKind::InOut, DType::F32, 1);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
  NodeId LW = B.load(W);
  // w is overwritten first in source order, but y reads its old value...
  // no: y reads the SSA value of w after the write, computed from the old w.
  NodeId W2 = B.elementwise(OpCode::Add, {LW, LW}, DType::F32);
  B.store(W, W2);
  B.store(Y, B.elementwise(OpCode::Mul, {B.load(X), W2}, DType::F32));
  inferShapes(F);
  deriveGuards(F);
  canonicalize(F);
  FusionPlan P = fuse(F);
  ASSERT_EQ(P.Groups.size(), 2u);
  // The rank-2 group reads w's old contents: it must run before the rank-1
  // group overwrites w.
  EXPECT_EQ(F.Params[F.node(P.Groups[0].Stores[0]).Param].Name, "y");
  EXPECT_EQ(F.Params[F.node(P.Groups[1].Stores[0]).Param].Name, "w");
}

TEST(Fusion, MatmulIsAReductionOverItsInnerAxis) {
  Function F;
  Builder B(F);
  unsigned A = B.addParam("a", ParamKind::In, DType::F32, 3);
  unsigned W = B.addParam("w", ParamKind::In, DType::F32, 2);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 3);
  B.store(O, B.matmul(B.load(A), B.transpose(B.load(W)), DType::F32));
  ASSERT_TRUE(inferShapes(F).empty());
  canonicalize(F);
  FusionPlan P = fuse(F);
  ASSERT_EQ(P.Groups.size(), 1u);
  // [batch, m, n] products summed over a fourth axis k.
  EXPECT_EQ(P.Groups[0].Rank, 4u);
  EXPECT_EQ(P.Groups[0].ReduceAxes, std::vector<unsigned>{3});
}

TEST(Materialize, BuffersAMatmulReducedOverItsRows) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 1);
  SrcLoc Loc{7, 3, 0};
  NodeId L = B.load(X);
  B.store(O, B.reduce(ReduceKind::Sum, B.matmul(L, L, DType::F32, Loc), {-1},
                      false, DType::F32, Loc));
  ASSERT_TRUE(inferShapes(F).empty());
  canonicalize(F);
  EXPECT_EQ(materialize(F), 1u);
  EXPECT_EQ(verify(F), "");
  ASSERT_EQ(F.Params.size(), 3u);
  const Param &T = F.Params[2];
  EXPECT_TRUE(T.isTemp());
  EXPECT_EQ(T.Name, "mm_buf");
  // The product's shape [x.0, x.1].
  EXPECT_EQ(shapeToString(F, T.TempShape), "[x.0, x.1]");
  FusionPlan P = fuse(F);
  ASSERT_EQ(P.Groups.size(), 2u);
  // The product first (it writes the buffer), then the sum reading it.
  EXPECT_TRUE(P.Groups[0].MatMul);
  EXPECT_EQ(F.node(P.Groups[0].Stores[0]).Param, 2u);
  EXPECT_EQ(F.node(P.Groups[1].Stores[0]).Param, O);
  std::vector<UserDiag> D;
  lowerToLoops(F, P, D);
  EXPECT_TRUE(D.empty());
}

TEST(Materialize, BuffersTheOperandOfAMatmulOfAMatmul) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 2);
  NodeId L = B.load(X);
  // relu(x x) x: the buffer holds the activation, not the raw product.
  NodeId H = B.elementwise(
      OpCode::Maximum,
      {B.matmul(L, L, DType::F32), B.constFloat(0, DType::F32, true)},
      DType::F32);
  B.setName(H, "h");
  B.store(O, B.matmul(H, L, DType::F32));
  ASSERT_TRUE(inferShapes(F).empty());
  canonicalize(F);
  EXPECT_EQ(materialize(F), 1u);
  ASSERT_EQ(F.Params.size(), 3u);
  EXPECT_EQ(F.Params[2].Name, "h_buf");
  bool StoresH = false;
  for (const Node &N : F.Nodes)
    StoresH |= N.isStore() && N.Param == 2 &&
               F.node(N.Operands[0]).Kind == NodeKind::Elementwise;
  EXPECT_TRUE(StoresH);
  FusionPlan P = fuse(F);
  ASSERT_EQ(P.Groups.size(), 2u);
  std::vector<UserDiag> D;
  lowerToLoops(F, P, D);
  EXPECT_TRUE(D.empty());
}

TEST(Materialize, KeepsTheRowStatisticNotANormalisedCopy) {
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned W = B.addParam("w", ParamKind::In, DType::F32, 2);
  unsigned O = B.addParam("o", ParamKind::Out, DType::F32, 2);
  NodeId L = B.load(X);
  NodeId Ms =
      B.reduce(ReduceKind::Mean, B.elementwise(OpCode::Mul, {L, L}, DType::F32),
               {-1}, true, DType::F32);
  NodeId R = B.elementwise(OpCode::Rsqrt, {Ms}, DType::F32);
  NodeId Xn = B.elementwise(OpCode::Mul, {L, R}, DType::F32);
  B.store(O, B.matmul(Xn, B.transpose(B.load(W)), DType::F32));
  ASSERT_TRUE(inferShapes(F).empty());
  canonicalize(F);
  EXPECT_EQ(materialize(F), 1u);
  ASSERT_EQ(F.Params.size(), 4u);
  // [x.0]: rsqrt(mean(x * x)), the statistic with its rsqrt, without its
  // extent-1 axis (a squeeze before the store, an expand_dims after the
  // load).
  EXPECT_EQ(shapeToString(F, F.Params[3].TempShape), "[x.0]");
  EXPECT_EQ(F.Params[3].Rank, 1u);
  bool StoresRsqrt = false, ExpandsLoad = false;
  for (const Node &N : F.Nodes) {
    if (N.isStore() && N.Param == 3) {
      const Node &Sq = F.node(N.Operands[0]);
      StoresRsqrt = Sq.Kind == NodeKind::View && Sq.View == ViewKind::Squeeze &&
                    F.node(Sq.Operands[0]).Op == OpCode::Rsqrt;
    }
    if (N.Kind == NodeKind::View && N.View == ViewKind::ExpandDims) {
      const Node &Ld = F.node(N.Operands[0]);
      ExpandsLoad = Ld.Kind == NodeKind::Load && Ld.Param == 3 &&
                    shapeToString(F, N.Sh) == "[x.0, 1]";
    }
  }
  EXPECT_TRUE(StoresRsqrt);
  EXPECT_TRUE(ExpandsLoad);
  EXPECT_EQ(verify(F), "");
}

TEST(Fusion, ACycleBetweenGroupsAsksForACopy) {
  Function F;
  Builder B(F);
  unsigned A = B.addParam("a", ParamKind::In, DType::F32, 2);
  unsigned Bp = B.addParam("b", ParamKind::InOut, DType::F32, 2);
  unsigned C = B.addParam("c", ParamKind::InOut, DType::F32, 2);
  NodeId LB = B.load(Bp), LC = B.load(C);
  // c = a b reads b's old value; b = b + c reads c's old one. The product's
  // group takes no other store, so the two groups each need the other
  // first.
  B.store(C, B.matmul(B.load(A), LB, DType::F32));
  B.store(Bp, B.elementwise(OpCode::Add, {LB, LC}, DType::F32));
  ASSERT_TRUE(inferShapes(F).empty());
  canonicalize(F);
  FusionPlan P = fuse(F);
  ASSERT_TRUE(P.Snapshot.has_value());
  EXPECT_TRUE(P.Groups.empty());
  unsigned T = snapshotRef(F, *P.Snapshot);
  EXPECT_EQ(verify(F), "");
  EXPECT_EQ(F.Params[T].Name, F.Params[*P.Snapshot].Name + "_old");
  FusionPlan Q = fuse(F);
  EXPECT_FALSE(Q.Snapshot.has_value());
  EXPECT_GE(Q.Groups.size(), 2u);
}

loop::Program lower(Function &F) {
  EXPECT_TRUE(inferShapes(F).empty());
  deriveGuards(F);
  canonicalize(F);
  FusionPlan P = fuse(F);
  std::vector<UserDiag> D;
  loop::Program L = lowerToLoops(F, P, D);
  EXPECT_TRUE(D.empty());
  planBuffers(L);
  EXPECT_EQ(loop::verify(L), "");
  return L;
}

TEST(LowerToLoops, AccessMapsOfBroadcastLoads) {
  BiasKernel K;
  loop::Program L = lower(K.F);
  ASSERT_EQ(L.Nests.size(), 1u);
  const loop::Nest &N = L.Nests[0];
  EXPECT_EQ(shapeToString(K.F, N.Domain), "[y.0, y.1]");
  loop::AccessMap XMap, BMap, YMap;
  for (const loop::Stmt &S : N.Body)
    if (S.K == loop::Stmt::Load)
      (S.Param == K.X ? XMap : BMap) = S.Map;
    else if (S.K == loop::Stmt::Store)
      YMap = S.Map;
  // x and b are right-aligned and may broadcast (their extents are other
  // symbols than y's); the store addresses y by the domain as it is.
  EXPECT_EQ(XMap.Axes, (std::vector<loop::AxisAccess>{{0, true}, {1, true}}));
  EXPECT_EQ(BMap.Axes, (std::vector<loop::AxisAccess>{{1, true}}));
  EXPECT_EQ(YMap.Axes, (std::vector<loop::AxisAccess>{{0, false}, {1, false}}));
  EXPECT_TRUE(BMap.isRightAligned(2));
  EXPECT_EQ(BMap.axisOf(1), 0);
  EXPECT_EQ(BMap.axisOf(0), -1);
  EXPECT_FALSE(N.canFlatten()) << "b has a lower rank than the domain";
}

TEST(LowerToLoops, StoresToDifferentSymbolsFuseUnderARunTimeCondition) {
  // a[_] = a[_] + g[_]; b[_] = b[_] * a[_] (new a): a is read by b's cone,
  // so the unfused fallback must compute b before overwriting a.
  Function F;
  F.Name = F.QualifiedName = "two";
  Builder B(F);
  unsigned A = B.addParam("a", ParamKind::InOut, DType::F32, 1);
  unsigned Bp = B.addParam("b", ParamKind::InOut, DType::F32, 1);
  unsigned G = B.addParam("g", ParamKind::In, DType::F32, 1);
  NodeId NewA = B.elementwise(OpCode::Add, {B.load(A), B.load(G)}, DType::F32);
  B.store(A, NewA);
  B.store(Bp, B.elementwise(OpCode::Mul, {B.load(Bp), NewA}, DType::F32));
  loop::Program L = lower(F);
  ASSERT_EQ(L.Steps.size(), 1u);
  const loop::Step &St = L.Steps[0];
  EXPECT_EQ(St.Nest, 0u);
  ASSERT_EQ(St.When.size(), 1u);
  EXPECT_EQ(extentToString(F, St.When[0].first), "b.0");
  ASSERT_EQ(St.Otherwise.size(), 2u);
  EXPECT_EQ(St.OtherwiseError, "");
  ASSERT_EQ(L.Nests.size(), 3u) << "the fused nest and one per store";
  auto StoredParam = [&](unsigned U) { return L.Nests[U].Body.back().Param; };
  EXPECT_EQ(StoredParam(St.Otherwise[0]), Bp) << "b reads a's old value first";
  EXPECT_EQ(StoredParam(St.Otherwise[1]), A);
  EXPECT_EQ(L.stepOf(St.Otherwise[1]), 0u);
  // Refs only: no temporaries, no workspace.
  EXPECT_EQ(L.Buffers.size(), 3u);
  EXPECT_EQ(L.NumSlots, 0u);
}

TEST(LowerToLoops, RowReductionRunsInPhases) {
  // softmax: y = exp(x - max(x)) / sum(exp(x - max(x))) over the last axis.
  Function F;
  F.Name = F.QualifiedName = "softmax";
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
  NodeId L = B.load(X);
  NodeId M = B.reduce(ReduceKind::Max, L, {-1}, true, DType::F32);
  NodeId E = B.elementwise(OpCode::Exp,
                           {B.elementwise(OpCode::Sub, {L, M}, DType::F32)},
                           DType::F32);
  NodeId S = B.reduce(ReduceKind::Sum, E, {-1}, true, DType::F32);
  B.store(Y, B.elementwise(OpCode::Div, {E, S}, DType::F32));
  loop::Program P = lower(F);
  ASSERT_EQ(P.Nests.size(), 1u) << "one fused group";
  const loop::Nest &N = P.Nests[0];
  EXPECT_TRUE(N.Indexed);
  EXPECT_EQ(N.ReduceAxes, std::vector<unsigned>{1});
  EXPECT_EQ(N.numPhases(), 3u) << "max, then sum, then the store";
  unsigned MaxPhase = 9, SumPhase = 9, StorePhase = 9;
  for (const loop::Stmt &St : N.Body) {
    if (St.K == loop::Stmt::Reduce)
      (St.Reduction == ReduceKind::Max ? MaxPhase : SumPhase) = St.Phase;
    if (St.K == loop::Stmt::Store)
      StorePhase = St.Phase;
  }
  EXPECT_EQ(MaxPhase, 0u);
  EXPECT_EQ(SumPhase, 1u);
  EXPECT_EQ(StorePhase, 2u);
  std::string Body = cpu::emitKernelBody(scheduleForCpu(P));
  // Lane accumulators, combined after each phase loop.
  EXPECT_NE(Body.find("pk_lanes_max[pk_l] = "
                      "pk::scalar::maximum(pk_lanes_max[pk_l], x_v);"),
            std::string::npos)
      << Body;
  EXPECT_NE(Body.find("pk_lanes_sum[pk_l] += "), std::string::npos);
  // Combined pairwise (pk::rt::combine_lanes: a tree, not a chain through
  // every lane; RuntimeTest checks its order).
  EXPECT_NE(Body.find("const float pk_acc_sum = pk::rt::combine_lanes<16>("
                      "pk_lanes_sum, pk::rt::sum_op{});"),
            std::string::npos)
      << Body;
  // The max loop (cheap) keeps 64 lanes in flight, the sum loop (an exp per
  // element) 16.
  EXPECT_NE(Body.find("float pk_lanes_max[64];"), std::string::npos);
  EXPECT_NE(Body.find("float pk_lanes_sum[16];"), std::string::npos);
  // The sum loop, the last phase with a reduction, brings the next row's x in
  // for the next max loop.
  EXPECT_NE(Body.find("PK_PREFETCH(pk_x_next + pk_blk);"), std::string::npos)
      << Body;
}

TEST(LowerToLoops, InOutUpdatedInAReductionGroupIsWrittenLast) {
  // h = h + x; y = h * sum(h): phases that recompute h + x must see the old
  // h, so the store to h runs after every other phase.
  Function F;
  Builder B(F);
  unsigned H = B.addParam("h", ParamKind::InOut, DType::F32, 2);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
  NodeId NewH = B.elementwise(OpCode::Add, {B.load(H), B.load(X)}, DType::F32);
  B.store(H, NewH);
  NodeId Sum = B.reduce(ReduceKind::Sum, NewH, {-1}, true, DType::F32);
  B.store(Y, B.elementwise(OpCode::Mul, {NewH, Sum}, DType::F32));
  loop::Program P = lower(F);
  ASSERT_EQ(P.Steps.size(), 1u);
  unsigned HPhase = 0, YPhase = 0;
  for (const loop::Stmt &St : P.Nests[0].Body)
    if (St.K == loop::Stmt::Store)
      (St.Param == H ? HPhase : YPhase) = St.Phase;
  EXPECT_GT(HPhase, YPhase);
  // When h's and y's extents differ at run time: one nest per store, y's
  // (which reads the old h) first.
  ASSERT_EQ(P.Steps[0].Otherwise.size(), 2u);
  auto Stored = [&](unsigned Nest) {
    for (const loop::Stmt &St : P.Nests[Nest].Body)
      if (St.K == loop::Stmt::Store)
        return St.Param;
    return ~0u;
  };
  EXPECT_EQ(Stored(P.Steps[0].Otherwise[0]), Y);
  EXPECT_EQ(Stored(P.Steps[0].Otherwise[1]), H);
}

TEST(ScheduleCpu, PicksTheLoopStructurePerNest) {
  BiasKernel K;
  loop::Program L = lower(K.F);
  tile::Program S = scheduleForCpu(L);
  ASSERT_EQ(S.Nests.size(), 1u);
  EXPECT_EQ(S.Nests[0].Kind, tile::LoopKind::Strided)
      << "b has a lower rank: no flat loop";
  EXPECT_EQ(S.Nests[0].MinWorkForThreads, 65536);
  tile::CpuTarget Small;
  Small.ParallelMinWork = 1000;
  EXPECT_EQ(scheduleForCpu(L, Small).Nests[0].MinWorkForThreads, 1000);

  // Same-rank operands: flat, after a run-time check that none broadcasts.
  Function F;
  Builder B(F);
  unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
  B.store(Y, B.elementwise(OpCode::Neg, {B.load(X)}, DType::F32));
  loop::Program L2 = lower(F);
  EXPECT_EQ(scheduleForCpu(L2).Nests[0].Kind, tile::LoopKind::FlatOrStrided);

  // A reduction over axis 0 of a matrix: columns inside.
  Function G;
  Builder BG(G);
  unsigned GX = BG.addParam("x", ParamKind::In, DType::F32, 2);
  unsigned GM = BG.addParam("m", ParamKind::Out, DType::F32, 1);
  BG.store(GM, BG.reduce(ReduceKind::Sum, BG.load(GX), {0}, false, DType::F32));
  loop::Program L3 = lower(G);
  tile::NestSchedule C = scheduleForCpu(L3).Nests[0];
  EXPECT_EQ(C.Kind, tile::LoopKind::Columns);
  EXPECT_GT(C.ColumnBlock, 0);
}

TEST(Emitters, CppBodyHasGuardsThreadThresholdAndSimd) {
  BiasKernel K;
  K.F.File = "/some/dir/bias.cpp";
  loop::Program L = lower(K.F);
  std::string Body = cpu::emitKernelBody(scheduleForCpu(L));
  EXPECT_NE(Body.find("Generated by pkc from bias.cpp"), std::string::npos)
      << "file name only, so output does not depend on the build dir";
  EXPECT_NE(Body.find("const int64_t pk_b_0 = b.extent(0);"),
            std::string::npos);
  EXPECT_NE(Body.find("pk::rt::shape_fail(\"bias\", \"cannot broadcast\", "
                      "\"b\", {pk_b_0}, \"against\", \"x\""),
            std::string::npos)
      << Body;
  EXPECT_NE(Body.find("if (pk_n >= 65536)"), std::string::npos);
  EXPECT_NE(Body.find("#pragma omp parallel for"), std::string::npos);
  EXPECT_NE(Body.find("#pragma omp simd"), std::string::npos);
  EXPECT_NE(Body.find("(pk_b_0 == 1 ? 0 : 1)"), std::string::npos)
      << "b's stride is 0 when it broadcasts";
  // Deterministic.
  BiasKernel K2;
  K2.F.File = "/other/dir/bias.cpp";
  loop::Program L2 = lower(K2.F);
  EXPECT_EQ(cpu::emitKernelBody(scheduleForCpu(L2)), Body);
}

TEST(Emitters, CudaLauncherChecksGuardsAndLaunchesThroughTheMacro) {
  BiasKernel K;
  K.F.File = "bias.cpp";
  loop::Program L = lower(K.F);
  gpu::Program G = scheduleForGpu(L);
  ASSERT_EQ(G.Nests.size(), 1u);
  EXPECT_EQ(G.Nests[0].Kind, gpu::Strategy::GridStride);
  EXPECT_EQ(G.Nests[0].VectorWidth, 1)
      << "b has a lower rank: no flat path, so no float4 accesses";
  cuda::KernelText T = cuda::emitCuda(cuda::lowerToKernels(G));
  EXPECT_NE(T.Kernels.find("pk_bias_g0("), std::string::npos);
  EXPECT_NE(T.Kernels.find("pk_i += pk_step"), std::string::npos)
      << "grid-stride loop";
  EXPECT_NE(T.Launcher.find("pk::rt::shape_fail"), std::string::npos);
  EXPECT_LT(T.Launcher.find("pk::rt::shape_fail"),
            T.Launcher.find("PK_LAUNCH(pk_bias_g0"))
      << "guards come before the launch";
  EXPECT_EQ(T.Declaration,
            "void bias(pk::In<float, 2> x, pk::In<float, 1> b, "
            "pk::Out<float, 2> y, CUstream_st *pk_stream = nullptr);\n");
}

} // namespace
