//===- sample.h - What every sample program does --------------------------===//
//
// Each sample runs its kernel twice on the same random inputs: eagerly (the
// kernel source included inside `namespace eager`, executed by <pk/pk.h>) and
// compiled (the body pkc generated, linked through pk_add_kernels()). It
// checks that both agree, prints both times (median of several runs) and
// where the generated files are.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_SAMPLE_H
#define PK_SAMPLES_SAMPLE_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sample {

inline std::vector<float> random(int64_t N, unsigned Seed, float Lo = -2,
                                 float Hi = 2) {
  std::mt19937 Gen(Seed);
  std::uniform_real_distribution<float> D(Lo, Hi);
  std::vector<float> V(N);
  for (float &X : V)
    X = D(Gen);
  return V;
}

/// Median wall time in milliseconds of `Runs` calls of `Body`; `Setup` runs
/// before each call, untimed (to restore InOut buffers).
inline double median_ms(const std::function<void()> &Body, int Runs = 7,
                        const std::function<void()> &Setup = {}) {
  std::vector<double> Times;
  for (int R = 0; R < Runs; ++R) {
    if (Setup)
      Setup();
    auto T0 = std::chrono::steady_clock::now();
    Body();
    auto T1 = std::chrono::steady_clock::now();
    Times.push_back(std::chrono::duration<double, std::milli>(T1 - T0).count());
  }
  std::sort(Times.begin(), Times.end());
  return Times[Times.size() / 2];
}

/// Distance in units in the last place between two floats (0 when equal,
/// also for two NaNs).
inline int64_t ulp_distance(float A, float B) {
  if (std::isnan(A) || std::isnan(B))
    return std::isnan(A) && std::isnan(B) ? 0 : INT64_MAX;
  int32_t IA, IB;
  std::memcpy(&IA, &A, 4);
  std::memcpy(&IB, &B, 4);
  int64_t LA = IA < 0 ? int64_t(INT32_MIN) - IA : IA;
  int64_t LB = IB < 0 ? int64_t(INT32_MIN) - IB : IB;
  return LA > LB ? LA - LB : LB - LA;
}

/// Compares eager and compiled results; returns false (and says where) when
/// they differ by more than `MaxUlp`.
inline bool agree(const char *What, const std::vector<float> &Eager,
                  const std::vector<float> &Compiled, int64_t MaxUlp) {
  int64_t Worst = 0;
  size_t WorstAt = 0;
  for (size_t I = 0; I < Eager.size(); ++I) {
    int64_t D = ulp_distance(Eager[I], Compiled[I]);
    if (D > Worst) {
      Worst = D;
      WorstAt = I;
    }
  }
  if (Worst > MaxUlp) {
    std::printf("  MISMATCH in %s at %zu: eager %.9g, compiled %.9g (%lld "
                "ulp > %lld)\n",
                What, WorstAt, Eager[WorstAt], Compiled[WorstAt],
                static_cast<long long>(Worst), static_cast<long long>(MaxUlp));
    return false;
  }
  std::printf("  %s: eager and compiled agree (max %lld ulp, tolerance %lld)\n",
              What, static_cast<long long>(Worst),
              static_cast<long long>(MaxUlp));
  return true;
}

/// Compares with a relative tolerance: |eager - compiled| <= Atol + Rtol *
/// |eager|. Used for reductions, which the compiled code accumulates in the
/// value's precision in a different order (the eager code sums in double).
inline bool agree_rel(const char *What, const std::vector<float> &Eager,
                      const std::vector<float> &Compiled, double Rtol,
                      double Atol) {
  double Worst = 0;
  size_t WorstAt = 0;
  for (size_t I = 0; I < Eager.size(); ++I) {
    double E = Eager[I], C = Compiled[I];
    if (std::isnan(E) && std::isnan(C))
      continue;
    double Excess = std::fabs(E - C) / (Atol + Rtol * std::fabs(E));
    if (!(Excess <= Worst)) {
      Worst = Excess;
      WorstAt = I;
    }
  }
  if (!(Worst <= 1)) {
    std::printf("  MISMATCH in %s at %zu: eager %.9g, compiled %.9g (rtol "
                "%g, atol %g)\n",
                What, WorstAt, Eager[WorstAt], Compiled[WorstAt], Rtol, Atol);
    return false;
  }
  std::printf("  %s: eager and compiled agree (within %.2g of the tolerance "
              "rtol %g, atol %g)\n",
              What, Worst, Rtol, Atol);
  return true;
}

