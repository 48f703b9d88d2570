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
#include <type_traits>

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

/// Signed integer `+ - *` and unary `-` wrap around (two's complement, as
/// NumPy's int32 and int64 and every GPU do; language.md §3); C++ leaves the
/// overflow undefined, so these compute in the unsigned type of the same
/// width (at least `unsigned`: narrower types would promote to `int`). Other
/// types: the plain operator. Branch-free, the same instructions as the
/// plain operator, so they vectorise alike.
namespace detail {
template <class T>
inline constexpr bool WrapsSigned =
    std::is_integral_v<T> &&std::is_signed_v<T> && !std::is_same_v<T, bool>;
template <class T>
using WrapUnsigned = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
} // namespace detail
template <class T> PK_HD inline T add(T A, T B) {
  if constexpr (detail::WrapsSigned<T>) {
    using U = detail::WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(A) + static_cast<U>(B));
  } else {
    return A + B;
  }
}
template <class T> PK_HD inline T sub(T A, T B) {
  if constexpr (detail::WrapsSigned<T>) {
    using U = detail::WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(A) - static_cast<U>(B));
  } else {
    return A - B;
  }
}
template <class T> PK_HD inline T mul(T A, T B) {
  if constexpr (detail::WrapsSigned<T>) {
    using U = detail::WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(A) * static_cast<U>(B));
  } else {
    return A * B;
  }
}
template <class T> PK_HD inline T neg(T X) {
  if constexpr (detail::WrapsSigned<T>) {
    using U = detail::WrapUnsigned<T>;
    return static_cast<T>(U(0) - static_cast<U>(X));
  } else {
    return -X;
  }
}
/// |x|; the most negative integer is its own absolute value (it wraps, as
/// in NumPy). Signed integers through their sign mask, (x ^ m) - m in the
/// unsigned type: a select on `x < 0` of 64-bit lanes does not vectorise
/// without SSE4.2's 64-bit compare, an arithmetic shift does (and C++20
/// defines >> of a negative value as one). Floats by clearing the sign bit
/// (fabs), so |-0.0| is +0.0 as in C and NumPy: `x < 0 ? -x : x` kept -0.0,
/// and 1 / abs(x) or log(rsqrt(abs(x))) of -0.0 gave -inf or NaN where NumPy
/// gives +inf (a fuzz long-mode finding, seed 9131 k13).
template <class T> PK_HD inline T abs(T X) {
  if constexpr (detail::WrapsSigned<T>) {
    using U = detail::WrapUnsigned<T>;
    const U Mask = static_cast<U>(X >> (8 * sizeof(T) - 1));
    return static_cast<T>((static_cast<U>(X) ^ Mask) - Mask);
  } else if constexpr (std::is_floating_point_v<T>) {
    using std::fabs;
    return fabs(X);
  } else {
    return X < T(0) ? T(-X) : X;
  }
}
template <class T> PK_HD inline T rsqrt(T X) {
  using std::sqrt;
  return T(1) / sqrt(X);
}
template <class T> PK_HD inline T sigmoid(T X) {
  using std::exp;
  return T(1) / (T(1) + exp(-X));
}

/// Integer `/` (truncating, as C++) that never traps: division by zero
/// gives 0 and the one overflowing quotient, the most negative value over
/// -1, wraps to itself (NumPy's results; C++ leaves both undefined and x86
/// raises SIGFPE). Other dtypes: plain `/`.
template <class T> PK_HD inline T div(T A, T B) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const bool Zero = B == T(0);
    // -1 divides everything exactly: A / -1 is -A, computed in unsigned
    // arithmetic so that negating the most negative value wraps.
    const bool MinusOne = std::is_signed_v<T> && B == T(-1);
    using U = std::make_unsigned_t<T>;
    const T Negated = static_cast<T>(U(0) - static_cast<U>(A));
    const T Quotient = A / ((Zero || MinusOne) ? T(1) : B);
    return Zero ? T(0) : (MinusOne ? Negated : Quotient);
  } else {
    return A / B;
  }
}
/// Integer `%` (the sign of the dividend, as C++) that never traps: x % 0
/// is 0 (NumPy's result) and x % -1 is 0, the most negative value too.
template <class T> PK_HD inline T rem(T A, T B) {
  const bool Zero = B == T(0);
  const bool MinusOne = std::is_signed_v<T> && B == T(-1);
  const T Remainder = A % ((Zero || MinusOne) ? T(1) : B);
  return (Zero || MinusOne) ? T(0) : Remainder;
}

/// A value converted to the arithmetic type To as `static_cast` does, except
/// where C++ leaves it undefined: a float to an integer gives 0 for NaN and
/// saturates to To's limits beyond its range (what CUDA's conversion does),
/// truncating toward zero in between. Branch-free, so it vectorises.
template <class To, class From> PK_HD inline To convert(From X) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                !std::is_same_v<To, bool>) {
    using U = std::make_unsigned_t<To>;
    constexpr To Max = static_cast<To>(U(~U(0)) >> (std::is_signed_v<To>));
    constexpr To Min = std::is_signed_v<To> ? static_cast<To>(-Max - 1) : To(0);
    // 2^bits (unsigned) or 2^(bits-1) (signed): a power of two, exact in
    // float and double; every value below it and above Min - 1 truncates
    // into To's range.
    constexpr From Limit = static_cast<From>(Max / 2 + 1) * From(2);
    const bool Nan = X != X;
    const bool Above = X >= Limit;
    const bool Below =
        std::is_signed_v<To> ? X <= From(Min) - From(1) : X <= From(-1);
    const To Inside = static_cast<To>((Nan || Above || Below) ? From(0) : X);
    return Nan ? To(0) : Above ? Max : Below ? Min : Inside;
  } else {
    return static_cast<To>(X);
  }
}

} // namespace pk::scalar

#endif // PK_SCALAR_H
