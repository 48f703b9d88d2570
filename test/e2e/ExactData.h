//===- ExactData.h - Data on which every order of summation is exact ------===//
//
// For differential tests that compare eager and compiled results bit for bit
// (test/e2e/ViewsTest.cpp, test/cuda_shim/ViewsShimTest.cpp): multiples of
// 1/8 in [-1, 1], whose products are multiples of 1/64 and whose sums of up
// to 2^17 terms are exact in float, in any order. No -0: a max or min of +0
// and -0 may give either (docs/design.md, "Eager semantics decisions").
//
//===----------------------------------------------------------------------===//
#ifndef PK_TEST_EXACT_DATA_H
#define PK_TEST_EXACT_DATA_H

#include "common/sample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace exact_data {

/// N multiples of 1/8 in [-1, 1] (never -0), from Seed.
inline std::vector<float> grid(int64_t N, unsigned Seed) {
  std::vector<float> V = sample::random(N, Seed, -1, 1);
  for (float &X : V)
    X = std::round(X * 8) / 8 + 0.0f;
  return V;
}

/// N NaNs: an output element a kernel does not write stays NaN.
inline std::vector<float> poisoned(int64_t N) {
  return std::vector<float>(N, std::nanf(""));
}

/// Bit for bit (so -0.0 and 0.0 differ, NaN only matches NaN); Rtol > 0
/// compares within a relative tolerance instead.
inline void expectSame(const std::vector<float> &E, const std::vector<float> &C,
                       const std::string &What, double Rtol = 0) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    const bool Ok = Rtol == 0 ? std::memcmp(&E[I], &C[I], sizeof(float)) == 0
                              : std::fabs(double(E[I]) - double(C[I])) <=
                                    Rtol * std::fabs(double(E[I]));
    if (!Ok) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": eager " << E[I] << ", compiled " << C[I];
      return;
    }
  }
}

/// Bit-for-bit equality of two whole buffers (NaN payloads included): an
/// output a kernel must leave untouched is compared with its poison.
inline bool sameBits(const std::vector<float> &A, const std::vector<float> &B) {
  // memcmp of an empty vector's null data() is undefined (UBSan says so).
  return A.size() == B.size() &&
         (A.empty() ||
          std::memcmp(A.data(), B.data(), A.size() * sizeof(float)) == 0);
}

/// R x C values of grid() (ties); row r % 5 == 1 holds a NaN at its first
/// position,
/// == 2 at its middle, == 3 two NaNs at the middle and the last; row
/// r % 7 == 4 is +inf at the middle, r % 7 == 5 -inf everywhere.
inline std::vector<float> withExtremes(int64_t R, int64_t C, unsigned Seed) {
  std::vector<float> V = grid(R * C, Seed);
  for (int64_t Row = 0; Row < R && C > 0; ++Row) {
    float *P = V.data() + Row * C;
    const float NaN = std::nanf("");
    if (Row % 5 == 1)
      P[0] = NaN;
    if (Row % 5 == 2)
      P[C / 2] = NaN;
    if (Row % 5 == 3)
      P[C / 2] = P[C - 1] = NaN;
    if (Row % 7 == 4)
      P[C / 2] = INFINITY;
    if (Row % 7 == 5)
      for (int64_t K = 0; K < C; ++K)
        P[K] = -INFINITY;
  }
  return V;
}

/// Positions, exactly.
inline void expectPositions(const std::vector<int64_t> &E,
                            const std::vector<int64_t> &C,
                            const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I)
    if (E[I] != C[I]) {
      ADD_FAILURE() << What << ": element " << I << " of " << E.size()
                    << ": eager " << E[I] << ", compiled " << C[I];
      return;
    }
}

/// "3x17x65".
inline std::string dims(std::initializer_list<int64_t> D) {
  std::string S;
  for (int64_t X : D)
    S += (S.empty() ? "" : "x") + std::to_string(X);
  return S;
}

} // namespace exact_data

#endif // PK_TEST_EXACT_DATA_H
