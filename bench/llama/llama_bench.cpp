//===- llama_bench.cpp - pk-llama's prefill and decode at given shapes ----===//
//
// pk-llama-bench: Google Benchmark of samples/llama's Model on one
// checkpoint, at the shapes issue [llama] names (bench/llama/README.md):
//
//   pk-llama-bench MODEL.bin [--dtype bf16] [--prefill 32,128,512]
//                  [--decode-at 128,1024] [Google Benchmark flags]
//
//   read_bandwidth   a parallel sum over a buffer as large as the weights a
//                    decode step reads (the read bound of this run)
//   prefill/T        one forward call over T tokens at positions 0..T-1
//   decode/P         one forward call of one token at position P, after a
//                    prefill of positions 0..P-1 (each iteration rewrites
//                    position P, so every one attends over P + 1 keys); a P
//                    past the context is its last position
//
// Counters: tok_s (tokens a second), ms_per_layer (a call's time over the
// layers: the embedding and the head are in it), GFLOP_s (prefill: the
// matrix products' and attention's multiply-adds, x2), GB_s (decode: the
// weight bytes a token reads; bench/llama/shapes.sh divides it by
// read_bandwidth's) and GB_s_with_kv (the same with the keys and values its
// attention reads from the cache). Threads come from OMP_NUM_THREADS.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"
#include "model.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

struct Options {
  std::string Checkpoint;
  std::string DType = "fp32";
  std::vector<int64_t> Prefill = {32, 128, 512};
  std::vector<int64_t> DecodeAt = {128, 1024};
};

std::vector<int64_t> parseList(const char *S) {
  std::vector<int64_t> Out;
  for (const char *P = S; *P;) {
    char *End = nullptr;
    const long long V = std::strtoll(P, &End, 10);
    if (End == P || V <= 0) {
      std::fprintf(stderr,
                   "pk-llama-bench: '%s': want positive integers "
                   "separated by commas\n",
                   S);
      std::exit(2);
    }
    Out.push_back(V);
    P = *End == ',' ? End + 1 : End;
  }
  return Out;
}

/// The bytes of weights one token's forward call reads: every layer's
/// matrices, norms and biases, the final norm and the classifier (the
/// embedding table's one row is left out).
int64_t weightBytesPerToken(const llama::Config &C, bool Quantized,
                            int64_t GroupSize, bool Bf16) {
  const int64_t D = C.dim, KV = C.kv_dim(), H = C.hidden_dim;
  const int64_t Matrices =
      C.n_layers * (2 * D * D + 2 * KV * D + 3 * H * D) + C.vocab_size * D;
  const int64_t Vectors =
      C.n_layers * (2 * D) + D + (C.qkv_bias ? C.n_layers * (D + 2 * KV) : 0);
  const int64_t MatrixBytes = Quantized ? Matrices + Matrices / GroupSize * 4
                                        : Matrices * (Bf16 ? 2 : 4);
  return MatrixBytes + Vectors * 4;
}

/// Multiply-adds of a prefill of T tokens from position 0: the products of
/// every layer for T rows, causal attention (T (T + 1) / 2 scores and as
/// many value rows per head, head_size each) and the head's one row.
double prefillMultiplyAdds(const llama::Config &C, int64_t T) {
  const double D = C.dim, KV = C.kv_dim(), H = C.hidden_dim;
  const double Products = T * (2 * D * D + 2 * KV * D + 3 * H * D);
  const double Attention = 2.0 * (T * (T + 1) / 2.0) * D;
  return C.n_layers * (Products + Attention) + C.vocab_size * D;
}

/// The sum of N 64-bit words, the threads taking equal contiguous shares:
/// a read of memory as fast as this CPU's widest vectors allow (target
/// clones, picked at load: a default build's SSE2 adds too slowly to read
/// an L3 or DRAM at its speed).
__attribute__((target_clones("avx512f", "avx2", "default"))) int64_t
sumWords(const int64_t *P, int64_t N) {
  int64_t Total = 0;
#pragma omp parallel reduction(+ : Total)
  {
#ifdef _OPENMP
    const int64_t T = omp_get_thread_num(), Tn = omp_get_num_threads();
#else
    const int64_t T = 0, Tn = 1;
#endif
    const int64_t Begin = N / 64 * T / Tn * 64,
                  End = N / 64 * (T + 1) / Tn * 64;
    int64_t Acc[16] = {};
    for (int64_t I = Begin; I < End; I += 16)
      for (int J = 0; J < 16; ++J)
        Acc[J] += P[I + J];
    for (int64_t A : Acc)
      Total += A;
  }
  return Total;
}

/// A call's time over the layers, in milliseconds: an inverted rate of
/// Calls x layers thousandths.
benchmark::Counter msPerLayer(double Calls, const llama::Config &C) {
  return benchmark::Counter(Calls * double(C.n_layers) * 1e-3,
                            benchmark::Counter::kIsRate |
                                benchmark::Counter::kInvert);
}

std::vector<int32_t> tokens(const llama::Config &C, int64_t N) {
  std::vector<int32_t> Out(N);
  uint32_t X = 12345;
  for (int64_t I = 0; I < N; ++I) {
    X = X * 1664525u + 1013904223u;
    Out[I] = I == 0 ? 1 : int32_t(3 + X % uint32_t(C.vocab_size - 3));
  }
  return Out;
}

} // namespace

