//===- RuntimeTest.cpp - Helpers of <pk/runtime.h> that kernels call -----===//
//
// pk::rt::combine_lanes must combine a row reduction's lanes in the order
// the generated loops always used (lane l with lane l + w, w = N/2 ... 1):
// the results of sums, which are not associative in floating point, depend
// on it, and the differential tests' tolerances assume one fixed tree.
//
//===----------------------------------------------------------------------===//

#include <pk/runtime.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

/// The tree as the loops over the lane array computed it.
template <class T, class Op>
T loopTree(std::vector<T> Lanes, const Op &Combine) {
  for (size_t W = Lanes.size() / 2; W > 0; W /= 2)
    for (size_t L = 0; L < W; ++L)
      Lanes[L] = Combine(Lanes[L], Lanes[L + W]);
  return Lanes[0];
}

/// A combiner that records the shape of the tree.
std::string join(const std::string &A, const std::string &B) {
  return "(" + A + " " + B + ")";
}

template <int N> void expectSameTree() {
  std::vector<std::string> Lanes;
  for (int L = 0; L < N; ++L)
    Lanes.push_back(std::to_string(L));
  std::vector<std::string> Copy = Lanes;
  EXPECT_EQ(pk::rt::combine_lanes<N>(Copy.data(), join), loopTree(Lanes, join));
}

TEST(Runtime, CombineLanesIsTheLoopTree16) { expectSameTree<16>(); }
TEST(Runtime, CombineLanesIsTheLoopTree64) { expectSameTree<64>(); }

template <int N> void expectSameFloatSum(unsigned Seed) {
  std::mt19937 Rng(Seed);
  // Magnitudes over many binades, both signs: the rounding depends on order.
  std::uniform_real_distribution<float> Exp(-20.0f, 20.0f);
  std::vector<float> Lanes(N);
  for (float &V : Lanes)
    V = std::ldexp(Rng() % 2 ? 1.0f : -1.0f, int(Exp(Rng))) * 1.37f;
  std::vector<float> Copy = Lanes;
  const float Got = pk::rt::combine_lanes<N>(Copy.data(), pk::rt::sum_op{});
  const float Want = loopTree(Lanes, pk::rt::sum_op{});
  EXPECT_EQ(std::memcmp(&Got, &Want, sizeof Got), 0)
      << "seed " << Seed << ": " << Got << " vs " << Want;
}

TEST(Runtime, CombineLanesSumsInTheLoopTreesOrder) {
  for (unsigned Seed = 0; Seed < 200; ++Seed) {
    expectSameFloatSum<16>(Seed);
    expectSameFloatSum<64>(Seed);
  }
}

// max/min of signed zeros and NaNs depend on the order too (NumPy's
// maximum keeps its first operand when they compare equal or it is NaN).
TEST(Runtime, CombineLanesMaxMinKeepTheLoopTreesZerosAndNaNs) {
  std::mt19937 Rng(7);
  const float Values[] = {0.0f,  -0.0f,          1.0f,
                          -1.0f, std::nanf("1"), -std::nanf("2")};
  for (int Trial = 0; Trial < 500; ++Trial) {
    std::vector<float> Lanes(64);
    for (float &V : Lanes)
      V = Values[Rng() % (Trial % 2 ? 6 : 4)];
    for (bool Max : {true, false}) {
      std::vector<float> Copy = Lanes;
      const float Got =
          Max ? pk::rt::combine_lanes<64>(Copy.data(), pk::rt::max_op{})
              : pk::rt::combine_lanes<64>(Copy.data(), pk::rt::min_op{});
      const float Want = Max ? loopTree(Lanes, pk::rt::max_op{})
                             : loopTree(Lanes, pk::rt::min_op{});
      EXPECT_EQ(std::memcmp(&Got, &Want, sizeof Got), 0)
          << "trial " << Trial << (Max ? " max: " : " min: ") << Got << " vs "
          << Want;
    }
  }
}

} // namespace
