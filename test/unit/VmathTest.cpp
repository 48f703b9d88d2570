//===- VmathTest.cpp - Accuracy of pk::vm (include/pk/vmath.h) ------------===//
//
// Max ulp error of every pk::vm function against a reference one precision
// up (double libm for float, long double libm for double), and C's results
// for the special values (+-0, +-inf, NaN, denormals, over/underflow).
//
// float: a strided sweep of all 2^32 bit patterns plus dense windows around
// the interesting places (0, denormals, overflow/underflow thresholds, where
// the approximation changes). double: random samples over ranges.
//
// Exhaustive float sweep (every bit pattern; ~1-1.5 min per function):
//   PK_VMATH_EXHAUSTIVE=1 ./pk-unit-tests --gtest_filter='Vmath*'
// (narrow it with e.g. --gtest_filter='Vmath/Float.Sweep/tanh'); it also
// multiplies the double and pow sample counts by 50-80. Set PK_VMATH_VERBOSE=1
// to print the measured max ulp of every test.
//
// pk::vm::fused (exp, exp_nonpos with explicit FMA steps) is tested the same
// way ("fused_exp", "Fused" in the test names), called from wrappers compiled
// for AVX2+FMA; those tests are skipped on CPUs without FMA and off x86-64.
//
//===----------------------------------------------------------------------===//

#include <pk/vmath.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

bool envOn(const char *Name) {
  const char *V = std::getenv(Name);
  return V && V[0] && std::strcmp(V, "0") != 0;
}
bool exhaustive() { return envOn("PK_VMATH_EXHAUSTIVE"); }
bool verbose() { return envOn("PK_VMATH_VERBOSE"); }

float fromBits(uint32_t U) {
  float F;
  std::memcpy(&F, &U, sizeof F);
  return F;
}
uint32_t toBits(float F) {
  uint32_t U;
  std::memcpy(&U, &F, sizeof U);
  return U;
}

constexpr double Huge = 1e300; // "infinitely many ulps"

/// Error of a float result in ulps of the exact value Ref (a double: libm's
/// double result is within 2^-29 float ulp of the exact one). Ulps are those
/// of the float format at |Ref| (2^-149 below FLT_MIN); an infinite result is
/// scored as 2^128.
double ulpErr(float Got, double Ref) {
  if (std::isnan(Ref) || std::isnan(Got))
    return std::isnan(Ref) && std::isnan(Got) ? 0 : Huge;
  if (double(Got) == Ref || Got == float(Ref))
    return 0;
  const double G = std::isinf(Got) ? std::copysign(0x1p128, double(Got)) : Got;
  const double R = std::isinf(Ref) ? std::copysign(0x1p128, Ref) : Ref;
  const double A = std::fabs(R);
  const double Ulp =
      A < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(A) - 23);
  return std::fabs(G - R) / Ulp;
}
/// The same for double against a long double reference.
double ulpErr(double Got, long double Ref) {
  if (std::isnan(Ref) || std::isnan(Got))
    return std::isnan(Ref) && std::isnan(Got) ? 0 : Huge;
  if ((long double)Got == Ref || Got == double(Ref))
    return 0;
  const long double G =
      std::isinf(Got) ? std::copysign(0x1p1024L, (long double)Got) : Got;
  const long double R = std::isinf(Ref) ? std::copysign(0x1p1024L, Ref) : Ref;
  const long double A = std::fabs(R);
  const long double Ulp =
      A < 0x1p-1022L ? 0x1p-1074L : std::ldexp(1.0L, std::ilogb(A) - 52);
  return double(std::fabs(G - R) / Ulp);
}

template <class T> struct WideT { using type = double; };
template <> struct WideT<double> { using type = long double; };
template <class T> using Wide = typename WideT<T>::type;

struct Worst {
  double Ulp = 0;
  double X = 0, Y = 0, Got = 0, Ref = 0;
  long N = 0;
  void add(double E, double XV, double YV, double G, double R) {
    ++N;
    if (E > Ulp || std::isnan(E)) {
      Ulp = E;
      X = XV;
      Y = YV;
      Got = G;
      Ref = R;
    }
  }
  std::string str() const {
    char B[256];
    std::snprintf(B, sizeof B,
                  "max %.3f ulp over %ld points, at x=%a (%.9g) y=%a: got %a "
                  "want %a",
                  Ulp, N, X, X, Y, Got, Ref);
    return B;
  }
};

// --- flavours under test -----------------------------------------------------
//
// pk::vm::Fused is meant for the x86-64-v3/v4 dispatch clones (elsewhere its
// __builtin_fma steps are libm calls), so the tests call it through FmaFused,
// whose functions are compiled for AVX2+FMA whatever this file's flags, and
// skip where the CPU (or the compiler) cannot run them.

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PK_TEST_FMA __attribute__((target("avx2,fma")))
bool haveFma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#define PK_TEST_FMA
bool haveFma() { return false; }
#endif
constexpr const char *NoFma =
    "pk::vm::fused needs an x86-64 CPU with AVX2 and FMA (GCC or Clang)";

