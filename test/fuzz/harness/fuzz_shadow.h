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
// A bound is +inf where nothing bounds the value (it may be any number or
// infinity), and NaN only where the value "may be NaN": an indeterminate form
// (0 * inf, 0 / 0, inf / inf, inf - inf) whose operands' intervals reach
// it, or an operand that may be NaN itself. The harness requires NaN exactly
// where eager has NaN everywhere else, so no other bound may be NaN by
// accident: error terms are scaled with err_times / err_over (an exact
// operand contributes 0 even beside an infinity) and mag(NaN) is 0.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FUZZ_SHADOW_H
#define PK_FUZZ_SHADOW_H

#include <pk/pk.h>

#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

namespace fzs {

using E = pk::Array<double>;
inline constexpr double U32 = 0x1p-24;
inline constexpr double U64 = 0x1p-53;
/// The absolute floor of a float value (8.5 FLT_MIN, the harness's for
/// float outputs): below float's normal range a function's relative
/// accuracy means nothing (eager's sigmoid(-90.9) = 1 / (1 + exp(90.9)) is
/// 0, pk::vm's 3.5e-40). Added where a float value enters a double one
/// (finding seed 9829 k36: a float sigmoid stored to a double output, whose
/// own floor is 1e-300).
inline constexpr double Floor32 = 1e-37;
/// The smallest normal float and double: what a function whose result may
/// underflow (exp, exp2, sigmoid, pow) is accurate to there, rather than
/// relatively (eager's sigmoid(-95) = 1 / (1 + exp(95)) is 0 where the
/// exact value is 5e-42; finding seed 9864 k18).
inline constexpr double Tiny32 = 0x1p-126, Tiny64 = 0x1p-1022;
/// The axis argument of a reduction over all axes.
inline constexpr int All = INT_MIN;

/// The bound of an exact value: a rank-0 zero.
inline E zero() { return E(); }

/// v in double, for arrays and scalars.
template <class V> E val(const V &X) {
  if constexpr (std::is_arithmetic_v<V>)
    return E(std::vector<int64_t>{}, {static_cast<double>(X)});
  else
    return pk::cast<double>(X);
}

/// |v| in double, for arrays and scalars; 0 for NaN (a NaN has no magnitude
/// to scale a rounding error by, and its NaN-ness is checked exactly).
template <class V> E mag(const V &X) {
  const E D = val(X);
  return pk::where(D == D, pk::abs(D), 0.0);
}

/// An error e scaled by m >= 0: 0 where e is (an exact operand adds nothing,
/// even beside an infinity), NaN where e is.
inline E err_times(const E &Err, const E &M) {
  return pk::where(Err == 0.0, 0.0, Err * M);
}

/// An error e divided by d >= 0: 0 where e is (0 / 0 included).
inline E err_over(const E &Err, const E &D) {
  return pk::where(Err == 0.0, 0.0, Err / D);
}

/// m times a relative bound f: +inf where f is (also for m = 0: an
/// unbounded relative change of 0 bounds nothing either).
inline E rel_times(const E &M, const E &F) {
  return pk::where(F == INFINITY, INFINITY, M * F);
}

/// Where an operand of value x and bound e may be 0, or infinite, in eager
/// or in compiled code. A NaN x is neither: it is NaN on both sides unless
/// e (NaN) says otherwise.
template <class V> pk::Array<bool> may_zero(const V &X, const E &Ex) {
  const E D = val(X);
  return (D == D) & (pk::abs(D) <= Ex);
}
template <class V> pk::Array<bool> may_inf(const V &X, const E &Ex) {
  const E D = val(X);
  return (D == D) & ((pk::abs(D) == INFINITY) | (Ex == INFINITY));
}

/// The bound R of an elementwise result, NaN ("may be NaN") where an
/// operand's bound is NaN or the operation is indeterminate there, and +inf
/// where R is NaN otherwise.
inline E settle(const E &R, const E &Ea, const E &Eb,
                const pk::Array<bool> &Indeterminate) {
  const pk::Array<bool> MayNaN = (Ea != Ea) | (Eb != Eb) | Indeterminate;
  return pk::where(MayNaN, NAN, pk::where(R == R, R, INFINITY));
}

/// Neither operand has an error at the element: the result is the same on
/// both sides, NaN or not.
inline pk::Array<bool> both_exact(const E &Ea, const E &Eb) {
  return (Ea == 0.0) & (Eb == 0.0);
}

/// v = a + b or a - b: the operands' errors and one rounding; inf - inf is
/// indeterminate where both may be infinite.
template <class A, class B, class V>
E add_err(const A &X, const B &Y, const E &Ea, const E &Eb, double U,
          const V &Val) {
  const E R = Ea + Eb + U * mag(Val);
  return settle(R, Ea, Eb,
                may_inf(X, Ea) & may_inf(Y, Eb) & !both_exact(Ea, Eb));
}

/// v = a * b: ea|b| + eb|a| + ea eb + u|v|; 0 * inf is indeterminate where
/// one operand may be 0 and the other infinite (seed 9818: a difference
/// that is 0 in eager and 1e-15 compiled, times an infinity).
template <class A, class B, class V>
E mul_err(const A &X, const B &Y, const E &Ea, const E &Eb, double U,
          const V &Val) {
  const E R = err_times(Ea, mag(Y)) + err_times(Eb, mag(X)) +
              pk::where((Ea == 0.0) | (Eb == 0.0), 0.0, Ea * Eb) + U * mag(Val);
  const pk::Array<bool> Indeterminate = ((may_zero(X, Ea) & may_inf(Y, Eb)) |
                                         (may_inf(X, Ea) & may_zero(Y, Eb))) &
                                        !both_exact(Ea, Eb);
  return settle(R, Ea, Eb, Indeterminate);
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

/// v = a / d with |d| bounded away from 0 (+inf where it is not); 0 / 0
/// and inf / inf are indeterminate where the operands may reach them.
template <class N, class D, class V>
E div_err(const N &Num, const D &Den, const E &Ea, const E &Ed, double U,
          const V &Val) {
  const E R =
      err_over(Ea + err_times(Ed, mag(Val)), pos(mag(Den) - Ed)) + U * mag(Val);
  const pk::Array<bool> Indeterminate =
      ((may_zero(Num, Ea) & may_zero(Den, Ed)) |
       (may_inf(Num, Ea) & may_inf(Den, Ed))) &
      !both_exact(Ea, Ed);
  return settle(R, Ea, Ed, Indeterminate);
}

/// v = exp(a): exp(a + d) - exp(a) = exp(a) (e^d - 1).
template <class V> E exp_err(const V &Val, const E &Ea, double F) {
  return rel_times(mag(Val), pk::expm1(Ea) * 1.01 + F);
}

/// v = expm1(a): derivative e^a = v + 1.
template <class V> E expm1_err(const V &Val, const E &Ea, double F) {
  return err_times(pk::expm1(Ea) * 1.01, mag(Val) + 1.0) + F * mag(Val);
}

/// v = log(p) * Scale, p > 0: |log(p + d) - log(p)| <= d / (p - d).
template <class V, class P>
E log_err(const V &Val, const P &Arg, const E &Ea, double F, double Scale) {
  return Scale * err_over(Ea, pos(mag(Arg) - Ea)) + F * mag(Val);
}

/// v = log1p(p), p >= 0.
template <class V, class P>
E log1p_err(const V &Val, const P &Arg, const E &Ea, double F) {
  return err_over(Ea, pos(mag(Arg) + 1.0 - Ea)) + F * mag(Val);
}

/// v = sqrt(p), p >= 0: |sqrt(p + d) - sqrt(p)| <= min(sqrt(d), d /
/// sqrt(p - d)); sqrt itself is correctly rounded.
template <class V, class P>
E sqrt_err(const V &Val, const P &Arg, const E &Ea, double U) {
  const E A = pk::sqrt(Ea);
  const E B = Ea / pk::sqrt(pos(mag(Arg) - Ea));
  const E M = pk::where(B < A, B, A);
  return pk::where(Ea > 0.0, M, Ea) + U * mag(Val); // NaN stays NaN
}

/// v = rsqrt(p), p > 0: derivative p^-1.5 / 2.
template <class V, class P>
E rsqrt_err(const V &Val, const P &Arg, const E &Ea, double F) {
  return err_times(0.5 * Ea, pk::pow(pos(mag(Arg) - Ea), -1.5)) + F * mag(Val);
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
  return rel_times(mag(Val),
                   pk::expm1(C * err_over(Ea, pos(mag(Arg) - Ea))) * 1.01 + F);
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

/// Where a sum of the terms X (bounds Ea) may meet inf - inf: two terms
/// that may be infinite, one of them uncertain (a finite term with an
/// unbounded error may be an infinity of either sign in compiled code).
template <class A>
pk::Array<bool> sum_inf_inf(const A &X, const E &Ea, int Axis, bool Keep) {
  const E Eb = pk::broadcast_to(Ea, X);
  const pk::Array<bool> Inf = may_inf(X, Eb);
  const E Infinite = red_sum(pk::where(Inf, 1.0, 0.0), Axis, Keep);
  const E Unsure = red_sum(pk::where(Inf & (Eb > 0.0), 1.0, 0.0), Axis, Keep);
  return (Infinite >= 2.0) & (Unsure >= 1.0);
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
  return settle(Se + Rounds * Round, Se, zero(),
                sum_inf_inf(X, Ea, Axis, Keep));
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
  // err_over: an empty mean is NaN on both sides, its bound 0
  const E R =
      err_over(Se + SumRounds * Cnt * 1.2 * U * red_sum(Ma, Axis, Keep), Cnt) +
      Quotient * 2 * U * mag(Val);
  return settle(R, Se, zero(), sum_inf_inf(X, Ea, Axis, Keep));
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

/// o = matmul(p, v) of a fused attention (p the softmax of the scores):
/// matmul_err's bound, and NaN ("may be NaN") where a key of weight 0 meets
/// an inf or NaN of v in the sum: eager computes 0 * inf = NaN there, while
/// the fused attention skips a key of weight 0 (masked, or its exp
/// underflowed; the CPU's block loop) and never reads its v row
/// (docs/design.md, "Attention"). Elsewhere an inf or NaN of v is checked
/// as any other value.
template <class A, class B>
E attn_matmul_err(const A &P, const B &V, const E &Ep, const E &Ev, double U) {
  const E R = matmul_err(P, V, Ep, Ev, U);
  const E Dp = val(P), Dv = val(V);
  const E ZeroWeight = pk::where(Dp == 0.0, 1.0, 0.0);
  const E NotFinite = pk::where(Dv - Dv == 0.0, 0.0, 1.0);
  return pk::where(pk::matmul(ZeroWeight, NotFinite) > 0.0,
                   std::numeric_limits<double>::quiet_NaN(), R);
}

} // namespace fzs

#endif // PK_FUZZ_SHADOW_H
