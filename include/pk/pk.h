//===- pk/pk.h - The pk kernel language with eager semantics --------------===//
//
// Everything a kernel may use (language.md §1-§5), implemented eagerly like
// NumPy: every operation computes a whole pk::Array<T>. This is the reference
// semantics that compiled kernels must agree with. pkc parses this header for
// every kernel file, so it stays lean (no <iostream>, <format>, <ranges>).
//
// Each op is a function (template) declared directly in namespace pk (the
// operators as free functions) and re-exported into pk::lang by a
// using-declaration: pkc recognises an op as "a function declared in namespace
// pk with this name". The per-element definitions of the composite ops come
// from <pk/scalar.h>, shared with the generated CPU and CUDA code.
//
// Operands. An op accepts arrays (pk::Array<T>, and the pk::WholeProxy<T, R>
// that `out[_]` returns, which *is* an Array<T>) and, where noted, C++
// arithmetic scalars; at least one operand must be an array (scalar with
// scalar is plain C++), except that the math functions and cast also take
// scalars alone (`exp(eps)`, see "Elementwise math"). Element types of
// arrays: float, double, int32_t, int64_t, bool. Refs may also hold pk::half
// and pk::bfloat16 (<pk/half.h>): `ref[_]` reads them as Array<float>, a
// store rounds to the 16-bit type; and int8_t and uint8_t: `ref[_]` reads
// them as Array<int32_t> (C++'s integral promotion), a store converts modulo
// 2^8.
//
// Promotion (the frontend follows these rules):
//   array  with array : the C++ usual arithmetic conversions of the element
//                       types (int32+float -> float, float+double -> double,
//                       int32+int64 -> int64, bool+bool -> int32);
//   array  with scalar: "weak scalar": if both are floating point the array's
//                       type is kept (Array<float> * 2.0 is Array<float>),
//                       otherwise the C++ usual arithmetic conversions
//                       (Array<int32_t> * 0.5 is Array<double>);
//   scalar with scalar (inside where/clamp): C++ usual arithmetic conversions,
//                       still weak.
// A result type is then normalised to the five element types: integers of
// at most 4 bytes -> int32_t, 8 bytes -> int64_t, long double -> double.
// Multi-operand ops (clamp, where) promote left to right.
//
//===----------------------------------------------------------------------===//
#ifndef PK_PK_H
#define PK_PK_H

#include <pk/gemm.h>
#include <pk/int8_product.h>
#include <pk/ref.h>
#include <pk/runtime.h>
#include <pk/scalar.h>
#include <pk/vmath.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace pk {

/// The type of `pk::lang::keepdims`, the third argument of a reduction that
/// keeps the reduced axis with extent 1.
struct KeepDims {
  explicit constexpr KeepDims() = default;
};
inline constexpr KeepDims keepdims{};

//===----------------------------------------------------------------------===//
// Internal helpers: element types, storage, labels
//===----------------------------------------------------------------------===//

namespace detail {

using Shape = std::vector<int64_t>;

/// Tag: an Array whose elements are left uninitialised (to be overwritten).
struct Uninit {};

template <class T>
inline constexpr bool IsElement =
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, bool>;

template <class T> constexpr const char *typeName() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "int32_t";
  else if constexpr (std::is_same_v<T, int64_t>)
    return "int64_t";
  else if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (std::is_same_v<T, half>)
    return "pk::half";
  else if constexpr (std::is_same_v<T, bfloat16>)
    return "pk::bfloat16";
  else if constexpr (std::is_same_v<T, int8_t>)
    return "int8_t";
  else if constexpr (std::is_same_v<T, uint8_t>)
    return "uint8_t";
  else
    return "?";
}

/// Owning contiguous storage (std::vector<bool> is not contiguous).
template <class T> class Buffer {
public:
  Buffer() = default;
  Buffer(int64_t N, bool Zero)
      : P(N ? (Zero ? new T[static_cast<size_t>(N)]()
                    : new T[static_cast<size_t>(N)])
            : nullptr),
        Size(N) {}
  Buffer(const Buffer &O) : Buffer(O.Size, false) {
    if (Size)
      std::memcpy(P, O.P, static_cast<size_t>(Size) * sizeof(T));
  }
  Buffer(Buffer &&O) noexcept : P(O.P), Size(O.Size) {
    O.P = nullptr;
    O.Size = 0;
  }
  Buffer &operator=(Buffer O) noexcept {
    std::swap(P, O.P);
    std::swap(Size, O.Size);
    return *this;
  }
  ~Buffer() { delete[] P; }
  T *data() { return P; }
  const T *data() const { return P; }

private:
  T *P = nullptr;
  int64_t Size = 0;
};

inline int64_t checkedSize(const Shape &S) {
  int64_t N = 1;
  for (int64_t E : S) {
    if (E < 0)
      throw ShapeError("negative extent " + std::to_string(E));
    N *= E;
  }
  return N;
}

/// "[2, 3]" ("[]" for rank 0).
inline std::string dims(const Shape &S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I) {
    if (I)
      R += ", ";
    R += std::to_string(S[I]);
  }
  R += ']';
  return R;
}

/// "x[2, 3]": an operand as ShapeError messages name it.
inline std::string describe(const std::string &Label, const Shape &S) {
  return Label + dims(S);
}

/// Labels of operands inside a computed value's label are elided to "..."
/// beyond this length, so labels stay short however deep the expression.
inline constexpr size_t MaxArgLabel = 40;

inline void appendArg(std::string &L, const std::string &A) {
  if (A.size() > MaxArgLabel)
    L += "...";
  else
    L += A;
}

/// A scalar operand in a label: "2", "0.5", "1e-05", "true".
template <class S> std::string scalarLabel(S V) {
  if constexpr (std::is_same_v<S, bool>) {
    return V ? "true" : "false";
  } else if constexpr (std::is_integral_v<S>) {
    return std::to_string(V);
  } else {
    char Buf[32];
    std::snprintf(Buf, sizeof Buf, "%g", static_cast<double>(V));
    return Buf;
  }
}

} // namespace detail

//===----------------------------------------------------------------------===//
// pk::Array<T>: the eager value
//===----------------------------------------------------------------------===//

/// An immutable-by-convention n-d value: a shape, contiguous row-major data
/// and a label naming it in ShapeError messages. `ref[_]` returns one; every
/// op returns a new one.
template <class T> class Array {
  static_assert(detail::IsElement<T>,
                "pk::Array<T>: T must be float, double, int32_t, int64_t or "
                "bool (pk::half and pk::bfloat16 are storage types: their "
                "refs read as Array<float>; int8_t and uint8_t refs read as "
                "Array<int32_t>)");

public:
  using element_type = T;

  /// A rank-0 array holding T{}.
  Array() : Array(detail::Shape{}) {}
  /// Zero-filled. An empty label becomes "Array<T>".
  explicit Array(detail::Shape S, std::string Label = {})
      : Shp(std::move(S)), Buf(detail::checkedSize(Shp), true),
        Lbl(std::move(Label)) {
    fixLabel();
  }
  /// From row-major values; ShapeError if their count is not the size.
  Array(detail::Shape S, std::initializer_list<T> Values,
        std::string Label = {})
      : Shp(std::move(S)), Buf(detail::checkedSize(Shp), false),
        Lbl(std::move(Label)) {
    fixLabel();
    if (static_cast<int64_t>(Values.size()) != size())
      throw ShapeError("array of shape " + detail::dims(Shp) + " built from " +
                       std::to_string(Values.size()) + " values");
    int64_t I = 0;
    for (const T &V : Values)
      Buf.data()[I++] = V;
  }
  /// Copies size() elements from Src.
  Array(detail::Shape S, const T *Src, std::string Label = {})
      : Shp(std::move(S)), Buf(detail::checkedSize(Shp), false),
        Lbl(std::move(Label)) {
    fixLabel();
    if (size())
      std::memcpy(Buf.data(), Src, static_cast<size_t>(size()) * sizeof(T));
  }
  /// Uninitialised elements (for ops that overwrite all of them).
  Array(detail::Shape S, detail::Uninit, std::string Label)
      : Shp(std::move(S)), Buf(detail::checkedSize(Shp), false),
        Lbl(std::move(Label)) {
    fixLabel();
  }

  const std::vector<int64_t> &shape() const { return Shp; }
  int rank() const { return static_cast<int>(Shp.size()); }
  int64_t extent(int I) const {
    detail::checkExtentAxis(I, rank());
    return Shp[static_cast<size_t>(I)];
  }
  int64_t size() const {
    int64_t N = 1;
    for (int64_t E : Shp)
      N *= E;
    return N;
  }
  T *data() { return Buf.data(); }
  const T *data() const { return Buf.data(); }

  /// Element at a flat row-major index (std::out_of_range when outside).
  T &at(int64_t I) { return Buf.data()[checkFlat(I)]; }
  const T &at(int64_t I) const { return Buf.data()[checkFlat(I)]; }
  /// Element at a multi-index, one integer per axis: `a(1, 2)`, `a()` at
  /// rank 0 (std::out_of_range when wrong).
  template <class... I>
  requires(std::is_integral_v<I> &&...) T &operator()(I... Idx) {
    return Buf.data()[flatIndex({static_cast<int64_t>(Idx)...})];
  }
  template <class... I>
  requires(std::is_integral_v<I> &&...) const T &operator()(I... Idx) const {
    return Buf.data()[flatIndex({static_cast<int64_t>(Idx)...})];
  }
  /// The element of a size-1 array (ShapeError otherwise).
  T item() const {
    if (size() != 1)
      throw ShapeError("item() of " + detail::describe(Lbl, Shp));
    return Buf.data()[0];
  }

  /// How ShapeError messages name this value.
  const std::string &label() const { return Lbl; }
  void setLabel(std::string L) {
    Lbl = std::move(L);
    fixLabel();
  }
  Array named(std::string L) const {
    Array C = *this;
    C.setLabel(std::move(L));
    return C;
  }

private:
  void fixLabel() {
    if (Lbl.empty())
      Lbl = std::string("Array<") + detail::typeName<T>() + ">";
  }
  int64_t checkFlat(int64_t I) const {
    if (I < 0 || I >= size())
      throw std::out_of_range("pk::Array: flat index " + std::to_string(I) +
                              " outside " + detail::describe(Lbl, Shp));
    return I;
  }
  int64_t flatIndex(std::initializer_list<int64_t> Idx) const {
    if (Idx.size() != Shp.size())
      throw std::out_of_range("pk::Array: " + std::to_string(Idx.size()) +
                              " indices for " + detail::describe(Lbl, Shp));
    int64_t F = 0;
    size_t D = 0;
    for (int64_t X : Idx) {
      if (X < 0 || X >= Shp[D])
        throw std::out_of_range("pk::Array: index " + std::to_string(X) +
                                " outside axis " + std::to_string(D) + " of " +
                                detail::describe(Lbl, Shp));
      F = F * Shp[D++] + X;
    }
    return F;
  }

  std::vector<int64_t> Shp;
  detail::Buffer<T> Buf;
  std::string Lbl;
};

