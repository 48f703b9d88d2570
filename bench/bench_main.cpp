//===- bench_main.cpp - pk-bench: main(), the harness, the STREAM triad ---===//
//
// The kernels register themselves (kernels_*.cpp, see bench.h). This file
// holds the shared pieces, the STREAM triad measured in the same run as the
// bandwidth reference, and main(): it records the machine in the JSON
// context, checks every peer against pk, then runs the benchmarks.
//
//===----------------------------------------------------------------------===//
#include "bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <malloc.h>
#include <map>
#include <sstream>
#if PK_BENCH_OPENBLAS
#include <sched.h>
#include <sys/sysinfo.h>
// Only OpenBLAS's pthreads build has it (openblas-openmp's prints a warning
// and fails; the serial build has no threads): weak, checked before use.
#pragma weak openblas_setaffinity
#endif

namespace pkbench {

// --- buffers ----------------------------------------------------------------

Buffer::Buffer(int64_t Count) : N(Count) {
  size_t Bytes = static_cast<size_t>(std::max<int64_t>(Count, 1)) * sizeof(float);
  Bytes = (Bytes + 63) / 64 * 64; // aligned_alloc needs a multiple of 64
  P.reset(static_cast<float *>(std::aligned_alloc(64, Bytes)));
  if (!P) {
    std::fprintf(stderr, "pk-bench: out of memory (%zu bytes)\n", Bytes);
    std::abort();
  }
}

Buffer random(int64_t N, uint64_t Seed, float Lo, float Hi) {
  Buffer B(N);
  // splitmix64, 24 bits per float: fast enough for 16M-element inputs.
  uint64_t X = Seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t I = 0; I < N; ++I) {
    uint64_t Z = (X += 0x9E3779B97F4A7C15ull);
    Z = (Z ^ (Z >> 30)) * 0xBF58476D1CE4E5B9ull;
    Z = (Z ^ (Z >> 27)) * 0x94D049BB133111EBull;
    Z ^= Z >> 31;
    float U = static_cast<float>(Z >> 40) * (1.0f / 16777216.0f);
    B[I] = Lo + (Hi - Lo) * U;
  }
  return B;
}

Buffer filled(int64_t N, float V) {
  Buffer B(N);
  float *P = B.data();
#pragma omp parallel for simd
  for (int64_t I = 0; I < N; ++I)
    P[I] = V;
  return B;
}

// --- shapes and threads -----------------------------------------------------

int64_t Shape::numel() const {
  int64_t N = 1;
  for (int64_t D : Dims)
    N *= D;
  return N;
}

std::string Shape::label() const {
  if (Dims.size() == 1) {
    int64_t N = Dims[0];
    if (N >= (1 << 20) && N % (1 << 20) == 0)
      return std::to_string(N >> 20) + "M";
    if (N >= (1 << 10) && N % (1 << 10) == 0)
      return std::to_string(N >> 10) + "K";
    return std::to_string(N);
  }
  std::string L;
  for (int64_t D : Dims)
    L += (L.empty() ? "" : "x") + std::to_string(D);
  return L;
}

std::vector<Shape> elementwise_shapes() {
  return {{{int64_t(1) << 20}}, {{int64_t(16) << 20}}};
}

std::vector<Shape> row_shapes() {
  return {{{1, 4096}}, {{128, 4096}}, {{2048, 4096}}, {{4096, 768}}};
}

std::vector<int> thread_counts() {
  static const std::vector<int> Counts = [] {
    std::vector<int> C;
    if (const char *E = std::getenv("PK_BENCH_THREADS")) {
      std::stringstream SS(E);
      std::string Item;
      while (std::getline(SS, Item, ','))
        if (int T = std::atoi(Item.c_str()); T > 0)
          C.push_back(T);
    }
    if (C.empty())
      C = {1, 2};
    return C;
  }();
  return Counts;
}

#if PK_BENCH_OPENBLAS
// OpenBLAS's pthreads build starts its worker threads from the main thread,
// which libgomp has already pinned to the first place when OMP_PROC_BIND is
// set (the bench target sets it): they inherit that one-core mask, and
// OpenBLAS at 2 threads ran both on core 0, no faster than at 1 thread
// (measured: 124 against 128 GFLOP/s at 1024^3). So each worker k
// (openblas_setaffinity's index k in [0, T - 2]; T - 1 is the calling
// thread, left as OpenMP pinned it) gets the place of OpenMP thread k + 1,
// as OMP_PROC_BIND=close gives it, or every CPU when OpenMP binds nothing.
void openblas_threads(int T) {
  openblas_set_num_threads(T);
  if (!openblas_setaffinity || openblas_get_parallel() != OPENBLAS_THREAD)
    return;
  const int Places = omp_get_num_places();
  for (int K = 0; K + 1 < T; ++K) {
    cpu_set_t Set;
    CPU_ZERO(&Set);
    if (Places > 0) {
      const int P = (K + 1) % Places;
      std::vector<int> Ids(static_cast<size_t>(omp_get_place_num_procs(P)));
      omp_get_place_proc_ids(P, Ids.data());
      for (int Id : Ids)
        CPU_SET(Id, &Set);
    } else {
      for (int C = 0; C < get_nprocs_conf() && C < CPU_SETSIZE; ++C)
        CPU_SET(C, &Set);
    }
    openblas_setaffinity(K, sizeof Set, &Set);
  }
}
#endif

// --- instances and checks ---------------------------------------------------

std::vector<std::string> &cases() {
  static std::vector<std::string> C;
  return C;
}

namespace detail {
std::shared_ptr<void> &slot(const std::string &Key, bool &Fresh) {
  static std::map<std::string, std::shared_ptr<void>> Instances;
  std::shared_ptr<void> &Inst = Instances[Key];
  Fresh = !Inst;
  return Inst;
}
} // namespace detail

