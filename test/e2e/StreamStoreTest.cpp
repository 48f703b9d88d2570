// Streaming stores (<pk/stream.h>): the row kernels' outputs written through
// chunk buffers and non-temporal stores must be the same bytes as with plain
// stores, for every row length and alignment. Each kernel runs twice on the
// same inputs, compiled code both times: with the threshold at "never" and
// at 0 (stream every streamable output), and the outputs are compared bit
// for bit (the arithmetic is the same; only the stores differ). The shapes
// have at least 65536 elements (the threaded loops, the only ones that
// stream) and rows of lengths that are not multiples of a cache line, so
// rows start at every offset within a line (rows of one element take the
// strided loops, which never stream: a check that that stays so). lit's
// codegen/stream-stores.test checks that the code streams.
//
// The outputs start as NaN (an element neither run writes shows), and the
// plain run is also compared with eager, within ReductionTest.cpp's
// tolerances (16-bit outputs: one ulp of the type, 2^-7 relative for
// bfloat16, 2^-10 for half), so that two equally wrong runs do not pass.
#include "common/sample.h"

#include <pk/pk.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// Other files of this executable include some of these kernels in their own
// `namespace eager`: these stay in this file.
namespace {
namespace eager {
#include "add_rmsnorm/add_rmsnorm.cpp"
#include "causal_softmax/causal_softmax.cpp"
#include "kernels/more_reductions.cpp"
#include "layernorm/layernorm.cpp"
#include "rmsnorm/rmsnorm.cpp"
#include "rmsnorm_bf16/rmsnorm_bf16.cpp"
#include "softmax/softmax.cpp"
#include "softmax_half/softmax_half.cpp"
} // namespace eager
} // namespace

#include "common/compiled.h"

// kernels/more_reductions.cpp: rows of a rank-3 array (two row axes, one
// `omp for collapse(2) nowait`).
void softmax_rank3(pk::In<float, 3> x, pk::Out<float, 3> y);

namespace {

const std::pair<int64_t, int64_t> Shapes[] = {
    {257, 263}, {64, 4099}, {1031, 67}, {16, 4096}, {65536, 1}, {33, 2003}};

/// Each of C's elements within Atol + Rtol |eager| of E's (NaN where E is
/// NaN; bit for bit where both are 0).
template <class T>
void expectNearEager(const std::vector<T> &E, const std::vector<T> &C,
                     double Rtol, double Atol, const std::string &What) {
  ASSERT_EQ(E.size(), C.size()) << What;
  for (size_t I = 0; I < E.size(); ++I) {
    const double X = double(E[I]), Y = double(C[I]);
    const bool Ok =
        Rtol == 0 && Atol == 0
            ? std::memcmp(&E[I], &C[I], sizeof(T)) == 0
            : (std::isnan(X) ? std::isnan(Y)
                             : std::fabs(X - Y) <= Atol + Rtol * std::fabs(X));
    if (!Ok) {
      ADD_FAILURE() << What << ": element " << I << " eager " << X
                    << " compiled " << Y;
      return;
    }
  }
}

/// Runs `Kernel` with streaming off, then on, restoring the threshold; then
/// `AgainstEager` checks the outputs (streaming off) against eager's.
template <class Out>
void expectStreamedSame(const std::string &What,
                        const std::function<void(Out &)> &Kernel,
                        const Out &Fresh,
                        const std::function<void(const Out &)> &AgainstEager) {
  const int64_t Saved = pk::rt::stream_threshold();
  Out Plain = Fresh, Streamed = Fresh;
  pk::rt::set_stream_threshold(pk::rt::kNeverStream);
  Kernel(Plain);
  pk::rt::set_stream_threshold(0);
  Kernel(Streamed);
  pk::rt::set_stream_threshold(Saved);
  ASSERT_EQ(Plain.size(), Streamed.size()) << What;
  for (size_t I = 0; I < Plain.size(); ++I)
    ASSERT_EQ(std::memcmp(Plain[I].data(), Streamed[I].data(),
                          Plain[I].size() * sizeof(Plain[I][0])),
              0)
        << What << ": output " << I << " differs";
  AgainstEager(Plain);
}

std::string name(const char *K, int64_t T, int64_t D) {
  return std::string(K) + " " + std::to_string(T) + "x" + std::to_string(D);
}

template <class T> std::vector<T> to16(const std::vector<float> &F) {
  std::vector<T> V;
  for (float X : F)
    V.push_back(T(X));
  return V;
}

using Floats = std::vector<std::vector<float>>;

std::vector<float> nans(int64_t N) { return std::vector<float>(N, NAN); }

TEST(StreamStores, Rmsnorm) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 1), W = sample::random(D, 2);
    expectStreamedSame<Floats>(
        name("rmsnorm", T, D),
        [&](Floats &O) {
          rmsnorm({X.data(), {T, D}}, W, {O[0].data(), {T, D}}, 1e-6f);
        },
        Floats{nans(T * D)},
        [&](const Floats &O) {
          std::vector<float> E(T * D);
          eager::rmsnorm({X.data(), {T, D}}, W, {E.data(), {T, D}}, 1e-6f);
          expectNearEager(E, O[0], 1e-4, 1e-6, name("rmsnorm", T, D));
        });
  }
}