//===----------------------------------------------------------------------===//
// Operand classification and type promotion
//===----------------------------------------------------------------------===//

namespace detail {

template <class X> struct ArrayElem {};
template <class T> struct ArrayElem<Array<T>> { using type = T; };
template <class T, int R> struct ArrayElem<WholeProxy<T, R>> {
  using type = ComputeType<T>;
};

/// pk::Array<T> or the WholeProxy<T, R> of `out[_]`.
template <class X>
concept ArrayLike = requires {
  typename ArrayElem<std::remove_cvref_t<X>>::type;
};
/// A C++ arithmetic scalar: a weak operand.
template <class X>
concept Scalar = std::is_arithmetic_v<std::remove_cvref_t<X>>;
template <class X>
concept Operand = ArrayLike<X> || Scalar<X>;
/// Two operands of an elementwise op, at least one an array.
template <class A, class B>
concept Mixed = Operand<A> && Operand<B> &&(ArrayLike<A> || ArrayLike<B>);

template <class X>
using ElemOf = typename ArrayElem<std::remove_cvref_t<X>>::type;

/// The Array<T> behind an array operand.
template <class T> const Array<T> &as_array(const Array<T> &A) { return A; }

/// Normalises a C++ arithmetic type to one of the five element types.
template <class T>
using Canon = std::conditional_t<
    std::is_same_v<T, bool>, bool,
    std::conditional_t<std::is_floating_point_v<T>,
                       std::conditional_t<(sizeof(T) <= 4), float, double>,
                       std::conditional_t<(sizeof(T) <= 4), int32_t, int64_t>>>;

/// The C++ usual arithmetic conversions of A and B.
template <class A, class B>
using Usual = decltype(std::declval<A>() + std::declval<B>());

/// An operand's element type and whether it is a weak scalar.
template <class T, bool Weak> struct Ty { using type = T; };
template <class X, bool = ArrayLike<X>> struct TyOf {
  using type = Ty<std::remove_cvref_t<X>, true>;
};
template <class X> struct TyOf<X, true> { using type = Ty<ElemOf<X>, false>; };

template <class A, class B> struct Join;
template <class A, class B> struct Join<Ty<A, false>, Ty<B, false>> {
  using type = Ty<Canon<Usual<A, B>>, false>;
};
template <class A, class S> struct Join<Ty<A, false>, Ty<S, true>> {
  using type = Ty<std::conditional_t<std::is_floating_point_v<A> &&
                                         std::is_floating_point_v<S>,
                                     A, Canon<Usual<A, S>>>,
                  false>;
};
template <class S, class B> struct Join<Ty<S, true>, Ty<B, false>> {
  using type = typename Join<Ty<B, false>, Ty<S, true>>::type;
};
template <class S1, class S2> struct Join<Ty<S1, true>, Ty<S2, true>> {
  using type = Ty<Usual<S1, S2>, true>;
};

template <class T> struct JoinAll;
template <class T> struct JoinAll<Ty<T, false>> { using type = T; };
template <class T> struct JoinAll<Ty<T, true>> { using type = Canon<T>; };
template <class A, class B, class... Rest> struct JoinAllOf {
  using type = typename JoinAllOf<typename Join<A, B>::type, Rest...>::type;
};
template <class A, class B> struct JoinAllOf<A, B> {
  using type = typename JoinAll<typename Join<A, B>::type>::type;
};

template <class... X> struct PromoteT {};
template <class X>
requires Operand<X>
struct PromoteT<X> {
  using type = typename JoinAll<typename TyOf<X>::type>::type;
};
template <class X, class Y, class... Z>
requires(Operand<X> &&Operand<Y> &&
         (Operand<Z> && ...)) struct PromoteT<X, Y, Z...> {
  using type =
      typename JoinAllOf<typename TyOf<X>::type, typename TyOf<Y>::type,
                         typename TyOf<Z>::type...>::type;
};
/// The element type of an elementwise op's result (see the file comment).
template <class... X> using Promote = typename PromoteT<X...>::type;

/// Math functions compute integer and bool arrays in double.
template <class T>
using MathT = std::conditional_t<std::is_floating_point_v<T>, T, double>;
/// Unary minus and abs promote bool to int32_t (C++ integral promotion).
template <class T> using NegT = Canon<decltype(-std::declval<T>())>;

template <class X>
concept IsBool = std::is_same_v<typename TyOf<X>::type, Ty<bool, true>> ||
    std::is_same_v<typename TyOf<X>::type, Ty<bool, false>>;

//===----------------------------------------------------------------------===//
// Broadcasting and the elementwise loop
//===----------------------------------------------------------------------===//

/// An operand's shape and label, or nulls for a scalar.
struct ShapeRef {
  const Shape *S;
  const std::string *L;
};
template <class X> ShapeRef shapeRef(const X &V) {
  if constexpr (ArrayLike<X>)
    return {&as_array(V).shape(), &as_array(V).label()};
  else
    return {nullptr, nullptr};
}

/// NumPy broadcasting of several operands, left to right. On a conflict the
/// later operand is named against the earlier one that fixed the extent:
/// "cannot broadcast w[4] against x[2, 3]".
inline Shape broadcastShapes(const ShapeRef *Ops, size_t N) {
  size_t R = 0;
  for (size_t K = 0; K < N; ++K)
    if (Ops[K].S && Ops[K].S->size() > R)
      R = Ops[K].S->size();
  Shape Out(R, 1);
  std::vector<size_t> Owner(R, N);
  for (size_t K = 0; K < N; ++K) {
    if (!Ops[K].S)
      continue;
    const Shape &S = *Ops[K].S;
    for (size_t I = 0; I < S.size(); ++I) {
      size_t D = R - S.size() + I;
      if (S[I] == 1 || S[I] == Out[D])
        continue;
      if (Out[D] == 1) {
        Out[D] = S[I];
        Owner[D] = K;
        continue;
      }
      const ShapeRef &O = Ops[Owner[D]];
      throw ShapeError("cannot broadcast " + describe(*Ops[K].L, S) +
                       " against " + describe(*O.L, *O.S));
    }
  }
  return Out;
}

/// One-directional broadcast (stores, broadcast_to): From must stretch to
/// exactly To. "cannot broadcast v[2, 3] to y[3]".
inline void checkBroadcastTo(const Shape &From, const std::string &FromL,
                             const Shape &To, const std::string &ToL) {
  bool Ok = From.size() <= To.size();
  for (size_t I = 0; Ok && I < From.size(); ++I) {
    int64_t T = To[To.size() - From.size() + I];
    Ok = From[I] == 1 || From[I] == T;
  }
  if (!Ok)
    throw ShapeError("cannot broadcast " + describe(FromL, From) + " to " +
                     describe(ToL, To));
}

/// Calls Fn(I, Off) for each flat index I of Out, where Off[K] is the flat
/// index of the element of input K (null: a scalar) broadcast to I. The
/// inputs must broadcast to Out.
template <size_t N, class F>
void forEachIndex(const Shape &Out, const std::array<const Shape *, N> &Ins,
                  F &&Fn) {
  const size_t R = Out.size();
  int64_t Total = 1;
  for (int64_t E : Out)
    Total *= E;
  if (Total == 0)
    return;
  std::array<int64_t, N> Off{};
  // Fast path: every input has Out's shape or a single element.
  std::array<bool, N> Full{};
  bool Simple = true;
  for (size_t K = 0; K < N; ++K) {
    if (!Ins[K])
      continue;
    if (Ins[K]->size() == R && *Ins[K] == Out)
      Full[K] = true;
    else if (checkedSize(*Ins[K]) != 1)
      Simple = false;
  }
  if (Simple) {
    for (int64_t I = 0; I < Total; ++I) {
      for (size_t K = 0; K < N; ++K)
        Off[K] = Full[K] ? I : 0;
      Fn(I, Off.data());
    }
    return;
  }
  // General path: an odometer over Out with per-input strides (0 where the
  // input is stretched).
  std::vector<int64_t> St(N * R, 0);
  for (size_t K = 0; K < N; ++K) {
    if (!Ins[K])
      continue;
    const Shape &S = *Ins[K];
    int64_t Stride = 1;
    for (size_t I = S.size(); I-- > 0;) {
      St[K * R + (R - S.size() + I)] = S[I] == 1 ? 0 : Stride;
      Stride *= S[I];
    }
  }
  std::vector<int64_t> Idx(R, 0);
  for (int64_t I = 0; I < Total; ++I) {
    Fn(I, Off.data());
    for (size_t D = R; D-- > 0;) {
      if (++Idx[D] < Out[D]) {
        for (size_t K = 0; K < N; ++K)
          Off[K] += St[K * R + D];
        break;
      }
      for (size_t K = 0; K < N; ++K)
        Off[K] -= St[K * R + D] * (Out[D] - 1);
      Idx[D] = 0;
    }
  }
}

template <class X> const Shape *shapePtr(const X &V) {
  if constexpr (ArrayLike<X>)
    return &as_array(V).shape();
  else
    return nullptr;
}

template <class X> auto elemAt(const X &V, int64_t Off) {
  if constexpr (ArrayLike<X>)
    return as_array(V).data()[Off];
  else
    return V;
}

template <class X> std::string argLabel(const X &V) {
  if constexpr (ArrayLike<X>)
    return as_array(V).label();
  else
    return scalarLabel(V);
}

/// "name(a, b)" from the operands' labels.
template <class... X>
std::string callLabel(const std::string &Name, const X &...Xs) {
  std::string L = Name;
  L += '(';
  bool First = true;
  ((L += First ? "" : ", ", First = false, appendArg(L, argLabel(Xs))), ...);
  L += ')';
  return L;
}

template <class R, class F, class... X, size_t... K>
void mapInto(Array<R> &Out, F &Fn, std::index_sequence<K...>, const X &...Xs) {
  const std::array<const Shape *, sizeof...(X)> Sh{shapePtr(Xs)...};
  R *D = Out.data();
  forEachIndex(Out.shape(), Sh, [&](int64_t I, const int64_t *Off) {
    D[I] = static_cast<R>(Fn(elemAt(Xs, Off[K])...));
  });
}

/// The elementwise engine: broadcasts the operands (arrays and scalars) and
/// applies Fn to the raw elements, giving an Array<R> labelled Name(args).
template <class R, class F, class... X>
Array<R> map(const std::string &Name, F Fn, const X &...Xs) {
  const ShapeRef Refs[] = {shapeRef(Xs)...};
  Array<R> Out(broadcastShapes(Refs, sizeof...(X)), Uninit{},
               callLabel(Name, Xs...));
  mapInto(Out, Fn, std::index_sequence_for<X...>{}, Xs...);
  return Out;
}

/// Axis in [-Rank, Rank) to [0, Rank); ShapeError otherwise.
inline int normalizeAxis(const char *Op, int Axis, int Rank,
                         const std::string &L, const Shape &S) {
  int A = Axis < 0 ? Axis + Rank : Axis;
  if (A < 0 || A >= Rank)
    throw ShapeError(std::string(Op) + ": axis " + std::to_string(Axis) +
                     " is out of range for " + describe(L, S));
  return A;
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Refs: `ref[_]` and WholeProxy
//===----------------------------------------------------------------------===//

namespace detail {
template <class T, int R>
std::string refLabel(const char *Kind, const RefBase<T, R> &Ref) {
  if (Ref.name() && *Ref.name())
    return Ref.name();
  return std::string(Kind) + "<" + typeName<T>() + ", " + std::to_string(R) +
         ">";
}
template <size_t R> Shape toShape(const std::array<int64_t, R> &E) {
  return Shape(E.begin(), E.end());
}

/// The value of a ref's elements: a copy, converted to float for the 16-bit
/// storage types and to int32_t for the 8-bit ones.
template <class T>
Array<ComputeType<T>> readRef(const T *P, Shape S, std::string Label) {
  if constexpr (IsStorage<T>) {
    Array<ComputeType<T>> A(std::move(S), Uninit{}, std::move(Label));
    ComputeType<T> *D = A.data();
    const int64_t N = A.size();
    for (int64_t I = 0; I < N; ++I) {
      if constexpr (IsStorage16<T>)
        D[I] = to_float(P[I]);
      else
        D[I] = static_cast<ComputeType<T>>(P[I]);
    }
    return A;
  } else {
    return Array<T>(std::move(S), P, std::move(Label));
  }
}

/// Calls Fn(I, Off) for each flat row-major index I of shape S, where Off is
/// the element offset of that coordinate under the strides St.
template <class F>
void forEachStrided(const Shape &S, const Shape &St, F &&Fn) {
  const int64_t N = checkedSize(S);
  if (N == 0)
    return;
  const size_t R = S.size();
  std::vector<int64_t> Idx(R, 0);
  int64_t Off = 0;
  for (int64_t I = 0; I < N; ++I) {
    Fn(I, Off);
    for (size_t D = R; D-- > 0;) {
      if (++Idx[D] < S[D]) {
        Off += St[D];
        break;
      }
      Off -= St[D] * (S[D] - 1);
      Idx[D] = 0;
    }
  }
}

/// readRef of a window: the elements at P + the strided offsets.
template <class T>
Array<ComputeType<T>> readStrided(const T *P, Shape S, const Shape &St,
                                  std::string Label) {
  Array<ComputeType<T>> A(std::move(S), Uninit{}, std::move(Label));
  ComputeType<T> *D = A.data();
  forEachStrided(A.shape(), St, [&](int64_t I, int64_t Off) {
    if constexpr (IsStorage16<T>)
      D[I] = to_float(P[Off]);
    else
      D[I] = static_cast<ComputeType<T>>(P[Off]);
  });
  return A;
}

/// A value converted to the element type T of a ref it is stored into. The
/// storage types convert from their compute type, as the compiled code does:
/// the 16-bit types from float (rounding to nearest even), so a double is
/// rounded to float first; the 8-bit types from int32_t (modulo 2^8), so a
/// float or an int64_t becomes an int32_t first.
template <class T, class S> T storeAs(S V) {
  if constexpr (IsStorage16<T>)
    return T(static_cast<float>(V));
  else if constexpr (IsStorage8<T>)
    return static_cast<T>(scalar::convert<int32_t>(V));
  else
    return scalar::convert<T>(V);
}
} // namespace detail

/// What `out[_]` returns for an Out or InOut: an Array<ComputeType<T>>
/// holding a copy of the ref's current content (so it reads like any value,
/// and a local `auto t = out[_];` is a snapshot), plus the ref to store into.
/// A pk::half or pk::bfloat16 ref reads as Array<float>, an int8_t or
/// uint8_t ref as Array<int32_t>.
///
/// - `out[_] = v;` (assignment to the temporary) stores v, an array or a
///   scalar, broadcast one way to the ref's shape and converted to T
///   (detail::storeAs: static_cast, or for the 16-bit types a conversion to
///   float, then to T rounding to nearest even; for the 8-bit types to
///   int32_t, then to T modulo 2^8). ShapeError "cannot
///   broadcast v[...] to out[...]" when it does not fit (also when v's rank
///   exceeds R).
/// - On a named local (`auto t = out[_]; t = t * 2;`) assignment replaces
///   the local's value and stores nothing, like any other local.
/// - `out[_] += v;` (and `-= *= /= %=`) is the store `out[_] = out[_] + v`:
///   the ref's current content combined with v (broadcasting both ways, so a
///   v of higher rank then fails the store's one-way broadcast), stored as
///   above. On an Out that was not written first it reads whatever the
///   caller's memory holds (pkc rejects that kernel). On a named local,
///   `t += v` is `t = t + v` (the free operators below), storing nothing.
template <class T, int R> class WholeProxy : public Array<ComputeType<T>> {
  using Value = Array<ComputeType<T>>;

public:
  WholeProxy(T *P, const typename detail::RefBase<T, R>::Shape &E,
             std::string Label)
      : Value(detail::readRef(P, detail::toShape(E), std::move(Label))),
        Ptr(P) {}
  /// A window's `[_]`: its elements are at P + the strided offsets.
  WholeProxy(T *P, const std::array<int64_t, R> &E,
             const std::array<int64_t, R> &St, std::string Label)
      : Value(detail::readStrided(P, detail::toShape(E), detail::toShape(St),
                                  std::move(Label))),
        Ptr(P), Strides(detail::toShape(St)) {}
  WholeProxy(const WholeProxy &) = default;
  WholeProxy(WholeProxy &&) = default;
  ~WholeProxy() = default;

  /// Value semantics on a local.
  WholeProxy &operator=(const WholeProxy &) & = default;
  WholeProxy &operator=(const Value &V) & {
    Value::operator=(V);
    return *this;
  }

  /// The store `ref[_] = v`.
  template <class V>
  requires detail::Operand<V>
  void operator=(const V &Val) && {
    const int64_t N = this->size();
    if (!Strides.empty()) {
      storeStrided(Val);
      return;
    }
    if constexpr (detail::Scalar<V>) {
      const T X = detail::storeAs<T>(Val);
      for (int64_t I = 0; I < N; ++I)
        Ptr[I] = X;
    } else {
      const auto &A = detail::as_array(Val);
      detail::checkBroadcastTo(A.shape(), A.label(), this->shape(),
                               this->label());
      const auto *Src = A.data();
      T *Dst = Ptr;
      detail::forEachIndex<1>(this->shape(), {&A.shape()},
                              [&](int64_t I, const int64_t *Off) {
                                Dst[I] = detail::storeAs<T>(Src[Off[0]]);
                              });
    }
  }

  /// The compound stores `ref[_] op= v`. The operator is found by ADL when
  /// this is instantiated (it is declared below).
#define PK_COMPOUND_STORE(OP)                                                  \
  template <class V>                                                           \
  requires detail::Operand<V>                                                  \
  void operator OP##=(const V &Val) && {                                       \
    std::move(*this) = static_cast<const Value &>(*this) OP Val;               \
  }
  PK_COMPOUND_STORE(+)
  PK_COMPOUND_STORE(-)
  PK_COMPOUND_STORE(*)
  PK_COMPOUND_STORE(/)
  PK_COMPOUND_STORE(%)
#undef PK_COMPOUND_STORE

private:
  template <class V> void storeStrided(const V &Val) {
    T *Dst = Ptr;
    if constexpr (detail::Scalar<V>) {
      const T X = detail::storeAs<T>(Val);
      detail::forEachStrided(this->shape(), Strides,
                             [&](int64_t, int64_t Off) { Dst[Off] = X; });
    } else {
      const auto &A = detail::as_array(Val);
      detail::checkBroadcastTo(A.shape(), A.label(), this->shape(),
                               this->label());
      // The value broadcast to the window's shape, then stored strided.
      Array<ComputeType<T>> Full(this->shape(), detail::Uninit{},
                                 this->label());
      auto *F = Full.data();
      const auto *Src = A.data();
      detail::forEachIndex<1>(this->shape(), {&A.shape()},
                              [&](int64_t I, const int64_t *Off) {
                                F[I] = static_cast<ComputeType<T>>(Src[Off[0]]);
                              });
      detail::forEachStrided(
          this->shape(), Strides,
          [&](int64_t I, int64_t Off) { Dst[Off] = detail::storeAs<T>(F[I]); });
    }
  }

  T *Ptr;
  std::vector<int64_t> Strides; // empty: contiguous
};

template <class T, int R>
template <class W, class>
Array<ComputeType<T>> In<T, R>::operator[](W) const {
  return detail::readRef(Ptr, detail::toShape(this->shape()),
                         detail::refLabel("In", *this));
}

template <class T, int R, class Self>
template <class W, class>
WholeProxy<T, R> detail::WritableRef<T, R, Self>::operator[](W) const {
  return WholeProxy<T, R>(Ptr, this->shape(),
                          detail::refLabel(Self::kind(), *this));
}

//===----------------------------------------------------------------------===//
// Arithmetic: + - * / % and unary -
//
// Result type: detail::Promote (see the file comment); computed in that type
// with C++ semantics: integer / and % truncate toward zero (-7 / 2 == -3,
// -7 % 3 == -1, unlike NumPy's floor division). Unlike C++, integer division
// and remainder never trap: by zero they give 0, and INT_MIN / -1 wraps to
// INT_MIN (pk::scalar::div and rem, which compiled code calls too); signed
// integer + - * and unary - wrap around instead of being undefined
// (pk::scalar::add, sub, mul, neg). % needs integer (or bool) operands.
// Unary - promotes bool to int32_t.
//===----------------------------------------------------------------------===//

#define PK_ARITH_OP(OP, NAME, FN)                                              \
  template <class A, class B>                                                  \
  requires detail::Mixed<A, B> Array<detail::Promote<A, B>>                    \
  operator OP(const A &X, const B &Y) {                                        \
    using P = detail::Promote<A, B>;                                           \
    return detail::map<P>(                                                     \
        NAME,                                                                  \
        [](auto U, auto V) {                                                   \
          return scalar::FN(static_cast<P>(U), static_cast<P>(V));             \
        },                                                                     \
        X, Y);                                                                 \
  }
PK_ARITH_OP(+, "add", add)
PK_ARITH_OP(-, "sub", sub)
PK_ARITH_OP(*, "mul", mul)
#undef PK_ARITH_OP

template <class A, class B>
requires detail::Mixed<A, B> Array<detail::Promote<A, B>>
operator/(const A &X, const B &Y) {
  using P = detail::Promote<A, B>;
  return detail::map<P>(
      "div",
      [](auto U, auto V) {
        return scalar::div(static_cast<P>(U), static_cast<P>(V));
      },
      X, Y);
}

template <class A, class B>
requires detail::Mixed<A, B> Array<detail::Promote<A, B>>
operator%(const A &X, const B &Y) {
  using P = detail::Promote<A, B>;
  static_assert(std::is_integral_v<P>,
                "pk: % needs integer operands (it would promote to a "
                "floating-point type here)");
  if constexpr (std::is_integral_v<P>)
    return detail::map<P>(
        "rem",
        [](auto U, auto V) {
          return scalar::rem(static_cast<P>(U), static_cast<P>(V));
        },
        X, Y);
  else
    return {};
}

template <class X>
requires detail::ArrayLike<X> Array<detail::NegT<detail::ElemOf<X>>>
operator-(const X &V) {
  using P = detail::NegT<detail::ElemOf<X>>;
  return detail::map<P>(
      "neg", [](auto U) { return scalar::neg(static_cast<P>(U)); }, V);
}

//===----------------------------------------------------------------------===//
// Comparison and logic: < <= > >= == != give Array<bool>, comparing in the
// promoted type (so `x < 0.1` on Array<float> compares in float). & | ! need
// bool operands (bool arrays, or a bool scalar with a bool array).
//===----------------------------------------------------------------------===//

#define PK_COMPARE_OP(OP, NAME)                                                \
  template <class A, class B>                                                  \
  requires detail::Mixed<A, B> Array<bool>                                     \
  operator OP(const A &X, const B &Y) {                                        \
    using P = detail::Promote<A, B>;                                           \
    return detail::map<bool>(                                                  \
        NAME,                                                                  \
        [](auto U, auto V) { return static_cast<P>(U) OP static_cast<P>(V); }, \
        X, Y);                                                                 \
  }
PK_COMPARE_OP(<, "lt")
PK_COMPARE_OP(<=, "le")
PK_COMPARE_OP(>, "gt")
PK_COMPARE_OP(>=, "ge")
PK_COMPARE_OP(==, "eq")
PK_COMPARE_OP(!=, "ne")
#undef PK_COMPARE_OP

template <class A, class B>
requires detail::Mixed<A, B> Array<bool>
operator&(const A &X, const B &Y) {
  static_assert(detail::IsBool<A> && detail::IsBool<B>,
                "pk: & needs bool operands (masks); compare first");
  return detail::map<bool>(
      "and", [](bool U, bool V) { return U && V; }, X, Y);
}

template <class A, class B>
requires detail::Mixed<A, B> Array<bool>
operator|(const A &X, const B &Y) {
  static_assert(detail::IsBool<A> && detail::IsBool<B>,
                "pk: | needs bool operands (masks); compare first");
  return detail::map<bool>(
      "or", [](bool U, bool V) { return U || V; }, X, Y);
}

template <class X>
requires detail::ArrayLike<X> Array<bool>
operator!(const X &V) {
  static_assert(detail::IsBool<X>, "pk: ! needs a bool array (a mask)");
  return detail::map<bool>(
      "not", [](bool U) { return !U; }, V);
}

//===----------------------------------------------------------------------===//
// Elementwise math on arrays and on scalars
//
// Float in, float out (std::exp(float) is expf); integer and bool arrays
// compute in double. abs keeps integer types (bool -> int32_t).
// rsqrt, sigmoid, maximum, minimum, clamp and abs are pk::scalar's
// (NaN-propagating maximum/minimum, like NumPy).
//
// Each function also takes C++ arithmetic scalars alone (`exp(eps)`,
// `rsqrt(cast<float>(n))`) and gives a scalar of the type the array version
// would have as its element type (float -> float, double -> double,
// integers and bool -> double; long double computes as double). These are
// templates taking their operands by value, so that a non-template library
// overload with the same exact match wins (with `using namespace std;` in
// scope, `exp(1.0f)` is std::exp(float), the same function and type) and a
// libm function that needs a conversion loses (`exp(1.0f)` with only <cmath>'s
// global ::exp(double) visible is pk's, a float; `abs(0.5f)` is pk's, not
// ::abs(int)).
//===----------------------------------------------------------------------===//

#define PK_UNARY_MATH(NAME, EXPR)                                              \
  template <class X>                                                           \
  requires detail::ArrayLike<X> Array<detail::MathT<detail::ElemOf<X>>> NAME(  \
      const X &V) {                                                            \
    using M = detail::MathT<detail::ElemOf<X>>;                                \
    return detail::map<M>(                                                     \
        #NAME,                                                                 \
        [](auto U) {                                                           \
          const M A = static_cast<M>(U);                                       \
          return static_cast<M>(EXPR);                                         \
        },                                                                     \
        V);                                                                    \
  }                                                                            \
  template <class S>                                                           \
  requires detail::Scalar<S> detail::MathT<detail::Canon<S>> NAME(S V) {       \
    using M = detail::MathT<detail::Canon<S>>;                                 \
    const M A = static_cast<M>(V);                                             \
    return static_cast<M>(EXPR);                                               \
  }
PK_UNARY_MATH(exp, std::exp(A))
PK_UNARY_MATH(exp2, std::exp2(A))
PK_UNARY_MATH(log, std::log(A))
PK_UNARY_MATH(log2, std::log2(A))
PK_UNARY_MATH(log1p, std::log1p(A))
PK_UNARY_MATH(expm1, std::expm1(A))
PK_UNARY_MATH(sqrt, std::sqrt(A))
PK_UNARY_MATH(rsqrt, scalar::rsqrt(A))
PK_UNARY_MATH(sin, std::sin(A))
PK_UNARY_MATH(cos, std::cos(A))
PK_UNARY_MATH(tanh, std::tanh(A))
PK_UNARY_MATH(erf, std::erf(A))
PK_UNARY_MATH(sigmoid, scalar::sigmoid(A))
PK_UNARY_MATH(floor, std::floor(A))
PK_UNARY_MATH(ceil, std::ceil(A))
#undef PK_UNARY_MATH

template <class X>
requires detail::ArrayLike<X> Array<
    std::conditional_t<std::is_floating_point_v<detail::ElemOf<X>>,
                       detail::ElemOf<X>, detail::NegT<detail::ElemOf<X>>>>
abs(const X &V) {
  using T = detail::ElemOf<X>;
  using M = std::conditional_t<std::is_floating_point_v<T>, T, detail::NegT<T>>;
  return detail::map<M>(
      "abs", [](auto U) { return scalar::abs(static_cast<M>(U)); }, V);
}
template <class S>
requires detail::Scalar<S> std::conditional_t<std::is_floating_point_v<S>,
                                              detail::Canon<S>, detail::NegT<S>>
abs(S V) {
  using M = std::conditional_t<std::is_floating_point_v<S>, detail::Canon<S>,
                               detail::NegT<S>>;
  return scalar::abs(static_cast<M>(V));
}

/// pow(a, b): arrays and scalars; computes in MathT of the promoted type.
template <class A, class B>
requires detail::Mixed<A, B> Array<detail::MathT<detail::Promote<A, B>>>
pow(const A &X, const B &Y) {
  using M = detail::MathT<detail::Promote<A, B>>;
  return detail::map<M>(
      "pow",
      [](auto U, auto V) {
        return static_cast<M>(std::pow(static_cast<M>(U), static_cast<M>(V)));
      },
      X, Y);
}
template <class A, class B>
requires(detail::Scalar<A> &&detail::Scalar<B>)
    detail::MathT<detail::Promote<A, B>> pow(A X, B Y) {
  using M = detail::MathT<detail::Promote<A, B>>;
  return static_cast<M>(std::pow(static_cast<M>(X), static_cast<M>(Y)));
}

/// Elementwise maximum (NaN if either is NaN); arrays and scalars, promoted
/// like arithmetic.
template <class A, class B>
requires detail::Mixed<A, B> Array<detail::Promote<A, B>> maximum(const A &X,
                                                                  const B &Y) {
  using P = detail::Promote<A, B>;
  return detail::map<P>(
      "maximum",
      [](auto U, auto V) {
        return scalar::maximum(static_cast<P>(U), static_cast<P>(V));
      },
      X, Y);
}
template <class A, class B>
requires(detail::Scalar<A> &&detail::Scalar<B>) detail::Promote<A, B> maximum(
    A X, B Y) {
  using P = detail::Promote<A, B>;
  return scalar::maximum(static_cast<P>(X), static_cast<P>(Y));
}

/// Elementwise minimum (NaN if either is NaN).
template <class A, class B>
requires detail::Mixed<A, B> Array<detail::Promote<A, B>> minimum(const A &X,
                                                                  const B &Y) {
  using P = detail::Promote<A, B>;
  return detail::map<P>(
      "minimum",
      [](auto U, auto V) {
        return scalar::minimum(static_cast<P>(U), static_cast<P>(V));
      },
      X, Y);
}
template <class A, class B>
requires(detail::Scalar<A> &&detail::Scalar<B>) detail::Promote<A, B> minimum(
    A X, B Y) {
  using P = detail::Promote<A, B>;
  return scalar::minimum(static_cast<P>(X), static_cast<P>(Y));
}

/// clamp(x, lo, hi) = minimum(maximum(x, lo), hi), all three broadcast and
/// promoted left to right; at least one is an array.
template <class X, class L, class H>
requires(detail::Operand<X> &&detail::Operand<L> &&detail::Operand<H> &&
         (detail::ArrayLike<X> || detail::ArrayLike<L> || detail::ArrayLike<H>))
    Array<detail::Promote<X, L, H>> clamp(const X &V, const L &Lo,
                                          const H &Hi) {
  using P = detail::Promote<X, L, H>;
  return detail::map<P>(
      "clamp",
      [](auto U, auto A, auto B) {
        return scalar::clamp(static_cast<P>(U), static_cast<P>(A),
                             static_cast<P>(B));
      },
      V, Lo, Hi);
}
template <class X, class L, class H>
requires(detail::Scalar<X> &&detail::Scalar<L> &&detail::Scalar<H>)
    detail::Promote<X, L, H> clamp(X V, L Lo, H Hi) {
  using P = detail::Promote<X, L, H>;
  return scalar::clamp(static_cast<P>(V), static_cast<P>(Lo),
                       static_cast<P>(Hi));
}

//===----------------------------------------------------------------------===//
// Selection and conversion
//===----------------------------------------------------------------------===//

/// where(mask, a, b): a where mask is true, else b; mask is a bool array, a
/// and b arrays or scalars; all three broadcast. Result type: Promote<A, B>.
template <class M, class A, class B>
requires(detail::ArrayLike<M> &&detail::Operand<A> &&detail::Operand<B>)
    Array<detail::Promote<A, B>> where(const M &Mask, const A &X, const B &Y) {
  static_assert(std::is_same_v<detail::ElemOf<M>, bool>,
                "pk: where's mask must be a bool array; compare first");
  using P = detail::Promote<A, B>;
  return detail::map<P>(
      "where",
      [](bool C, auto U, auto V) {
        return C ? static_cast<P>(U) : static_cast<P>(V);
      },
      Mask, X, Y);
}

/// cast<U>(v): each element static_cast to U (float to integer truncates
/// toward zero; unlike C++, NaN gives 0 and values beyond U's range saturate
/// to its limits, as CUDA converts: pk::scalar::convert; to bool is `!= 0`).
/// cast<pk::half> and cast<pk::bfloat16> round each element to the 16-bit
/// type (through float, to nearest even) and give a float array: values
/// always compute in float, so this is how a kernel models storing an
/// intermediate in 16 bits. cast<int8_t> and cast<uint8_t> convert each
/// element to int32_t, then wrap it modulo 2^8 to the 8-bit type's range,
/// and give an int32_t array (8-bit values compute in int32_t, as C++
/// promotes them): the value an 8-bit ref holds after storing it.
template <class U, class X>
requires detail::ArrayLike<X> Array<ComputeType<U>> cast(const X &V) {
  static_assert(detail::IsElement<U> || IsStorage<U>,
                "pk: cast<U> needs U in float, double, int32_t, int64_t, "
                "bool, pk::half, pk::bfloat16, int8_t, uint8_t");
  if constexpr (IsStorage16<U>)
    return detail::map<float>(
        std::string("cast<") + detail::typeName<U>() + ">",
        [](auto E) { return static_cast<float>(U(static_cast<float>(E))); }, V);
  else if constexpr (IsStorage8<U>)
    return detail::map<int32_t>(
        std::string("cast<") + detail::typeName<U>() + ">",
        [](auto E) {
          return static_cast<int32_t>(
              static_cast<U>(scalar::convert<int32_t>(E)));
        },
        V);
  else
    return detail::map<U>(
        std::string("cast<") + detail::typeName<U>() + ">",
        [](auto E) { return scalar::convert<U>(E); }, V);
}

/// cast<U>(s) of a C++ arithmetic scalar: a scalar of type U (float for the
/// 16-bit types), converted exactly as the array version converts an element
/// (it is that conversion, of a rank-0 array).
template <class U, class S>
requires detail::Scalar<S> ComputeType<U> cast(S V) {
  Array<detail::Canon<S>> A(detail::Shape{}, detail::scalarLabel(V));
  A.data()[0] = static_cast<detail::Canon<S>>(V);
  return cast<U>(A).item();
}

//===----------------------------------------------------------------------===//
// Compound assignment: `+= -= *= /= %=`
//
// On a local (an Array, or the WholeProxy of `auto t = out[_];`),
// `t op= v` is `t = t op v` converted back to t's element type, as C++ does
// for `int t; t += 0.5;`; nothing is stored. On `out[_]` of an Out/InOut it
// is the store `out[_] = out[_] op v` (WholeProxy's members). On a
// temporary value, such as an In's `x[_]`, it is an error: an In is
// read-only (pkc reports it at the kernel as [pk-write-in]).
//===----------------------------------------------------------------------===//

namespace detail {
template <class> inline constexpr bool DependentFalse = false;
} // namespace detail

#define PK_COMPOUND_OP(OP)                                                     \
  template <class X, class V>                                                  \
  requires(detail::ArrayLike<X> && !std::is_const_v<X> && detail::Operand<V>)  \
      X &                                                                      \
      operator OP##=(X &Local, const V &Val) {                                 \
    using E = detail::ElemOf<X>;                                               \
    auto Res = Local OP Val;                                                   \
    if constexpr (std::is_same_v<detail::ElemOf<decltype(Res)>, E>)            \
      Local = std::move(Res);                                                  \
    else                                                                       \
      Local = cast<E>(Res);                                                    \
    return Local;                                                              \
  }                                                                            \
  template <class T, class V>                                                  \
  requires detail::Operand<V>                                                  \
  void operator OP##=(Array<T> &&, const V &) { PK_COMPOUND_ON_TEMPORARY }
