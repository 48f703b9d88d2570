//===- BadInputCases.h - Each sample kernel, its refs, a valid shape ------===//
//
// The table of test/e2e/BadInputTest.cpp (compiled CPU kernels against the
// eager reference) and test/cuda_shim/BadInputShimTest.cpp (CUDA launchers
// against the compiled CPU kernels): each sample kernel, its refs with their
// kind and a valid shape, and how to call it eagerly, compiled for the CPU,
// or through its CUDA launcher (only where PK_BAD_INPUT_CUDA is defined and
// the .pk.h of every sample is on the include path).
//
//===----------------------------------------------------------------------===//
#ifndef PK_TEST_BAD_INPUT_CASES_H
#define PK_TEST_BAD_INPUT_CASES_H

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

// Everything here is in an anonymous namespace: other files of the same
// executable include some of the same kernels in their own `namespace eager`.
namespace {
namespace eager {
#include "adam_step/adam_step.cpp"
#include "add_rmsnorm/add_rmsnorm.cpp"
#include "axpby/axpby.cpp"
#include "broadcast_bias/broadcast_bias.cpp"
#include "causal_softmax/causal_softmax.cpp"
#include "column_mean/column_mean.cpp"
#include "fma/fma.cpp"
#include "gelu/gelu.cpp"
#include "layernorm/layernorm.cpp"
#include "logsumexp/logsumexp.cpp"
#include "relu_where/relu_where.cpp"
#include "rmsnorm/rmsnorm.cpp"
#include "rmsnorm_bf16/rmsnorm_bf16.cpp"
#include "softmax/softmax.cpp"
#include "softmax_half/softmax_half.cpp"
#include "sum_all/sum_all.cpp"
} // namespace eager
// linear_bias_gelu defines its own gelu_tanh, as gelu does.
namespace eager_mm {
#include "attention_causal/attention_causal.cpp"
#include "batched_matmul/batched_matmul.cpp"
#include "linear_bias_gelu/linear_bias_gelu.cpp"
#include "matmul/matmul.cpp"
} // namespace eager_mm
} // namespace

#include "common/compiled.h"

#ifdef PK_BAD_INPUT_CUDA
#include "adam_step.pk.h"
#include "add_rmsnorm.pk.h"
#include "attention_causal.pk.h"
#include "axpby.pk.h"
#include "batched_matmul.pk.h"
#include "broadcast_bias.pk.h"
#include "causal_softmax.pk.h"
#include "column_mean.pk.h"
#include "fma.pk.h"
#include "gelu.pk.h"
#include "layernorm.pk.h"
#include "linear_bias_gelu.pk.h"
#include "logsumexp.pk.h"
#include "matmul.pk.h"
#include "relu_where.pk.h"
#include "rmsnorm.pk.h"
#include "rmsnorm_bf16.pk.h"
#include "softmax.pk.h"
#include "softmax_half.pk.h"
#include "sum_all.pk.h"
#endif

namespace {
namespace bad_input {

enum class Kind { In, Out, InOut };
/// The element type of a ref. The buffers hold floats; a 16-bit ref views
/// the first half of its buffer's bytes.
enum class Elem { F32, F16, BF16 };

struct RefSpec {
  std::string Name;
  Kind K;
  std::vector<int64_t> Shape; ///< a valid shape
  Elem E = Elem::F32;
};

/// The refs of one call: a pointer and extents each.
struct Args {
  std::vector<float *> Ptr;
  std::vector<std::vector<int64_t>> Shape;

