//===- gpu_bench.cpp - The sample kernels' CUDA launchers on the local GPU -===//
//
// For each sample kernel (samples/<name>/<name>.cpp, compiled by pkc into
// <name>.pk.cu), at the shape its sample program uses:
//
//   1. check: the launcher's result against pk's compiled CPU kernel (the
//      .pk.cpp linked into this program), from the same inputs;
//   2. time pk::cuda::<name>(...) with CUDA events: warm-up launches, then
//      `reps` timed launches, each preceded by a write of a buffer larger than
//      the L2 cache (so that no launch finds its inputs in L2); median and min;
//   3. time cudaMemcpyAsync device-to-device of half the kernel's bytes, the
//      same way: a copy that reads and writes as many bytes as the kernel
//      (unique bytes read + written) does. Its time over the kernel's is the
//      "% of D2D copy".
//
// Prints a line per kernel and writes everything to --json (rewritten after
// each kernel, so a run that is killed leaves the kernels done so far).
// bench/gpu/table.py joins it with torch_peers.py's results into the table.
//
//   pk-gpu-bench [--quick] [--warmup N] [--reps N] [--cap-s S] [--no-flush]
//                [--only a,b,...] [--json FILE]
//
//===----------------------------------------------------------------------===//

#include "common/compiled.h" // the CPU kernels (.pk.cpp), for the check

#include "adam_step.pk.h"
#include "add_rmsnorm.pk.h"
#include "axpby.pk.h"
#include "broadcast_bias.pk.h"
#include "causal_softmax.pk.h"
#include "column_mean.pk.h"
#include "fma.pk.h"
#include "gelu.pk.h"
#include "layernorm.pk.h"
#include "logsumexp.pk.h"
#include "relu_where.pk.h"
#include "rmsnorm.pk.h"
#include "softmax.pk.h"
#include "sum_all.pk.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