/// exp and exp_nonpos of flavour Fl over X[0, N) into A and B in a
/// vectorised loop (as pkc's kernels call them), compiled for the target of
/// the function it is inlined into.
template <class Fl>
[[gnu::always_inline]] inline void simdExpAndNonpos(const float *X, float *A,
                                                    float *B, int N) {
#pragma omp simd
  for (int I = 0; I < N; ++I) {
    A[I] = Fl::exp(X[I]);
    B[I] = Fl::exp_nonpos(X[I]);
  }
}

/// pk::vm::Plain and checkExpNonposIsExp's loop for it.
struct PlainVm : pk::vm::Plain {
  static void expAndNonpos(const float *X, float *A, float *B, int N) {
    simdExpAndNonpos<pk::vm::Plain>(X, A, B, N);
  }
};

/// pk::vm::Fused's functions (and the loop), compiled for AVX2+FMA: call them
/// only if haveFma().
struct FmaFused {
  PK_TEST_FMA static float exp(float X) { return pk::vm::Fused::exp(X); }
  PK_TEST_FMA static double exp(double X) { return pk::vm::Fused::exp(X); }
  PK_TEST_FMA static float exp_nonpos(float X) {
    return pk::vm::Fused::exp_nonpos(X);
  }
  PK_TEST_FMA static double exp_nonpos(double X) {
    return pk::vm::Fused::exp_nonpos(X);
  }
  PK_TEST_FMA static void expAndNonpos(const float *X, float *A, float *B,
                                       int N) {
    simdExpAndNonpos<pk::vm::Fused>(X, A, B, N);
  }
};

/// Cases and fused_exp's: the plain exp's case (bound, windows, ranges) for
/// FmaFused::exp.
template <class Case> std::vector<Case> withFusedExp(std::vector<Case> Cases) {
  Case C = *std::find_if(Cases.begin(), Cases.end(), [](const Case &K) {
    return std::strcmp(K.Name, "exp") == 0;
  });
  C.Name = "fused_exp";
  C.Fn = FmaFused::exp;
  C.NeedsFma = true;
  Cases.push_back(C);
  return Cases;
}

// --- float sweeps -------------------------------------------------------------

using FloatFn = float (*)(float);
using FloatRef = double (*)(double);

struct FloatCase {
  const char *Name;
  FloatFn Fn;
  FloatRef Ref;
  double Bound;                          // documented max ulp
  std::vector<std::pair<float, float>> Dense; // every pattern in [lo, hi]
  // the bound holds for |x| < InRange (everywhere, infinities included, if inf)
  float InRange = std::numeric_limits<float>::infinity();
  bool NeedsFma = false; // Fn is compiled for FMA: skip without it
};

/// Evaluates Fn over Xs in a vectorisable loop (the code path the generated
/// kernels use) and scores every point against Ref.
void scoreFloat(const FloatCase &C, const std::vector<float> &Xs, Worst &W,
                Worst &Outside) {
  std::vector<float> Ys(Xs.size());
  const FloatFn Fn = C.Fn;
  float *__restrict Y = Ys.data();
  const float *__restrict X = Xs.data();
  const size_t N = Xs.size();
  for (size_t I = 0; I < N; ++I)
    Y[I] = Fn(X[I]);
  for (size_t I = 0; I < N; ++I) {
    const double R = C.Ref(double(X[I]));
    if (std::isinf(C.InRange) || std::fabs(X[I]) < C.InRange)
      W.add(ulpErr(Y[I], R), X[I], 0, Y[I], R);
    else // beyond the documented range: only "in [-1, 1], NaN for inf/NaN"
      Outside.add(std::isfinite(X[I]) ? (std::fabs(Y[I]) <= 1 ? 0 : Huge)
                                      : (std::isnan(Y[I]) ? 0 : Huge),
                  X[I], 0, Y[I], R);
  }
}

void sweepFloat(const FloatCase &C) {
  Worst W, Outside;
  std::vector<float> Xs;
  const size_t Batch = 1 << 16;
  Xs.reserve(Batch);
  auto Flush = [&] {
    scoreFloat(C, Xs, W, Outside);
    Xs.clear();
  };
  auto Push = [&](float X) {
    Xs.push_back(X);
    if (Xs.size() == Batch)
      Flush();
  };
  // strided sweep of all bit patterns (a prime stride visits every exponent)
  const uint64_t Stride = exhaustive() ? 1 : 2053;
  for (uint64_t U = exhaustive() ? 0 : 7; U < (uint64_t(1) << 32); U += Stride)
    Push(fromBits(uint32_t(U)));
  // windows: every pattern in [Lo, Hi], or 2^17 evenly spaced ones if wider
  auto Key = [](float F) -> int64_t {
    const uint32_t U = toBits(F);
    return U >> 31 ? -int64_t(U & 0x7fffffffu) : int64_t(U);
  };
  auto FromKey = [](int64_t K) {
    return K < 0 ? fromBits(uint32_t(-K) | 0x80000000u) : fromBits(uint32_t(K));
  };
  if (!exhaustive())
    for (auto [Lo, Hi] : C.Dense) {
      const int64_t K0 = Key(Lo), K1 = Key(Hi);
      const int64_t Step = std::max<int64_t>(1, (K1 - K0) >> 17);
      for (int64_t K = K0; K <= K1; K += Step)
        Push(FromKey(K));
    }
  // the denormals' neighbourhood and the special values
  for (uint32_t U = 0; U < 4096; ++U) {
    Push(fromBits(U));
    Push(fromBits(U | 0x80000000u));
  }
  for (float S : {std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), FLT_MAX, FLT_MIN}) {
    Push(S);
    Push(-S);
  }
  Flush();
  if (verbose() || W.Ulp > C.Bound)
    std::printf("[ vmath    ] float %-8s %s\n", C.Name, W.str().c_str());
  EXPECT_LE(W.Ulp, C.Bound) << C.Name << ": " << W.str();
  EXPECT_EQ(Outside.Ulp, 0) << C.Name << " beyond |x| < " << C.InRange
                            << ": " << Outside.str();
}