#ifdef __PK_PKC__
// pkc reports the kernel's [pk-write-in] itself, with its note.
#define PK_COMPOUND_ON_TEMPORARY
#else
#define PK_COMPOUND_ON_TEMPORARY                                               \
  static_assert(detail::DependentFalse<V>,                                     \
                "pk: compound assignment to a temporary value: an In's "       \
                "ref[_] is read-only (declare the ref InOut to update it), "   \
                "and other values are updated through a local "                \
                "(auto t = ...; t += v;)");
#endif
PK_COMPOUND_OP(+)
PK_COMPOUND_OP(-)
PK_COMPOUND_OP(*)
PK_COMPOUND_OP(/)
PK_COMPOUND_OP(%)
#undef PK_COMPOUND_OP
#undef PK_COMPOUND_ON_TEMPORARY

//===----------------------------------------------------------------------===//
// Reductions: sum max min mean as f(v) (all axes, rank 0), f(v, axis) and
// f(v, axis, keepdims)
//
// Negative axes count from the end; an out-of-range axis is a ShapeError.
// Types: sum of bool is int64_t, mean of integers/bool is double, otherwise
// the element type. Float sums and every mean accumulate in double (NumPy's
// mean of integers: no wrapping), integer sums in int64_t, wrapping (then
// converted). Empty axis: sum 0, mean NaN, max/min throw
// ShapeError "max of an empty axis: x[3, 0] (axis 1)". max/min propagate
// NaN like NumPy.
//===----------------------------------------------------------------------===//

