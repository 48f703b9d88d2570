//===- pk/scalar.h - Scalar semantics shared by eager, CPU and CUDA code --===//
//
// The definition of every elementwise op that is not a single C++ operator or
// <cmath> call lives here, once, so that the eager reference, the generated
// C++ and the generated CUDA cannot disagree. Everything is branch-free so
// that it vectorises under `#pragma omp simd`.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SCALAR_H
#define PK_SCALAR_H

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define PK_HD __host__ __device__
#else
#define PK_HD
#endif

namespace pk::scalar {

/// NumPy's maximum: NaN in either operand gives NaN.
template <class T> PK_HD inline T maximum(T A, T B) {
  return (A != A || A > B) ? A : B;
}
/// NumPy's minimum: NaN in either operand gives NaN.
template <class T> PK_HD inline T minimum(T A, T B) {
  return (A != A || A < B) ? A : B;
}
template <class T> PK_HD inline T clamp(T X, T Lo, T Hi) {
  return minimum(maximum(X, Lo), Hi);
}
template <class T> PK_HD inline T abs(T X) { return X < T(0) ? T(-X) : X; }
template <class T> PK_HD inline T rsqrt(T X) {
  using std::sqrt;
  return T(1) / sqrt(X);
}
template <class T> PK_HD inline T sigmoid(T X) {
  using std::exp;
  return T(1) / (T(1) + exp(-X));
}

} // namespace pk::scalar

#endif // PK_SCALAR_H
