//===- oracle_dump.h - A kernel call written out for the NumPy oracle -----===//
//
// With PK_ORACLE_DUMP=<dir> in the environment, a test that runs a sample
// kernel writes each call it checks for test/oracle/samples_oracle.py, which
// recomputes it with a NumPy twin written from the math and checks every
// version against it (docs/fuzzing.md, "The samples through NumPy"):
//
//   <dir>/<Suite.Test>/<n>/in_<param>.npy     an input (an InOut's value
//                                             before the call)
//   <dir>/<Suite.Test>/<n>/<out>.tol.npy      the bound of a float evaluation's
//                                             distance from the exact result
//                                             (float64; absent: the twin
//                                             derives its own)
//   <dir>/<Suite.Test>/<n>/<out>.<version>.npy  a version's result (eager,
//                                             cpu, cuda <schedule>); a result
//                                             equal bit for bit to an earlier
//                                             one names that one's file
//   <dir>/<Suite.Test>/<n>/case.json          the kernel, the case's name,
//                                             shapes, scalars, versions
//
// Cases with an array above PK_ORACLE_DUMP_MAX_ELEMS elements (default 2^20)
// are listed as skipped. Without PK_ORACLE_DUMP every call is a no-op.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TEST_SUPPORT_ORACLE_DUMP_H
#define PK_TEST_SUPPORT_ORACLE_DUMP_H

#include "npy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pk_test {

class OracleDump {
public:
  using Shape = std::vector<int64_t>;

  OracleDump(std::string Kernel, std::string What)
      : Kernel(std::move(Kernel)), What(std::move(What)) {
    if (const char *Root = std::getenv("PK_ORACLE_DUMP"))
      Dir = nextDir(Root);
  }
  OracleDump(const OracleDump &) = delete;
  OracleDump &operator=(const OracleDump &) = delete;
  ~OracleDump() { writeJson(); }

  /// An In ref, or an InOut's value before the call.
  template <class T>
  OracleDump &in(const std::string &Name, const std::vector<T> &V, Shape S) {
    Inputs.push_back({Name, S});
    if (dumping(V.size()))
      writeNpy(Dir + "/in_" + Name + ".npy", descr<T>(), sizeof(T), S,
               V.data());
    return *this;
  }
  OracleDump &scalar(const std::string &Name, double V) {
    Scalars.push_back({Name, V});
    return *this;
  }
  /// Output `Name` of shape `S`; the twin derives its bound.
  OracleDump &out(const std::string &Name, Shape S) {
    Outputs.push_back({Name, S, {}, {}});
    return *this;
  }
  /// Output `Name` of shape `S` with `B`, a bound on a float evaluation's
  /// distance from the exact result per element.
  OracleDump &out(const std::string &Name, Shape S,
                  const std::vector<double> &B) {
    out(Name, S);
    if (dumping(B.size()))
      writeNpy(Dir + "/" + Name + ".tol.npy", "<f8", 8, S, B.data());
    return *this;
  }
  /// Version `Version`'s result for output `Name`.
  template <class T>
  void result(const std::string &Name, const std::string &Version,
              const std::vector<T> &Got) {
    if (!dumping(Got.size()))
      return;
    Output &O = output(Name);
    const char *Bytes = reinterpret_cast<const char *>(Got.data());
    const std::vector<char> Data(Bytes, Bytes + Got.size() * sizeof(T));
    for (const auto &[File, Seen] : O.Files)
      if (Seen == Data) {
        O.Versions.push_back({Version, File});
        return;
      }
    std::string File = O.Name + "." + Version + ".npy";
    std::replace_if(
        File.begin(), File.end(), [](char C) { return C == ' ' || C == ':'; },
        '_');
    writeNpy(Dir + "/" + File, descr<T>(), sizeof(T), O.S, Got.data());
    O.Files.push_back({File, Data});
    O.Versions.push_back({Version, File});
  }