namespace detail {

enum class Red { Sum, Mean, Max, Min };

template <Red K, class T> struct RedOut { using type = T; };
template <class T> struct RedOut<Red::Sum, T> {
  using type = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
};
template <class T> struct RedOut<Red::Mean, T> { using type = MathT<T>; };
template <Red K, class X> using RedT = typename RedOut<K, ElemOf<X>>::type;

template <Red K, class T>
Array<typename RedOut<K, T>::type> reduce(const Array<T> &A, const int *Axis,
                                          bool Keep) {
  using O = typename RedOut<K, T>::type;
  const char *Name = K == Red::Sum    ? "sum"
                     : K == Red::Mean ? "mean"
                     : K == Red::Max  ? "max"
                                      : "min";
  std::string L = Name;
  L += '(';
  appendArg(L, A.label());
  if (Axis) {
    L += ", " + std::to_string(*Axis);
    if (Keep)
      L += ", keepdims";
  }
  L += ')';

  const Shape &S = A.shape();
  int64_t Outer = 1, N = A.size(), Inner = 1;
  Shape OS;
  if (Axis) {
    const int Ax = normalizeAxis(Name, *Axis, A.rank(), A.label(), S);
    for (int D = 0; D < Ax; ++D)
      Outer *= S[static_cast<size_t>(D)];
    N = S[static_cast<size_t>(Ax)];
    for (size_t D = static_cast<size_t>(Ax) + 1; D < S.size(); ++D)
      Inner *= S[D];
    OS = S;
    if (Keep)
      OS[static_cast<size_t>(Ax)] = 1;
    else
      OS.erase(OS.begin() + Ax);
  }
  if ((K == Red::Max || K == Red::Min) && N == 0)
    throw ShapeError(std::string(Name) +
                     " of an empty axis: " + describe(A.label(), S) +
                     (Axis ? " (axis " + std::to_string(*Axis) + ")" : ""));

  Array<O> Res(std::move(OS), Uninit{}, std::move(L));
  const T *In = A.data();
  O *Out = Res.data();
  if constexpr (K == Red::Sum || K == Red::Mean) {
    // A mean of integers sums in double, as NumPy's and the compiled
    // code's do: an int64 sum would wrap where the mean is in range.
    using Acc =
        std::conditional_t<std::is_floating_point_v<T> || K == Red::Mean,
                           double, int64_t>;
    std::vector<Acc> Ac(static_cast<size_t>(Inner));
    for (int64_t Ou = 0; Ou < Outer; ++Ou) {
      for (Acc &V : Ac)
        V = 0;
      const T *B = In + Ou * N * Inner;
      // Integer sums wrap (scalar::add; language.md §3).
      for (int64_t J = 0; J < N; ++J)
        for (int64_t I = 0; I < Inner; ++I)
          Ac[static_cast<size_t>(I)] = scalar::add(
              Ac[static_cast<size_t>(I)], static_cast<Acc>(B[J * Inner + I]));
      for (int64_t I = 0; I < Inner; ++I) {
        if constexpr (K == Red::Sum)
          Out[Ou * Inner + I] = static_cast<O>(Ac[static_cast<size_t>(I)]);
        else
          Out[Ou * Inner + I] = static_cast<O>(
              N == 0 ? std::numeric_limits<double>::quiet_NaN()
                     : static_cast<double>(Ac[static_cast<size_t>(I)]) /
                           static_cast<double>(N));
      }
    }
  } else {
    for (int64_t Ou = 0; Ou < Outer; ++Ou) {
      const T *B = In + Ou * N * Inner;
      O *Dst = Out + Ou * Inner;
      for (int64_t I = 0; I < Inner; ++I)
        Dst[I] = B[I];
      for (int64_t J = 1; J < N; ++J)
        for (int64_t I = 0; I < Inner; ++I) {
          if constexpr (K == Red::Max)
            Dst[I] = scalar::maximum(Dst[I], B[J * Inner + I]);
          else
            Dst[I] = scalar::minimum(Dst[I], B[J * Inner + I]);
        }
    }
  }
  return Res;
}

} // namespace detail

