//===- EagerLookupTest.cpp - pk ops next to the C library's names ---------===//
//
// Kernels say `using namespace pk::lang;` in files that also see <cmath>,
// <math.h>, <stdlib.h> and <strings.h>, whose global exp, abs, pow, index...
// must not make calls on arrays ambiguous, nor pk's ops hijack scalar calls.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdlib>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <type_traits>
#include <vector>

// A helper with an `auto` parameter, as in the spec (§4): found by ADL
// without any using-directive.
auto gelu(auto x) {
  return 0.5f * x * (1 + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// A function in the global namespace with the using-directive in its body.
pk::Array<float> globalScopeMath(pk::In<float> x) {
  using namespace pk::lang;
  auto a = exp(x[_]) + abs(x[_]) + sqrt(abs(x[_])) + pow(x[_], 2) +
           floor(x[_]) + log(exp(x[_])) + sin(x[_]) * cos(x[_]) + erf(x[_]);
  auto b =
      maximum(a, 0) - minimum(a, 1) + clamp(a, 0, 1) + cast<float>(index(a, 0));
  // Scalars still go to the C library.
  static_assert(std::is_same_v<decltype(exp(1.0)), double>);
  static_assert(std::is_same_v<decltype(abs(-3)), int>);
  static_assert(std::is_same_v<decltype(pow(2.0, 3.0)), double>);
  static_assert(std::is_same_v<decltype(floor(1.5)), double>);
  static_assert(std::is_same_v<decltype(exp(x[_])), pk::Array<float>>);
  return b + sum(a) * 0 + max(a) * 0 + min(a, 0) * 0 + mean(a, 0, keepdims) * 0;
}

// The using-directive at namespace scope, kernels in a namespace.
namespace user_kernels {
using namespace pk::lang;

PK_KERNEL void gelu_kernel(In<float> x, Out<float> y) { y[_] = gelu(x[_]); }

PK_KERNEL void masked_max(In<float, 2> s, Out<float, 1> m) {
  auto causal = index(s[_], -1) <= index(s[_], -2);
  m[_] = max(where(causal, s[_], -INFINITY), -1);
}

PK_KERNEL void scalar_math(In<float> x, Out<float> y, float k) {
  // std:: math on scalar parameters, pk ops on arrays.
  const float c = std::exp(k) + exp(0.0f) + fabsf(-1.0f);
  y[_] = exp(x[_]) * c + std::max(k, 0.0f);
}
} // namespace user_kernels

// How samples get the eager reference: the kernel file's text inside
// `namespace eager` after <pk/pk.h>.
namespace eager {
#include <pk/pk.h> // a no-op: the include guard
using namespace pk::lang;
PK_KERNEL void axpby(float a, In<float> x, float b, InOut<float> y) {
  y[_] = a * x[_] + b * y[_];
}
} // namespace eager

TEST(EagerLookup, GlobalNamespaceWithCmath) {
  std::vector<float> X = {0, 1, -1};
  auto B = globalScopeMath(pk::In<float>(X));
  ASSERT_EQ(B.shape(), (std::vector<int64_t>{3}));
  // a = exp + abs + sqrt(abs) + x^2 + floor + x + sin*cos + erf, so
  // a(0) = 1, a(1) = 9.0156313348216, a(-1) = 0.07052993480888647, and
  // b = maximum(a, 0) - minimum(a, 1) + clamp(a, 0, 1) + index.
  EXPECT_NEAR(B.at(0), 1.0, 1e-6);
  EXPECT_NEAR(B.at(1), 10.0156313348216, 1e-5);
  EXPECT_NEAR(B.at(2), 2.0705299348088864, 1e-6);
}

TEST(EagerLookup, KernelsInANamespace) {
  std::vector<float> X = {-1, 0, 1, 2}, Y(4);
  user_kernels::gelu_kernel(pk::In<float>(X), pk::Out<float>(Y));
  // NumPy: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))
  const double G[] = {-0.1588080093925231, 0.0, 0.841191990607477,
                      1.9545976940871754};
  for (int I = 0; I < 4; ++I)
    EXPECT_NEAR(Y[I], G[I], 1e-6) << I;

  const float S[] = {1, 9, 9, 5, 2, 9, 7, 3, 4};
  std::vector<float> M(3);
  user_kernels::masked_max(pk::In<float, 2>(S, {3, 3}), pk::Out<float>(M));
  EXPECT_EQ(M, (std::vector<float>{1, 5, 7}));

  std::vector<float> X2 = {-1, 0}, Z(2);
  user_kernels::scalar_math(pk::In<float>(X2).named("x"), pk::Out<float>(Z),
                            0.0f);
  // c = e^0 + e^0 + 1 = 3: y = exp(x) * 3
  EXPECT_NEAR(Z[0], 3 * std::exp(-1.0f), 1e-6);
  EXPECT_NEAR(Z[1], 3.0f, 1e-6);
}

TEST(EagerLookup, SampleStyleEagerNamespace) {
  std::vector<float> X = {1, 2}, Y = {10, 20};
  eager::axpby(2.0f, pk::In<float>(X), 0.5f, pk::InOut<float>(Y));
  EXPECT_EQ(Y, (std::vector<float>{7, 14}));
}
