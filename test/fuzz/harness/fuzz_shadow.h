//===- fuzz_shadow.h - Error bounds for the generated shadows -------------===//
//
// A shadow (test/fuzz/gen.py) recomputes every value v of a generated kernel
// with the eager semantics and, for every value that eager and compiled code
// may compute differently, a bound e on |v - exact| (running error
// analysis, in double): both the eager reference and the compiled code are
// within e of the exact result, so the harness accepts |eager - compiled| <=
// 2 e (times a margin, docs/fuzzing.md). u is the unit roundoff of the
// value's type, F the budget of one math function call (4 ulp <= 8 u:
// pk::vm is within 3 ulp, libm and CUDA within 1-2 ulp).
//
// Each function takes the computed value(s) and the error bound(s) of the
// operands (fzs::zero() for an exact operand) and returns the bound of the
// result. Errors are pk::Array<double>; an operand's bound may have a
// smaller (broadcastable) shape than its value.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FUZZ_SHADOW_H
#define PK_FUZZ_SHADOW_H

#include <pk/pk.h>

#include <climits>
#include <cmath>
#include <type_traits>

namespace fzs {

using E = pk::Array<double>;
inline constexpr double U32 = 0x1p-24;
inline constexpr double U64 = 0x1p-53;
/// The axis argument of a reduction over all axes.
inline constexpr int All = INT_MIN;

/// The bound of an exact value: a rank-0 zero.
inline E zero() { return E(); }

/// |v| in double, for arrays and scalars.
template <class V> E mag(const V &X) {
  if constexpr (std::is_arithmetic_v<V>)
    return E(std::vector<int64_t>{}, {std::fabs(static_cast<double>(X))});
  else
    return pk::abs(pk::cast<double>(X));
}

/// x where x > 0, else 0 (so that a bound divided by it becomes inf).
inline E pos(const E &X) { return pk::where(X > 0.0, X, 0.0); }

/// The value last stored into a ref of element type T, read back:
/// converted (a 16-bit T rounds it and gives float), broadcast.
template <class T, class V, class R>
pk::Array<pk::ComputeType<T>> refread(const V &X, const R &Ref) {
  if constexpr (std::is_arithmetic_v<V> && !pk::IsStorage16<T>)
    return pk::broadcast_to(static_cast<T>(X), Ref);
  else
    return pk::broadcast_to(pk::cast<T>(X), Ref);
}

/// v = a / d with |d| bounded away from 0.
template <class V, class D>
E div_err(const V &Val, const D &Den, const E &Ea, const E &Ed, double U) {
  return (Ea + mag(Val) * Ed) / pos(mag(Den) - Ed) + U * mag(Val);
}

/// v = exp(a): exp(a + d) - exp(a) = exp(a) (e^d - 1).
template <class V> E exp_err(const V &Val, const E &Ea, double F) {
  return mag(Val) * (pk::expm1(Ea) * 1.01 + F);
}

/// v = expm1(a): derivative e^a = v + 1.
template <class V> E expm1_err(const V &Val, const E &Ea, double F) {
  return (mag(Val) + 1.0) * pk::expm1(Ea) * 1.01 + F * mag(Val);
}

/// v = log(p) * Scale, p > 0: |log(p + d) - log(p)| <= d / (p - d).
template <class V, class P>
E log_err(const V &Val, const P &Arg, const E &Ea, double F, double Scale) {
  return Scale * Ea / pos(mag(Arg) - Ea) + F * mag(Val);
}

/// v = log1p(p), p >= 0.
template <class V, class P>
E log1p_err(const V &Val, const P &Arg, const E &Ea, double F) {
  return Ea / pos(mag(Arg) + 1.0 - Ea) + F * mag(Val);
}

/// v = sqrt(p), p >= 0: |sqrt(p + d) - sqrt(p)| <= min(sqrt(d), d /
/// sqrt(p - d)); sqrt itself is correctly rounded.
template <class V, class P>
E sqrt_err(const V &Val, const P &Arg, const E &Ea, double U) {
  const E A = pk::sqrt(Ea);
  const E B = Ea / pk::sqrt(pos(mag(Arg) - Ea));
  const E M = pk::where(B < A, B, A);
  return pk::where(Ea > 0.0, M, 0.0) + U * mag(Val);
}

/// v = rsqrt(p), p > 0: derivative p^-1.5 / 2.
template <class V, class P>
E rsqrt_err(const V &Val, const P &Arg, const E &Ea, double F) {
  return 0.5 * Ea * pk::pow(pos(mag(Arg) - Ea), -1.5) + F * mag(Val);
}

/// v = sin(a) or cos(a): 1-Lipschitz; argument reduction adds an absolute
/// error of a few u * max(1, |a|).
template <class V, class A>
E trig_err(const V &Val, const A &Arg, const E &Ea, double F, double U) {
  return Ea + F * mag(Val) + 4 * U * pk::maximum(mag(Arg), 1.0);
}

/// v = f(a) for an L-Lipschitz f (tanh 1, erf 2/sqrt(pi), sigmoid 1/4).
template <class V> E lip_err(const V &Val, const E &Ea, double L, double F) {
  return L * Ea + F * mag(Val);
}

/// v = pow(p, c), p > 0: relative change e^(|c| d / (p - d)) - 1.
template <class V, class P>
E pow_err(const V &Val, const P &Arg, const E &Ea, double C, double F) {
  return mag(Val) * (pk::expm1(C * Ea / pos(mag(Arg) - Ea)) * 1.01 + F);
}

/// maximum, minimum: 1-Lipschitz in each operand.
inline E max_err(const E &Ea, const E &Eb) { return pk::maximum(Ea, Eb); }

template <class A> E red_sum(const A &X, int Axis, bool Keep) {
  if (Axis == All)
    return pk::sum(X);
  return Keep ? pk::sum(X, Axis, pk::keepdims) : pk::sum(X, Axis);
}
template <class A> E red_max(const A &X, int Axis, bool Keep) {
  if (Axis == All)
    return pk::max(X);
  return Keep ? pk::max(X, Axis, pk::keepdims) : pk::max(X, Axis);
}

/// The precision (significand bits) of the type whose unit roundoff is U.
inline int bits(double U) { return U == U32 ? 24 : 53; }

/// 2^g for the largest g such that every element of X is an integer
/// multiple of 2^g (its grain), elementwise; +inf for 0, NaN for a value
/// that is not finite.
template <class A> E grain(const A &X) {
  E G = pk::cast<double>(X);
  double *P = G.data();
  for (int64_t I = 0; I < G.size(); ++I) {
    const double V = P[I];
    if (!std::isfinite(V)) {
      P[I] = NAN;
    } else if (V == 0) {
      P[I] = INFINITY;
    } else {
      int Exp = 0;
      const double M = std::frexp(V, &Exp); // V = M 2^Exp, 1/2 <= |M| < 1
      const auto Sig = static_cast<uint64_t>(std::fabs(std::ldexp(M, 53)));
      P[I] = std::ldexp(1.0, Exp - 53 + __builtin_ctzll(Sig));
    }
  }
  return G;
}

/// Where a float sum of the terms X (reduced as red_sum) is exact in any
/// order, in precision P bits: every term and every partial sum is an
/// integer multiple of the terms' smallest grain 2^g and at most sum|t| in
/// magnitude, which P bits hold exactly while sum|t| < 2^(P + g). Then
/// eager (in double) and compiled code (in the operands' type, in any
/// order, in lanes or threads) compute the same value: 0 where true, 1
/// where not (NaN and infinite terms are never exact).
template <class A>
E inexact_sum(const A &X, int Axis, bool Keep, int P) {
  const E S = red_sum(mag(X), Axis, Keep);
  if (pk::cast<double>(X).size() == 0)
    return S * 0.0; // no terms: 0, exactly
  // the smallest grain: -max(-g); NaN propagates
  const E Gmin = -red_max(-grain(X), Axis, Keep);
  const E Ok = pk::where(S < Gmin * std::ldexp(1.0, P), 1.0, 0.0);
  return 1.0 - pk::where(S == S, Ok, 0.0);
}

/// v = sum(a): a float sum of n terms, in any order and in the operand's
/// precision, is within (n - 1) u sum|t| of the exact sum of the terms
/// (Higham, ch. 4); plus the terms' own errors and the final rounding.
/// Exact terms whose sum is exact in any order (inexact_sum) leave no
/// rounding at all: the bound is 0 there, and the harness then requires
/// eager and compiled code to agree bit for bit (the "grid" data profiles
/// make most sums so, docs/fuzzing.md).
template <class A, class V>
E sum_err(const A &X, const E &Ea, int Axis, bool Keep, double U, const V &) {
  const E Ma = mag(X);
  const E Cnt = red_sum(pk::broadcast_to(1.0, X), Axis, Keep);
  const E Se = red_sum(pk::broadcast_to(Ea, X), Axis, Keep);
  const E Round = (Cnt * 1.2 + 1.0) * U * red_sum(Ma, Axis, Keep);
  const E Rounds = pk::where(Se > 0.0, 1.0, inexact_sum(X, Axis, Keep, bits(U)));
  return Se + Rounds * Round;
}

/// v = mean(a) = sum(a) / n. Exact where the sum is (above) and the
/// quotient is representable (v n is the sum): eager divides a double sum
/// and rounds to the type, compiled code divides in the type, and both
/// then give the quotient itself.
template <class A, class V>
E mean_err(const A &X, const E &Ea, int Axis, bool Keep, double U,
           const V &Val) {
  const E Ma = mag(X);
  const E Cnt = red_sum(pk::broadcast_to(1.0, X), Axis, Keep);
  const E Se = red_sum(pk::broadcast_to(Ea, X), Axis, Keep);
  const E SumRounds =
      pk::where(Se > 0.0, 1.0, inexact_sum(X, Axis, Keep, bits(U)));
  // An exact sum divided: one rounding in compiled code, two in eager's
  // (double, then the type), none where the quotient is representable.
  const E Divided = pk::where(pk::cast<double>(Val) * Cnt ==
                                  red_sum(pk::cast<double>(X), Axis, Keep),
                              0.0, 1.0);
  const E Quotient = pk::where(SumRounds == 0.0, Divided, 1.0);
  return (Se + SumRounds * Cnt * 1.2 * U * red_sum(Ma, Axis, Keep)) / Cnt +
         Quotient * 2 * U * mag(Val);
}

/// v = max(a) or min(a): the largest error of a term.
template <class A> E maxred_err(const A &X, const E &Ea, int Axis, bool Keep) {
  return red_max(pk::broadcast_to(Ea, X), Axis, Keep);
}

template <class A> E expand_err(const A &X, const E &Ea, int Axis) {
  return pk::expand_dims(pk::broadcast_to(Ea, X), Axis);
}
template <class A> E squeeze_err(const A &X, const E &Ea, int Axis) {
  return pk::squeeze(pk::broadcast_to(Ea, X), Axis);
}

/// transpose(a): a view, the operand's bound swapped the same way.
template <class A> E transpose_err(const A &X, const E &Ea) {
  return pk::transpose(pk::broadcast_to(Ea, X));
}

/// v = matmul(a, b) (float): each element is a sum of K products; the eager
/// reference accumulates them in double, compiled code in the operands'
/// precision in another order (CPU gemm, CUDA tiles), each product rounded
/// once: within (K + 2) u sum_k |a_ik||b_kj| of the exact sum of the
/// computed operands (K - 1 for the sum, 1 for the products, 1 for the final
/// rounding, 1 spare), plus what the operands' own errors contribute:
/// sum_k ea|b| + (|a| + ea) eb.
///
/// Exact operands on a grid (every product an integer multiple of 2^g, the
/// least grain of a times b's, and sum_k |a||b| < 2^(P + g)) make every
/// product and partial sum exact in any order, with or without FMA: 0
/// there.
template <class A, class B>
E matmul_err(const A &X, const B &Y, const E &Ea, const E &Eb, double U) {
  const E Ma = mag(X), Mb = mag(Y);
  const double K = static_cast<double>(Ma.extent(Ma.rank() - 1));
  const E Abs = pk::matmul(Ma, Mb);
  const E Ga = grain(X), Gb = grain(Y);
  const double G = Ga.size() == 0 || Gb.size() == 0
                       ? INFINITY // no products
                       : -pk::max(-Ga).data()[0] * -pk::max(-Gb).data()[0];
  const double Limit = G * std::ldexp(1.0, bits(U));
  const E Rounds = pk::where(Abs < Limit, 0.0, 1.0); // NaN: inexact
  E R = Rounds * Abs * ((K + 2.0) * U);
  if (Ea.rank() != 0 || (Ea.size() == 1 && Ea.data()[0] != 0.0))
    R = R + pk::matmul(pk::broadcast_to(Ea, X), Mb);
  if (Eb.rank() != 0 || (Eb.size() == 1 && Eb.data()[0] != 0.0))
    R = R + pk::matmul(Ma + pk::broadcast_to(Ea, X), pk::broadcast_to(Eb, Y));
  return R;
}

} // namespace fzs

#endif // PK_FUZZ_SHADOW_H
