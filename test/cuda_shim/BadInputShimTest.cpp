// Bad input at run time for the CUDA launchers pk::cuda::<kernel> of every
// sample (the shared table test/e2e/BadInputCases.h), on the shim (or on a
// GPU when built without PK_CUDA_SHIM). The compiled CPU kernels are the
// reference here (test/e2e/BadInputTest.cpp checks them against eager):
//
// * valid shapes: the launcher runs, and its result is the CPU kernel's and
//   eager's within 1e-4 relative (the matmul samples' only run on the shim
//   besides MatmulShimTest's cases);
// * each ref's each axis at E + 1, E - 1, 1 and 0: the launcher raises
//   exactly the CPU kernel's pk::ShapeError (same guards, same message) or
//   accepts exactly what the CPU kernel accepts; when it raises, no kernel
//   was launched and every device buffer keeps its bytes;
// * every written ref at the address of every other ref: the CPU kernel's
//   pk::AliasError, no launch, nothing written.
#define PK_BAD_INPUT_CUDA 1
#include "../e2e/BadInputCases.h"

#include <cuda_runtime.h>
#ifdef PK_CUDA_SHIM
#include <pk_shim/shim.h>
#endif

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

using namespace bad_input;

void check(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    throw std::runtime_error(std::string(What) + ": " + cudaGetErrorString(E));
}

uint64_t launches() {
#ifdef PK_CUDA_SHIM
  return pk::shim::stats().Launches;
#else
  return 0;
#endif
}