double refSigmoid(double X) { return 1.0 / (1.0 + std::exp(-X)); }
double refRsqrt(double X) { return 1.0 / std::sqrt(X); }
double refExp(double X) { return std::exp(X); }
double refExp2(double X) { return std::exp2(X); }
double refExpm1(double X) { return std::expm1(X); }
double refLog(double X) { return std::log(X); }
double refLog2(double X) { return std::log2(X); }
double refLog1p(double X) { return std::log1p(X); }
double refTanh(double X) { return std::tanh(X); }
double refErf(double X) { return std::erf(X); }
double refSin(double X) { return std::sin(X); }
double refCos(double X) { return std::cos(X); }

// Documented bounds (docs/vmath.md). The float sin/cos bound holds for
// |x| < 2^30 (Cody-Waite reduction exact there); beyond, |result| <= 1.
std::vector<FloatCase> plainFloatCases() {
  using P = std::pair<float, float>;
  return {
      {"exp", [](float X) { return pk::vm::exp(X); }, refExp, 1,
       {P(-104.0f, -86.0f), P(-1.0f, 1.0f), P(88.0f, 89.0f)}},
      {"exp2", [](float X) { return pk::vm::exp2(X); }, refExp2, 2,
       {P(-151.0f, -124.0f), P(-1.0f, 1.0f), P(127.0f, 129.0f)}},
      {"expm1", [](float X) { return pk::vm::expm1(X); }, refExpm1, 2,
       {P(-18.0f, -16.0f), P(-1.0f, 1.0f), P(88.0f, 89.0f)}},
      {"log", [](float X) { return pk::vm::log(X); }, refLog, 1,
       {P(0.5f, 2.0f), P(0x1p-126f, 0x1p-120f)}},
      {"log2", [](float X) { return pk::vm::log2(X); }, refLog2, 1,
       {P(0.5f, 2.0f), P(0x1p-126f, 0x1p-120f)}},
      {"log1p", [](float X) { return pk::vm::log1p(X); }, refLog1p, 1,
       {P(-1.0f, -0.25f), P(-0.01f, 0.01f), P(0.25f, 4.0f)}},
      {"tanh", [](float X) { return pk::vm::tanh(X); }, refTanh, 3,
       {P(-1.0f, 1.0f), P(8.0f, 11.0f)}},
      {"erf", [](float X) { return pk::vm::erf(X); }, refErf, 2,
       {P(-1.0f, 1.0f), P(0.8f, 4.5f)}},
      {"sin", [](float X) { return pk::vm::sin(X); }, refSin, 1,
       {P(-4.0f, 4.0f), P(1e5f, 1.0001e5f)}, 0x1p30f},
      {"cos", [](float X) { return pk::vm::cos(X); }, refCos, 1,
       {P(-4.0f, 4.0f), P(1e5f, 1.0001e5f)}, 0x1p30f},
      {"sigmoid", [](float X) { return pk::vm::sigmoid(X); }, refSigmoid, 3,
       {P(-104.0f, -80.0f), P(-1.0f, 1.0f), P(15.0f, 18.0f)}},
      {"rsqrt", [](float X) { return pk::vm::rsqrt(X); }, refRsqrt, 1,
       {P(0.25f, 4.0f), P(0.0f, 0x1p-120f)}},
  };
}
std::vector<FloatCase> floatCases() { return withFusedExp(plainFloatCases()); }

class Float : public ::testing::TestWithParam<FloatCase> {};
// Test names (and ctest's) show the function, not the bytes of the case.
void PrintTo(const FloatCase &C, std::ostream *OS) { *OS << C.Name; }