#define PK_REDUCTION(NAME, KIND)                                               \
  template <class X>                                                           \
  requires detail::ArrayLike<X> Array<detail::RedT<detail::Red::KIND, X>>      \
  NAME(const X &V) {                                                           \
    return detail::reduce<detail::Red::KIND>(detail::as_array(V), nullptr,     \
                                             false);                           \
  }                                                                            \
  template <class X>                                                           \
  requires detail::ArrayLike<X> Array<detail::RedT<detail::Red::KIND, X>>      \
  NAME(const X &V, int Axis) {                                                 \
    return detail::reduce<detail::Red::KIND>(detail::as_array(V), &Axis,       \
                                             false);                           \
  }                                                                            \
  template <class X>                                                           \
  requires detail::ArrayLike<X> Array<detail::RedT<detail::Red::KIND, X>>      \
  NAME(const X &V, int Axis, KeepDims) {                                       \
    return detail::reduce<detail::Red::KIND>(detail::as_array(V), &Axis,       \
                                             true);                            \
  }
PK_REDUCTION(sum, Sum)
PK_REDUCTION(mean, Mean)
PK_REDUCTION(max, Max)
PK_REDUCTION(min, Min)
#undef PK_REDUCTION

//===----------------------------------------------------------------------===//
// Shape: expand_dims, squeeze, broadcast_to; index
//===----------------------------------------------------------------------===//

/// Inserts an extent-1 axis at `axis` in [-(rank+1), rank] (NumPy).
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>> expand_dims(const X &V,
                                                                   int Axis) {
  const auto &A = detail::as_array(V);
  const int Ax = detail::normalizeAxis("expand_dims", Axis, A.rank() + 1,
                                       A.label(), A.shape());
  detail::Shape S = A.shape();
  S.insert(S.begin() + Ax, 1);
  return Array<detail::ElemOf<X>>(std::move(S), A.data(),
                                  detail::callLabel("expand_dims", V, Axis));
}