int main(int argc, char **argv) {
  Options O;
  std::vector<char *> Rest = {argv[0]};
  for (int I = 1; I < argc; ++I) {
    const std::string A = argv[I];
    auto Value = [&]() -> const char * {
      if (I + 1 >= argc) {
        std::fprintf(stderr, "pk-llama-bench: %s needs a value\n", argv[I]);
        std::exit(2);
      }
      return argv[++I];
    };
    if (A == "--dtype")
      O.DType = Value();
    else if (A == "--prefill")
      O.Prefill = parseList(Value());
    else if (A == "--decode-at")
      O.DecodeAt = parseList(Value());
    else if (A.rfind("--", 0) == 0 || !O.Checkpoint.empty())
      Rest.push_back(argv[I]);
    else
      O.Checkpoint = A;
  }
  if (O.Checkpoint.empty() || (O.DType != "fp32" && O.DType != "bf16")) {
    std::fprintf(stderr,
                 "usage: pk-llama-bench MODEL.bin [--dtype fp32|bf16] "
                 "[--prefill T,...] [--decode-at POS,...] [benchmark flags]\n");
    return 2;
  }
  int RestC = static_cast<int>(Rest.size());
  benchmark::Initialize(&RestC, Rest.data());

  std::unique_ptr<llama::Checkpoint> Ckpt;
  try {
    Ckpt = std::make_unique<llama::Checkpoint>(
        llama::Checkpoint::open(O.Checkpoint));
  } catch (const std::exception &E) {
    std::fprintf(stderr, "pk-llama-bench: %s\n", E.what());
    return 1;
  }
  const llama::Config &C = Ckpt->config();
  const bool Quantized = Ckpt->isQuantized();
  const bool Bf16 = !Quantized && O.DType == "bf16";
  auto M = Quantized
               ? std::make_unique<llama::Model>(C, Ckpt->quantizedWeights())
               : std::make_unique<llama::Model>(C, Ckpt->weights(),
                                                Bf16 ? llama::DType::BF16
                                                     : llama::DType::F32);
  const int64_t GroupSize = Quantized ? Ckpt->quantizedWeights().group_size : 0;
  const int64_t Bytes = weightBytesPerToken(C, Quantized, GroupSize, Bf16);
  benchmark::AddCustomContext("format", Quantized ? "int8" : O.DType);
  benchmark::AddCustomContext("weight_bytes_per_token", std::to_string(Bytes));
  benchmark::AddCustomContext(
      "model", "dim " + std::to_string(C.dim) + ", hidden " +
                   std::to_string(C.hidden_dim) + ", " +
                   std::to_string(C.n_layers) + " layers, " +
                   std::to_string(C.n_heads) + "/" +
                   std::to_string(C.n_kv_heads) + " heads, vocab " +
                   std::to_string(C.vocab_size));

  // The read bound: the weights' byte count read by every thread's share,
  // as a decode step reads its weights (a buffer of its own, so that it
  // sits where the weights would: past the caches or in them alike).
  auto ReadBuffer = std::make_shared<std::vector<int64_t>>(Bytes / 8, 1);
  benchmark::RegisterBenchmark(
      "read_bandwidth",
      [ReadBuffer](benchmark::State &St) {
        const int64_t *P = ReadBuffer->data();
        const int64_t N = static_cast<int64_t>(ReadBuffer->size());
        for (auto _ : St)
          benchmark::DoNotOptimize(sumWords(P, N));
        const double Rate = double(St.iterations()) * double(N / 64 * 64) * 8;
        St.counters["GB_s"] =
            benchmark::Counter(Rate / 1e9, benchmark::Counter::kIsRate);
      })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  llama::Model *Model = M.get();
  for (int64_t T : O.Prefill) {
    if (T > C.seq_len)
      continue;
    benchmark::RegisterBenchmark(
        ("prefill/" + std::to_string(T)).c_str(),
        [Model, C, T](benchmark::State &St) {
          const std::vector<int32_t> Tok = tokens(C, T);
          for (auto _ : St)
            benchmark::DoNotOptimize(Model->forward(Tok, 0).data());
          const double Calls = double(St.iterations());
          St.counters["tok_s"] =
              benchmark::Counter(Calls * T, benchmark::Counter::kIsRate);
          St.counters["GFLOP_s"] =
              benchmark::Counter(Calls * 2 * prefillMultiplyAdds(C, T) / 1e9,
                                 benchmark::Counter::kIsRate);
          St.counters["ms_per_layer"] = msPerLayer(Calls, C);
        })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (int64_t P : O.DecodeAt) {
    // Past the context: its last position (stories110M's 1024 -> 1023).
    P = std::min(P, C.seq_len - 1);
    benchmark::RegisterBenchmark(
        ("decode/" + std::to_string(P)).c_str(),
        [Model, C, P, Bytes](benchmark::State &St) {
          const std::vector<int32_t> Tok = tokens(C, P + 1);
          // Positions 0..P-1 in prompts of at most 512 tokens.
          for (int64_t At = 0; At < P; At += 512) {
            const int64_t N = std::min<int64_t>(512, P - At);
            Model->forward(std::span<const int32_t>(Tok.data() + At, N), At);
          }
          const std::span<const int32_t> One(Tok.data() + P, 1);
          for (auto _ : St)
            benchmark::DoNotOptimize(Model->forward(One, P).data());
          const double Calls = double(St.iterations());
          St.counters["tok_s"] =
              benchmark::Counter(Calls, benchmark::Counter::kIsRate);
          St.counters["GB_s"] = benchmark::Counter(Calls * double(Bytes) / 1e9,
                                                   benchmark::Counter::kIsRate);
          // With the KV cache: every layer reads P + 1 keys and values.
          const double Cache = 2.0 * double(C.n_layers) * double(P + 1) *
                               double(C.kv_dim()) * sizeof(float);
          St.counters["GB_s_with_kv"] =
              benchmark::Counter(Calls * (double(Bytes) + Cache) / 1e9,
                                 benchmark::Counter::kIsRate);
          St.counters["ms_per_layer"] = msPerLayer(Calls, C);
        })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