/// Converts floats to a 16-bit storage type (pk::half, pk::bfloat16),
/// rounding to nearest even.
template <class T> std::vector<T> to16(const std::vector<float> &V) {
  std::vector<T> R;
  R.reserve(V.size());
  for (float X : V)
    R.push_back(T(X));
  return R;
}

/// The floats that 16-bit elements hold.
template <class T> std::vector<float> to_floats(const std::vector<T> &V) {
  return std::vector<float>(V.begin(), V.end());
}

/// Distance in units in the last place of the 16-bit type between two
/// elements (0 when equal, also for two NaNs).
template <class T> int64_t ulp_distance16(T A, T B) {
  auto Ordered = [](T X) {
    int64_t Mag = X.bits() & 0x7fff;
    return (X.bits() & 0x8000) ? -Mag : Mag;
  };
  bool NanA = std::isnan(static_cast<float>(A)),
       NanB = std::isnan(static_cast<float>(B));
  if (NanA || NanB)
    return NanA && NanB ? 0 : INT64_MAX;
  int64_t D = Ordered(A) - Ordered(B);
  return D < 0 ? -D : D;
}

/// Compares 16-bit eager and compiled results in units of the 16-bit type's
/// last place. Both compute in float (eager sums in double) and round once
/// at the store, so their float results differ by far less than a 16-bit
/// ulp and the stored elements are equal or, when the float results fall
/// on either side of a rounding boundary, neighbours: MaxUlp = 1.
template <class T>
bool agree16(const char *What, const std::vector<T> &Eager,
             const std::vector<T> &Compiled, int64_t MaxUlp) {
  int64_t Worst = 0;
  size_t WorstAt = 0, Equal = 0;
  for (size_t I = 0; I < Eager.size(); ++I) {
    int64_t D = ulp_distance16(Eager[I], Compiled[I]);
    Equal += D == 0;
    if (D > Worst) {
      Worst = D;
      WorstAt = I;
    }
  }
  if (Worst > MaxUlp) {
    std::printf("  MISMATCH in %s at %zu: eager %.6g, compiled %.6g (%lld "
                "ulp > %lld)\n",
                What, WorstAt, static_cast<float>(Eager[WorstAt]),
                static_cast<float>(Compiled[WorstAt]),
                static_cast<long long>(Worst), static_cast<long long>(MaxUlp));
    return false;
  }
  std::printf("  %s: eager and compiled agree (max %lld ulp of the 16-bit "
              "type, tolerance %lld; %.2f%% bit-identical)\n",
              What, static_cast<long long>(Worst),
              static_cast<long long>(MaxUlp),
              Eager.empty() ? 100.0 : 100.0 * Equal / Eager.size());
  return true;
}

/// The absolute tolerance of a float matmul with inner extent K whose inputs
/// are uniform in [-1, 1] (the matmul samples). Each output is a sum of K
/// products of magnitude <= 1 (typical size sqrt(K) / 3, about 9 at K = 768).
/// The eager code accumulates in double and rounds once; the compiled code
/// accumulates in float, in its own order (lanes, tiles), and its error grows
/// with K: a plain sequential float sum errs by up to about 2^-24 * K over
/// 65536 outputs (measured: 4.2e-5 at K = 768, 1.6e-4 at K = 3072), blocked
/// orders by less. 1e-5 * sqrt(K) is 2.8e-4 at K = 768, 6x the sequential
/// error there (3.5x at K = 3072), while a wrong or missing term moves an
/// output by |a_ik * b_kj|, 0.25 on average: far beyond it.
inline double matmul_atol(int64_t K) {
  return 1e-5 * std::sqrt(static_cast<double>(K));
}

inline void print_head(const char *What, const std::vector<float> &V) {
  std::printf("  %s[:4] = [", What);
  for (size_t I = 0; I < std::min<size_t>(4, V.size()); ++I)
    std::printf("%s%.6g", I ? ", " : "", V[I]);
  std::printf("%s]\n", V.size() > 4 ? ", ..." : "");
}

inline void print_times(const char *Shape, double EagerMs, double CompiledMs) {
  std::printf("  shape %s: eager %.3f ms, compiled %.3f ms (median of 7): "
              "%.1fx faster\n",
              Shape, EagerMs, CompiledMs, EagerMs / CompiledMs);
}

inline void print_outputs() {
#ifdef PK_GENERATED_CPP
  std::printf("  generated C++:  %s\n", PK_GENERATED_CPP);
#endif
#ifdef PK_GENERATED_CU
  std::printf("  generated CUDA: %s\n", PK_GENERATED_CU);
#endif
}

} // namespace sample

#endif // PK_SAMPLES_SAMPLE_H
