//===- vmath_bench.cpp - libm vs pk::vm vs SLEEF, 1M-float loops ---------===//
//
// Throughput of y[i] = f(x[i]) over 1M floats for every pk::vm function:
//   libm  - std::f in the same `omp simd` loop (does not vectorise without
//           -ffast-math: one libm call per element);
//   pkvm  - pk::vm::f (include/pk/vmath.h), vectorised by the compiler;
//   sleef - SLEEF's vector functions (u10 = 1.0 ulp, u35 = 3.5 ulp) on the
//           widest vector the build targets (AVX-512, AVX2 or SSE2), called
//           with intrinsics; only if <sleef.h> is found (libsleef-dev).
// plus a GELU (tanh form) loop, the fused kernel that motivated this.
// Build and run commands: bench/README-vmath.md. Results are per element
// (ns) and GB/s of input + output.
//
//===----------------------------------------------------------------------===//

#include <pk/vmath.h>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#if __has_include(<sleef.h>) && (defined(__SSE2__) || defined(__AVX2__))
#include <immintrin.h>
#include <sleef.h>
#define PK_BENCH_SLEEF 1
#else
#define PK_BENCH_SLEEF 0
#endif

namespace {

constexpr size_t N = size_t(1) << 20;

enum class Dist { Uniform, LogUniform };

std::vector<float> inputs(float Lo, float Hi, Dist D, unsigned Seed) {
  std::mt19937 Rng(Seed);
  std::vector<float> X(N);
  if (D == Dist::Uniform) {
    std::uniform_real_distribution<float> U(Lo, Hi);
    for (float &V : X)
      V = U(Rng);
  } else {
    std::uniform_real_distribution<float> U(std::log2(Lo), std::log2(Hi));
    for (float &V : X)
      V = std::exp2(U(Rng));
  }
  return X;
}

void finish(benchmark::State &S, size_t BytesPerElem) {
  S.SetItemsProcessed(int64_t(S.iterations()) * int64_t(N));
  S.SetBytesProcessed(int64_t(S.iterations()) * int64_t(N * BytesPerElem));
}

// One-argument loops. The loop body is what pkc emits (an `omp simd` loop
// calling a scalar function).
#define PK_UNARY_LOOP(NAME, EXPR)                                              \
  void NAME(float *__restrict Y, const float *__restrict X, size_t Count) {    \
    _Pragma("omp simd") for (size_t I = 0; I < Count; ++I) {                   \
      const float x = X[I];                                                    \
      Y[I] = EXPR;                                                             \
    }                                                                          \
  }

// GELU, tanh approximation
#define PK_GELU(T) (0.5f * x * (1.0f + T(0.7978845608f * (x + 0.044715f * x * x * x))))

PK_UNARY_LOOP(libm_exp, std::exp(x))
PK_UNARY_LOOP(libm_exp2, std::exp2(x))
PK_UNARY_LOOP(libm_expm1, std::expm1(x))
PK_UNARY_LOOP(libm_log, std::log(x))
PK_UNARY_LOOP(libm_log2, std::log2(x))
PK_UNARY_LOOP(libm_log1p, std::log1p(x))
PK_UNARY_LOOP(libm_tanh, std::tanh(x))
PK_UNARY_LOOP(libm_erf, std::erf(x))
PK_UNARY_LOOP(libm_sin, std::sin(x))
PK_UNARY_LOOP(libm_cos, std::cos(x))
PK_UNARY_LOOP(libm_sigmoid, 1.0f / (1.0f + std::exp(-x)))
PK_UNARY_LOOP(libm_rsqrt, 1.0f / std::sqrt(x))
PK_UNARY_LOOP(libm_gelu, PK_GELU(std::tanh))

PK_UNARY_LOOP(pkvm_exp, pk::vm::exp(x))
PK_UNARY_LOOP(pkvm_exp2, pk::vm::exp2(x))
PK_UNARY_LOOP(pkvm_expm1, pk::vm::expm1(x))
PK_UNARY_LOOP(pkvm_log, pk::vm::log(x))
PK_UNARY_LOOP(pkvm_log2, pk::vm::log2(x))
PK_UNARY_LOOP(pkvm_log1p, pk::vm::log1p(x))
PK_UNARY_LOOP(pkvm_tanh, pk::vm::tanh(x))
PK_UNARY_LOOP(pkvm_erf, pk::vm::erf(x))
PK_UNARY_LOOP(pkvm_sin, pk::vm::sin(x))
PK_UNARY_LOOP(pkvm_cos, pk::vm::cos(x))
PK_UNARY_LOOP(pkvm_sigmoid, pk::vm::sigmoid(x))
PK_UNARY_LOOP(pkvm_rsqrt, pk::vm::rsqrt(x))
PK_UNARY_LOOP(pkvm_gelu, PK_GELU(pk::vm::tanh))

void libm_pow(float *__restrict Z, const float *__restrict X,
              const float *__restrict Y, size_t Count) {
#pragma omp simd
  for (size_t I = 0; I < Count; ++I)
    Z[I] = std::pow(X[I], Y[I]);
}
void pkvm_pow(float *__restrict Z, const float *__restrict X,
              const float *__restrict Y, size_t Count) {
#pragma omp simd
  for (size_t I = 0; I < Count; ++I)
    Z[I] = pk::vm::pow(X[I], Y[I]);
}

#if PK_BENCH_SLEEF
// SLEEF on the widest vector type of the build.
#if defined(__AVX512F__)
using VF = __m512;
constexpr size_t W = 16;
#define PK_SLEEF(F, U) Sleef_##F##f16_##U
inline VF vload(const float *P) { return _mm512_loadu_ps(P); }
inline void vstore(float *P, VF V) { _mm512_storeu_ps(P, V); }
inline VF vset(float F) { return _mm512_set1_ps(F); }
inline VF vadd(VF A, VF B) { return _mm512_add_ps(A, B); }
inline VF vmul(VF A, VF B) { return _mm512_mul_ps(A, B); }
inline VF vdiv(VF A, VF B) { return _mm512_div_ps(A, B); }
#elif defined(__AVX2__)
using VF = __m256;
constexpr size_t W = 8;
#define PK_SLEEF(F, U) Sleef_##F##f8_##U
inline VF vload(const float *P) { return _mm256_loadu_ps(P); }
inline void vstore(float *P, VF V) { _mm256_storeu_ps(P, V); }
inline VF vset(float F) { return _mm256_set1_ps(F); }
inline VF vadd(VF A, VF B) { return _mm256_add_ps(A, B); }
inline VF vmul(VF A, VF B) { return _mm256_mul_ps(A, B); }
inline VF vdiv(VF A, VF B) { return _mm256_div_ps(A, B); }
#else
using VF = __m128;
constexpr size_t W = 4;
#define PK_SLEEF(F, U) Sleef_##F##f4_##U
inline VF vload(const float *P) { return _mm_loadu_ps(P); }
inline void vstore(float *P, VF V) { _mm_storeu_ps(P, V); }
inline VF vset(float F) { return _mm_set1_ps(F); }
inline VF vadd(VF A, VF B) { return _mm_add_ps(A, B); }
inline VF vmul(VF A, VF B) { return _mm_mul_ps(A, B); }
inline VF vdiv(VF A, VF B) { return _mm_div_ps(A, B); }
#endif

// N is a multiple of every W: no remainder loop.
#define PK_SLEEF_LOOP(NAME, F, U)                                              \
  void NAME(float *__restrict Y, const float *__restrict X, size_t Count) {    \
    for (size_t I = 0; I < Count; I += W)                                      \
      vstore(Y + I, PK_SLEEF(F, U)(vload(X + I)));                             \
  }
PK_SLEEF_LOOP(sleef_exp_u10, exp, u10)
PK_SLEEF_LOOP(sleef_exp2_u10, exp2, u10)
PK_SLEEF_LOOP(sleef_exp2_u35, exp2, u35)
PK_SLEEF_LOOP(sleef_expm1_u10, expm1, u10)
PK_SLEEF_LOOP(sleef_log_u10, log, u10)
PK_SLEEF_LOOP(sleef_log_u35, log, u35)
PK_SLEEF_LOOP(sleef_log2_u10, log2, u10)
PK_SLEEF_LOOP(sleef_log2_u35, log2, u35)
PK_SLEEF_LOOP(sleef_log1p_u10, log1p, u10)
PK_SLEEF_LOOP(sleef_tanh_u10, tanh, u10)
PK_SLEEF_LOOP(sleef_tanh_u35, tanh, u35)
PK_SLEEF_LOOP(sleef_erf_u10, erf, u10)
PK_SLEEF_LOOP(sleef_sin_u10, sin, u10)
PK_SLEEF_LOOP(sleef_sin_u35, sin, u35)
PK_SLEEF_LOOP(sleef_cos_u10, cos, u10)
PK_SLEEF_LOOP(sleef_cos_u35, cos, u35)

void sleef_sigmoid_u10(float *__restrict Y, const float *__restrict X,
                       size_t Count) {
  const VF One = vset(1.0f), MinusOne = vset(-1.0f);
  for (size_t I = 0; I < Count; I += W)
    vstore(Y + I,
           vdiv(One, vadd(One, PK_SLEEF(exp, u10)(vmul(MinusOne, vload(X + I))))));
}
void sleef_gelu_u35(float *__restrict Y, const float *__restrict X,
                    size_t Count) {
  const VF Half = vset(0.5f), One = vset(1.0f), C0 = vset(0.7978845608f),
           C1 = vset(0.044715f);
  for (size_t I = 0; I < Count; I += W) {
    const VF V = vload(X + I);
    const VF In = vmul(C0, vadd(V, vmul(C1, vmul(V, vmul(V, V)))));
    vstore(Y + I,
           vmul(vmul(Half, V), vadd(One, PK_SLEEF(tanh, u35)(In))));
  }
}
void sleef_pow_u10(float *__restrict Z, const float *__restrict X,
                   const float *__restrict Y, size_t Count) {
  for (size_t I = 0; I < Count; I += W)
    vstore(Z + I, PK_SLEEF(pow, u10)(vload(X + I), vload(Y + I)));
}
#endif

using Unary = void (*)(float *__restrict, const float *__restrict, size_t);
using Binary = void (*)(float *__restrict, const float *__restrict,
                        const float *__restrict, size_t);

void runUnary(benchmark::State &S, Unary F, float Lo, float Hi, Dist D) {
  const std::vector<float> X = inputs(Lo, Hi, D, 1);
  std::vector<float> Y(N);
  for (auto _ : S) {
    F(Y.data(), X.data(), N);
    benchmark::DoNotOptimize(Y.data());
    benchmark::ClobberMemory();
  }
  finish(S, 2 * sizeof(float));
}

void runBinary(benchmark::State &S, Binary F) {
  const std::vector<float> X = inputs(0.01f, 100.0f, Dist::LogUniform, 1);
  const std::vector<float> Y = inputs(-15.0f, 15.0f, Dist::Uniform, 2);
  std::vector<float> Z(N);
  for (auto _ : S) {
    F(Z.data(), X.data(), Y.data(), N);
    benchmark::DoNotOptimize(Z.data());
    benchmark::ClobberMemory();
  }
  finish(S, 3 * sizeof(float));
}

struct Case {
  const char *Name;
  float Lo, Hi;
  Dist D;
  Unary Libm, Pkvm, SleefU10, SleefU35;
};

#if PK_BENCH_SLEEF
#define PK_S(F) F
#else
#define PK_S(F) nullptr
#endif

const Case Cases[] = {
    {"exp", -80, 80, Dist::Uniform, libm_exp, pkvm_exp, PK_S(sleef_exp_u10), nullptr},
    {"exp2", -120, 120, Dist::Uniform, libm_exp2, pkvm_exp2, PK_S(sleef_exp2_u10), PK_S(sleef_exp2_u35)},
    {"expm1", -20, 80, Dist::Uniform, libm_expm1, pkvm_expm1, PK_S(sleef_expm1_u10), nullptr},
    {"log", 1e-30f, 1e30f, Dist::LogUniform, libm_log, pkvm_log, PK_S(sleef_log_u10), PK_S(sleef_log_u35)},
    {"log2", 1e-30f, 1e30f, Dist::LogUniform, libm_log2, pkvm_log2, PK_S(sleef_log2_u10), PK_S(sleef_log2_u35)},
    {"log1p", -0.9f, 100, Dist::Uniform, libm_log1p, pkvm_log1p, PK_S(sleef_log1p_u10), nullptr},
    {"tanh", -10, 10, Dist::Uniform, libm_tanh, pkvm_tanh, PK_S(sleef_tanh_u10), PK_S(sleef_tanh_u35)},
    {"erf", -5, 5, Dist::Uniform, libm_erf, pkvm_erf, PK_S(sleef_erf_u10), nullptr},
    {"sin", -100, 100, Dist::Uniform, libm_sin, pkvm_sin, PK_S(sleef_sin_u10), PK_S(sleef_sin_u35)},
    {"cos", -100, 100, Dist::Uniform, libm_cos, pkvm_cos, PK_S(sleef_cos_u10), PK_S(sleef_cos_u35)},
    {"sigmoid", -20, 20, Dist::Uniform, libm_sigmoid, pkvm_sigmoid, PK_S(sleef_sigmoid_u10), nullptr},
    {"rsqrt", 1e-10f, 1e10f, Dist::LogUniform, libm_rsqrt, pkvm_rsqrt, nullptr, nullptr},
    {"gelu_tanh", -6, 6, Dist::Uniform, libm_gelu, pkvm_gelu, nullptr, PK_S(sleef_gelu_u35)},
};

int registerAll() {
  for (const Case &C : Cases) {
    const std::string Base = C.Name;
    auto Reg = [&](const char *Impl, Unary F) {
      if (!F)
        return;
      benchmark::RegisterBenchmark((Base + "/" + Impl).c_str(),
                                   [C, F](benchmark::State &S) {
                                     runUnary(S, F, C.Lo, C.Hi, C.D);
                                   })
          ->Unit(benchmark::kMicrosecond);
    };
    Reg("libm", C.Libm);
    Reg("pkvm", C.Pkvm);
    Reg("sleef_u10", C.SleefU10);
    Reg("sleef_u35", C.SleefU35);
  }
  benchmark::RegisterBenchmark("pow/libm", [](benchmark::State &S) { runBinary(S, libm_pow); })
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("pow/pkvm", [](benchmark::State &S) { runBinary(S, pkvm_pow); })
      ->Unit(benchmark::kMicrosecond);
#if PK_BENCH_SLEEF
  benchmark::RegisterBenchmark("pow/sleef_u10",
                               [](benchmark::State &S) { runBinary(S, sleef_pow_u10); })
      ->Unit(benchmark::kMicrosecond);
#endif
  return 0;
}
const int Registered = registerAll();

} // namespace

BENCHMARK_MAIN();