/// Removes axis `axis`, which must have extent 1.
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>> squeeze(const X &V,
                                                               int Axis) {
  const auto &A = detail::as_array(V);
  const int Ax =
      detail::normalizeAxis("squeeze", Axis, A.rank(), A.label(), A.shape());
  if (A.extent(Ax) != 1)
    throw ShapeError("squeeze: axis " + std::to_string(Axis) + " of " +
                     detail::describe(A.label(), A.shape()) + " has extent " +
                     std::to_string(A.extent(Ax)) + ", not 1");
  detail::Shape S = A.shape();
  S.erase(S.begin() + Ax);
  return Array<detail::ElemOf<X>>(std::move(S), A.data(),
                                  detail::callLabel("squeeze", V, Axis));
}

namespace detail {
template <class W> struct IsRefT : std::false_type {};
template <class T, int R> struct IsRefT<In<T, R>> : std::true_type {};
template <class T, int R> struct IsRefT<Out<T, R>> : std::true_type {};
template <class T, int R> struct IsRefT<InOut<T, R>> : std::true_type {};
/// What broadcast_to takes a target shape from: an array or a ref.
template <class W>
concept ShapeSource = ArrayLike<W> || IsRefT<std::remove_cvref_t<W>>::value;

template <class T, int R> std::string refLabelOf(const In<T, R> &W) {
  return refLabel("In", W);
}
template <class T, int R> std::string refLabelOf(const Out<T, R> &W) {
  return refLabel("Out", W);
}
template <class T, int R> std::string refLabelOf(const InOut<T, R> &W) {
  return refLabel("InOut", W);
}
} // namespace detail

/// broadcast_to(v, w): v (an array or a scalar) stretched to w's shape; w is
/// an array or a ref. One-directional: ShapeError "cannot broadcast v[..] to
/// w[..]" unless v's shape stretches to exactly w's.
template <class X, class W>
requires(detail::Operand<X> &&detail::ShapeSource<W>)
    Array<detail::Promote<X>> broadcast_to(const X &V, const W &Target) {
  using P = detail::Promote<X>;
  detail::Shape To;
  std::string TL;
  if constexpr (detail::ArrayLike<W>) {
    To = detail::as_array(Target).shape();
    TL = detail::as_array(Target).label();
  } else {
    To = detail::toShape(Target.shape());
    TL = detail::refLabelOf(Target);
  }
  if constexpr (detail::ArrayLike<X>)
    detail::checkBroadcastTo(detail::as_array(V).shape(),
                             detail::as_array(V).label(), To, TL);
  std::string L = "broadcast_to(";
  detail::appendArg(L, detail::argLabel(V));
  L += ", ";
  detail::appendArg(L, TL);
  L += ')';
  Array<P> Res(std::move(To), detail::Uninit{}, std::move(L));
  P *D = Res.data();
  detail::forEachIndex<1>(Res.shape(), {detail::shapePtr(V)},
                          [&](int64_t I, const int64_t *Off) {
                            D[I] = static_cast<P>(detail::elemAt(V, Off[0]));
                          });
  return Res;
}

/// index(v, axis): an int64_t array shaped like v whose elements are their
/// coordinate along `axis` (e.g. causal masks: index(s, -1) <= index(s, -2)).
template <class X>
requires detail::ArrayLike<X> Array<int64_t> index(const X &V, int Axis) {
  const auto &A = detail::as_array(V);
  const int Ax =
      detail::normalizeAxis("index", Axis, A.rank(), A.label(), A.shape());
  int64_t Inner = 1;
  for (size_t D = static_cast<size_t>(Ax) + 1; D < A.shape().size(); ++D)
    Inner *= A.shape()[D];
  const int64_t E = A.extent(Ax);
  Array<int64_t> Res(A.shape(), detail::Uninit{},
                     detail::callLabel("index", V, Axis));
  int64_t *D = Res.data();
  for (int64_t I = 0, N = Res.size(); I < N; ++I)
    D[I] = (I / Inner) % E;
  return Res;
}

/// repeat(v, repeats, axis): NumPy's repeat with one count for every
/// element: each element of v repeated `repeats` times along `axis`, in
/// place (repeat of [a, b] by 2 is [a, a, b, b]), so the extent there is
/// multiplied by `repeats`. Quantised weights' scales are the use: one
/// scale per group of `gs` columns, `cast<float>(q[_]) * repeat(scale[_],
/// gs, -1)`. A negative count is a ShapeError; 0 gives an empty axis.
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>>
repeat(const X &V, int64_t Repeats, int Axis) {
  const auto &A = detail::as_array(V);
  const int Ax =
      detail::normalizeAxis("repeat", Axis, A.rank(), A.label(), A.shape());
  if (Repeats < 0)
    throw ShapeError("repeat of " + detail::describe(A.label(), A.shape()) +
                     ": the count " + std::to_string(Repeats) + " is negative");
  int64_t Outer = 1, Inner = 1;
  for (int D = 0; D < Ax; ++D)
    Outer *= A.extent(D);
  for (int D = Ax + 1; D < A.rank(); ++D)
    Inner *= A.extent(D);
  const int64_t E = A.extent(Ax);
  detail::Shape S = A.shape();
  S[static_cast<size_t>(Ax)] = E * Repeats;
  Array<detail::ElemOf<X>> Res(std::move(S), detail::Uninit{},
                               detail::callLabel("repeat", V, Repeats, Axis));
  auto *D = Res.data();
  const auto *Src = A.data();
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t K = 0; K < E * Repeats; ++K)
      for (int64_t In = 0; In < Inner; ++In)
        D[(O * E * Repeats + K) * Inner + In] =
            Src[(O * E + K / Repeats) * Inner + In];
  return Res;
}

//===----------------------------------------------------------------------===//
// Linear algebra: matmul, transpose
//===----------------------------------------------------------------------===//

/// matmul(a, b): [..., M, K] x [..., K, N] -> [..., M, N] for operands of
/// rank >= 2 (NumPy's matmul): the batch axes (all but the last two)
/// broadcast as in NumPy, also a rank-2 operand against a batched one (it is
/// shared by every batch), e.g. grouped-query attention's [B, Hkv, 1, T, D]
/// against [B, Hkv, G, D, T]. Rank < 2 is a ShapeError. Element type:
/// Promote of the two; float products accumulate in double, integer ones in
/// int64_t.
template <class A, class B>
requires(detail::ArrayLike<A> &&detail::ArrayLike<B>)
    Array<detail::Promote<A, B>> matmul(const A &X, const B &Y) {
  using P = detail::Promote<A, B>;
  using Acc = std::conditional_t<std::is_floating_point_v<P>, double, int64_t>;
  const auto &L = detail::as_array(X);
  const auto &R = detail::as_array(Y);
  for (const auto *S : {&L.shape(), &R.shape()})
    if (S->size() < 2)
      throw ShapeError(
          "matmul needs operands of rank 2 or more: " +
          detail::describe(S == &L.shape() ? L.label() : R.label(), *S));
  auto Fail = [&](const char *What, int64_t E1, int64_t E2) {
    throw ShapeError("cannot matmul " + detail::describe(L.label(), L.shape()) +
                     " with " + detail::describe(R.label(), R.shape()) + ": " +
                     What + " extents " + std::to_string(E1) + " and " +
                     std::to_string(E2) + " differ");
  };
  const int LR = L.rank(), RR = R.rank();
  const int64_t M = L.extent(LR - 2), K = L.extent(LR - 1);
  const int64_t K2 = R.extent(RR - 2), N = R.extent(RR - 1);
  if (K != K2)
    Fail("inner", K, K2);
  // The batch axes, right-aligned and broadcast.
  const detail::Shape LB(L.shape().begin(), L.shape().end() - 2);
  const detail::Shape RB(R.shape().begin(), R.shape().end() - 2);
  const size_t NB = std::max(LB.size(), RB.size());
  detail::Shape Batch(NB, 1);
  for (size_t I = 0; I < NB; ++I) {
    const int64_t EL = I + LB.size() >= NB ? LB[I + LB.size() - NB] : 1;
    const int64_t ER = I + RB.size() >= NB ? RB[I + RB.size() - NB] : 1;
    if (EL != ER && EL != 1 && ER != 1)
      Fail("batch", EL, ER);
    Batch[I] = EL == 1 ? ER : EL;
  }
  detail::Shape S = Batch;
  S.push_back(M);
  S.push_back(N);
  Array<P> Res(std::move(S), detail::Uninit{},
               detail::callLabel("matmul", X, Y));
  // Each batch's matrix offset in L and R (in matrices).
  std::vector<int64_t> LOff, ROff;
  detail::forEachIndex<2>(Batch, {&LB, &RB}, [&](int64_t, const int64_t *Off) {
    LOff.push_back(Off[0]);
    ROff.push_back(Off[1]);
  });
  const auto *LD = L.data();
  const auto *RD = R.data();
  P *D = Res.data();
  std::vector<Acc> Row(static_cast<size_t>(N));
  for (size_t Bi = 0; Bi < LOff.size(); ++Bi) {
    const auto *LM = LD + LOff[Bi] * M * K;
    const auto *RM = RD + ROff[Bi] * K * N;
    P *DM = D + static_cast<int64_t>(Bi) * M * N;
    for (int64_t I = 0; I < M; ++I) {
      for (Acc &V : Row)
        V = 0;
      for (int64_t Kk = 0; Kk < K; ++Kk) {
        const Acc AV = static_cast<Acc>(static_cast<P>(LM[I * K + Kk]));
        // Integer products and their sum wrap (language.md §3).
        for (int64_t J = 0; J < N; ++J)
          Row[static_cast<size_t>(J)] = scalar::add(
              Row[static_cast<size_t>(J)],
              scalar::mul(AV,
                          static_cast<Acc>(static_cast<P>(RM[Kk * N + J]))));
      }
      for (int64_t J = 0; J < N; ++J)
        DM[I * N + J] = static_cast<P>(Row[static_cast<size_t>(J)]);
    }
  }
  return Res;
}

/// transpose(v): swaps the last two axes (rank >= 2, else ShapeError).
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>> transpose(const X &V) {
  const auto &A = detail::as_array(V);
  if (A.rank() < 2)
    throw ShapeError("transpose needs rank >= 2: " +
                     detail::describe(A.label(), A.shape()));
  detail::Shape S = A.shape();
  const size_t R = S.size();
  const int64_t M = S[R - 2], N = S[R - 1];
  std::swap(S[R - 2], S[R - 1]);
  Array<detail::ElemOf<X>> Res(std::move(S), detail::Uninit{},
                               detail::callLabel("transpose", V));
  const int64_t Batch = M * N != 0 ? A.size() / (M * N) : 0;
  const auto *In = A.data();
  auto *D = Res.data();
  for (int64_t B = 0; B < Batch; ++B)
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J)
        D[(B * N + J) * M + I] = In[(B * M + I) * N + J];
  return Res;
}