TEST_P(Float, Sweep) {
  if (GetParam().NeedsFma && !haveFma())
    GTEST_SKIP() << NoFma;
  sweepFloat(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Vmath, Float, ::testing::ValuesIn(floatCases()),
                         [](const auto &I) { return std::string(I.param.Name); });

// --- double: random samples ------------------------------------------------------

using DoubleFn = double (*)(double);
using DoubleRef = long double (*)(long double);

struct DoubleCase {
  const char *Name;
  DoubleFn Fn;
  DoubleRef Ref;
  double Bound;
  std::vector<std::pair<double, double>> Ranges; // uniform in each
  double InRange = std::numeric_limits<double>::infinity();
  bool NeedsFma = false;
};

void sampleDouble(const DoubleCase &C) {
  std::mt19937_64 Rng(12345);
  const size_t PerRange = exhaustive() ? 5000000 : 60000;
  std::vector<double> Xs;
  // log-uniform magnitudes over all exponents (both signs) + the ranges
  std::uniform_int_distribution<uint64_t> Any;
  for (size_t I = 0; I < PerRange; ++I)
    Xs.push_back([&] {
      double D;
      const uint64_t U = Any(Rng);
      std::memcpy(&D, &U, sizeof D);
      return D;
    }());
  for (auto [Lo, Hi] : C.Ranges) {
    std::uniform_real_distribution<double> Dist(Lo, Hi);
    for (size_t I = 0; I < PerRange; ++I)
      Xs.push_back(Dist(Rng));
  }
  for (double S : {0.0, 0x1p-1074, 0x1p-1060, 0x1p-1022, 1e-300, 1e-20, 1.0,
                   DBL_MAX, std::numeric_limits<double>::infinity()}) {
    Xs.push_back(S);
    Xs.push_back(-S);
  }
  std::vector<double> Ys(Xs.size());
  const DoubleFn Fn = C.Fn;
  for (size_t I = 0; I < Xs.size(); ++I)
    Ys[I] = Fn(Xs[I]);
  Worst W, Outside;
  for (size_t I = 0; I < Xs.size(); ++I) {
    const long double R = C.Ref(Xs[I]);
    if (std::isinf(C.InRange) || std::fabs(Xs[I]) < C.InRange)
      W.add(ulpErr(Ys[I], R), Xs[I], 0, Ys[I], double(R));
    else
      Outside.add(std::isfinite(Xs[I]) ? (std::fabs(Ys[I]) <= 1 ? 0 : Huge)
                                       : (std::isnan(Ys[I]) ? 0 : Huge),
                  Xs[I], 0, Ys[I], double(R));
  }
  if (verbose() || W.Ulp > C.Bound)
    std::printf("[ vmath    ] double %-8s %s\n", C.Name, W.str().c_str());
  EXPECT_LE(W.Ulp, C.Bound) << C.Name << ": " << W.str();
  EXPECT_EQ(Outside.Ulp, 0) << C.Name << ": " << Outside.str();
}

long double lSigmoid(long double X) { return 1.0L / (1.0L + std::exp(-X)); }
long double lRsqrt(long double X) { return 1.0L / std::sqrt(X); }
long double lExp(long double X) { return std::exp(X); }
long double lExp2(long double X) { return std::exp2(X); }
long double lExpm1(long double X) { return std::expm1(X); }
long double lLog(long double X) { return std::log(X); }
long double lLog2(long double X) { return std::log2(X); }
long double lLog1p(long double X) { return std::log1p(X); }
long double lTanh(long double X) { return std::tanh(X); }
long double lErf(long double X) { return std::erf(X); }
long double lSin(long double X) { return std::sin(X); }
long double lCos(long double X) { return std::cos(X); }

std::vector<DoubleCase> plainDoubleCases() {
  using P = std::pair<double, double>;
  return {
      {"exp", [](double X) { return pk::vm::exp(X); }, lExp, 2,
       {P(-746, 710), P(-1, 1), P(-745.2, -708), P(709, 709.8)}},
      {"exp2", [](double X) { return pk::vm::exp2(X); }, lExp2, 2,
       {P(-1076, 1025), P(-1, 1), P(-1075, -1020), P(1023, 1024)}},
      {"expm1", [](double X) { return pk::vm::expm1(X); }, lExpm1, 3,
       {P(-40, 710), P(-1, 1), P(-1e-5, 1e-5), P(709, 709.8)}},
      {"log", [](double X) { return pk::vm::log(X); }, lLog, 2,
       {P(0, 4), P(0.5, 2), P(0.99, 1.01), P(0, 1e-300)}},
      {"log2", [](double X) { return pk::vm::log2(X); }, lLog2, 2,
       {P(0, 4), P(0.5, 2), P(0.99, 1.01), P(0, 1e-300)}},
      {"log1p", [](double X) { return pk::vm::log1p(X); }, lLog1p, 2,
       {P(-1, 4), P(-1e-5, 1e-5), P(1e10, 1e20)}},
      {"tanh", [](double X) { return pk::vm::tanh(X); }, lTanh, 3,
       {P(-1, 1), P(-25, 25), P(-1e-5, 1e-5)}},
      {"erf", [](double X) { return pk::vm::erf(X); }, lErf, 2,
       {P(-1, 1), P(-7, 7), P(0.8, 1.3), P(1.2, 3)}},
      {"sin", [](double X) { return pk::vm::sin(X); }, lSin, 2,
       {P(-4, 4), P(-1e5, 1e5), P(-1e8, 1e8)}, 0x1p26},
      {"cos", [](double X) { return pk::vm::cos(X); }, lCos, 2,
       {P(-4, 4), P(-1e5, 1e5), P(-1e8, 1e8)}, 0x1p26},
      {"sigmoid", [](double X) { return pk::vm::sigmoid(X); }, lSigmoid, 3,
       {P(-746, 40), P(-5, 5), P(-745, -700)}},
      {"rsqrt", [](double X) { return pk::vm::rsqrt(X); }, lRsqrt, 2,
       {P(0, 4), P(0, 1e-300), P(1e300, 1e308)}},
  };
}
std::vector<DoubleCase> doubleCases() {
  return withFusedExp(plainDoubleCases());
}

class Double : public ::testing::TestWithParam<DoubleCase> {};
void PrintTo(const DoubleCase &C, std::ostream *OS) { *OS << C.Name; }

TEST_P(Double, Random) {
  if (GetParam().NeedsFma && !haveFma())
    GTEST_SKIP() << NoFma;
  sampleDouble(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Vmath, Double, ::testing::ValuesIn(doubleCases()),
                         [](const auto &I) { return std::string(I.param.Name); });

// --- pow ---------------------------------------------------------------------------

template <class T> std::vector<T> powSpecials() {
  const T Inf = std::numeric_limits<T>::infinity();
  const T NaN = std::numeric_limits<T>::quiet_NaN();
  const T Den = std::numeric_limits<T>::denorm_min();
  const T Max = std::numeric_limits<T>::max();
  std::vector<T> V = {0,   1,   2,    3,     0.5, 1.5, 1e-10, 1e10, Den,
                      Max, Inf, NaN,  -1,    -2,  -3,  -0.5,  -1.5, 0.25,
                      10,  127, 1024, 1e-30, 7,   4,   T(0.75)};
  const size_t N = V.size();
  for (size_t I = 0; I < N; ++I)
    V.push_back(-V[I]);
  return V;
}

/// Same class and sign as C's pow, for all pairs of special values.
template <class T, class Ref> void powSpecialPairs(Ref R) {
  for (T X : powSpecials<T>())
    for (T Y : powSpecials<T>()) {
      const T Got = pk::vm::pow(X, Y);
      const T Want = T(R(X, Y));
      if (std::isnan(Want)) {
        EXPECT_TRUE(std::isnan(Got)) << "pow(" << X << ", " << Y << ") = " << Got;
        continue;
      }
      EXPECT_EQ(std::signbit(Got), std::signbit(Want))
          << "pow(" << X << ", " << Y << ") = " << Got << ", want " << Want;
      EXPECT_LE(ulpErr(Got, Wide<T>(Want)), 1.0)
          << "pow(" << X << ", " << Y << ") = " << Got << ", want " << Want;
    }
}

TEST(Vmath, PowSpecials) {
  powSpecialPairs<float>([](float X, float Y) { return std::pow(X, Y); });
  powSpecialPairs<double>([](double X, double Y) { return std::pow(X, Y); });
}

constexpr double PowFloatBound = 1, PowDoubleBound = 2;

TEST(Vmath, PowFloat) {
  std::mt19937_64 Rng(7);
  const size_t N = exhaustive() ? 100000000 : 2000000;
  std::uniform_real_distribution<double> LogX(-150, 128), Frac(-1, 1);
  std::uniform_int_distribution<int> IntY(-300, 300), Kind(0, 5);
  std::vector<float> Xs(N), Ys(N), Zs(N);
  for (size_t I = 0; I < N; ++I) {
    float X = float(std::exp2(LogX(Rng)));
    if (Kind(Rng) == 0)
      X = float(1 + Frac(Rng) * 0x1p-10); // near 1: large |y| stays in range
    if (Kind(Rng) < 2)
      X = -X;
    const double L = std::log2(std::fabs(double(X)));
    float Y;
    switch (Kind(Rng)) {
    case 0:
      Y = float(IntY(Rng));
      break;
    case 1: // result around the overflow / underflow thresholds
      Y = float((Frac(Rng) > 0 ? 128 : -150) / (L == 0 ? 1 : L) *
                (1 + Frac(Rng) * 0.01));
      break;
    default: // result within the float range
      Y = float(Frac(Rng) * 126 / std::max(std::fabs(L), 1e-3));
    }
    Xs[I] = X;
    Ys[I] = Y;
  }
  for (size_t I = 0; I < N; ++I)
    Zs[I] = pk::vm::pow(Xs[I], Ys[I]);
  Worst W;
  for (size_t I = 0; I < N; ++I) {
    const double R = std::pow(double(Xs[I]), double(Ys[I]));
    W.add(ulpErr(Zs[I], R), Xs[I], Ys[I], Zs[I], R);
  }
  if (verbose() || W.Ulp > PowFloatBound)
    std::printf("[ vmath    ] float pow      %s\n", W.str().c_str());
  EXPECT_LE(W.Ulp, PowFloatBound) << W.str();
}

TEST(Vmath, PowDouble) {
  std::mt19937_64 Rng(8);
  const size_t N = exhaustive() ? 20000000 : 300000;
  std::uniform_real_distribution<double> LogX(-1074, 1024), Frac(-1, 1);
  std::uniform_int_distribution<int> IntY(-2000, 2000), Kind(0, 5);
  Worst W;
  for (size_t I = 0; I < N; ++I) {
    double X = std::exp2(LogX(Rng));
    if (Kind(Rng) == 0)
      X = 1 + Frac(Rng) * 0x1p-20;
    if (Kind(Rng) < 2)
      X = -X;
    const double L = std::log2(std::fabs(X));
    double Y;
    switch (Kind(Rng)) {
    case 0:
      Y = IntY(Rng);
      break;
    case 1:
      Y = (Frac(Rng) > 0 ? 1024 : -1075) / (L == 0 ? 1 : L) *
          (1 + Frac(Rng) * 0.001);
      break;
    default:
      Y = Frac(Rng) * 1020 / std::max(std::fabs(L), 1e-6);
    }
    const double Z = pk::vm::pow(X, Y);
    const long double R = std::pow((long double)X, (long double)Y);
    W.add(ulpErr(Z, R), X, Y, Z, double(R));
  }
  if (verbose() || W.Ulp > PowDoubleBound)
    std::printf("[ vmath    ] double pow     %s\n", W.str().c_str());
  EXPECT_LE(W.Ulp, PowDoubleBound) << W.str();
}

// --- special values: same class and sign as libm -----------------------------------

template <class T> std::vector<T> specials() {
  const T Inf = std::numeric_limits<T>::infinity();
  std::vector<T> V = {T(0),
                      Inf,
                      std::numeric_limits<T>::quiet_NaN(),
                      std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::max(),
                      T(1),
                      T(1e-30),
                      T(1e30)};
  const size_t N = V.size();
  for (size_t I = 0; I < N; ++I)
    V.push_back(-V[I]);
  return V;
}

template <class T> struct SpecialFn {
  const char *Name;
  std::function<T(T)> Vm, Want;
};

/// Same class and sign as Want's for specials<T>(), within MaxUlp of it.
template <class T>
void expectSpecials(const std::vector<SpecialFn<T>> &Fns, double MaxUlp) {
  for (const SpecialFn<T> &F : Fns)
    for (T X : specials<T>()) {
      const T Got = F.Vm(X), Want = F.Want(X);
      if (std::isnan(Want)) {
        EXPECT_TRUE(std::isnan(Got)) << F.Name << "(" << X << ") = " << Got;
        continue;
      }
      // sin/cos of huge arguments: only the class is C's
      const bool HugeArg = (std::string(F.Name) == "sin" ||
                            std::string(F.Name) == "cos") &&
                           std::fabs(X) > T(1e8);
      EXPECT_EQ(std::isinf(Got), std::isinf(Want))
          << F.Name << "(" << X << ") = " << Got;
      if (Want == 0 || std::isinf(Want)) {
        EXPECT_EQ(std::signbit(Got), std::signbit(Want))
            << F.Name << "(" << X << ") = " << Got << ", want " << Want;
      }
      if (!HugeArg) {
        EXPECT_LE(ulpErr(Got, Wide<T>(Want)), MaxUlp)
            << F.Name << "(" << X << ") = " << Got << ", want " << Want;
      }
    }
}

/// Every pk::vm function against C's (computed in T).
template <class T> void checkSpecials() {
  using Fn = SpecialFn<T>;
  const std::vector<Fn> Fns = {
      {"exp", [](T X) { return pk::vm::exp(X); },
       [](T X) { return std::exp(X); }},
      {"exp2", [](T X) { return pk::vm::exp2(X); },
       [](T X) { return std::exp2(X); }},
      {"expm1", [](T X) { return pk::vm::expm1(X); },
       [](T X) { return std::expm1(X); }},
      {"log", [](T X) { return pk::vm::log(X); },
       [](T X) { return std::log(X); }},
      {"log2", [](T X) { return pk::vm::log2(X); },
       [](T X) { return std::log2(X); }},
      {"log1p", [](T X) { return pk::vm::log1p(X); },
       [](T X) { return std::log1p(X); }},
      {"tanh", [](T X) { return pk::vm::tanh(X); },
       [](T X) { return std::tanh(X); }},
      {"erf", [](T X) { return pk::vm::erf(X); },
       [](T X) { return std::erf(X); }},
      {"sin", [](T X) { return pk::vm::sin(X); },
       [](T X) { return std::sin(X); }},
      {"cos", [](T X) { return pk::vm::cos(X); },
       [](T X) { return std::cos(X); }},
      {"sigmoid", [](T X) { return pk::vm::sigmoid(X); },
       [](T X) { return T(1) / (T(1) + std::exp(-X)); }},
      {"rsqrt", [](T X) { return pk::vm::rsqrt(X); },
       [](T X) { return T(1) / std::sqrt(X); }},
  };
  expectSpecials(Fns, 4);
}

TEST(Vmath, SpecialValuesFloat) { checkSpecials<float>(); }
TEST(Vmath, SpecialValuesDouble) { checkSpecials<double>(); }

/// The fused exp against the plain one.
template <class T> std::vector<SpecialFn<T>> fusedSpecialFns() {
  return {{"fused_exp", [](T X) { return FmaFused::exp(X); },
           [](T X) { return pk::vm::exp(X); }}};
}

// The fused exp gives the plain exp's bits for the special values.
TEST(Vmath, FusedSpecialValues) {
  if (!haveFma())
    GTEST_SKIP() << NoFma;
  expectSpecials(fusedSpecialFns<float>(), 0);
  expectSpecials(fusedSpecialFns<double>(), 0);
}

// Exact results C guarantees and pk relies on.
TEST(Vmath, ExactValues) {
  EXPECT_EQ(pk::vm::exp(0.0f), 1.0f);
  EXPECT_EQ(pk::vm::exp(0.0), 1.0);
  EXPECT_EQ(pk::vm::exp2(10.0f), 1024.0f);
  EXPECT_EQ(pk::vm::exp2(-1074.0), 0x1p-1074);
  EXPECT_EQ(pk::vm::exp2(-149.0f), 0x1p-149f);
  EXPECT_EQ(pk::vm::log(1.0f), 0.0f);
  EXPECT_EQ(pk::vm::log2(8.0f), 3.0f);
  EXPECT_EQ(pk::vm::log2(0x1p-1074), -1074.0);
  EXPECT_EQ(pk::vm::tanh(20.0f), 1.0f);
  EXPECT_EQ(pk::vm::tanh(-30.0), -1.0);
  EXPECT_EQ(pk::vm::erf(5.0f), 1.0f);
  EXPECT_EQ(pk::vm::erf(-7.0), -1.0);
  EXPECT_EQ(pk::vm::sigmoid(0.0f), 0.5f);
  EXPECT_EQ(pk::vm::rsqrt(4.0f), 0.5f);
  EXPECT_EQ(pk::vm::rsqrt(0x1p-1074), 0x1p537);
  EXPECT_EQ(pk::vm::pow(2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(pk::vm::pow(-2.0, 3.0), -8.0);
  EXPECT_EQ(pk::vm::pow(10.0, 2.0), 100.0);
  EXPECT_EQ(pk::vm::exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_GT(pk::vm::exp(-100.0f), 0.0f); // denormal result
  EXPECT_EQ(pk::vm::exp(-104.0f), 0.0f);
}

// exp_nonpos is exp without the overflow clamp: pkc calls it where the
// argument is <= 0 (exp(x - max(x))), so it must give exp's bits there (and
// for NaN), -0 and denormals included, and on to 88.8 where only the clamp
// differs. Vectorised loops, as pkc uses it.
template <class Fl>
void checkExpNonposIsExp(uint64_t Begin, uint64_t End, uint64_t Step) {
  constexpr int N = 4096;
  std::vector<float> X(N), A(N), B(N);
  for (uint64_t Start = Begin; Start < End; Start += Step * N) {
    for (int I = 0; I < N; ++I) {
      uint32_t U = uint32_t(std::min(Start + uint64_t(I) * Step, End - 1));
      std::memcpy(&X[I], &U, sizeof U);
    }
    Fl::expAndNonpos(X.data(), A.data(), B.data(), N);
    for (int I = 0; I < N; ++I)
      if (std::memcmp(&A[I], &B[I], sizeof(float)) != 0 &&
          !(std::isnan(A[I]) && std::isnan(B[I]))) {
        ADD_FAILURE() << "exp_nonpos(" << X[I] << ") = " << B[I]
                      << ", exp gives " << A[I];
        return;
      }
  }
}

/// The same bits (or both NaN) for each of Values, -inf and NaN.
template <class Fl, class T> void expectExpNonposIsExp(std::vector<T> Values) {
  Values.push_back(-std::numeric_limits<T>::infinity());
  Values.push_back(std::numeric_limits<T>::quiet_NaN());
  for (T V : Values) {
    T A = Fl::exp(V), B = Fl::exp_nonpos(V);
    if (std::memcmp(&A, &B, sizeof A) != 0 &&
        !(std::isnan(A) && std::isnan(B))) {
      ADD_FAILURE() << "exp_nonpos(" << V << ") = " << B << ", exp gives " << A;
      return;
    }
  }
}

/// exp_nonpos gives exp's bits for every float <= FloatTop (and double <=
/// DoubleTop) and NaN: 88.8 / 710 for the plain pair (exp's own clamps);
/// 71 for the fused float one, whose one-shift scale holds 2^(k + 24) only
/// up to k = 103 (vmath.h). pkc calls it for arguments <= 0.
template <class Fl>
void checkExpNonposIsExpUpTo(float FloatTop, double DoubleTop) {
  // The floats with the sign bit set (-0 to -inf and negative NaNs), then
  // +0 to FloatTop: every one with PK_VMATH_EXHAUSTIVE=1, else a prime
  // stride.
  uint64_t Step = exhaustive() ? 1 : 9973;
  checkExpNonposIsExp<Fl>(uint64_t(1) << 31, uint64_t(1) << 32, Step);
  uint32_t TopBits;
  std::memcpy(&TopBits, &FloatTop, sizeof FloatTop);
  checkExpNonposIsExp<Fl>(0, uint64_t(TopBits) + 1, Step);
  expectExpNonposIsExp<Fl, float>({-0.0f, 0.0f, 1.0f, FloatTop - 0.1f, FloatTop,
                                   -1e-45f, -87.5f, -103.9f, -104.0f, -1e30f});
  // doubles: these, then random ones in [-750, DoubleTop] and with the
  // sign bit set
  std::vector<double> D = {-0.0,   0.0,    1.0,    DoubleTop - 0.3, -4.9e-324,
                           -708.5, -745.0, -746.0, -1e300};
  std::mt19937_64 Rng(3);
  std::uniform_real_distribution<double> Near(-750, DoubleTop);
  std::uniform_int_distribution<uint64_t> Neg(uint64_t(1) << 63);
  for (int I = 0; I < (exhaustive() ? 10000000 : 100000); ++I) {
    const uint64_t U = Neg(Rng);
    double X;
    std::memcpy(&X, &U, sizeof X);
    D.push_back(X);
    D.push_back(Near(Rng));
  }
  expectExpNonposIsExp<Fl>(D);
}

TEST(Vmath, ExpNonposIsExpUpTo88) {
  checkExpNonposIsExpUpTo<PlainVm>(88.8f, 710.0);
}

TEST(Vmath, FusedExpNonposIsExpUpTo71) {
  if (!haveFma())
    GTEST_SKIP() << NoFma;
  checkExpNonposIsExpUpTo<FmaFused>(71.0f, 710.0);
}

/// Above 71 the fused float exp_nonpos's scale overflows its exponent field:
/// it is not exp there (the bound above is tight, not a margin).
TEST(Vmath, FusedExpNonposScaleEndsAt71) {
  if (!haveFma())
    GTEST_SKIP() << NoFma;
  const float Beyond = 72.5f; // k = 105
  const float A = FmaFused::exp(Beyond), B = FmaFused::exp_nonpos(Beyond);
  EXPECT_NE(std::memcmp(&A, &B, sizeof A), 0);
}

} // namespace

// floor, ceil and select are exact: the bits of std::floor, std::ceil and
// `c ? a : b` (NaN: a NaN), computed in vectorised loops as pkc writes them.
template <class T>
__attribute__((noinline)) void roundingLoops(const T *X, T *Floor, T *Ceil,
                                             T *Picked, int64_t N) {
#pragma omp simd
  for (int64_t I = 0; I < N; ++I) {
    Floor[I] = pk::vm::floor(X[I]);
    Ceil[I] = pk::vm::ceil(X[I]);
    // X where it is below 0.5, else -X: both arms computed, as pkc's are.
    const T Neg = -X[I];
    Picked[I] = pk::vm::select(X[I] < T(0.5), X[I], Neg);
  }
}

template <class T> bool sameBits(T A, T B) {
  return std::memcmp(&A, &B, sizeof A) == 0 || (A != A && B != B);
}

template <class T> void expectRoundingExact(const std::vector<T> &X) {
  std::vector<T> F(X.size()), C(X.size()), P(X.size());
  roundingLoops(X.data(), F.data(), C.data(), P.data(), int64_t(X.size()));
  int Failures = 0;
  for (size_t I = 0; I < X.size() && Failures < 5; ++I) {
    const T Want = X[I] < T(0.5) ? X[I] : -X[I];
    if (!sameBits(F[I], std::floor(X[I])) || !sameBits(C[I], std::ceil(X[I])) ||
        !sameBits(P[I], Want)) {
      ++Failures;
      ADD_FAILURE() << "x = " << X[I] << " (" << std::hexfloat << X[I]
                    << std::defaultfloat << "): floor " << F[I] << " vs "
                    << std::floor(X[I]) << ", ceil " << C[I] << " vs "
                    << std::ceil(X[I]) << ", select " << P[I] << " vs " << Want;
    }
  }
}

TEST(Vmath, FloorCeilSelectFloat) {
  std::vector<float> X = {
      0.0f,           -0.0f,           0.5f,           -0.5f,
      1.5f,           -1.5f,           2.5f,           -2.5f,
      0.99999994f,    -0.99999994f,    0x1p-149f,      -0x1p-149f,
      0x1p22f + 0.5f, -0x1p22f - 0.5f, 0x1p23f - 0.5f, -0x1p23f + 0.5f,
      0x1p23f,        -0x1p23f,        0x1p23f + 1,    3e9f,
      -3e9f,          FLT_MAX,         -FLT_MAX};
  X.push_back(std::numeric_limits<float>::infinity());
  X.push_back(-std::numeric_limits<float>::infinity());
  X.push_back(std::numeric_limits<float>::quiet_NaN());
  // Every float with PK_VMATH_EXHAUSTIVE=1, else a prime stride.
  const uint64_t Stride = exhaustive() ? 1 : 2053;
  for (uint64_t Start = 0; Start < (uint64_t(1) << 32);
       Start += Stride * 65536) {
    for (uint64_t U = Start;
         U < std::min(Start + Stride * 65536, uint64_t(1) << 32); U += Stride) {
      float V;
      const uint32_t B = uint32_t(U);
      std::memcpy(&V, &B, sizeof V);
      X.push_back(V);
    }
    expectRoundingExact(X);
    X.clear();
  }
}

TEST(Vmath, FloorCeilSelectDouble) {
  std::vector<double> X = {0.0,
                           -0.0,
                           0.5,
                           -0.5,
                           1.5,
                           -1.5,
                           2.5,
                           -2.5,
                           0x1p-1074,
                           -0x1p-1074,
                           0x1p51 + 0.5,
                           -0x1p51 - 0.5,
                           0x1p52 - 0.5,
                           -0x1p52 + 0.5,
                           0x1p52,
                           -0x1p52,
                           0x1p52 + 1,
                           1e300,
                           -1e300,
                           0.9999999999999999,
                           -0.9999999999999999};
  X.push_back(std::numeric_limits<double>::infinity());
  X.push_back(-std::numeric_limits<double>::infinity());
  X.push_back(std::numeric_limits<double>::quiet_NaN());
  // Random bit patterns, and values of every magnitude up to 2^60 with
  // fractions.
  std::mt19937_64 Rng(11);
  std::uniform_real_distribution<double> Exp(-10, 60), Unit(-1, 1);
  for (int I = 0; I < (exhaustive() ? 10000000 : 300000); ++I) {
    const uint64_t U = Rng();
    double V;
    std::memcpy(&V, &U, sizeof V);
    X.push_back(V);
    X.push_back(Unit(Rng) * std::exp2(Exp(Rng)));
  }
  expectRoundingExact(X);
}
