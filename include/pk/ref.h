//===- pk/ref.h - Array references shared by eager and generated code -----===//
//
// The parameter types of a pk kernel: In/Out/InOut views over contiguous
// row-major memory, plus pk::ShapeError. This header has no eager operations so
// that generated CPU and CUDA code can include it cheaply.
//
//===----------------------------------------------------------------------===//
#ifndef PK_REF_H
#define PK_REF_H

#include <pk/half.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__clang__) && !defined(__CUDA__)
#define PK_KERNEL [[clang::annotate("pk.kernel")]]
#else
#define PK_KERNEL
#endif

namespace pk {

/// int8_t and uint8_t are storage types too (quantised weights): kernels
/// compute their elements in int32_t, as C++'s integral promotion does, and
/// a store converts back modulo 2^8.
template <> struct ComputeTypeOf<int8_t> { using type = int32_t; };
template <> struct ComputeTypeOf<uint8_t> { using type = int32_t; };

/// True for int8_t and uint8_t.
template <class T>
inline constexpr bool IsStorage8 =
    std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;

/// True for the storage types, whose values compute in another type.
template <class T>
inline constexpr bool IsStorage = !std::is_same_v<ComputeType<T>, T>;

/// Raised when extents do not fit a kernel's shape rules. Compiled kernels and
/// CUDA launchers raise it before any write.
class ShapeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Raised when a ref that a kernel writes shares memory with another ref of
/// the same call (refs may not alias; an in-place update is one InOut).
/// Compiled kernels and CUDA launchers check before any write.
class AliasError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The tag of `ref[_]`, the only legal subscript.
struct Whole {};

namespace detail {
/// The subscript check of `ref[...]`. A plain compiler rejects any index but
/// `_` with a clear message. Under pkc (`__PK_PKC__`) every index is accepted
/// so that the frontend sees `x[0]` and reports it as a kernel diagnostic
/// ([pk-subscript]) at the right place.
template <class W> struct OnlyWhole {
#ifndef __PK_PKC__
  static_assert(std::is_same_v<W, Whole>,
                "pk: only ref[_] (the whole array) can be indexed");
#endif
  using type = void;
};
} // namespace detail

template <class T> class Array;

/// A window of a ref, `ref.slice(axis, begin, end)`: the same kind of ref
/// over [begin, end) along one axis (the others whole), strided over the
/// parent's memory. It exists only inside a kernel body (a kernel takes
/// contiguous refs only); defined in pk.h. `Writable` is false for an In's.
template <class T, int R, bool Writable> class Window;

namespace detail {
/// extent(I) of a ref, window or array of rank `Rank`: I must be in
/// 0..Rank-1 (no counting from the end), else ShapeError.
inline void checkExtentAxis(int I, int Rank) {
  if (I < 0 || I >= Rank)
    throw ShapeError("extent(" + std::to_string(I) + ") of a value of rank " +
                     std::to_string(Rank) + ": the axis must be in 0.." +
                     std::to_string(Rank - 1));
}

template <class T, int R> class RefBase {
public:
  static_assert(R >= 0, "rank must be non-negative");
  using element_type = T;
  static constexpr int rank = R;
  using Shape = std::array<int64_t, R>;

  const Shape &shape() const { return Extents; }
  int64_t extent(int I) const {
    checkExtentAxis(I, R);
    return Extents[static_cast<size_t>(I)];
  }
  int64_t size() const {
    int64_t N = 1;
    for (int64_t E : Extents)
      N *= E;
    return N;
  }
  /// The label used in eager ShapeError messages ("" when unnamed).
  const char *name() const { return Name; }

protected:
  RefBase() = default;
  RefBase(const Shape &E, const char *N) : Extents(E), Name(N) { check(); }
  RefBase(std::initializer_list<int64_t> E, const char *N) : Name(N) {
    if (E.size() != static_cast<size_t>(R))
      throw ShapeError("ref of rank " + std::to_string(R) + " built from " +
                       std::to_string(E.size()) + " extents");
    size_t I = 0;
    for (int64_t X : E)
      Extents[I++] = X;
    check();
  }
  void check() const {
    for (int64_t X : Extents)
      if (X < 0)
        throw ShapeError("negative extent " + std::to_string(X));
  }

  Shape Extents{};
  const char *Name = "";
};
} // namespace detail

/// A read-only view. Writing through it is a compile-time error in pkc.
template <class T, int R = 1> class In : public detail::RefBase<T, R> {
  using Base = detail::RefBase<T, R>;

public:
  In() = default;
  In(const T *P, const typename Base::Shape &E, const char *N = "")
      : Base(E, N), Ptr(P) {}
  In(const T *P, std::initializer_list<int64_t> E, const char *N = "")
      : Base(E, N), Ptr(P) {}
  template <int RR = R, class = std::enable_if_t<RR == 1>>
  In(const std::vector<T> &V, const char *N = "")
      : Base({static_cast<int64_t>(V.size())}, N), Ptr(V.data()) {}
  In named(const char *N) const {
    In C = *this;
    C.Name = N;
    return C;
  }
  const T *data() const { return Ptr; }
  /// Eager read of the whole array (defined in pk.h); 16-bit elements are
  /// read as float, 8-bit ones as int32_t.
  template <class W, class = typename detail::OnlyWhole<W>::type>
  Array<ComputeType<T>> operator[](W) const;
  /// The window [begin, end) along `axis` (defined in pk.h; ShapeError
  /// unless 0 <= begin <= end <= extent).
  Window<T, R, false> slice(int Axis, int64_t Begin, int64_t End) const;

private:
  const T *Ptr = nullptr;
};

/// The proxy that `out[_]` returns in eager mode (defined in pk.h).
template <class T, int R> class WholeProxy;

namespace detail {
/// What Out and InOut share: a view over writable memory. `Self` is the
/// derived ref, so that `named()` keeps its kind; `Kind` names it in eager
/// error messages.
template <class T, int R, class Self> class WritableRef : public RefBase<T, R> {
  using Base = RefBase<T, R>;

public:
  WritableRef() = default;
  WritableRef(T *P, const typename Base::Shape &E, const char *N = "")
      : Base(E, N), Ptr(P) {}
  WritableRef(T *P, std::initializer_list<int64_t> E, const char *N = "")
      : Base(E, N), Ptr(P) {}
  template <int RR = R, class = std::enable_if_t<RR == 1>>
  WritableRef(std::vector<T> &V, const char *N = "")
      : Base({static_cast<int64_t>(V.size())}, N), Ptr(V.data()) {}
  Self named(const char *N) const {
    Self C = static_cast<const Self &>(*this);
    C.Name = N;
    return C;
  }
  T *data() const { return Ptr; }
  /// Eager access to the whole array (defined in pk.h).
  template <class W, class = typename OnlyWhole<W>::type>
  WholeProxy<T, R> operator[](W) const;
  /// The window [begin, end) along `axis`, read and written through
  /// `[_]` (defined in pk.h; ShapeError unless 0 <= begin <= end <= extent).
  Window<T, R, true> slice(int Axis, int64_t Begin, int64_t End) const;

private:
  T *Ptr = nullptr;
};
} // namespace detail

/// Written by the kernel; every Out must be written at least once.
template <class T, int R = 1>
class Out : public detail::WritableRef<T, R, Out<T, R>> {
public:
  using detail::WritableRef<T, R, Out<T, R>>::WritableRef;
  static constexpr const char *kind() { return "Out"; }
};

/// Read, then written: the caller's buffer is both an input and an output.
template <class T, int R = 1>
class InOut : public detail::WritableRef<T, R, InOut<T, R>> {
public:
  using detail::WritableRef<T, R, InOut<T, R>>::WritableRef;
  static constexpr const char *kind() { return "InOut"; }
};

} // namespace pk

#endif // PK_REF_H
