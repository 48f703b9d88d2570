//===- pkc.cpp - The pk kernel compiler's command line --------------------===//
//
// Parses the options and hands the files to the driver. Everything else
// lives in lib/: the passes are listed in lib/Driver/Pipeline.cpp.
//
//===----------------------------------------------------------------------===//

#include "Driver/Driver.h"

#include "clang/Tooling/CommonOptionsParser.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory PkcCategory("pkc options");

static cl::opt<std::string>
    OutDir("out-dir", cl::desc("Directory for <stem>.pk.cpp/.pk.cu/.pk.h"),
           cl::value_desc("dir"), cl::init("."), cl::cat(PkcCategory));
static cl::alias OutDirShort("o", cl::desc("Alias for --out-dir"),
                             cl::aliasopt(OutDir), cl::cat(PkcCategory));

enum class Target { Cpu, Cuda };
static cl::list<Target> Targets(
    "target", cl::desc("What to generate (default: cpu,cuda)"),
    cl::CommaSeparated,
    cl::values(clEnumValN(Target::Cpu, "cpu", "<stem>.pk.cpp: fused C++ loops"),
               clEnumValN(Target::Cuda, "cuda",
                          "<stem>.pk.cu + <stem>.pk.h: CUDA kernels")),
    cl::cat(PkcCategory));

static cl::opt<pk::driver::EmitStage> Emit(
    "emit", cl::desc("Print one stage to stdout instead of writing files"),
    cl::init(pk::driver::EmitStage::None),
    cl::values(
        clEnumValN(pk::driver::EmitStage::Graph, "graph",
                   "Graph IR after canonicalisation, with fusion groups"),
        clEnumValN(pk::driver::EmitStage::Loop, "loop", "Loop IR"),
        clEnumValN(pk::driver::EmitStage::Tile, "tile",
                   "Tile IR: the CPU and GPU schedules of each nest"),
        clEnumValN(pk::driver::EmitStage::Kernel, "kernel",
                   "Kernel IR: the CUDA kernels with explicit threads"),
        clEnumValN(pk::driver::EmitStage::Cpp, "cpp", "the C++ kernel bodies"),
        clEnumValN(pk::driver::EmitStage::Cuda, "cuda",
                   "the CUDA kernels and launchers")),
    cl::cat(PkcCategory));

static cl::opt<bool> Explain(
    "explain",
    cl::desc("Print, per kernel, the fusion groups and why, the CPU and GPU "
             "schedules, and the memory traffic; write no files"),
    cl::cat(PkcCategory));

static cl::opt<bool>
    PrintAfterAll("pk-print-after-all",
                  cl::desc("Print the IR after every pass to stderr (Graph IR, "
                           "then Loop, Tile, GPU Tile and Kernel IR)"),
                  cl::cat(PkcCategory));

static cl::opt<bool>
    Verbose("v",
            cl::desc("Print the time of each stage (Clang frontend, every "
                     "pass, both emitters) to stderr"),
            cl::cat(PkcCategory));

static cl::opt<std::string>
    DepFile("depfile",
            cl::desc("Write a Make-style depfile of the outputs' inputs"),
            cl::value_desc("file"), cl::cat(PkcCategory));

static cl::opt<std::string> PchDir(
    "pch-dir",
    cl::desc("Cache a precompiled <pk/pk.h> in <dir> (one per set of compiler "
             "flags) and use it for the files whose first directive includes "
             "it: parsing the header is most of a small file's time"),
    cl::value_desc("dir"), cl::cat(PkcCategory));

/// `pkc --version`: pk's own version first (what a bug report needs), then
/// the Clang it was built against, whose parser decides what it accepts.
static void printVersion(raw_ostream &OS) {
  OS << "pkc (pk) version " PK_VERSION "\n"
     << "  built with Clang/LLVM " LLVM_VERSION_STRING "\n";
}

int main(int Argc, const char **Argv) {
  cl::SetVersionPrinter(printVersion);
  auto Parser = clang::tooling::CommonOptionsParser::create(
      Argc, Argv, PkcCategory, cl::OneOrMore,
      "pkc: compiles PK_KERNEL functions into fused C++ loops and CUDA "
      "kernels.\n\n  pkc [options] files... -- <compiler flags>\n  pkc "
      "[options] files... -p <build dir with compile_commands.json>\n");
  if (!Parser) {
    llvm::errs() << "pkc: error: " << toString(Parser.takeError()) << "\n";
    return pk::driver::UsageError;
  }
  pk::driver::DriverOptions Opts;
  Opts.OutDir = OutDir;
  if (!Targets.empty()) {
    Opts.Cpu = is_contained(Targets, Target::Cpu);
    Opts.Cuda = is_contained(Targets, Target::Cuda);
  }
  Opts.Emit = Explain ? pk::driver::EmitStage::Explain : Emit.getValue();
  Opts.PrintAfterAll = PrintAfterAll;
  Opts.Verbose = Verbose;
  Opts.DepFile = DepFile;
  Opts.PchDir = PchDir;
  Opts.ExtraArgsBefore = {"-resource-dir=" PK_CLANG_RESOURCE_DIR};
  return pk::driver::run(Parser->getCompilations(), Parser->getSourcePathList(),
                         Opts);
}
