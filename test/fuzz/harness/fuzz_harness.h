//===- fuzz_harness.h - What generated fuzz batches and the driver share --===//
//
// A batch (test/fuzz/gen.py) defines fz::batch(): its kernels, each with its
// parameters (kind, element type, rank, which extents are shared, the range
// of its data) and four entry points that take an fz::Args: the eager
// kernel, the compiled CPU kernel, the CUDA launcher (or null) and the
// shadow, which computes a bound on the rounding error of every output.
// fuzz_main.cpp draws shapes and data, runs them and compares.
//
//===----------------------------------------------------------------------===//
#ifndef PK_FUZZ_HARNESS_H
#define PK_FUZZ_HARNESS_H

#include <pk/ref.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace fz {

/// Element types in memory; F16 and BF16 (pk::half, pk::bfloat16) are the
/// 16-bit storage types of refs, read as float values.
enum class DT : uint8_t { F32, F64, I32, I64, Bool, F16, BF16 };
enum class Kind : uint8_t { In, Out, InOut, Scalar };

/// The largest rank of a generated ref (gen.py's MAX_RANK is at most this).
inline constexpr int kMaxRank = 8;

struct Param {
  const char *Name;
  Kind K;
  DT T;
  int Rank;
  /// Per axis: the index of its extent symbol (A = 0, B = 1, ...), or -1
  /// for an extent that is always 1.
  int Dims[kMaxRank];
  /// The range of the data (uniform), or of a scalar's value.
  double Lo, Hi;
  /// An In ref whose extents may be 1 at run time (NumPy broadcasting).
  bool BcastOk;
  /// Whether the `special` cases may put NaN and infinities in its data
  /// (not where they would reach a fused attention's v operand:
  /// gen.py:special_params).
  bool SpecialOk;
  /// Non-zero: only where the index along axis -SpecialKeyAxis is 0 (a
  /// ref an attention's v is computed from element by element: key 0,
  /// which no mask hides; none where that axis has extent 1 at run time,
  /// since it may then broadcast to every key). Absent in tables written
  /// before 2026-12-07: 0.
  int SpecialKeyAxis = 0;
};

/// The arguments of one call: per parameter a pointer (host or device
/// memory) and extents, or a scalar's value.
class Args {
public:
  struct Slot {
    void *Ptr = nullptr;
    std::vector<int64_t> Ext;
    double F = 0;
    int64_t I = 0;
  };
  std::vector<Slot> S;

  template <class T, int R> pk::In<T, R> in(int I) const {
    return pk::In<T, R>(static_cast<const T *>(S[I].Ptr), shape<R>(I));
  }
  template <class T, int R> pk::Out<T, R> out(int I) const {
    return pk::Out<T, R>(static_cast<T *>(S[I].Ptr), shape<R>(I));
  }
  template <class T, int R> pk::InOut<T, R> inout(int I) const {
    return pk::InOut<T, R>(static_cast<T *>(S[I].Ptr), shape<R>(I));
  }
  template <class T> T scalar(int I) const {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(S[I].F);
    else
      return static_cast<T>(S[I].I);
  }
  template <int R> std::array<int64_t, R> shape(int I) const {
    std::array<int64_t, R> A{};
    for (int D = 0; D < R; ++D)
      A[D] = S[I].Ext[D];
    return A;
  }
};

using Fn = void (*)(Args &);
using ShadowFn = void (*)(Args &, Args &);

struct Kernel {
  const char *Name;
  const char *Policy;
  int Line; ///< of the PK_KERNEL line in the batch's .cpp
  int NumSyms;
  std::vector<Param> Params;
  Fn Eager, Cpu, Cuda; ///< Cuda is null without the CUDA leg
  ShadowFn Shadow;
};

struct Batch {
  const char *Name;
  const char *Seed;
  std::vector<Kernel> Kernels;
};

/// Defined by the generated <batch>_calls.cpp.
const Batch &batch();

} // namespace fz

#endif // PK_FUZZ_HARNESS_H