/// Device copies of a call's host Buffers.
class DeviceBuffers {
public:
  explicit DeviceBuffers(const Buffers &H) {
    for (const std::vector<float> &V : H.Data) {
      float *P = nullptr;
      check(cudaMalloc(&P, V.size() * sizeof(float)), "cudaMalloc");
      check(cudaMemcpy(P, V.data(), V.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy");
      Ptr.push_back(P);
      Sizes.push_back(V.size());
    }
  }
  ~DeviceBuffers() {
    for (float *P : Ptr)
      cudaFree(P);
  }
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;

  Args args(const std::vector<std::vector<int64_t>> &Shapes) const {
    Args A;
    A.Ptr = Ptr;
    A.Shape = Shapes;
    return A;
  }
  /// The device contents, as host Buffers shaped like `Like` (what they
  /// were made from).
  Buffers host(const Buffers &Like) const {
    check(cudaDeviceSynchronize(), "the kernel");
    Buffers H = Like;
    for (size_t R = 0; R < Ptr.size(); ++R)
      check(cudaMemcpy(H.Data[R].data(), Ptr[R], Sizes[R] * sizeof(float),
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    return H;
  }

private:
  std::vector<float *> Ptr;
  std::vector<size_t> Sizes;
};

/// A ref's buffer as floats: a 16-bit ref's elements are the first half of
/// its float buffer's bytes (the rest is sentinel, compared as 16-bit values
/// too). Outputs rounded to 16 bits may differ by one ulp of the 16-bit type
/// (up to 2^-7 relative for bfloat16), hence 2^-7 of the largest element for
/// 16-bit refs below.
std::vector<float> asFloats(const std::vector<float> &Buf, Elem E) {
  if (E == Elem::F32)
    return Buf;
  std::vector<uint16_t> Bits(Buf.size() * 2);
  std::memcpy(Bits.data(), Buf.data(), Buf.size() * sizeof(float));
  std::vector<float> Out;
  for (uint16_t B : Bits)
    Out.push_back(E == Elem::F16 ? pk::fp16::halfToFloat(B)
                                 : pk::fp16::bfloat16ToFloat(B));
  return Out;
}

class BadInputCuda : public ::testing::Test {
protected:
  void SetUp() override {
    int N = 0;
    if (cudaGetDeviceCount(&N) != cudaSuccess || N == 0)
      GTEST_SKIP() << "no CUDA device";
  }
  void TearDown() override {
#ifdef PK_CUDA_SHIM
    pk::shim::reset();
#else
    cudaGetLastError();
#endif
  }
};

TEST_F(BadInputCuda, ValidShapesRunAndAgreeWithTheCpuKernels) {
  for (const Case &C : cases()) {
    // InOuts are read: values in every kernel's domain (adam_step takes
    // the square root of v), not the sentinel.
    Buffers Start(C);
    for (size_t R = 0; R < C.Refs.size(); ++R)
      if (C.Refs[R].K == Kind::InOut)
        for (size_t J = 0; J < Start.Data[R].size(); ++J)
          Start.Data[R][J] = 0.5f + 0.25f * float(J % 5);
    Buffers Cpu = Start, Eager = Start;
    const Outcome Ref = run(C, Cpu.args(validShapes(C)), Version::Cpu);
    ASSERT_TRUE(Ref.ok()) << C.Kernel << ": " << Ref.Message;
    const Outcome EagerRan = run(C, Eager.args(validShapes(C)), Version::Eager);
    ASSERT_TRUE(EagerRan.ok()) << C.Kernel << ": " << EagerRan.Message;
    DeviceBuffers Dev(Start);
    const Outcome Got = run(C, Dev.args(validShapes(C)), Version::Cuda);
    ASSERT_TRUE(Got.ok()) << C.Kernel << ": " << Got.Message;
    const Buffers Out = Dev.host(Start);
    for (size_t R = 0; R < C.Refs.size(); ++R)
      for (const Buffers *Want : {&Cpu, &Eager}) {
        const std::vector<float> E = asFloats(Want->Data[R], C.Refs[R].E),
                                 G = asFloats(Out.Data[R], C.Refs[R].E);
        float Max = 0;
        for (float V : E)
          Max = std::max(Max, std::fabs(V));
        for (size_t J = 0; J < E.size(); ++J)
          if (!(std::fabs(E[J] - G[J]) <=
                1e-5f + (C.Refs[R].E == Elem::F32 ? 1e-4f : 0x1p-7f) * Max)) {
            ADD_FAILURE() << C.Kernel << ": " << C.Refs[R].Name << " element "
                          << J << ": " << (Want == &Cpu ? "cpu " : "eager ")
                          << E[J] << ", cuda " << G[J];
            break;
          }
      }
  }
}

TEST_F(BadInputCuda, WrongExtentsRaiseTheCpuKernelsShapeErrorBeforeAnyLaunch) {
  int Rejected = 0;
  for (const Case &C : cases())
    for (size_t Ref = 0; Ref < C.Refs.size(); ++Ref) {
      const std::vector<int64_t> &Valid = C.Refs[Ref].Shape;
      for (size_t Axis = 0; Axis < Valid.size(); ++Axis) {
        const int64_t E = Valid[Axis];
        std::vector<int64_t> Tried;
        for (int64_t V : {E + 1, E - 1, int64_t(1), int64_t(0)}) {
          if (V == E || V < 0 ||
              std::find(Tried.begin(), Tried.end(), V) != Tried.end())
            continue;
          Tried.push_back(V);
          std::vector<std::vector<int64_t>> Shapes = validShapes(C);
          Shapes[Ref][Axis] = V;
          const std::string What =
              C.Kernel + " with " + C.Refs[Ref].Name + shapeStr(Shapes[Ref]);
          Buffers Cpu(C);
          const Outcome Want = run(C, Cpu.args(Shapes), Version::Cpu);
          const Buffers Before(C);
          DeviceBuffers Dev(Before);
          const uint64_t Launched = launches();
          const Outcome Got = run(C, Dev.args(Shapes), Version::Cuda);
          EXPECT_EQ(Got.Shape, Want.Shape) << What << ": " << Got.Message;
          EXPECT_FALSE(Got.Alias || Got.Other) << What << ": " << Got.Message;
          EXPECT_EQ(Got.Message, Want.Message) << What;
          if (!Want.Shape)
            continue;
          ++Rejected;
          EXPECT_EQ(launches(), Launched) << What << ": a kernel was launched";
          EXPECT_TRUE(Dev.host(Before).sameBytes(Before))
              << What << ": a device buffer was written";
        }
      }
    }
  EXPECT_GT(Rejected, 150);
}

TEST_F(BadInputCuda, AliasingRefsRaiseTheCpuKernelsAliasErrorBeforeAnyLaunch) {
  int Checked = 0;
  for (const Case &C : cases())
    forEachAliasingPair(C, [&](size_t W, size_t Other, Buffers &Host) {
      const Buffers Before = Host;
      const Outcome Want = run(C, aliasedArgs(Host, C, W, Other), Version::Cpu);
      DeviceBuffers Dev(Before);
      const Args A = aliasedArgs(Dev, C, W, Other);
      const uint64_t Launched = launches();
      const Outcome Got = run(C, A, Version::Cuda);
      const std::string What =
          C.Kernel + ": " + C.Refs[W].Name + " at " + C.Refs[Other].Name;
      EXPECT_TRUE(Want.Alias) << What << ": " << Want.Message;
      EXPECT_TRUE(Got.Alias) << What << ": " << Got.Message;
      EXPECT_EQ(Got.Message, Want.Message) << What;
      EXPECT_EQ(launches(), Launched) << What << ": a kernel was launched";
      EXPECT_TRUE(Dev.host(Before).sameBytes(Before))
          << What << ": a device buffer was written";
      ++Checked;
    });
  EXPECT_GT(Checked, 50);
}

} // namespace