TEST(StreamStores, SoftmaxAndCausalSoftmax) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 3, -20, 20);
    expectStreamedSame<Floats>(
        name("softmax", T, D),
        [&](Floats &O) { softmax({X.data(), {T, D}}, {O[0].data(), {T, D}}); },
        Floats{nans(T * D)},
        [&](const Floats &O) {
          std::vector<float> E(T * D);
          eager::softmax({X.data(), {T, D}}, {E.data(), {T, D}});
          expectNearEager(E, O[0], 1e-4, 1e-12, name("softmax", T, D));
        });
    expectStreamedSame<Floats>(
        name("causal_softmax", T, D),
        [&](Floats &O) {
          causal_softmax({X.data(), {T, D}}, {O[0].data(), {T, D}});
        },
        Floats{nans(T * D)},
        [&](const Floats &O) {
          std::vector<float> E(T * D);
          eager::causal_softmax({X.data(), {T, D}}, {E.data(), {T, D}});
          expectNearEager(E, O[0], 1e-4, 1e-12, name("causal_softmax", T, D));
        });
  }
}

TEST(StreamStores, LayernormWithRowOutputs) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 4), W = sample::random(D, 5),
         B = sample::random(D, 6);
    expectStreamedSame<Floats>(
        name("layernorm", T, D),
        [&](Floats &O) {
          layernorm({X.data(), {T, D}}, W, B, {O[0].data(), {T, D}}, O[1],
                    O[2], 1e-5f);
        },
        Floats{nans(T * D), nans(T), nans(T)},
        [&](const Floats &O) {
          std::vector<float> E(T * D), ME(T), RE(T);
          eager::layernorm({X.data(), {T, D}}, W, B, {E.data(), {T, D}}, ME, RE,
                           1e-5f);
          const std::string N = name("layernorm", T, D);
          expectNearEager(E, O[0], 1e-3, 1e-4, N + " out");
          expectNearEager(ME, O[1], 1e-4, 1e-6, N + " mean");
          expectNearEager(RE, O[2], 1e-3, 1e-5, N + " rstd");
        });
  }
}

TEST(StreamStores, AddRmsnormStreamsYAndUpdatesH) {
  for (auto [T, D] : Shapes) {
    auto H0 = sample::random(T * D, 7), X = sample::random(T * D, 8),
         W = sample::random(D, 9);
    // O[0] is h (updated in place, never streamed), O[1] is y.
    expectStreamedSame<Floats>(
        name("add_rmsnorm", T, D),
        [&](Floats &O) {
          add_rmsnorm({O[0].data(), {T, D}}, {X.data(), {T, D}}, W,
                      {O[1].data(), {T, D}}, 1e-6f);
        },
        Floats{H0, nans(T * D)},
        [&](const Floats &O) {
          std::vector<float> HE = H0, E(T * D);
          eager::add_rmsnorm({HE.data(), {T, D}}, {X.data(), {T, D}}, W,
                             {E.data(), {T, D}}, 1e-6f);
          const std::string N = name("add_rmsnorm", T, D);
          expectNearEager(HE, O[0], 0, 0, N + " h");
          expectNearEager(E, O[1], 1e-4, 1e-6, N + " y");
        });
  }
}

TEST(StreamStores, SixteenBitOutputs) {
  for (auto [T, D] : Shapes) {
    auto X = sample::random(T * D, 10, -8, 8), W = sample::random(D, 11);
    auto XB = to16<pk::bfloat16>(X), WB = to16<pk::bfloat16>(W);
    auto XH = to16<pk::half>(X);
    using Bf16s = std::vector<std::vector<pk::bfloat16>>;
    using Halves = std::vector<std::vector<pk::half>>;
    expectStreamedSame<Bf16s>(
        name("rmsnorm_bf16", T, D),
        [&](Bf16s &O) {
          rmsnorm_bf16({XB.data(), {T, D}}, WB, {O[0].data(), {T, D}}, 1e-6f);
        },
        Bf16s{to16<pk::bfloat16>(nans(T * D))},
        [&](const Bf16s &O) {
          std::vector<pk::bfloat16> E(T * D);
          eager::rmsnorm_bf16({XB.data(), {T, D}}, WB, {E.data(), {T, D}},
                              1e-6f);
          expectNearEager(E, O[0], 0x1p-7, 1e-6, name("rmsnorm_bf16", T, D));
        });
    expectStreamedSame<Halves>(
        name("softmax_half", T, D),
        [&](Halves &O) {
          softmax_half({XH.data(), {T, D}}, {O[0].data(), {T, D}});
        },
        Halves{to16<pk::half>(nans(T * D))},
        [&](const Halves &O) {
          std::vector<pk::half> E(T * D);
          eager::softmax_half({XH.data(), {T, D}}, {E.data(), {T, D}});
          expectNearEager(E, O[0], 0x1p-10, 1e-7, name("softmax_half", T, D));
        });
  }
}

TEST(StreamStores, TwoRowAxes) {
  for (auto [A, B, C] :
       {std::array<int64_t, 3>{41, 43, 47}, std::array<int64_t, 3>{3, 7, 4099},
        std::array<int64_t, 3>{256, 256, 1}}) {
    auto X = sample::random(A * B * C, 12, -20, 20);
    expectStreamedSame<Floats>(
        "softmax_rank3 " + std::to_string(A) + "x" + std::to_string(B) + "x" +
            std::to_string(C),
        [&](Floats &O) {
          softmax_rank3({X.data(), {A, B, C}}, {O[0].data(), {A, B, C}});
        },
        Floats{nans(A * B * C)},
        [&](const Floats &O) {
          std::vector<float> E(A * B * C);
          eager::softmax_rank3({X.data(), {A, B, C}}, {E.data(), {A, B, C}});
          expectNearEager(E, O[0], 1e-4, 2e-5,
                          "softmax_rank3 " + std::to_string(A) + "x" +
                              std::to_string(B) + "x" + std::to_string(C));
        });
  }
}

} // namespace