  /// Eager's and the compiled CPU kernel's results for output `Name` (the
  /// CPU-only tests' pair).
  template <class T>
  void eagerAndCpu(const std::string &Name, const std::vector<T> &Eager,
                   const std::vector<T> &Cpu) {
    result(Name, "eager", Eager);
    result(Name, "cpu", Cpu);
  }

private:
  struct Input {
    std::string Name;
    Shape S;
  };
  struct Output {
    std::string Name;
    Shape S;
    std::vector<std::pair<std::string, std::string>> Versions;    // -> file
    std::vector<std::pair<std::string, std::vector<char>>> Files; // bytes
  };

  template <class T> static const char *descr() {
    if constexpr (std::is_same_v<T, float>)
      return "<f4";
    else if constexpr (std::is_same_v<T, double>)
      return "<f8";
    else if constexpr (std::is_same_v<T, int32_t>)
      return "<i4";
    else {
      static_assert(std::is_same_v<T, int64_t>, "float, double, int32, int64");
      return "<i8";
    }
  }

  static int64_t maxElems() {
    static const int64_t Max = [] {
      const char *E = std::getenv("PK_ORACLE_DUMP_MAX_ELEMS");
      return E ? std::atoll(E) : int64_t(1) << 20;
    }();
    return Max;
  }

  /// <root>/<Suite.Test>/<n>; a test's directory is emptied when it writes
  /// its first case.
  static std::string nextDir(const std::string &Root) {
    const auto *Info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string Test =
        std::string(Info->test_suite_name()) + "." + Info->name();
    static std::string LastTest;
    static int Count = 0;
    if (Test != LastTest) {
      LastTest = Test;
      Count = 0;
      std::filesystem::remove_all(Root + "/" + Test);
    }
    const std::string D = Root + "/" + Test + "/" + std::to_string(Count++);
    std::filesystem::create_directories(D);
    return D;
  }

  bool dumping(size_t N) {
    if (Dir.empty())
      return false;
    if (int64_t(N) > maxElems())
      Skipped = true;
    return !Skipped;
  }

  Output &output(const std::string &Name) {
    for (Output &O : Outputs)
      if (O.Name == Name)
        return O;
    throw std::logic_error(What + ": no output " + Name);
  }

  static std::string shapeJson(const Shape &S) {
    std::string J = "[";
    for (size_t I = 0; I < S.size(); ++I)
      J += (I ? ", " : "") + std::to_string(S[I]);
    return J + "]";
  }

  void writeJson() {
    if (Dir.empty())
      return;
    std::ofstream F(Dir + "/case.json");
    F << "{\"kernel\": " << jsonString(Kernel)
      << ", \"case\": " << jsonString(What)
      << ", \"skipped\": " << (Skipped ? "true" : "false")
      << ",\n \"inputs\": {";
    for (size_t I = 0; I < Inputs.size(); ++I)
      F << (I ? ", " : "") << jsonString(Inputs[I].Name) << ": "
        << shapeJson(Inputs[I].S);
    F << "},\n \"scalars\": {";
    for (size_t I = 0; I < Scalars.size(); ++I) {
      char V[64];
      std::snprintf(V, sizeof V, "%.17g", Scalars[I].second);
      F << (I ? ", " : "") << jsonString(Scalars[I].first) << ": " << V;
    }
    F << "},\n \"outputs\": {";
    for (size_t I = 0; I < Outputs.size(); ++I) {
      const Output &O = Outputs[I];
      F << (I ? ",\n  " : "\n  ") << jsonString(O.Name)
        << ": {\"shape\": " << shapeJson(O.S) << ", \"versions\": {";
      for (size_t V = 0; V < O.Versions.size(); ++V)
        F << (V ? ", " : "") << jsonString(O.Versions[V].first) << ": "
          << jsonString(O.Versions[V].second);
      F << "}}";
    }
    F << "}}\n";
  }

  std::string Kernel, What, Dir;
  bool Skipped = false;
  std::vector<Input> Inputs;
  std::vector<std::pair<std::string, double>> Scalars;
  std::vector<Output> Outputs;
};

} // namespace pk_test

#endif // PK_TEST_SUPPORT_ORACLE_DUMP_H