  template <int R> std::array<int64_t, R> ext(int I) const {
    std::array<int64_t, R> E{};
    EXPECT_EQ(Shape[I].size(), size_t(R));
    for (int A = 0; A < R; ++A)
      E[A] = Shape[I][A];
    return E;
  }
  template <int R, class T = float> pk::In<T, R> in(int I) const {
    return {reinterpret_cast<T *>(Ptr[I]), ext<R>(I)};
  }
  template <int R, class T = float> pk::Out<T, R> out(int I) const {
    return {reinterpret_cast<T *>(Ptr[I]), ext<R>(I)};
  }
  template <int R, class T = float> pk::InOut<T, R> inout(int I) const {
    return {reinterpret_cast<T *>(Ptr[I]), ext<R>(I)};
  }
};

/// Which version of a kernel a call runs.
enum class Version { Eager, Cpu, Cuda };

struct Case {
  std::string Kernel;
  std::vector<RefSpec> Refs;
  std::function<void(const Args &, Version)> Call;
};

#ifdef PK_BAD_INPUT_CUDA
#define PK_CUDA_CALL(FN, ...) pk::cuda::FN(__VA_ARGS__)
#else
#define PK_CUDA_CALL(FN, ...) throw std::logic_error("no CUDA launchers here")
#endif

// The call of one kernel with the refs of `A` (scalars are constants).
#define PK_CALL(NS, FN, ...)                                                   \
  [](const Args &A, Version V) {                                               \
    if (V == Version::Eager)                                                   \
      NS::FN(__VA_ARGS__);                                                     \
    else if (V == Version::Cpu)                                                \
      ::FN(__VA_ARGS__);                                                       \
    else                                                                       \
      PK_CUDA_CALL(FN, __VA_ARGS__);                                           \
  }

inline constexpr Kind I = Kind::In, O = Kind::Out, IO = Kind::InOut;

// Distinct extents for distinct symbolic ones (T = 3, D = 5, K = 4, B = 2),
// so that swapping two of them is caught.
inline const std::vector<Case> &cases() {
  static const std::vector<Case> Cases = {
      {"fma",
       {{"a", I, {5}}, {"b", I, {5}}, {"c", I, {5}}, {"o", O, {5}}},
       PK_CALL(eager, fma, A.in<1>(0), A.in<1>(1), A.in<1>(2), A.out<1>(3))},
      {"axpby",
       {{"x", I, {5}}, {"y", IO, {5}}},
       PK_CALL(eager, axpby, 2.0f, A.in<1>(0), 0.5f, A.inout<1>(1))},
      {"gelu",
       {{"x", I, {5}}, {"y", O, {5}}},
       PK_CALL(eager, gelu, A.in<1>(0), A.out<1>(1))},
      {"relu_where",
       {{"x", I, {5}}, {"y", O, {5}}},
       PK_CALL(eager, relu_where, A.in<1>(0), A.out<1>(1))},
      {"adam_step",
       {{"p", IO, {5}}, {"m", IO, {5}}, {"v", IO, {5}}, {"g", I, {5}}},
       PK_CALL(eager, adam_step, A.inout<1>(0), A.inout<1>(1), A.inout<1>(2),
               A.in<1>(3), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f)},
      {"broadcast_bias",
       {{"x", I, {3, 5}}, {"b", I, {5}}, {"y", O, {3, 5}}},
       PK_CALL(eager, broadcast_bias, A.in<2>(0), A.in<1>(1), A.out<2>(2))},
      {"rmsnorm",
       {{"x", I, {3, 5}}, {"w", I, {5}}, {"y", O, {3, 5}}},
       PK_CALL(eager, rmsnorm, A.in<2>(0), A.in<1>(1), A.out<2>(2), 1e-6f)},
      {"softmax",
       {{"x", I, {3, 5}}, {"y", O, {3, 5}}},
       PK_CALL(eager, softmax, A.in<2>(0), A.out<2>(1))},
      {"layernorm",
       {{"x", I, {3, 5}},
        {"w", I, {5}},
        {"b", I, {5}},
        {"out", O, {3, 5}},
        {"mean_out", O, {3}},
        {"rstd_out", O, {3}}},
       PK_CALL(eager, layernorm, A.in<2>(0), A.in<1>(1), A.in<1>(2),
               A.out<2>(3), A.out<1>(4), A.out<1>(5), 1e-5f)},
      {"logsumexp",
       {{"x", I, {3, 5}}, {"out", O, {3}}},
       PK_CALL(eager, logsumexp, A.in<2>(0), A.out<1>(1))},
      {"causal_softmax",
       {{"scores", I, {3, 5}}, {"probs", O, {3, 5}}},
       PK_CALL(eager, causal_softmax, A.in<2>(0), A.out<2>(1))},
      {"column_mean",
       {{"x", I, {3, 5}}, {"m", O, {5}}},
       PK_CALL(eager, column_mean, A.in<2>(0), A.out<1>(1))},
      {"add_rmsnorm",
       {{"h", IO, {3, 5}}, {"x", I, {3, 5}}, {"w", I, {5}}, {"y", O, {3, 5}}},
       PK_CALL(eager, add_rmsnorm, A.inout<2>(0), A.in<2>(1), A.in<1>(2),
               A.out<2>(3), 1e-6f)},
      {"sum_all",
       {{"x", I, {3, 5}}, {"total", O, {}}},
       PK_CALL(eager, sum_all, A.in<2>(0), A.out<0>(1))},
      {"sgemm",
       {{"a", I, {3, 4}}, {"b", I, {4, 5}}, {"c", O, {3, 5}}},
       PK_CALL(eager_mm, sgemm, A.in<2>(0), A.in<2>(1), A.out<2>(2))},
      {"linear_bias_gelu",
       {{"x", I, {3, 4}}, {"w", I, {5, 4}}, {"b", I, {5}}, {"y", O, {3, 5}}},
       PK_CALL(eager_mm, linear_bias_gelu, A.in<2>(0), A.in<2>(1), A.in<1>(2),
               A.out<2>(3))},
      {"batched_matmul",
       {{"a", I, {2, 3, 4}}, {"b", I, {2, 4, 5}}, {"c", O, {2, 3, 5}}},
       PK_CALL(eager_mm, batched_matmul, A.in<3>(0), A.in<3>(1), A.out<3>(2))},
      {"batched_matmul_shared",
       {{"a", I, {2, 3, 4}}, {"w", I, {4, 5}}, {"c", O, {2, 3, 5}}},
       PK_CALL(eager_mm, batched_matmul_shared, A.in<3>(0), A.in<2>(1),
               A.out<3>(2))},
      {"attention_causal",
       {{"q", I, {2, 3, 4}},
        {"k", I, {2, 3, 4}},
        {"v", I, {2, 3, 4}},
        {"o", O, {2, 3, 4}}},
       PK_CALL(eager_mm, attention_causal, A.in<3>(0), A.in<3>(1), A.in<3>(2),
               A.out<3>(3), 0.5f)},
      {"rmsnorm_bf16",
       {{"x", I, {3, 5}, Elem::BF16},
        {"w", I, {5}, Elem::BF16},
        {"y", O, {3, 5}, Elem::BF16}},
       PK_CALL(eager, rmsnorm_bf16, A.in<2, pk::bfloat16>(0),
               A.in<1, pk::bfloat16>(1), A.out<2, pk::bfloat16>(2), 1e-6f)},
      {"softmax_half",
       {{"x", I, {3, 5}, Elem::F16}, {"y", O, {3, 5}, Elem::F16}},
       PK_CALL(eager, softmax_half, A.in<2, pk::half>(0),
               A.out<2, pk::half>(1))},
  };
  return Cases;
}

inline int64_t product(const std::vector<int64_t> &S) {
  int64_t N = 1;
  for (int64_t E : S)
    N *= E;
  return N;
}

/// The buffers of one call, each large enough for its valid shape with
/// every axis one longer (the largest shape tried), plus one element:
/// inputs hold small values, outputs and InOuts a sentinel pattern.
struct Buffers {
  std::vector<std::vector<float>> Data;