//===----------------------------------------------------------------------===//
// Windows of refs: ref.slice(axis, begin, end)
//===----------------------------------------------------------------------===//

namespace detail {
/// Row-major strides (in elements) of a contiguous ref.
template <size_t R>
std::array<int64_t, R> contiguousStrides(const std::array<int64_t, R> &E) {
  std::array<int64_t, R> St{};
  int64_t S = 1;
  for (size_t I = R; I-- > 0;) {
    St[I] = S;
    S *= E[I];
  }
  return St;
}

/// The checks of a window [Begin, End) along Axis of a ref or window named
/// L with extents S: windows take run-time bounds, never negative, and never
/// clamp. Returns the axis in [0, rank).
inline int checkWindow(int Axis, int64_t Begin, int64_t End,
                       const std::string &L, const Shape &S) {
  const int Ax = normalizeAxis("slice", Axis, static_cast<int>(S.size()), L, S);
  const int64_t E = S[static_cast<size_t>(Ax)];
  if (Begin < 0 || End < 0)
    throw ShapeError("slice: the window [" + std::to_string(Begin) + ", " +
                     std::to_string(End) + ") of axis " + std::to_string(Axis) +
                     " of " + describe(L, S) +
                     " has a negative bound (a window's bounds are never "
                     "negative)");
  if (Begin > End || End > E)
    throw ShapeError("slice: the window [" + std::to_string(Begin) + ", " +
                     std::to_string(End) + ") of axis " + std::to_string(Axis) +
                     " is outside " + describe(L, S) +
                     " (it needs 0 <= begin "
                     "<= end <= " +
                     std::to_string(E) + ")");
  return Ax;
}
} // namespace detail

/// A window of a ref (see pk/ref.h): its parent's pointer moved to the
/// window's first element, the window's extents and the parent's strides.
/// `w[_]` reads it (a copy, like `ref[_]`) and, when Writable, stores into
/// it (broadcast and converted like `ref[_] = v`); `w.slice(...)` narrows it
/// again. A later read sees what an earlier store to an overlapping window of
/// the same ref wrote (eager code works on the memory itself).
template <class T, int R, bool Writable> class Window {
public:
  using element_type = T;
  static constexpr int rank = R;
  using Pointer = std::conditional_t<Writable, T *, const T *>;
  using Extents = std::array<int64_t, R>;

  Window(Pointer P, const Extents &E, const Extents &St, std::string Label)
      : Ptr(P), Ext(E), Str(St), Lbl(std::move(Label)) {}

  const Extents &shape() const { return Ext; }
  int64_t extent(int I) const {
    detail::checkExtentAxis(I, R);
    return Ext[static_cast<size_t>(I)];
  }
  int64_t size() const {
    int64_t N = 1;
    for (int64_t E : Ext)
      N *= E;
    return N;
  }
  const std::string &label() const { return Lbl; }

  /// The window [begin, end) along `axis` of this window.
  Window slice(int Axis, int64_t Begin, int64_t End) const {
    const int Ax =
        detail::checkWindow(Axis, Begin, End, Lbl, detail::toShape(Ext));
    Extents E = Ext;
    E[static_cast<size_t>(Ax)] = End - Begin;
    return Window(Ptr + Begin * Str[static_cast<size_t>(Ax)], E, Str,
                  Lbl + ".slice(" + std::to_string(Axis) + ", " +
                      std::to_string(Begin) + ", " + std::to_string(End) + ")");
  }

  template <class W, class = typename detail::OnlyWhole<W>::type>
  auto operator[](W) const {
    if constexpr (Writable)
      return WholeProxy<T, R>(Ptr, Ext, Str, Lbl);
    else
      return detail::readStrided(Ptr, detail::toShape(Ext),
                                 detail::toShape(Str), Lbl);
  }

private:
  Pointer Ptr;
  Extents Ext;
  Extents Str;
  std::string Lbl;
};

template <class T, int R>
Window<T, R, false> In<T, R>::slice(int Axis, int64_t Begin,
                                    int64_t End) const {
  return Window<T, R, false>(Ptr, this->shape(),
                             detail::contiguousStrides(this->shape()),
                             detail::refLabel("In", *this))
      .slice(Axis, Begin, End);
}

template <class T, int R, class Self>
Window<T, R, true> detail::WritableRef<T, R, Self>::slice(int Axis,
                                                          int64_t Begin,
                                                          int64_t End) const {
  return Window<T, R, true>(Ptr, this->shape(),
                            detail::contiguousStrides(this->shape()),
                            detail::refLabel(Self::kind(), *this))
      .slice(Axis, Begin, End);
}

//===----------------------------------------------------------------------===//
// Views of values: reshape, permute_dims, slice, concat
//
// Eager views copy (a value is immutable, so a copy reads the same as a
// view); pkc turns them into index maps.
//===----------------------------------------------------------------------===//

namespace detail {
inline std::string listLabel(std::initializer_list<int64_t> L) {
  std::string S = "{";
  bool First = true;
  for (int64_t X : L) {
    if (!First)
      S += ", ";
    S += std::to_string(X);
    First = false;
  }
  return S + "}";
}
} // namespace detail

/// reshape(v, {e0, e1, ...}): v's elements in row-major order with the new
/// extents; at most one extent is -1 and is inferred (NumPy). ShapeError on
/// two -1s, another negative extent, or a size that does not match (or, with
/// a -1, does not divide).
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>>
reshape(const X &V, std::initializer_list<int64_t> Extents) {
  const auto &A = detail::as_array(V);
  const std::string Want = detail::listLabel(Extents);
  auto Fail = [&](const std::string &Why) {
    throw ShapeError("reshape: cannot reshape " +
                     detail::describe(A.label(), A.shape()) + " (" +
                     std::to_string(A.size()) + " elements) into " + Want +
                     ": " + Why);
  };
  detail::Shape S(Extents);
  int Infer = -1;
  int64_t Known = 1;
  for (size_t I = 0; I < S.size(); ++I) {
    if (S[I] == -1) {
      if (Infer >= 0)
        Fail("more than one extent is -1");
      Infer = static_cast<int>(I);
    } else if (S[I] < 0) {
      Fail("extent " + std::to_string(S[I]) + " is negative");
    } else {
      Known *= S[I];
    }
  }
  if (Infer >= 0) {
    if (Known == 0 || A.size() % Known != 0)
      Fail(std::to_string(A.size()) + " is not a multiple of " +
           std::to_string(Known));
    S[static_cast<size_t>(Infer)] = A.size() / Known;
  } else if (Known != A.size()) {
    Fail("the sizes differ");
  }
  return Array<detail::ElemOf<X>>(std::move(S), A.data(),
                                  "reshape(" + A.label() + ", " + Want + ")");
}

/// permute_dims(v, {a0, a1, ...}): axis i of the result is axis a_i of v
/// (NumPy's transpose with axes); every axis exactly once, negative ones
/// counting from the end.
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>>
permute_dims(const X &V, std::initializer_list<int> Axes) {
  const auto &A = detail::as_array(V);
  const int R = A.rank();
  std::string AxesL = "{";
  for (int Ax : Axes)
    AxesL += (AxesL.size() > 1 ? ", " : "") + std::to_string(Ax);
  AxesL += "}";
  if (static_cast<int>(Axes.size()) != R)
    throw ShapeError("permute_dims: " + AxesL + " has " +
                     std::to_string(Axes.size()) + " axes for " +
                     detail::describe(A.label(), A.shape()) + " of rank " +
                     std::to_string(R));
  std::vector<int> Perm;
  std::vector<bool> Seen(static_cast<size_t>(R), false);
  for (int Ax : Axes) {
    const int N =
        detail::normalizeAxis("permute_dims", Ax, R, A.label(), A.shape());
    if (Seen[static_cast<size_t>(N)])
      throw ShapeError("permute_dims: axis " + std::to_string(Ax) +
                       " appears twice in " + AxesL + " for " +
                       detail::describe(A.label(), A.shape()));
    Seen[static_cast<size_t>(N)] = true;
    Perm.push_back(N);
  }
  detail::Shape S(static_cast<size_t>(R)), St(static_cast<size_t>(R));
  const detail::Shape &In = A.shape();
  std::vector<int64_t> InSt(static_cast<size_t>(R), 1);
  for (int D = R - 1; D > 0; --D)
    InSt[static_cast<size_t>(D - 1)] =
        InSt[static_cast<size_t>(D)] * In[static_cast<size_t>(D)];
  for (int D = 0; D < R; ++D) {
    S[static_cast<size_t>(D)] = In[static_cast<size_t>(Perm[D])];
    St[static_cast<size_t>(D)] = InSt[static_cast<size_t>(Perm[D])];
  }
  Array<detail::ElemOf<X>> Res(
      S, detail::Uninit{}, "permute_dims(" + A.label() + ", " + AxesL + ")");
  auto *D = Res.data();
  const auto *Src = A.data();
  detail::forEachStrided(S, St,
                         [&](int64_t I, int64_t Off) { D[I] = Src[Off]; });
  return Res;
}

/// slice(v, axis, begin, end): the elements [begin, end) along `axis`.
/// A negative bound counts from the end (pkc accepts that for constants
/// only; a negative run-time bound is a ShapeError there); after that,
/// 0 <= begin <= end <= extent or ShapeError (no clamping, unlike NumPy).
template <class X>
requires detail::ArrayLike<X> Array<detail::ElemOf<X>>
slice(const X &V, int Axis, int64_t Begin, int64_t End) {
  const auto &A = detail::as_array(V);
  const int Ax =
      detail::normalizeAxis("slice", Axis, A.rank(), A.label(), A.shape());
  const int64_t E = A.extent(Ax);
  const int64_t B = Begin < 0 ? Begin + E : Begin;
  const int64_t En = End < 0 ? End + E : End;
  if (B < 0 || B > En || En > E)
    throw ShapeError("slice: [" + std::to_string(Begin) + ", " +
                     std::to_string(End) + ") is outside axis " +
                     std::to_string(Axis) + " of " +
                     detail::describe(A.label(), A.shape()) +
                     " (it needs 0 <= begin <= end <= " + std::to_string(E) +
                     " once negative bounds count from the end)");
  detail::Shape S = A.shape();
  S[static_cast<size_t>(Ax)] = En - B;
  int64_t Inner = 1, Outer = 1;
  for (int D = Ax + 1; D < A.rank(); ++D)
    Inner *= A.extent(D);
  for (int D = 0; D < Ax; ++D)
    Outer *= A.extent(D);
  Array<detail::ElemOf<X>> Res(
      std::move(S), detail::Uninit{},
      "slice(" + A.label() + ", " + std::to_string(Axis) + ", " +
          std::to_string(Begin) + ", " + std::to_string(End) + ")");
  auto *D = Res.data();
  const auto *Src = A.data();
  const int64_t Row = (En - B) * Inner;
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t I = 0; I < Row; ++I)
      D[O * Row + I] = Src[(O * E + B) * Inner + I];
  return Res;
}

