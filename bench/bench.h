//===- bench.h - The pk benchmark harness: buffers, peers, registration ---===//
//
// One kernel of the benchmark is one struct. Its constructor takes a Shape and
// allocates and fills the kernel's arrays; its member functions are the peers:
//
//   struct Fma {
//     Fma(const pkbench::Shape &S);   // allocate + random inputs, once
//     int64_t min_bytes() const;      // every input read + every output
//                                     // written once, in bytes
//     std::vector<const pkbench::Buffer *> outputs() const;  // for the check
//     void pk();                      // the compiled kernel (pkc)
//     void eager();                   // the same source run by <pk/pk.h>
//     void hand();                    // hand-written OpenMP + SIMD loop
//     void eigen();                   // Eigen 3 expression (#if PK_BENCH_EIGEN)
//     void naive();                   // optional: a plain loop nest
//     void openblas();                // optional: cblas_sgemm
//                                     // (#if PK_BENCH_OPENBLAS)
//     void online();                  // optional: a hand-written online-
//                                     // softmax loop (attention)
//     double flops() const;           // optional: floating-point operations
//                                     // per call (the "flops" counter)
//     static constexpr bool EigenThreaded = true;  // optional: eigen() uses
//                                     // OpenMP threads (Eigen's GEMM does)
//     static bool eager_at(const pkbench::Shape &);  // optional: where eager
//                                     // runs (default: numel <=
//                                     // kEagerMaxElems)
//   };
//   const bool FmaRegistered =
//       pkbench::register_kernel<Fma>("fma", pkbench::elementwise_shapes());
//
// register_kernel() registers one Google Benchmark per shape x peer, named
//   <kernel>/<shape>/<peer>/threads:<t>/real_time
// (bench/table.py parses these names). A peer the struct does not define is
// not registered and shows as "n/a" in the table. pk and hand run at every
// thread count (1 and 2 by default, PK_BENCH_THREADS=1,2,4 to change); eager
// and eigen are serial (neither uses threads for these ops) and run at 1
// thread only; eager runs only at shapes up to kEagerMaxElems elements. The
// matmul kernels (kernels_matmul.cpp) add naive and openblas, which run at
// every thread count, as does their eigen (EigenThreaded: Eigen's GEMM is
// parallel with OpenMP); before each benchmark both omp_set_num_threads and
// openblas_set_num_threads get the benchmark's thread count. The attention
// kernel (kernels_attention.cpp) adds online, also at every thread count. A
// kernel with flops() reports a "flops" counter: flops() * iterations / wall
// time, in floating-point operations per second (shown as e.g.
// "flops=95.2G/s").
//
// The struct is constructed once per shape, on first use, and kept for the
// whole run: it is shared by all its peers and thread counts, and Google
// Benchmark calls a benchmark function several times (iteration-count
// estimation, each repetition, interleaved with other benchmarks under
// --benchmark_enable_random_interleaving, which the bench target uses so that
// a burst of load from other processes spoils a few repetitions of many
// benchmarks rather than every repetition of a few). InOut kernels are
// updated in place each iteration: their constants must keep values finite.
//
// Before benchmarking, main() runs every peer once on a fresh instance of
// each kernel's first shape and checks that it agrees with pk (a relative
// 1e-4 tolerance: the peers are not bit-exact, e.g. Eigen's tanh, but a wrong
// formula is caught).
//
//===----------------------------------------------------------------------===//
#ifndef PK_BENCH_BENCH_H
#define PK_BENCH_BENCH_H

#include <benchmark/benchmark.h>

#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if PK_BENCH_EIGEN
#include <Eigen/Core>
#endif
#if PK_BENCH_OPENBLAS
#include <cblas.h> // OpenBLAS's: also declares openblas_set_num_threads
#endif

