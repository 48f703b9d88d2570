//===- CudaTest.cpp - llama::Model on Device::Cuda against the CPU --------===//
//
// Built against the CUDA shim (test/cuda_shim/CMakeLists.txt): the kernels'
// CUDA versions that pkc generated run through their host launchers on the
// host, so the CUDA path of model.cpp (weights copied to device memory, the
// KV cache and activations there, tokens in and logits out) is checked in
// every build, without a GPU. Each weight format, Llama's and Qwen2's layer:
// a prefill and decode steps, both models fed the CPU model's greedy token;
// the logits within 2e-5 of the largest (ModelTest's derived tolerance for
// float sums: the CUDA kernels sum in other orders than the CPU loops, each
// within it of the exact logits) and the same greedy token. bf16 layers
// round their products' inputs to bf16 from float values that the two
// devices compute in other orders: where one lands on each side of a
// rounding boundary, that input differs by one bf16 step (up to 2^-7 of it),
// kTolBf16Flips below.
//
//===----------------------------------------------------------------------===//

#include "Presets.h"
#include "checkpoint.h"
#include "model.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using llama::Config;
using llama::Device;
using llama::Model;

/// pk-llama-checkpoint's `--preset tiny` or `--preset qwen2-tiny`.
Config preset(bool Qwen2) {
  return Qwen2 ? llama::test::qwen2TinyPreset() : llama::test::tinyPreset();
}

/// A checkpoint (seed 7) of that preset in `Version`, written once.
const llama::Checkpoint &checkpoint(bool Qwen2, int Version) {
  static std::unique_ptr<llama::Checkpoint> Files[2][3];
  auto &F = Files[Qwen2][Version];
  if (!F) {
    const Config C = preset(Qwen2);
    const std::string Path =
        ::testing::TempDir() + "llama_cuda_" + std::to_string(::getpid()) +
        (Qwen2 ? "_qwen2" : "") + "_v" + std::to_string(Version) + ".bin";
    llama::writeCheckpoint(Path, C, Version, 7, llama::fitGroupSize(C, 64));
    F = std::make_unique<llama::Checkpoint>(llama::Checkpoint::open(Path));
    std::remove(Path.c_str());
  }
  return *F;
}

double relError(std::span<const float> Got, std::span<const float> Want) {
  double Err = 0, Scale = 0;
  for (size_t I = 0; I < Want.size(); ++I) {
    Err = std::max(Err, std::abs(double(Got[I]) - double(Want[I])));
    Scale = std::max(Scale, std::abs(double(Want[I])));
  }
  return Err / Scale;
}

int32_t argmaxOf(std::span<const float> L) {
  return static_cast<int32_t>(std::max_element(L.begin(), L.end()) - L.begin());
}

/// ModelTest's tolerance for float sums in different orders.
constexpr double kTol = 2e-5;

/// The same for bf16 layers, whose products' inputs are rounded to bf16:
/// an input rounded one step apart on the two devices moves its product's
/// outputs by up to 2^-7 |w_k x_k|, about 2^-7 / sqrt(K) = 7e-4 of their rms
/// at K = 112 (qwen2-tiny), and the logits by about as much of theirs (the
/// residual stream carries it, the KV cache keeps it for later steps).
/// Measured: 8e-4 .. 2.4e-3 over Qwen2's 12 steps (a few such inputs),
/// 2.3e-6 on Llama's (none); 5e-3 allows several at once, and stays below a
/// wrong product's O(1) and the ~1e-2 that bf16's own rounding moves the
/// logits from fp32's.
constexpr double kTolBf16Flips = 5e-3;

