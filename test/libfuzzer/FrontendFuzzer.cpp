//===- FrontendFuzzer.cpp - libFuzzer: any source through pkc -------------===//
//
// The fuzzer's bytes are the contents of a kernel file held in memory; they
// go through pkc's library entry point (pk::driver::compileInMemory): the
// Clang frontend, every pass and both emitters, nothing written to disk.
// Every input must end in outputs or diagnostics. A crash, a sanitizer report,
// a fatal error ("pkc internal error") or a hang is a bug in pkc.
//
// Each input also prints one --emit stage (chosen by its size, so a
// reproducer replays the same way) and the Graph IR after every pass, so the
// printers are fuzzed too; the printed text is thrown away.
//
// <pk/pk.h> is read from include/, precompiled: parsing it and the standard
// headers it includes is most of a run, and the build's PCH (PK_FUZZ_PCH)
// makes the fuzzer several times faster without changing what pkc's own code
// sees. Setting PK_FUZZ_PCH to an empty string in the environment parses the
// headers instead; any other value is the PCH to use.
//
// How to build and run it: docs/sanitizers-and-fuzzing.md.
//
//===----------------------------------------------------------------------===//

#include "Driver/Driver.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace pk::driver;

namespace {

/// The in-memory file's name (relative: it lies in the current directory,
/// over the real file system; quoted includes resolve beside it).
constexpr const char *InputName = "pk-fuzz-input.cpp";

/// A kernel that must compile: if it does not, the PCH or the paths are
/// wrong and every input would only produce the same error.
constexpr const char *SanityKernel =
    "#include <pk/pk.h>\n"
    "using namespace pk::lang;\n"
    "PK_KERNEL void softmax(In<float, 2> x, Out<float, 2> y) {\n"
    "  auto e = exp(x[_] - max(x[_], -1, keepdims));\n"
    "  y[_] = e / sum(e, -1, keepdims);\n"
    "}\n";

struct Setup {
  std::vector<std::string> CompilerArgs;
  DriverOptions Opts;
};

/// The flags pk_add_kernels() gives pkc, the PCH, and no debug pragmas:
/// `#pragma clang __debug crash` (and friends) would crash Clang on purpose.
Setup makeSetup() {
  Setup S;
  S.CompilerArgs = {"-std=c++20", "-I" PK_INCLUDE_DIR, "-Xclang",
                    "-disable-pragma-debug-crash"};
  std::string Pch = PK_FUZZ_PCH;
  if (const char *Env = std::getenv("PK_FUZZ_PCH"))
    Pch = Env;
  if (!Pch.empty()) {
    // Not validated against the headers' timestamps: an edit of include/
    // during a long run would otherwise turn every input into one error.
    // The build rebuilds the PCH whenever a header changes.
    S.CompilerArgs.insert(S.CompilerArgs.end(), {"-include-pch", Pch, "-Xclang",
                                                 "-fno-validate-pch"});
  }
  S.Opts.ExtraArgsBefore = {"-resource-dir=" PK_CLANG_RESOURCE_DIR};
  S.Opts.PrintAfterAll = true;
  return S;
}

Setup &setup() {
  static Setup S = makeSetup();
  return S;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  InMemoryResult R = compileInMemory(InputName, SanityKernel,
                                     setup().CompilerArgs, setup().Opts);
  if (R.Exit != Success || R.Cpp.empty()) {
    llvm::errs() << "pk-frontend-fuzzer: the sanity kernel does not compile "
                    "(stale or mismatched PK_FUZZ_PCH?); not fuzzing\n";
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  DriverOptions Opts = setup().Opts;
  // EmitStage::Cuda is the last stage.
  constexpr size_t NumStages = static_cast<size_t>(EmitStage::Cuda) + 1;
  Opts.Emit = static_cast<EmitStage>(Size % NumStages);
  llvm::StringRef Code(reinterpret_cast<const char *>(Data), Size);
  compileInMemory(InputName, Code, setup().CompilerArgs, Opts);
  return 0;
}