/// concat({a, b, ...}, axis): the values one after another along `axis`;
/// every other extent equal (no broadcasting), the same rank >= 1, one
/// element type (cast first to mix them).
template <class T>
Array<T> concat(std::initializer_list<Array<T>> Parts, int Axis) {
  if (Parts.size() == 0)
    throw ShapeError("concat of no values");
  const Array<T> &First = *Parts.begin();
  const int R = First.rank();
  if (R == 0)
    throw ShapeError(
        "concat: " + detail::describe(First.label(), First.shape()) +
        " has rank 0");
  const int Ax =
      detail::normalizeAxis("concat", Axis, R, First.label(), First.shape());
  std::string L = "concat({";
  detail::Shape S = First.shape();
  S[static_cast<size_t>(Ax)] = 0;
  bool Sep = false;
  for (const Array<T> &P : Parts) {
    if (Sep)
      L += ", ";
    detail::appendArg(L, P.label());
    Sep = true;
    bool Ok = P.rank() == R;
    for (int D = 0; Ok && D < R; ++D)
      Ok = D == Ax || P.extent(D) == First.extent(D);
    if (!Ok)
      throw ShapeError("concat: " + detail::describe(P.label(), P.shape()) +
                       " does not fit " +
                       detail::describe(First.label(), First.shape()) +
                       " along axis " + std::to_string(Axis) +
                       " (the other extents must be equal)");
    S[static_cast<size_t>(Ax)] += P.extent(Ax);
  }
  L += "}, " + std::to_string(Axis) + ")";
  int64_t Outer = 1, Inner = 1;
  for (int D = 0; D < Ax; ++D)
    Outer *= S[static_cast<size_t>(D)];
  for (int D = Ax + 1; D < R; ++D)
    Inner *= S[static_cast<size_t>(D)];
  Array<T> Res(S, detail::Uninit{}, std::move(L));
  T *D = Res.data();
  const int64_t Row = S[static_cast<size_t>(Ax)] * Inner;
  int64_t At = 0;
  for (const Array<T> &P : Parts) {
    const int64_t PRow = P.extent(Ax) * Inner;
    for (int64_t O = 0; O < Outer; ++O)
      for (int64_t I = 0; I < PRow; ++I)
        D[O * Row + At + I] = P.data()[O * PRow + I];
    At += PRow;
  }
  return Res;
}

//===----------------------------------------------------------------------===//
// Gathers and arg-reductions: take, argmax, argmin
//===----------------------------------------------------------------------===//

/// take(table, idx, axis): NumPy's take. The result's shape is table's with
/// axis `axis` replaced by idx's shape (a scalar idx removes it); element
/// [.., i.., ..] is table[.., idx[i..], ..]. idx holds int32_t or int64_t;
/// every index must lie in [0, extent) (no wrapping of negatives), else
/// ShapeError naming the table, the index and the extent, before anything is
/// read.
template <class X, class I>
requires(detail::ArrayLike<X> &&
         (detail::ArrayLike<I> ||
          std::is_integral_v<I>)) Array<detail::ElemOf<X>> take(const X &Table,
                                                                const I &Idx,
                                                                int Axis) {
  const auto &A = detail::as_array(Table);
  const int Ax =
      detail::normalizeAxis("take", Axis, A.rank(), A.label(), A.shape());
  const int64_t E = A.extent(Ax);
  detail::Shape IS;
  std::vector<int64_t> Ix;
  std::string IL;
  if constexpr (detail::ArrayLike<I>) {
    using IE = detail::ElemOf<I>;
    static_assert(std::is_same_v<IE, int32_t> || std::is_same_v<IE, int64_t>,
                  "pk: take's indices are int32_t or int64_t");
    const auto &IA = detail::as_array(Idx);
    IS = IA.shape();
    IL = IA.label();
    Ix.assign(IA.data(), IA.data() + IA.size());
  } else {
    static_assert(!std::is_same_v<I, bool>, "pk: take's index is an integer");
    Ix.push_back(static_cast<int64_t>(Idx));
    IL = std::to_string(static_cast<int64_t>(Idx));
  }
  for (size_t K = 0; K < Ix.size(); ++K)
    if (Ix[K] < 0 || Ix[K] >= E)
      throw ShapeError(
          "take: index " + std::to_string(Ix[K]) +
          (Ix.size() > 1 ? " (element " + std::to_string(K) + " of " + IL + ")"
                         : std::string()) +
          " is outside [0, " + std::to_string(E) + ") of axis " +
          std::to_string(Axis) + " of " +
          detail::describe(A.label(), A.shape()));
  detail::Shape S;
  for (int D = 0; D < Ax; ++D)
    S.push_back(A.extent(D));
  S.insert(S.end(), IS.begin(), IS.end());
  for (int D = Ax + 1; D < A.rank(); ++D)
    S.push_back(A.extent(D));
  int64_t Outer = 1, Inner = 1;
  for (int D = 0; D < Ax; ++D)
    Outer *= A.extent(D);
  for (int D = Ax + 1; D < A.rank(); ++D)
    Inner *= A.extent(D);
  std::string L = "take(";
  detail::appendArg(L, A.label());
  L += ", ";
  detail::appendArg(L, IL);
  L += ", " + std::to_string(Axis) + ")";
  Array<detail::ElemOf<X>> Res(std::move(S), detail::Uninit{}, std::move(L));
  auto *D = Res.data();
  const auto *Src = A.data();
  const int64_t NI = static_cast<int64_t>(Ix.size());
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t K = 0; K < NI; ++K)
      for (int64_t In = 0; In < Inner; ++In)
        D[(O * NI + K) * Inner + In] =
            Src[(O * E + Ix[static_cast<size_t>(K)]) * Inner + In];
  return Res;
}

namespace detail {
/// argmax (Max) or argmin along Axis: the first position of the extreme;
/// a NaN counts as more extreme than any number for both (NumPy: the first
/// NaN's position).
template <bool Max, class X>
Array<int64_t> argExtreme(const X &V, int Axis, bool Keep) {
  const char *Name = Max ? "argmax" : "argmin";
  const auto &A = as_array(V);
  const int Ax = normalizeAxis(Name, Axis, A.rank(), A.label(), A.shape());
  const int64_t N = A.extent(Ax);
  if (N == 0)
    throw ShapeError(std::string(Name) +
                     " of an empty axis: " + describe(A.label(), A.shape()) +
                     " (axis " + std::to_string(Axis) + ")");
  int64_t Outer = 1, Inner = 1;
  for (int D = 0; D < Ax; ++D)
    Outer *= A.extent(D);
  for (int D = Ax + 1; D < A.rank(); ++D)
    Inner *= A.extent(D);
  Shape S = A.shape();
  if (Keep)
    S[static_cast<size_t>(Ax)] = 1;
  else
    S.erase(S.begin() + Ax);
  std::string L = std::string(Name) + "(";
  appendArg(L, A.label());
  L += ", " + std::to_string(Axis) + (Keep ? ", keepdims)" : ")");
  Array<int64_t> Res(std::move(S), Uninit{}, std::move(L));
  int64_t *D = Res.data();
  const auto *Src = A.data();
  using E = std::remove_cv_t<std::remove_reference_t<decltype(*Src)>>;
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t In = 0; In < Inner; ++In) {
      const auto *P = Src + O * N * Inner + In;
      int64_t Best = 0;
      E BV = P[0];
      for (int64_t K = 1; K < N; ++K) {
        if constexpr (std::is_floating_point_v<E>)
          if (BV != BV)
            break; // the first NaN wins
        const E Y = P[K * Inner];
        bool Better;
        if constexpr (std::is_floating_point_v<E>)
          Better = Y != Y || (Max ? Y > BV : Y < BV);
        else
          Better = Max ? Y > BV : Y < BV;
        if (Better) {
          Best = K;
          BV = Y;
        }
      }
      D[O * Inner + In] = Best;
    }
  return Res;
}
} // namespace detail

/// argmax(v, axis[, keepdims]): the int64_t position of the first maximum
/// along `axis`; a NaN is the maximum (the first NaN, as NumPy). ShapeError
/// on an empty axis.
template <class X>
requires detail::ArrayLike<X> Array<int64_t> argmax(const X &V, int Axis) {
  return detail::argExtreme<true>(V, Axis, false);
}
template <class X>
requires detail::ArrayLike<X> Array<int64_t> argmax(const X &V, int Axis,
                                                    KeepDims) {
  return detail::argExtreme<true>(V, Axis, true);
}
/// argmin(v, axis[, keepdims]): the position of the first minimum; as in
/// NumPy a NaN wins here too (the first NaN's position).
template <class X>
requires detail::ArrayLike<X> Array<int64_t> argmin(const X &V, int Axis) {
  return detail::argExtreme<false>(V, Axis, false);
}
template <class X>
requires detail::ArrayLike<X> Array<int64_t> argmin(const X &V, int Axis,
                                                    KeepDims) {
  return detail::argExtreme<false>(V, Axis, true);
}

//===----------------------------------------------------------------------===//
// pk::lang: what kernels see with `using namespace pk::lang;`
//===----------------------------------------------------------------------===//

namespace lang {
/// The only subscript: `ref[_]`.
inline constexpr Whole _{};

using ::pk::Array;
using ::pk::In;
using ::pk::InOut;
using ::pk::keepdims;
using ::pk::Out;

using ::pk::operator+;
using ::pk::operator-;
using ::pk::operator*;
using ::pk::operator/;
using ::pk::operator%;
using ::pk::operator<;
using ::pk::operator<=;
using ::pk::operator>;
using ::pk::operator>=;
using ::pk::operator==;
using ::pk::operator!=;
using ::pk::operator&;
using ::pk::operator|;
using ::pk::operator!;
using ::pk::operator+=;
using ::pk::operator-=;
using ::pk::operator*=;
using ::pk::operator/=;
using ::pk::operator%=;

using ::pk::abs;
using ::pk::ceil;
using ::pk::cos;
using ::pk::erf;
using ::pk::exp;
using ::pk::exp2;
using ::pk::expm1;
using ::pk::floor;
using ::pk::log;
using ::pk::log1p;
using ::pk::log2;
using ::pk::pow;
using ::pk::rsqrt;
using ::pk::sigmoid;
using ::pk::sin;
using ::pk::sqrt;
using ::pk::tanh;

using ::pk::clamp;
using ::pk::maximum;
using ::pk::minimum;

using ::pk::cast;
using ::pk::where;

using ::pk::max;
using ::pk::mean;
using ::pk::min;
using ::pk::sum;

using ::pk::broadcast_to;
using ::pk::expand_dims;
using ::pk::index;
using ::pk::repeat;
using ::pk::squeeze;

using ::pk::matmul;
using ::pk::transpose;

using ::pk::concat;
using ::pk::permute_dims;
using ::pk::reshape;
using ::pk::slice;

using ::pk::argmax;
using ::pk::argmin;
using ::pk::take;
} // namespace lang

} // namespace pk

#endif // PK_PK_H