/// A prefill of `Prompt`, then `Steps` decode steps fed the CPU model's
/// greedy token, each within `Tol` of the largest logit; returns the worst
/// relative difference.
double compare(Model &Cuda, Model &Cpu, const std::vector<int32_t> &Prompt,
               int Steps, double Tol = kTol) {
  std::vector<float> Want(Cpu.forward(Prompt, 0).begin(),
                          Cpu.forward(Prompt, 0).end());
  std::vector<float> Got(Cuda.forward(Prompt, 0).begin(),
                         Cuda.forward(Prompt, 0).end());
  double Worst = 0;
  auto Pos = static_cast<int64_t>(Prompt.size());
  for (int Step = 0;; ++Step, ++Pos) {
    const double Err = relError(Got, Want);
    Worst = std::max(Worst, Err);
    EXPECT_LE(Err, Tol) << "step " << Step;
    const int32_t Token = argmaxOf(Want);
    EXPECT_EQ(argmaxOf(Got), Token) << "step " << Step;
    if (Step == Steps)
      break;
    const std::span<const float> W = Cpu.forward(std::vector{Token}, Pos);
    Want.assign(W.begin(), W.end());
    const std::span<const float> G = Cuda.forward(std::vector{Token}, Pos);
    Got.assign(G.begin(), G.end());
  }
  return Worst;
}

const std::vector<int32_t> kPrompt = {1, 42, 7, 300, 0, 13, 511};

TEST(LlamaCuda, BuiltWithCudaKernels) { EXPECT_TRUE(llama::hasCuda()); }

class Dense : public ::testing::TestWithParam<std::tuple<bool, llama::DType>> {
};

TEST_P(Dense, AgreesWithTheCpu) {
  const auto [Qwen2, Storage] = GetParam();
  const llama::Checkpoint &Ck = checkpoint(Qwen2, 1);
  Model Cuda(Ck.config(), Ck.weights(), Storage, Device::Cuda),
      Cpu(Ck.config(), Ck.weights(), Storage, Device::Cpu);
  std::printf("  CUDA (shim) vs CPU: worst %.3g of the largest logit\n",
              compare(Cuda, Cpu, kPrompt, 12,
                      Storage == llama::DType::BF16 ? kTolBf16Flips : kTol));
}

INSTANTIATE_TEST_SUITE_P(
    Models, Dense,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(llama::DType::F32,
                                         llama::DType::BF16)),
    [](const auto &Info) {
      return std::string(std::get<0>(Info.param) ? "Qwen2" : "Llama") +
             (std::get<1>(Info.param) == llama::DType::BF16 ? "_bf16"
                                                            : "_fp32");
    });

/// int8: both compute runq's arithmetic with float group sums, in other
/// orders, so an activation within a rounding of a quantisation boundary
/// could be quantised a step apart (NarrowWeightsTest says how that shows);
/// on these prompts none is. Slower on the shim (a thread per output of the
/// grouped products): one test each.
void expectInt8Agrees(bool Qwen2) {
  const llama::Checkpoint &Ck = checkpoint(Qwen2, 2);
  Model Cuda(Ck.config(), Ck.quantizedWeights(), llama::Execution::Compiled,
             Device::Cuda),
      Cpu(Ck.config(), Ck.quantizedWeights(), llama::Execution::Compiled,
          Device::Cpu);
  std::printf(
      "  int8 %s, CUDA (shim) vs CPU: worst %.3g\n", Qwen2 ? "Qwen2" : "Llama",
      compare(Cuda, Cpu, Qwen2 ? std::vector<int32_t>{1, 42, 7} : kPrompt, 12));
}

TEST(LlamaCuda, Int8AgreesWithTheCpu) { expectInt8Agrees(false); }
TEST(LlamaCuda, Int8Qwen2AgreesWithTheCpu) { expectInt8Agrees(true); }

/// The eager kernels have no CUDA versions; bad tokens are refused before
/// anything reaches the device.
TEST(LlamaCuda, RefusesWhatItCannotRun) {
  const llama::Checkpoint &Ck = checkpoint(false, 2);
  EXPECT_THROW(Model(Ck.config(), Ck.quantizedWeights(),
                     llama::Execution::Eager, Device::Cuda),
               pk::ShapeError);
  const llama::Checkpoint &Fp = checkpoint(false, 1);
  Model M(Fp.config(), Fp.weights(), llama::DType::F32, Device::Cuda);
  EXPECT_THROW(M.forward(std::vector<int32_t>{1, 512}, 0), pk::ShapeError);
  EXPECT_THROW(M.forward(std::vector<int32_t>{1}, 128), pk::ShapeError);
  // The model still works after the refusals.
  EXPECT_EQ(M.forward(std::vector<int32_t>{1}, 0).size(), 512u);
}

} // namespace
