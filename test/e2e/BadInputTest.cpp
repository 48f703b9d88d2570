// Bad input at run time, for every sample kernel compiled for the CPU
// (language.md §5; the CUDA launchers: test/cuda_shim/BadInputShimTest.cpp).
//
// * Wrong extents: each ref of each kernel in turn gets each axis changed to
//   E + 1, E - 1, 1 and 0 while the others keep a valid shape. Where the
//   eager reference raises pk::ShapeError, the compiled kernel must raise it
//   too, before any write: its message starts with "<kernel>: " and names
//   the ref, and every buffer of the call (outputs, InOuts, inputs, and the
//   slack past their extents) keeps its sentinel bytes. Where eager accepts
//   the shapes (a legal broadcast or an empty array), the compiled kernel
//   must accept them too. One message per kernel is pinned exactly.
// * Aliasing: each written ref in turn shares its memory with each other ref
//   of the call (both start at the same address); the compiled kernel raises
//   pk::AliasError naming the pair, before any write.
// * Ranks are compile-time (a ref of another rank does not convert:
//   test/lit/driver/wrong-rank.test); a ref built from the wrong number of
//   extents, or a negative one, raises pk::ShapeError when it is made.
#include "BadInputCases.h"

#include <gtest/gtest.h>

#include <regex>