std::vector<Check> &checks() {
  static std::vector<Check> C;
  return C;
}

std::string compare(const std::string &What,
                    const std::vector<const Buffer *> &Ref,
                    const std::vector<const Buffer *> &Got) {
  for (size_t O = 0; O < Ref.size(); ++O) {
    const Buffer &R = *Ref[O], &G = *Got[O];
    for (int64_t I = 0; I < R.size(); ++I) {
      float A = R[I], B = G[I];
      bool Ok = (std::isnan(A) && std::isnan(B)) ||
                std::fabs(A - B) <= 1e-4f * std::max(1.0f, std::fabs(A));
      if (!Ok) {
        char Msg[256];
        std::snprintf(Msg, sizeof Msg,
                      "%s: output %zu element %lld: pk %.9g, peer %.9g",
                      What.c_str(), O, static_cast<long long>(I), A, B);
        return Msg;
      }
    }
  }
  return "";
}

} // namespace pkbench

// --- the STREAM triad ---------------------------------------------------------
//
// a[i] = b[i] + s * c[i] over arrays far larger than the last-level cache
// (3 x 256 MiB at the default 64M elements; PK_BENCH_STREAM_ELEMS to change),
// OpenMP + SIMD, first touch in parallel. Bytes: b and c read, a written once
// (12 bytes per element, STREAM's own convention: no write-allocate traffic),
// the same convention as the kernels' min_bytes.
namespace {

int64_t stream_elems() {
  if (const char *E = std::getenv("PK_BENCH_STREAM_ELEMS"))
    if (long long N = std::atoll(E); N > 0)
      return N;
  return int64_t(64) << 20;
}

struct Triad {
  int64_t N;
  pkbench::Buffer A, B, C;
  explicit Triad(const pkbench::Shape &S)
      : N(S.numel()), A(pkbench::filled(N, 0.0f)), B(pkbench::filled(N, 1.0f)),
        C(pkbench::filled(N, 2.0f)) {}
  int64_t min_bytes() const { return 3 * N * int64_t(sizeof(float)); }
  void run() {
    float *__restrict a = A.data();
    const float *__restrict b = B.data();
    const float *__restrict c = C.data();
    const float s = 3.0f;
    const int64_t n = N;
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i)
      a[i] = b[i] + s * c[i];
  }
};

const bool TriadRegistered = [] {
  pkbench::Shape S{{stream_elems()}};
  pkbench::detail::add<Triad>("stream", S, "triad", &Triad::run, false);
  return true;
}();

std::string cpu_model() {
  std::ifstream F("/proc/cpuinfo");
  std::string Line;
  while (std::getline(F, Line))
    if (Line.rfind("model name", 0) == 0) {
      auto P = Line.find(':');
      if (P != std::string::npos)
        return Line.substr(Line.find_first_not_of(" \t", P + 1));
    }
  return "unknown";
}

} // namespace

int main(int argc, char **argv) {
  bool ListOnly = false;
  for (int I = 1; I < argc; ++I)
    if (std::string(argv[I]).rfind("--benchmark_list_tests", 0) == 0)
      ListOnly = true;
  benchmark::Initialize(&argc, argv);
  // A warm heap, as in a long-running program: eager's temporaries (and
  // buffers) up to 32 MiB come from the heap, which is never trimmed, instead
  // of fresh mmap pages per call. Without this, eager's times depend on what
  // was freed before (glibc adapts its mmap threshold): up to 10x slower.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;

  benchmark::AddCustomContext("pk_cpu_model", cpu_model());
  benchmark::AddCustomContext("pk_compiler", __VERSION__);
  benchmark::AddCustomContext("pk_native", PK_BENCH_NATIVE ? "on" : "off");
#if PK_BENCH_EIGEN
  benchmark::AddCustomContext("pk_eigen",
                              std::to_string(EIGEN_WORLD_VERSION) + "." +
                                  std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                  std::to_string(EIGEN_MINOR_VERSION) + " (" +
                                  Eigen::SimdInstructionSetsInUse() + ")");
#else
  benchmark::AddCustomContext("pk_eigen", "n/a");
#endif
#if PK_BENCH_OPENBLAS
  // e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64": the
  // kernel it chose at run time. Its threads follow the benchmark's (bench.h).
  benchmark::AddCustomContext("pk_openblas", openblas_get_config());
#else
  benchmark::AddCustomContext("pk_openblas", "n/a");
#endif
  benchmark::AddCustomContext("pk_stream_elems", std::to_string(stream_elems()));
  benchmark::AddCustomContext("pk_eager_max_elems",
                              std::to_string(pkbench::kEagerMaxElems));
  std::string Cases;
  for (const std::string &C : pkbench::cases())
    Cases += (Cases.empty() ? "" : ",") + C;
  benchmark::AddCustomContext("pk_cases", Cases);
  for (const char *V : {"OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY"})
    if (const char *E = std::getenv(V))
      benchmark::AddCustomContext(std::string("pk_env_") + V, E);
  benchmark::AddCustomContext("pk_omp_max_threads",
                              std::to_string(omp_get_max_threads()));

  const char *NoCheck = std::getenv("PK_BENCH_NO_CHECK");
  if (!ListOnly && !(NoCheck && *NoCheck)) {
    for (const pkbench::Check &C : pkbench::checks()) {
      std::string Err = C.Run();
      if (!Err.empty()) {
        std::fprintf(stderr, "pk-bench: peers disagree with pk: %s\n",
                     Err.c_str());
        return 1;
      }
    }
    std::fprintf(stderr, "pk-bench: %zu kernels checked: every peer agrees "
                         "with pk (relative 1e-4)\n",
                 pkbench::checks().size());
  }

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