namespace pkbench {

/// The size below which pk's generated loops stay serial
/// (pk::rt::kParallelMinWork); the hand-written loops use the same policy.
inline constexpr int64_t kParallelMinWork = int64_t(1) << 16;

/// The hand-written peers' loop: `for (int64_t i = 0; i < N; ++i) BODY`,
/// `#pragma omp parallel for simd` from kParallelMinWork elements on, a serial
/// `#pragma omp simd` loop below (pk's policy).
#define PK_BENCH_FOR(i, N, ...)                                                \
  do {                                                                         \
    const int64_t pk_bench_n = (N);                                            \
    if (pk_bench_n >= ::pkbench::kParallelMinWork) {                           \
      _Pragma("omp parallel for simd") for (int64_t i = 0; i < pk_bench_n;     \
                                            ++i) { __VA_ARGS__; }              \
    } else {                                                                   \
      _Pragma("omp simd") for (int64_t i = 0; i < pk_bench_n;                  \
                               ++i) { __VA_ARGS__; }                           \
    }                                                                          \
  } while (0)

/// Eager (pk.h) is slow and serial: only at shapes up to this many elements.
inline constexpr int64_t kEagerMaxElems = int64_t(4) << 20;

/// A 64-byte-aligned float array, uninitialised until filled.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(int64_t N);
  float *data() { return P.get(); }
  const float *data() const { return P.get(); }
  int64_t size() const { return N; }
  float &operator[](int64_t I) { return P.get()[I]; }
  float operator[](int64_t I) const { return P.get()[I]; }

private:
  struct Free {
    void operator()(float *Q) const { std::free(Q); }
  };
  std::unique_ptr<float, Free> P;
  int64_t N = 0;
};

/// N floats uniform in [Lo, Hi), deterministic in Seed.
Buffer random(int64_t N, uint64_t Seed, float Lo = -1.0f, float Hi = 1.0f);
/// N floats equal to V (written in parallel: first touch).
Buffer filled(int64_t N, float V);

/// A kernel's shape: its extents, e.g. {1 << 20} or {2048, 4096}.
struct Shape {
  std::vector<int64_t> Dims;
  int64_t numel() const;
  int64_t operator[](size_t I) const { return Dims[I]; }
  /// "1M", "16M", "128x4096": the label in benchmark names and the table.
  std::string label() const;
};

std::vector<Shape> elementwise_shapes(); ///< {1M}, {16M}
std::vector<Shape> row_shapes();         ///< the [T, D] shapes of the issue
std::vector<int> thread_counts();        ///< {1, 2} or $PK_BENCH_THREADS

#if PK_BENCH_OPENBLAS
/// openblas_set_num_threads(T), and OpenBLAS's worker threads placed like
/// OpenMP's: worker k on the OpenMP place of thread k + 1 (bench_main.cpp).
void openblas_threads(int T);
#endif

#if PK_BENCH_EIGEN
/// A 1-D Eigen array over a buffer.
inline Eigen::Map<Eigen::ArrayXf> vec(Buffer &B) { return {B.data(), B.size()}; }
inline Eigen::Map<const Eigen::ArrayXf> vec(const Buffer &B) {
  return {B.data(), B.size()};
}
using RowMajorArrayXXf =
    Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// A row-major [T, D] Eigen array over a buffer.
inline Eigen::Map<RowMajorArrayXXf> mat(Buffer &B, int64_t T, int64_t D) {
  return {B.data(), T, D};
}
inline Eigen::Map<const RowMajorArrayXXf> mat(const Buffer &B, int64_t T,
                                              int64_t D) {
  return {B.data(), T, D};
}
#endif

// --- registration ---------------------------------------------------------

/// The start-up check of one kernel: its peers against pk at its first shape.
struct Check {
  std::string Name; ///< "fma/1M"
  /// Runs every peer once on fresh instances; returns an error message or "".
  std::function<std::string()> Run;
};
std::vector<Check> &checks();

/// Compares the outputs of a peer with pk's; "" when they agree.
std::string compare(const std::string &What,
                    const std::vector<const Buffer *> &Ref,
                    const std::vector<const Buffer *> &Got);

/// "<kernel>/<shape>" of every registered case, in registration order (the
/// table's row order).
std::vector<std::string> &cases();