  explicit Buffers(const Case &C) {
    for (size_t R = 0; R < C.Refs.size(); ++R) {
      std::vector<int64_t> Big = C.Refs[R].Shape;
      for (int64_t &E : Big)
        ++E;
      std::vector<float> V(size_t(product(Big) + 1));
      for (size_t J = 0; J < V.size(); ++J)
        V[J] = C.Refs[R].K == Kind::In ? float(int(J % 7) - 3) * 0.25f
                                       : -7777.0f - float(J);
      Data.push_back(std::move(V));
    }
  }
  Args args(const std::vector<std::vector<int64_t>> &Shapes) {
    Args A;
    for (auto &V : Data)
      A.Ptr.push_back(V.data());
    A.Shape = Shapes;
    return A;
  }
  bool sameBytes(const Buffers &Other) const {
    for (size_t R = 0; R < Data.size(); ++R)
      if (std::memcmp(Data[R].data(), Other.Data[R].data(),
                      Data[R].size() * sizeof(float)) != 0)
        return false;
    return true;
  }
};

template <class Fn> void forEachAliasingPair(const Case &C, Fn &&F) {
  const size_t N = C.Refs.size();
  for (size_t W = 0; W < N; ++W) {
    if (C.Refs[W].K == Kind::In)
      continue;
    for (size_t Other = 0; Other < N; ++Other) {
      if (Other == W)
        continue;
      Buffers Bufs(C);
      if (Bufs.Data[Other].size() < Bufs.Data[W].size())
        Bufs.Data[Other].resize(Bufs.Data[W].size(), 0.5f);
      F(W, Other, Bufs);
    }
  }
}

inline std::vector<std::vector<int64_t>> validShapes(const Case &C) {
  std::vector<std::vector<int64_t>> S;
  for (const RefSpec &R : C.Refs)
    S.push_back(R.Shape);
  return S;
}

/// C's valid-shape arguments over Bufs (host Buffers or the shim's device
/// copies) with ref W pointing where ref Other starts.
template <class BufferSet>
Args aliasedArgs(BufferSet &Bufs, const Case &C, size_t W, size_t Other) {
  Args A = Bufs.args(validShapes(C));
  A.Ptr[W] = A.Ptr[Other];
  return A;
}

/// Calls F(W, Other, Bufs) for every written ref W and every other ref of
/// C: Bufs are fresh buffers in which Other's is large enough to hold W's, so
/// the caller can point W at Other (an exact alias) and check the AliasError.

inline std::string shapeStr(const std::vector<int64_t> &S) {
  std::string Out = "[";
  for (size_t I = 0; I < S.size(); ++I)
    Out += (I ? ", " : "") + std::to_string(S[I]);
  return Out + "]";
}

/// What a call raised: "" when it returned, else the kind and message.
struct Outcome {
  bool Shape = false, Alias = false, Other = false;
  std::string Message;
  bool ok() const { return !Shape && !Alias && !Other; }
};

inline Outcome run(const Case &C, const Args &A, Version V) {
  Outcome R;
  try {
    C.Call(A, V);
  } catch (const pk::ShapeError &E) {
    R.Shape = true;
    R.Message = E.what();
  } catch (const pk::AliasError &E) {
    R.Alias = true;
    R.Message = E.what();
  } catch (const std::exception &E) {
    R.Other = true;
    R.Message = E.what();
  }
  return R;
}

} // namespace bad_input
} // namespace

#endif // PK_TEST_BAD_INPUT_CASES_H
