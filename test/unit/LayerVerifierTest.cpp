// The verifiers of the layers below Graph IR (Tile IR, GPU Tile IR, Kernel
// IR): what the passes make passes them, and a broken program is named.
#include "IR/GpuTileIR.h"
#include "IR/KernelIR.h"
#include "IR/LoopIR.h"
#include "IR/TileIR.h"
#include "Target/CUDA/LowerToKernels.h"
#include "Transforms/Passes.h"

#include <gtest/gtest.h>

using namespace pk;
using namespace pk::ir;

namespace {

/// y = x * rsqrt(mean(x * x, -1, keepdims)) and z = w + 1 (another
/// domain): one row reduction nest and one elementwise nest.
struct TwoNests {
  Function F;
  FusionPlan Plan;
  loop::Program Loops;
  TwoNests() {
    F.Name = F.QualifiedName = "two";
    Builder B(F);
    unsigned X = B.addParam("x", ParamKind::In, DType::F32, 2);
    unsigned Y = B.addParam("y", ParamKind::Out, DType::F32, 2);
    unsigned W = B.addParam("w", ParamKind::In, DType::F32, 1);
    unsigned Z = B.addParam("z", ParamKind::Out, DType::F32, 1);
    NodeId L = B.load(X);
    NodeId Ms = B.reduce(ReduceKind::Mean,
                         B.elementwise(OpCode::Mul, {L, L}, DType::F32), {-1},
                         true, DType::F32);
    NodeId R = B.elementwise(OpCode::Rsqrt, {Ms}, DType::F32);
    B.store(Y, B.elementwise(OpCode::Mul, {L, R}, DType::F32));
    NodeId One = B.constFloat(1, DType::F32, true);
    B.store(Z, B.elementwise(OpCode::Add, {B.load(W), One}, DType::F32));
    EXPECT_TRUE(inferShapes(F).empty());
    deriveGuards(F);
    canonicalize(F);
    materialize(F);
    Plan = fuse(F);
    std::vector<UserDiag> Diags;
    Loops = lowerToLoops(F, Plan, Diags, nullptr);
    EXPECT_TRUE(Diags.empty());
    planBuffers(Loops);
  }
  /// The index of the reduction nest.
  size_t reductionNest() const {
    for (size_t I = 0; I < Loops.Nests.size(); ++I)
      if (Loops.Nests[I].isReduction())
        return I;
    ADD_FAILURE() << "no reduction nest";
    return 0;
  }
};

TEST(TileIRVerifier, AcceptsTheScheduleAndNamesAWrongLoopKind) {
  TwoNests K;
  ASSERT_EQ(K.Loops.Nests.size(), 2u);
  tile::Program S = scheduleForCpu(K.Loops);
  EXPECT_EQ(tile::verify(S), "");

  tile::Program Flat = S;
  Flat.Nests[K.reductionNest()].Kind = tile::LoopKind::Flat;
  EXPECT_NE(tile::verify(Flat).find("flat schedule for a reduction nest"),
            std::string::npos)
      << tile::verify(Flat);

  tile::Program Short = S;
  Short.Nests.pop_back();
  EXPECT_EQ(tile::verify(Short), "1 schedules for 2 nests");
}

TEST(GpuTileIRVerifier, AcceptsThePlanAndNamesABrokenOne) {
  TwoNests K;
  gpu::Program S = scheduleForGpu(K.Loops);
  EXPECT_EQ(gpu::verify(S), "");

  gpu::Program Wide = S;
  gpu::NestPlan &N = Wide.Nests[K.reductionNest()];
  ASSERT_EQ(N.Kind, gpu::Strategy::RowGroups);
  N.Rows.front().Threads = 4096; // more than a block may have
  EXPECT_NE(gpu::verify(Wide).find("row threads 4096"), std::string::npos)
      << gpu::verify(Wide);
}

TEST(KernelIRVerifier, AcceptsTheKernelsAndNamesABadLaunch) {
  TwoNests K;
  gpu::Program S = scheduleForGpu(K.Loops);
  kernel::Program P = cuda::lowerToKernels(S);
  EXPECT_EQ(kernel::verify(P), "");

  kernel::Program Unknown = P;
  ASSERT_FALSE(Unknown.Nests[0].Launch.Steps.empty());
  Unknown.Nests[0].Launch.Steps[0].Kernel = "pk_nowhere";
  EXPECT_NE(kernel::verify(Unknown).find("a launch of unknown kernel "
                                         "pk_nowhere"),
            std::string::npos);

  kernel::Program Twice = P;
  Twice.Nests[1].Kernels[0].Name = Twice.Nests[0].Kernels[0].Name;
  EXPECT_NE(kernel::verify(Twice).find("is empty or taken"), std::string::npos);
}

} // namespace