namespace detail {
/// The instance of a kernel × shape: empty (Fresh) on first use, then kept.
std::shared_ptr<void> &slot(const std::string &Key, bool &Fresh);

template <class K> K &instance(const std::string &Key, const Shape &S) {
  bool Fresh = false;
  std::shared_ptr<void> &P = slot(Key, Fresh);
  if (Fresh)
    P = std::make_shared<K>(S);
  return *static_cast<K *>(P.get());
}

template <class K>
void add(const std::string &Kernel, const Shape &S, const char *Peer,
         void (K::*Run)(), bool Serial) {
  std::string Key = Kernel + "/" + S.label();
  auto *B = benchmark::RegisterBenchmark(
      (Key + "/" + Peer).c_str(), [Key, S, Run](benchmark::State &St) {
        omp_set_num_threads(static_cast<int>(St.range(0)));
#if PK_BENCH_OPENBLAS
        // OpenBLAS has its own thread pool: as many threads as OpenMP.
        openblas_threads(static_cast<int>(St.range(0)));
#endif
        K &Inst = instance<K>(Key, S);
        for (auto _ : St) {
          (Inst.*Run)();
          benchmark::ClobberMemory();
        }
        St.SetBytesProcessed(static_cast<int64_t>(St.iterations()) *
                             Inst.min_bytes());
        if constexpr (requires { Inst.flops(); })
          St.counters["flops"] = benchmark::Counter(
              Inst.flops(), benchmark::Counter::kIsIterationInvariantRate);
      });
  B->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int T : thread_counts())
    if (!Serial || T == 1)
      B->Arg(T);
}
} // namespace detail

template <class K>
constexpr bool HasEager = requires(K &Inst) { Inst.eager(); };
template <class K> constexpr bool HasHand = requires(K &Inst) { Inst.hand(); };
template <class K>
constexpr bool HasEigen = requires(K &Inst) { Inst.eigen(); };
template <class K>
constexpr bool HasNaive = requires(K &Inst) { Inst.naive(); };
template <class K>
constexpr bool HasOpenblas = requires(K &Inst) { Inst.openblas(); };
template <class K>
constexpr bool HasOnline = requires(K &Inst) { Inst.online(); };
template <class K>
constexpr bool EigenThreaded = requires { requires K::EigenThreaded; };

/// Whether the eager peer runs at S: K::eager_at(S) where K defines it,
/// otherwise up to kEagerMaxElems elements.
template <class K> bool eager_at(const Shape &S) {
  if constexpr (requires { K::eager_at(S); })
    return K::eager_at(S);
  else
    return S.numel() <= kEagerMaxElems;
}

/// Registers K's peers at each shape (see the file comment) and its check.
template <class K>
bool register_kernel(const std::string &Kernel,
                     const std::vector<Shape> &Shapes) {
  for (const Shape &S : Shapes) {
    cases().push_back(Kernel + "/" + S.label());
    detail::add<K>(Kernel, S, "pk", &K::pk, false);
    if constexpr (HasEager<K>)
      if (eager_at<K>(S))
        detail::add<K>(Kernel, S, "eager", &K::eager, true);
    if constexpr (HasHand<K>)
      detail::add<K>(Kernel, S, "hand", &K::hand, false);
    if constexpr (HasNaive<K>)
      detail::add<K>(Kernel, S, "naive", &K::naive, false);
    if constexpr (HasEigen<K>)
      detail::add<K>(Kernel, S, "eigen", &K::eigen, !EigenThreaded<K>);
    if constexpr (HasOpenblas<K>)
      detail::add<K>(Kernel, S, "openblas", &K::openblas, false);
    if constexpr (HasOnline<K>)
      detail::add<K>(Kernel, S, "online", &K::online, false);
  }
  const Shape S = Shapes.front();
  checks().push_back({Kernel + "/" + S.label(), [Kernel, S]() -> std::string {
                        omp_set_num_threads(thread_counts().back());
#if PK_BENCH_OPENBLAS
                        openblas_threads(thread_counts().back());
#endif
                        K Ref(S);
                        Ref.pk();
                        std::string Err;
                        auto Peer = [&](const char *Name, void (K::*Run)()) {
                          K Got(S);
                          (Got.*Run)();
                          if (Err.empty())
                            Err = compare(Kernel + "/" + S.label() + " " + Name,
                                          Ref.outputs(), Got.outputs());
                        };
                        if constexpr (HasEager<K>)
                          Peer("eager", &K::eager);
                        if constexpr (HasHand<K>)
                          Peer("hand", &K::hand);
                        if constexpr (HasNaive<K>)
                          Peer("naive", &K::naive);
                        if constexpr (HasEigen<K>)
                          Peer("eigen", &K::eigen);
                        if constexpr (HasOpenblas<K>)
                          Peer("openblas", &K::openblas);
                        if constexpr (HasOnline<K>)
                          Peer("online", &K::online);
                        return Err;
                      }});
  return true;
}

} // namespace pkbench

#endif // PK_BENCH_BENCH_H