#define CUDA_CHECK(Expr)                                                       \
  do {                                                                         \
    cudaError_t Err_ = (Expr);                                                 \
    if (Err_ != cudaSuccess)                                                   \
      throw std::runtime_error(std::string(#Expr) + ": " +                     \
                               cudaGetErrorString(Err_));                      \
  } while (0)

// --- the kernels ---------------------------------------------------------------

enum class Role { In, InOut, Out };

struct Array {
  const char *Name;
  int64_t Size;
  Role Kind;
  float Lo = -2, Hi = 2; // uniform random initial values (In and InOut)
};

using Ptrs = const std::vector<float *> &;

struct Case {
  std::string Name, Shape;
  std::vector<Array> Arrays;
  std::function<void(Ptrs, cudaStream_t)> Gpu; // device pointers
  std::function<void(Ptrs)> Cpu;               // host pointers
  double Tol = 1e-3; // |gpu - cpu| <= Tol * max(1, |cpu|)
};

std::string shape1(int64_t N) { return std::to_string(N); }
std::string shape2(int64_t T, int64_t D) {
  return std::to_string(T) + "x" + std::to_string(D);
}

// The shapes and constants of samples/<name>/main.cpp.
std::vector<Case> cases() {
  std::vector<Case> C;
  constexpr Role I = Role::In, IO = Role::InOut, O = Role::Out;
  {
    const int64_t N = 1 << 22;
    C.push_back({"fma", shape1(N),
                 {{"a", N, I}, {"b", N, I}, {"c", N, I}, {"o", N, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::fma({P[0], {N}}, {P[1], {N}}, {P[2], {N}},
                                 {P[3], {N}}, S);
                 },
                 [=](Ptrs P) {
                   ::fma(pk::In<float>{P[0], {N}}, pk::In<float>{P[1], {N}},
                         pk::In<float>{P[2], {N}}, pk::Out<float>{P[3], {N}});
                 }});
    C.push_back({"axpby", shape1(N),
                 {{"x", N, I}, {"y", N, IO}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::axpby(2.5f, {P[0], {N}}, -0.5f, {P[1], {N}}, S);
                 },
                 [=](Ptrs P) { axpby(2.5f, {P[0], {N}}, -0.5f, {P[1], {N}}); }});
    C.push_back({"gelu", shape1(N),
                 {{"x", N, I, -6, 6}, {"y", N, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::gelu({P[0], {N}}, {P[1], {N}}, S);
                 },
                 [=](Ptrs P) { gelu({P[0], {N}}, {P[1], {N}}); }});
    C.push_back({"relu_where", shape1(N),
                 {{"x", N, I}, {"y", N, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::relu_where({P[0], {N}}, {P[1], {N}}, S);
                 },
                 [=](Ptrs P) { relu_where({P[0], {N}}, {P[1], {N}}); }});
    const float Lr = 1e-3f, B1 = 0.9f, B2 = 0.999f, Eps = 1e-8f;
    const float Bias1 = 1 - 0.9f * 0.9f, Bias2 = 1 - 0.999f * 0.999f;
    C.push_back(
        {"adam_step", shape1(N),
         {{"p", N, IO},
          {"m", N, IO, -0.1f, 0.1f},
          {"v", N, IO, 0, 0.1f},
          {"g", N, I}},
         [=](Ptrs P, cudaStream_t S) {
           pk::cuda::adam_step({P[0], {N}}, {P[1], {N}}, {P[2], {N}},
                               {P[3], {N}}, Lr, B1, B2, Eps, Bias1, Bias2, S);
         },
         [=](Ptrs P) {
           adam_step({P[0], {N}}, {P[1], {N}}, {P[2], {N}}, {P[3], {N}}, Lr,
                     B1, B2, Eps, Bias1, Bias2);
         }});
  }
  {
    const int64_t T = 2048, D = 1024;
    C.push_back({"broadcast_bias", shape2(T, D),
                 {{"x", T * D, I}, {"b", D, I}, {"y", T * D, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::broadcast_bias({P[0], {T, D}}, {P[1], {D}},
                                            {P[2], {T, D}}, S);
                 },
                 [=](Ptrs P) {
                   broadcast_bias({P[0], {T, D}}, {P[1], {D}}, {P[2], {T, D}});
                 }});
  }
  {
    const int64_t T = 2048, D = 4096;
    C.push_back({"rmsnorm", shape2(T, D),
                 {{"x", T * D, I}, {"w", D, I}, {"y", T * D, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::rmsnorm({P[0], {T, D}}, {P[1], {D}},
                                     {P[2], {T, D}}, 1e-6f, S);
                 },
                 [=](Ptrs P) {
                   rmsnorm({P[0], {T, D}}, {P[1], {D}}, {P[2], {T, D}}, 1e-6f);
                 }});
    C.push_back({"softmax", shape2(T, D),
                 {{"x", T * D, I, -8, 8}, {"y", T * D, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::softmax({P[0], {T, D}}, {P[1], {T, D}}, S);
                 },
                 [=](Ptrs P) { softmax({P[0], {T, D}}, {P[1], {T, D}}); }});
  }
  {
    const int64_t T = 4096, D = 768;
    C.push_back({"layernorm", shape2(T, D),
                 {{"x", T * D, I},
                  {"w", D, I},
                  {"b", D, I},
                  {"out", T * D, O},
                  {"mean", T, O},
                  {"rstd", T, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::layernorm({P[0], {T, D}}, {P[1], {D}}, {P[2], {D}},
                                       {P[3], {T, D}}, {P[4], {T}},
                                       {P[5], {T}}, 1e-5f, S);
                 },
                 [=](Ptrs P) {
                   layernorm({P[0], {T, D}}, {P[1], {D}}, {P[2], {D}},
                             {P[3], {T, D}}, {P[4], {T}}, {P[5], {T}}, 1e-5f);
                 }});
  }
  {
    const int64_t T = 2048, D = 4096;
    C.push_back({"logsumexp", shape2(T, D),
                 {{"x", T * D, I, -8, 8}, {"out", T, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::logsumexp({P[0], {T, D}}, {P[1], {T}}, S);
                 },
                 [=](Ptrs P) { logsumexp({P[0], {T, D}}, {P[1], {T}}); }});
  }
  {
    const int64_t T = 1024;
    C.push_back({"causal_softmax", shape2(T, T),
                 {{"scores", T * T, I, -8, 8}, {"probs", T * T, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::causal_softmax({P[0], {T, T}}, {P[1], {T, T}}, S);
                 },
                 [=](Ptrs P) {
                   causal_softmax({P[0], {T, T}}, {P[1], {T, T}});
                 }});
  }
  {
    const int64_t T = 4096, D = 768;
    C.push_back({"column_mean", shape2(T, D),
                 {{"x", T * D, I}, {"m", D, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::column_mean({P[0], {T, D}}, {P[1], {D}}, S);
                 },
                 [=](Ptrs P) { column_mean({P[0], {T, D}}, {P[1], {D}}); }});
  }
  {
    const int64_t T = 2048, D = 4096;
    C.push_back({"add_rmsnorm", shape2(T, D),
                 {{"h", T * D, IO}, {"x", T * D, I}, {"w", D, I},
                  {"y", T * D, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::add_rmsnorm({P[0], {T, D}}, {P[1], {T, D}},
                                         {P[2], {D}}, {P[3], {T, D}}, 1e-6f,
                                         S);
                 },
                 [=](Ptrs P) {
                   add_rmsnorm({P[0], {T, D}}, {P[1], {T, D}}, {P[2], {D}},
                               {P[3], {T, D}}, 1e-6f);
                 }});
    C.push_back({"sum_all", shape2(T, D),
                 {{"x", T * D, I, 0, 1}, {"total", 1, O}},
                 [=](Ptrs P, cudaStream_t S) {
                   pk::cuda::sum_all({P[0], {T, D}}, {P[1], {}}, S);
                 },
                 [=](Ptrs P) { sum_all({P[0], {T, D}}, {P[1], {}}); }});
  }
  return C;
}

/// Unique bytes the kernel reads and writes: In once, Out once, InOut twice.
double bytesMoved(const Case &K) {
  double B = 0;
  for (const Array &A : K.Arrays)
    B += double(A.Size) * sizeof(float) * (A.Kind == Role::InOut ? 2 : 1);
  return B;
}

// --- timing --------------------------------------------------------------------

struct Options {
  int Warmup = 10;
  int Reps = 100;
  double CapS = 10; // most seconds of timed launches per kernel
  bool Flush = true;
  std::vector<std::string> Only;
  std::string Json;
};

struct Stats {
  double MedianUs = NAN, MinUs = NAN;
  int Reps = 0;
};

class Timer {
public:
  Timer(cudaStream_t S, const Options &O) : Stream(S), Opt(O) {
    if (Opt.Flush) {
      int L2 = 0;
      CUDA_CHECK(cudaDeviceGetAttribute(&L2, cudaDevAttrL2CacheSize, 0));
      FlushBytes = std::max<size_t>(size_t(256) << 20, size_t(L2) * 4);
      CUDA_CHECK(cudaMalloc(&FlushBuf, FlushBytes));
    }
  }
  ~Timer() { cudaFree(FlushBuf); }
  size_t flushBytes() const { return FlushBytes; }

  /// Warm-up, then Opt.Reps timed calls of Launch (fewer when they would take
  /// more than Opt.CapS seconds, at least 3), each after an L2 flush.
  Stats time(const std::function<void()> &Launch) {
    for (int I = 0; I < Opt.Warmup; ++I) {
      flush();
      Launch();
    }
    CUDA_CHECK(cudaStreamSynchronize(Stream));
    CUDA_CHECK(cudaGetLastError());
    // One timed call to size the run.
    double First = timeCalls(Launch, 1)[0];
    int Reps = Opt.Reps;
    if (First * 1e-6 * Reps > Opt.CapS)
      Reps = std::max(3, int(Opt.CapS / (First * 1e-6)));
    std::vector<double> Us = timeCalls(Launch, Reps);
    std::sort(Us.begin(), Us.end());
    Stats St;
    St.Reps = Reps;
    St.MinUs = Us.front();
    St.MedianUs = Us.size() % 2 ? Us[Us.size() / 2]
                                : 0.5 * (Us[Us.size() / 2 - 1] + Us[Us.size() / 2]);
    return St;
  }

private:
  void flush() {
    if (FlushBuf)
      CUDA_CHECK(cudaMemsetAsync(FlushBuf, ++FlushValue & 0xff, FlushBytes, Stream));
  }

  std::vector<double> timeCalls(const std::function<void()> &Launch, int N) {
    std::vector<cudaEvent_t> Start(N), Stop(N);
    for (int I = 0; I < N; ++I) {
      CUDA_CHECK(cudaEventCreate(&Start[I]));
      CUDA_CHECK(cudaEventCreate(&Stop[I]));
    }
    for (int I = 0; I < N; ++I) {
      flush();
      CUDA_CHECK(cudaEventRecord(Start[I], Stream));
      Launch();
      CUDA_CHECK(cudaEventRecord(Stop[I], Stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(Stream));
    CUDA_CHECK(cudaGetLastError());
    std::vector<double> Us(N);
    for (int I = 0; I < N; ++I) {
      float Ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&Ms, Start[I], Stop[I]));
      Us[I] = double(Ms) * 1e3;
      cudaEventDestroy(Start[I]);
      cudaEventDestroy(Stop[I]);
    }
    return Us;
  }

  cudaStream_t Stream;
  const Options &Opt;
  void *FlushBuf = nullptr;
  size_t FlushBytes = 0;
  int FlushValue = 0;
};

// --- one kernel ----------------------------------------------------------------

/// Deterministic uniform values in [Lo, Hi) (splitmix64).
void fillRandom(std::vector<float> &V, uint64_t Seed, float Lo, float Hi) {
  uint64_t S = Seed * 0x9E3779B97F4A7C15ull + 1;
  for (float &X : V) {
    uint64_t Z = (S += 0x9E3779B97F4A7C15ull);
    Z = (Z ^ (Z >> 30)) * 0xBF58476D1CE4E5B9ull;
    Z = (Z ^ (Z >> 27)) * 0x94D049BB133111EBull;
    Z ^= Z >> 31;
    X = Lo + (Hi - Lo) * float(double(Z >> 40) / double(1ull << 24));
  }
}

struct Result {
  std::string Name, Shape, Check, Error;
  double Bytes = 0, MaxErr = 0;
  Stats Pk, Copy;
};

Result runCase(const Case &K, Timer &Tm, cudaStream_t S) {
  Result R;
  R.Name = K.Name;
  R.Shape = K.Shape;
  R.Bytes = bytesMoved(K);

  const size_t NA = K.Arrays.size();
  std::vector<std::vector<float>> Init(NA), Host(NA);
  std::vector<float *> Dev(NA, nullptr), HostPtr(NA);
  struct Free {
    std::vector<float *> &D;
    ~Free() {
      for (float *P : D)
        cudaFree(P);
    }
  } FreeDev{Dev};
  for (size_t I = 0; I < NA; ++I) {
    const Array &A = K.Arrays[I];
    Init[I].assign(A.Size, 0.0f);
    if (A.Kind != Role::Out)
      fillRandom(Init[I], I + 1, A.Lo, A.Hi);
    Host[I] = Init[I];
    HostPtr[I] = Host[I].data();
    CUDA_CHECK(cudaMalloc(&Dev[I], A.Size * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(Dev[I], Init[I].data(), A.Size * sizeof(float),
                          cudaMemcpyHostToDevice));
    if (A.Kind == Role::Out) // NaN bytes: an output left unwritten shows
      CUDA_CHECK(cudaMemset(Dev[I], 0xff, A.Size * sizeof(float)));
  }

  // 1. The check, from the initial values (before any InOut is updated).
  K.Gpu(Dev, S);
  CUDA_CHECK(cudaStreamSynchronize(S));
  CUDA_CHECK(cudaGetLastError());
  K.Cpu(HostPtr);
  std::ostringstream Bad;
  for (size_t I = 0; I < NA && Bad.str().empty(); ++I) {
    const Array &A = K.Arrays[I];
    if (A.Kind == Role::In)
      continue;
    std::vector<float> Got(A.Size);
    CUDA_CHECK(cudaMemcpy(Got.data(), Dev[I], A.Size * sizeof(float),
                          cudaMemcpyDeviceToHost));
    for (int64_t J = 0; J < A.Size; ++J) {
      const float Want = Host[I][J];
      const double Err =
          std::fabs(double(Got[J]) - Want) / std::max(1.0, std::fabs(double(Want)));
      if (!(Err <= K.Tol) && !(std::isnan(Want) && std::isnan(Got[J]))) {
        Bad << A.Name << "[" << J << "] = " << Got[J] << ", CPU " << Want;
        R.MaxErr = std::isnan(Err) ? INFINITY : Err;
        break;
      }
      R.MaxErr = std::max(R.MaxErr, Err);
    }
  }
  R.Check = Bad.str().empty() ? "ok" : "MISMATCH " + Bad.str();

  // 2. The launcher. InOut arrays are updated by every launch; the samples'
  // constants keep them finite.
  R.Pk = Tm.time([&] { K.Gpu(Dev, S); });

  // 3. A device-to-device copy of the same bytes (read + written).
  const size_t Half = size_t(R.Bytes / 2);
  void *Src = nullptr, *Dst = nullptr;
  CUDA_CHECK(cudaMalloc(&Src, Half));
  CUDA_CHECK(cudaMalloc(&Dst, Half));
  CUDA_CHECK(cudaMemset(Src, 0, Half));
  try {
    R.Copy = Tm.time([&] {
      CUDA_CHECK(cudaMemcpyAsync(Dst, Src, Half, cudaMemcpyDeviceToDevice, S));
    });
  } catch (...) {
    cudaFree(Src);
    cudaFree(Dst);
    throw;
  }
  cudaFree(Src);
  cudaFree(Dst);
  return R;
}

// --- output --------------------------------------------------------------------

std::string jsonString(const std::string &S) {
  std::string O = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\')
      O += '\\', O += C;
    else if (static_cast<unsigned char>(C) < 0x20)
      O += ' ';
    else
      O += C;
  }
  return O + "\"";
}

std::string jsonNumber(double X) {
  if (!std::isfinite(X))
    return "null";
  char Buf[64];
  std::snprintf(Buf, sizeof Buf, "%.6g", X);
  return Buf;
}

struct Device {
  std::string Name;
  int Major = 0, Minor = 0, Sms = 0, Runtime = 0, Driver = 0;
  double MemGiB = 0, L2MiB = 0;
  Stats PeakCopy; // a large device-to-device copy
  double PeakCopyBytes = 0;
};

void writeJson(const std::string &Path, const Device &Dev, const Options &Opt,
               size_t FlushBytes, const std::vector<Result> &Rs, bool Done) {
  if (Path.empty())
    return;
  std::string Tmp = Path + ".tmp";
  FILE *F = std::fopen(Tmp.c_str(), "w");
  if (!F) {
    std::fprintf(stderr, "pk-gpu-bench: cannot write %s\n", Tmp.c_str());
    return;
  }
  std::fprintf(F, "{\n  \"device\": {\"name\": %s, \"cc\": \"%d.%d\", \"sms\": %d, "
                  "\"mem_gib\": %s, \"l2_mib\": %s, \"cuda_runtime\": %d, "
                  "\"cuda_driver\": %d,\n    \"peak_copy_bytes\": %s, "
                  "\"peak_copy_median_us\": %s},\n",
               jsonString(Dev.Name).c_str(), Dev.Major, Dev.Minor, Dev.Sms,
               jsonNumber(Dev.MemGiB).c_str(), jsonNumber(Dev.L2MiB).c_str(),
               Dev.Runtime, Dev.Driver, jsonNumber(Dev.PeakCopyBytes).c_str(),
               jsonNumber(Dev.PeakCopy.MedianUs).c_str());
  std::fprintf(F, "  \"warmup\": %d, \"reps\": %d, \"cap_s\": %s, \"flush_bytes\": %zu, "
                  "\"complete\": %s,\n  \"kernels\": [",
               Opt.Warmup, Opt.Reps, jsonNumber(Opt.CapS).c_str(), FlushBytes,
               Done ? "true" : "false");
  for (size_t I = 0; I < Rs.size(); ++I) {
    const Result &R = Rs[I];
    std::fprintf(
        F,
        "%s\n    {\"name\": %s, \"shape\": %s, \"bytes\": %s, \"median_us\": %s, "
        "\"min_us\": %s, \"reps\": %d, \"copy_median_us\": %s, \"copy_min_us\": %s, "
        "\"check\": %s, \"max_rel_err\": %s, \"error\": %s}",
        I ? "," : "", jsonString(R.Name).c_str(), jsonString(R.Shape).c_str(),
        jsonNumber(R.Bytes).c_str(), jsonNumber(R.Pk.MedianUs).c_str(),
        jsonNumber(R.Pk.MinUs).c_str(), R.Pk.Reps,
        jsonNumber(R.Copy.MedianUs).c_str(), jsonNumber(R.Copy.MinUs).c_str(),
        jsonString(R.Check).c_str(), jsonNumber(R.MaxErr).c_str(),
        jsonString(R.Error).c_str());
  }
  std::fprintf(F, "\n  ]\n}\n");
  std::fclose(F);
  std::rename(Tmp.c_str(), Path.c_str());
}

std::vector<std::string> splitComma(const std::string &S) {
  std::vector<std::string> O;
  std::stringstream In(S);
  std::string Item;
  while (std::getline(In, Item, ','))
    if (!Item.empty())
      O.push_back(Item);
  return O;
}

[[noreturn]] void usage(const char *Msg) {
  std::fprintf(Msg ? stderr : stdout,
               "%s%s%susage: pk-gpu-bench [--quick] [--warmup N] [--reps N] "
               "[--cap-s S] [--no-flush] [--only a,b,...] [--json FILE]\n"
               "  --quick     2 warm-up + 10 timed launches, at most 2 s per kernel\n"
               "              (default 10 + 100, at most 10 s)\n"
               "  --no-flush  no L2 flush before each timed launch\n"
               "  --only      these kernels only\n"
               "  --json      write the results there (after each kernel)\n",
               Msg ? "pk-gpu-bench: " : "", Msg ? Msg : "", Msg ? "\n" : "");
  std::exit(Msg ? 2 : 0);
}

} // namespace

int main(int Argc, char **Argv) {
  Options Opt;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    auto Next = [&]() -> std::string {
      if (I + 1 >= Argc)
        usage(("missing value after " + A).c_str());
      return Argv[++I];
    };
    if (A == "-h" || A == "--help") {
      usage(nullptr);
    } else if (A == "--quick") {
      Opt.Warmup = 2;
      Opt.Reps = 10;
      Opt.CapS = 2;
    } else if (A == "--warmup") {
      Opt.Warmup = std::atoi(Next().c_str());
    } else if (A == "--reps") {
      Opt.Reps = std::max(1, std::atoi(Next().c_str()));
    } else if (A == "--cap-s") {
      Opt.CapS = std::atof(Next().c_str());
    } else if (A == "--no-flush") {
      Opt.Flush = false;
    } else if (A == "--only") {
      Opt.Only = splitComma(Next());
    } else if (A == "--json") {
      Opt.Json = Next();
    } else {
      usage(("unknown argument " + A).c_str());
    }
  }

  const std::vector<Case> All = cases();
  for (const std::string &Name : Opt.Only)
    if (std::none_of(All.begin(), All.end(),
                     [&](const Case &K) { return K.Name == Name; }))
      usage(("--only: no kernel named " + Name).c_str());

  Device Dev;
  cudaStream_t S = nullptr;
  try {
    int Count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&Count));
    if (Count == 0)
      throw std::runtime_error("no CUDA device");
    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp P{};
    CUDA_CHECK(cudaGetDeviceProperties(&P, 0));
    Dev.Name = P.name;
    Dev.Major = P.major;
    Dev.Minor = P.minor;
    Dev.Sms = P.multiProcessorCount;
    Dev.MemGiB = double(P.totalGlobalMem) / double(1ull << 30);
    Dev.L2MiB = double(P.l2CacheSize) / double(1 << 20);
    CUDA_CHECK(cudaRuntimeGetVersion(&Dev.Runtime));
    CUDA_CHECK(cudaDriverGetVersion(&Dev.Driver));
    CUDA_CHECK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  } catch (const std::exception &E) {
    std::fprintf(stderr, "pk-gpu-bench: %s\n", E.what());
    return 1;
  }
  std::printf("pk-gpu-bench: %s (sm_%d%d, %d SMs, %.0f GiB, L2 %.0f MiB), CUDA "
              "runtime %d, driver %d\n",
              Dev.Name.c_str(), Dev.Major, Dev.Minor, Dev.Sms, Dev.MemGiB,
              Dev.L2MiB, Dev.Runtime, Dev.Driver);

  Timer Tm(S, Opt);
  std::printf("pk-gpu-bench: %d warm-up + %d timed launches per kernel (at most "
              "%.0f s of them), %s\n",
              Opt.Warmup, Opt.Reps, Opt.CapS,
              Opt.Flush ? ("L2 flushed before each (" +
                           std::to_string(Tm.flushBytes() >> 20) + " MiB memset)")
                              .c_str()
                        : "no L2 flush");

  // The bandwidth a kernel can hope for: a large device-to-device copy.
  std::vector<Result> Rs;
  try {
    const size_t Half = size_t(1) << 30; // 1 GiB read + 1 GiB written
    void *Src = nullptr, *Dst = nullptr;
    CUDA_CHECK(cudaMalloc(&Src, Half));
    CUDA_CHECK(cudaMalloc(&Dst, Half));
    CUDA_CHECK(cudaMemset(Src, 0, Half));
    Dev.PeakCopyBytes = 2.0 * Half;
    Dev.PeakCopy = Tm.time([&] {
      CUDA_CHECK(cudaMemcpyAsync(Dst, Src, Half, cudaMemcpyDeviceToDevice, S));
    });
    cudaFree(Src);
    cudaFree(Dst);
    std::printf("pk-gpu-bench: device-to-device copy of 1 GiB: %.1f us, %.0f GB/s "
                "(read + written)\n",
                Dev.PeakCopy.MedianUs,
                Dev.PeakCopyBytes / (Dev.PeakCopy.MedianUs * 1e-6) / 1e9);
  } catch (const std::exception &E) {
    std::fprintf(stderr, "pk-gpu-bench: large copy: %s\n", E.what());
  }
  writeJson(Opt.Json, Dev, Opt, Tm.flushBytes(), Rs, false);

  int Failures = 0;
  for (const Case &K : All) {
    if (!Opt.Only.empty() &&
        std::find(Opt.Only.begin(), Opt.Only.end(), K.Name) == Opt.Only.end())
      continue;
    Result R;
    try {
      R = runCase(K, Tm, S);
    } catch (const std::exception &E) {
      R.Name = K.Name;
      R.Shape = K.Shape;
      R.Bytes = bytesMoved(K);
      R.Check = "error";
      R.Error = E.what();
      // A sticky error (e.g. an illegal address) leaves the context unusable:
      // the remaining kernels would fail the same way.
      cudaGetLastError();
    }
    if (R.Check != "ok")
      ++Failures;
    const double GBs = R.Bytes / (R.Pk.MedianUs * 1e-6) / 1e9;
    std::printf("%-15s %-10s pk %10.1f us (min %.1f, n=%d) %7.0f GB/s  copy %8.1f us "
                "(%3.0f%%)  check %s%s%s\n",
                R.Name.c_str(), R.Shape.c_str(), R.Pk.MedianUs, R.Pk.MinUs,
                R.Pk.Reps, GBs, R.Copy.MedianUs,
                100.0 * R.Copy.MedianUs / R.Pk.MedianUs, R.Check.c_str(),
                R.Error.empty() ? "" : ": ", R.Error.c_str());
    std::fflush(stdout);
    Rs.push_back(R);
    writeJson(Opt.Json, Dev, Opt, Tm.flushBytes(), Rs, false);
  }
  writeJson(Opt.Json, Dev, Opt, Tm.flushBytes(), Rs, true);
  cudaStreamDestroy(S);
  if (Failures)
    std::fprintf(stderr, "pk-gpu-bench: %d kernel(s) failed the check or the run\n",
                 Failures);
  return Failures ? 1 : 0;
}