namespace {

using namespace bad_input;

/// Whether a guard's message points at the ref whose extents are wrong: by
/// its name (also inside an expression: `(x[_] + b[_])[4, 5]`), or by its
/// wrong extents (a value computed from it: softmax's x[4, 5] is reported
/// as `(e / sum(e, -1, keepdims))[4, 5] to y[3, 5]`). One exception:
/// attention's k with a wrong key count shows as the last extent of the
/// scores s or of the probabilities against v's,
/// `(e / sum(e, -1, keepdims))[2, 3, 4] and v[2, 3, 4] (inner extents 4 and
/// 3)` (pinned in MessagesNameKernelRefsAndShapes).
bool namesRefOrShape(const Case &C, size_t Ref,
                     const std::vector<int64_t> &Shape,
                     const std::string &Message) {
  const std::string &Name = C.Refs[Ref].Name;
  if (std::regex_search(Message, std::regex("\\b" + Name + "\\b")))
    return true;
  if (Message.find(shapeStr(Shape)) != std::string::npos)
    return true;
  // k's key count is the scores' (s) last extent.
  return C.Kernel == "attention_causal" && Name == "k" &&
         (Message.find("(e / sum(e, -1, keepdims))[") != std::string::npos ||
          Message.find(" s[") != std::string::npos);
}

TEST(BadInput, ValidShapesRun) {
  // The harness itself: every kernel accepts its valid shapes.
  for (const Case &C : cases()) {
    Buffers B(C);
    Outcome R = run(C, B.args(validShapes(C)), Version::Cpu);
    EXPECT_TRUE(R.ok()) << C.Kernel << ": " << R.Message;
  }
}

TEST(BadInput, WrongExtentsRaiseShapeErrorBeforeAnyWrite) {
  int Rejected = 0;
  for (const Case &C : cases()) {
    for (size_t Ref = 0; Ref < C.Refs.size(); ++Ref) {
      int RejectedForRef = 0;
      const std::vector<int64_t> &Valid = C.Refs[Ref].Shape;
      for (size_t Axis = 0; Axis < Valid.size(); ++Axis) {
        const int64_t E = Valid[Axis];
        std::vector<int64_t> Tried;
        for (int64_t V : {E + 1, E - 1, int64_t(1), int64_t(0)}) {
          if (V == E || V < 0 ||
              std::find(Tried.begin(), Tried.end(), V) != Tried.end())
            continue;
          Tried.push_back(V);
          std::vector<std::vector<int64_t>> Shapes = validShapes(C);
          Shapes[Ref][Axis] = V;
          const std::string What =
              C.Kernel + " with " + C.Refs[Ref].Name + shapeStr(Shapes[Ref]);
          Buffers EagerBufs(C);
          const Outcome EagerOut =
              run(C, EagerBufs.args(Shapes), Version::Eager);
          ASSERT_FALSE(EagerOut.Other || EagerOut.Alias)
              << What << ": " << EagerOut.Message;
          Buffers Bufs(C);
          const Buffers Before(C);
          const Outcome Got = run(C, Bufs.args(Shapes), Version::Cpu);
          if (!EagerOut.Shape) {
            EXPECT_TRUE(Got.ok()) << What << ": eager accepts it, compiled "
                                  << "raised: " << Got.Message;
            continue;
          }
          ++RejectedForRef;
          ++Rejected;
          EXPECT_TRUE(Got.Shape)
              << What << ": no pk::ShapeError (" << Got.Message << ")";
          EXPECT_EQ(Got.Message.rfind(C.Kernel + ": ", 0), 0u)
              << What << ": " << Got.Message;
          EXPECT_TRUE(namesRefOrShape(C, Ref, Shapes[Ref], Got.Message))
              << What << ": the message names neither " << C.Refs[Ref].Name
              << " nor its shape: " << Got.Message;
          EXPECT_TRUE(Bufs.sameBytes(Before))
              << What << ": a buffer was written before the error";
        }
      }
      // Every ref's extents are constrained by another ref's, except
      // sum_all's x (any shape sums to the rank-0 total) and rank 0 refs.
      if (!Valid.empty() && !(C.Kernel == "sum_all"))
        EXPECT_GT(RejectedForRef, 0) << C.Kernel << ": no wrong extent of "
                                     << C.Refs[Ref].Name << " was rejected";
    }
  }
  EXPECT_GT(Rejected, 150);
}

/// One wrong shape per kernel, with its exact message.
TEST(BadInput, MessagesNameKernelRefsAndShapes) {
  struct Pinned {
    const char *Kernel;
    const char *Ref;
    std::vector<int64_t> Shape;
    const char *Message;
  };
  const Pinned Pins[] = {
      {"fma",
       "o",
       {6},
       "fma: cannot broadcast (a[_] * b[_] + c[_])[5] to o[6] (axis -1)"},
      {"fma", "a", {6}, "fma: cannot broadcast b[5] against a[6] (axis -1)"},
      {"axpby",
       "x",
       {6},
       "axpby: cannot broadcast (beta * y[_])[5] against (alpha * x[_])[6] "
       "(axis -1)"},
      {"gelu",
       "x",
       {6},
       "gelu: cannot broadcast (gelu_tanh(x[_]))[6] to y[5] (axis -1)"},
      {"relu_where",
       "x",
       {6},
       "relu_where: cannot broadcast (where(x[_] > 0.0f, x[_], 0.0f))[6] to "
       "y[5] (axis -1)"},
      {"adam_step",
       "p",
       {6},
       "adam_step: cannot broadcast (lr * m_hat / (sqrt(v_hat) + eps))[5] "
       "against p[6] (axis -1)"},
      {"broadcast_bias",
       "x",
       {4, 5},
       "broadcast_bias: cannot broadcast (x[_] + b[_])[4, 5] to y[3, 5] (axis "
       "-2)"},
      {"rmsnorm",
       "w",
       {6},
       "rmsnorm: cannot broadcast w[6] against (x[_] * rsqrt(ms + eps))[3, 5] "
       "(axis -1)"},
      {"rmsnorm",
       "x",
       {4, 5},
       "rmsnorm: cannot broadcast (x[_] * rsqrt(ms + eps) * w[_])[4, 5] to "
       "y[3, 5] (axis -2)"},
      {"softmax",
       "x",
       {4, 5},
       "softmax: cannot broadcast (e / sum(e, -1, keepdims))[4, 5] to y[3, 5] "
       "(axis -2)"},
      {"softmax", "x", {3, 0}, "softmax: max of an empty axis (-1) of x[3, 0]"},
      {"rmsnorm_bf16",
       "w",
       {6},
       "rmsnorm_bf16: cannot broadcast w[6] against (x[_] * rsqrt(ms + "
       "eps))[3, "
       "5] (axis -1)"},
      {"softmax_half",
       "x",
       {4, 5},
       "softmax_half: cannot broadcast (e / sum(e, -1, keepdims))[4, 5] to "
       "y[3, "
       "5] (axis -2)"},
      {"softmax_half",
       "x",
       {3, 0},
       "softmax_half: max of an empty axis (-1) of x[3, 0]"},
      {"layernorm",
       "w",
       {6},
       "layernorm: cannot broadcast w[6] against (d * rstd)[3, 5] (axis -1)"},
      {"layernorm",
       "mean_out",
       {4},
       "layernorm: cannot broadcast (squeeze(mu, -1))[3] to mean_out[4] (axis "
       "-1)"},
      {"logsumexp",
       "out",
       {4},
       "logsumexp: cannot broadcast (squeeze(log(sum(exp(x[_] - m), -1, "
       "ke...)[3] to out[4] (axis -1)"},
      {"causal_softmax",
       "scores",
       {3, 0},
       "causal_softmax: max of an empty axis (-1) of masked[3, 0]"},
      {"column_mean",
       "m",
       {6},
       "column_mean: cannot broadcast (mean(x[_], 0))[5] to m[6] (axis -1)"},
      {"add_rmsnorm",
       "h",
       {4, 5},
       "add_rmsnorm: cannot broadcast x[3, 5] against h[4, 5] (axis -2)"},
      {"add_rmsnorm",
       "w",
       {6},
       "add_rmsnorm: cannot broadcast w[6] against (h[_] * rsqrt(ms + eps))[3, "
       "5] (axis -1)"},
      {"sgemm",
       "b",
       {5, 5},
       "sgemm: matmul: the inner extents differ between a[3, 4] and b[5, 5] "
       "(inner extents 4 and 5)"},
      {"sgemm",
       "a",
       {4, 4},
       "sgemm: cannot broadcast (matmul(a[_], b[_]))[4, 5] to c[3, 5] (axis "
       "-2)"},
      {"linear_bias_gelu",
       "b",
       {6},
       "linear_bias_gelu: cannot broadcast b[6] against (matmul(x[_], "
       "transpose(w[_])))[3, 5] (axis -1)"},
      {"batched_matmul",
       "a",
       {3, 3, 4},
       "batched_matmul: cannot broadcast b[2, 4, 5] against a[3, 3, 4] (axis "
       "-3)"},
      {"batched_matmul_shared",
       "w",
       {5, 5},
       "batched_matmul_shared: matmul: the inner extents differ between a[2, "
       "3, 4] and w[5, 5] (inner extents 4 and 5)"},
      {"attention_causal",
       "v",
       {3, 3, 4},
       "attention_causal: cannot broadcast v[3, 3, 4] against (e / sum(e, -1, "
       "keepdims))[2, 3, 3] (axis -3)"},
      {"attention_causal",
       "k",
       {2, 4, 4},
       "attention_causal: matmul: the inner extents differ between (e / sum(e, "
       "-1, keepdims))[2, 3, 4] and v[2, 3, 4] (inner extents 4 and 3)"},
  };
  std::vector<std::string> Seen;
  for (const Pinned &P : Pins) {
    const Case *C = nullptr;
    for (const Case &X : cases())
      if (X.Kernel == P.Kernel)
        C = &X;
    ASSERT_NE(C, nullptr) << P.Kernel;
    Seen.push_back(P.Kernel);
    std::vector<std::vector<int64_t>> Shapes = validShapes(*C);
    for (size_t R = 0; R < C->Refs.size(); ++R)
      if (C->Refs[R].Name == P.Ref)
        Shapes[R] = P.Shape;
    Buffers B(*C);
    const Outcome Got = run(*C, B.args(Shapes), Version::Cpu);
    EXPECT_TRUE(Got.Shape) << P.Kernel;
    EXPECT_EQ(Got.Message, P.Message);
    EXPECT_TRUE(B.sameBytes(Buffers(*C)))
        << P.Kernel << ": a buffer was written";
  }
  for (const Case &C : cases())
    if (C.Kernel != "sum_all") // takes any shape
      EXPECT_NE(std::find(Seen.begin(), Seen.end(), C.Kernel), Seen.end())
          << C.Kernel << " has no pinned message";
}

TEST(BadInput, AliasingRefsRaiseAliasErrorBeforeAnyWrite) {
  int Checked = 0;
  for (const Case &C : cases())
    forEachAliasingPair(C, [&](size_t W, size_t Other, Buffers &Bufs) {
      // W starts where Other starts; the buffer holds either.
      const Args A = aliasedArgs(Bufs, C, W, Other);
      const Buffers Before = Bufs;
      const Outcome Got = run(C, A, Version::Cpu);
      // Reported as "<first written of the two> overlaps <the other>".
      size_t First = std::min(W, Other), Second = std::max(W, Other);
      if (C.Refs[First].K == Kind::In)
        std::swap(First, Second);
      const std::string Want =
          C.Kernel + ": " + C.Refs[First].Name + " overlaps " +
          C.Refs[Second].Name +
          " in memory; refs may not alias (an in-place update is one "
          "InOut ref)";
      const std::string What =
          C.Kernel + ": " + C.Refs[W].Name + " at " + C.Refs[Other].Name;
      EXPECT_TRUE(Got.Alias) << What << ": " << Got.Message;
      EXPECT_EQ(Got.Message, Want) << What;
      EXPECT_TRUE(Bufs.sameBytes(Before)) << What << ": a buffer was written";
      ++Checked;
    });
  EXPECT_GT(Checked, 50);
}

TEST(BadInput, RefsOfTheWrongRankOrNegativeExtentsAreRefusedWhenMade) {
  std::vector<float> X(16);
  auto Message = [](const std::function<void()> &Make) -> std::string {
    try {
      Make();
    } catch (const pk::ShapeError &E) {
      return E.what();
    }
    return "(no pk::ShapeError)";
  };
  EXPECT_EQ(Message([&] { pk::In<float, 2> R(X.data(), {16}); }),
            "ref of rank 2 built from 1 extents");
  EXPECT_EQ(Message([&] {
              pk::Out<float, 2> R(X.data(), {2, 2, 4});
            }),
            "ref of rank 2 built from 3 extents");
  EXPECT_EQ(Message([&] { pk::InOut<float, 1> R(X.data(), {-1}); }),
            "negative extent -1");
  // Through a kernel's parameter: the ref is made before the call.
  std::vector<float> Y(16, -1.0f);
  EXPECT_EQ(Message([&] {
              softmax({X.data(), {4, 4}}, {Y.data(), {16}});
            }),
            "ref of rank 2 built from 1 extents");
  EXPECT_EQ(Y, std::vector<float>(16, -1.0f));
}

} // namespace
