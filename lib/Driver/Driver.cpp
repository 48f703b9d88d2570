//===- Driver.cpp - pkc's work on a list of files -------------------------===//

#include "Driver/Driver.h"
#include "Frontend/Frontend.h"

#include "clang/Tooling/CompilationDatabase.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <optional>

#include <map>
#include <set>

using namespace pk;
using namespace pk::driver;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace {

struct OutputFile {
  std::string Path;
  std::string Text;
};

std::string absolute(llvm::StringRef P) {
  llvm::SmallString<256> A(P);
  fs::make_absolute(A);
  path::remove_dots(A, /*remove_dot_dot=*/true);
  return std::string(A);
}

/// The directory entry a path names, for comparing paths: the parent
/// directory with its symlinks resolved, plus the file name. Two spellings
/// of one entry (`out/../in/a.cpp`, or through a symlinked directory) give
/// the same string, so an output written through a symlinked output
/// directory cannot replace an input. A symlink as the file itself is not
/// followed: writing replaces the link, not its target.
std::string entryIdentity(llvm::StringRef P) {
  std::string A = absolute(P);
  llvm::SmallString<256> Dir;
  if (fs::real_path(path::parent_path(A), Dir))
    return A; // no such directory: nothing can be in it yet
  path::append(Dir, path::filename(A));
  return std::string(Dir);
}

/// True when `Path` is a regular file (not a symlink) that holds `Text`.
bool holdsAlready(const std::string &Path, const std::string &Text) {
  fs::file_status St;
  if (fs::status(Path, St, /*Follow=*/false) || !fs::is_regular_file(St) ||
      St.getSize() != Text.size())
    return false;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Old =
      llvm::MemoryBuffer::getFile(Path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  return Old && (*Old)->getBuffer() == Text;
}

/// Writes `Text` to `Path` through a temporary in the same directory and a
/// rename, so a reader never sees a half-written file. A file that already
/// holds `Text` is left alone, modification time included: the build
/// (CMake's custom commands restat their outputs) then recompiles only the
/// generated files that changed, so a new pkc does not rebuild every kernel.
bool writeAtomically(const std::string &Path, const std::string &Text) {
  if (holdsAlready(Path, Text))
    return true;
  llvm::SmallString<256> Temp;
  int FD;
  if (std::error_code EC =
          fs::createUniqueFile(Path + "-%%%%%%.tmp", FD, Temp)) {
    llvm::errs() << "pkc: error: cannot create a file beside " << Path << ": "
                 << EC.message() << "\n";
    return false;
  }
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Text;
    OS.close();
    if (OS.has_error()) {
      llvm::errs() << "pkc: error: cannot write " << Temp << "\n";
      fs::remove(Temp);
      return false;
    }
  }
  if (std::error_code EC = fs::rename(Temp, Path)) {
    llvm::errs() << "pkc: error: cannot write " << Path << ": " << EC.message()
                 << "\n";
    fs::remove(Temp);
    return false;
  }
  return true;
}

/// Make-style escaping for depfiles.
std::string escapeMake(llvm::StringRef P) {
  std::string R;
  for (char C : P) {
    if (C == ' ' || C == '#')
      R += '\\';
    if (C == '$')
      R += '$';
    R += C;
  }
  return R;
}

/// The texts pkc generates for one input file, before they are written.
struct FileOutputs {
  std::string InputPath;
  std::string Cpp, Cu, H; ///< <stem>.pk.cpp, <stem>.pk.cu, <stem>.pk.h
  std::vector<std::string> Dependencies;
};

/// Runs the frontend and every pass on `Files` (read from `FS`, or the real
/// file system when null), printing --emit output to `Out` and
/// --pk-print-after-all to `Log`. Returns UserError when a kernel broke the
/// contract. On Success `Compiled` holds one entry per file, or none when a
/// file had only the errors -verify expected: there is nothing to write
/// then either.
ExitCode compileAll(const clang::tooling::CompilationDatabase &DB,
                    llvm::ArrayRef<std::string> Files,
                    const DriverOptions &Opts,
                    llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                    llvm::raw_ostream &Out, llvm::raw_ostream &Log,
                    std::vector<FileOutputs> &Compiled) {
  PipelineOptions PO;
  PO.Emit = Opts.Emit;
  PO.PrintAfterAll = Opts.PrintAfterAll;
  PO.Out = &Out;
  PO.Log = &Log;
  // Prints its table when this function returns.
  std::optional<StageTimers> Timers;
  if (Opts.Verbose)
    PO.Timers = &Timers.emplace();

  std::map<std::string, std::vector<cuda::KernelText>> CudaOf;
  frontend::Options FO;
  FO.ExtraArgsBefore = Opts.ExtraArgsBefore;
  FO.PchDir = Opts.PchDir;
  FO.FS = std::move(FS);
  std::vector<frontend::FileResult> Results;
  // The whole run: Clang's parse and Sema, the AST to Graph IR, every
  // pass (the stages above are part of it), the rewrite of the source.
  std::optional<llvm::TimeRegion> Total;
  if (PO.Timers)
    Total.emplace(PO.Timers->get("total (Clang frontend and every stage)"));
  bool Ok = frontend::compileFiles(
      DB, Files, FO,
      [&](ir::Function &F) {
        KernelArtifacts A = compileKernel(F, PO);
        frontend::KernelResult R;
        R.Diags = std::move(A.Diags);
        R.CppTemplate = std::move(A.CppTemplate);
        R.CppBody = std::move(A.CppBody);
        if (R.Diags.empty())
          CudaOf[absolute(F.File)].push_back(std::move(A.Cuda));
        return R;
      },
      Results);
  Total.reset();
  if (!Ok)
    return UserError;
  // Under `-Xclang -verify` a file with the expected errors counts as
  // success, but it still has no output to write.
  if (llvm::any_of(Results,
                   [](const frontend::FileResult &R) { return R.HadErrors; }))
    return Success;

  for (frontend::FileResult &R : Results) {
    FileOutputs C;
    C.InputPath = R.InputPath;
    C.Cpp = std::move(R.Rewritten);
    std::string Source = path::filename(R.InputPath).str();
    std::string Header = path::stem(R.InputPath).str() + ".pk.h";
    const std::vector<cuda::KernelText> &Cuda = CudaOf[absolute(R.InputPath)];
    C.Cu = cuda::cudaFile(Source, Header, Cuda);
    C.H = cuda::cudaHeader(Source, Cuda);
    C.Dependencies = std::move(R.Dependencies);
    Compiled.push_back(std::move(C));
  }
  return Success;
}

} // namespace

int pk::driver::run(const clang::tooling::CompilationDatabase &DB,
                    llvm::ArrayRef<std::string> Files,
                    const DriverOptions &Opts) {
  bool WriteFiles = Opts.Emit == EmitStage::None;
  std::set<std::string> Inputs;
  for (const std::string &F : Files) {
    if (!fs::exists(F)) {
      llvm::errs() << "pkc: error: no such file: " << F << "\n";
      return UsageError;
    }
    Inputs.insert(entryIdentity(F));
  }

  // Plan the outputs first: refuse to overwrite an input or to write two
  // outputs to one path.
  std::map<std::string, std::vector<std::string>> OutputsOf;
  std::set<std::string> AllOutputs, Identities;
  for (const std::string &F : Files) {
    llvm::SmallString<256> Base(Opts.OutDir);
    path::append(Base, path::stem(F));
    std::string Stem = absolute(Base);
    std::vector<std::string> Outs;
    if (Opts.Cpu)
      Outs.push_back(Stem + ".pk.cpp");
    if (Opts.Cuda) {
      Outs.push_back(Stem + ".pk.cu");
      Outs.push_back(Stem + ".pk.h");
    }
    for (const std::string &O : Outs) {
      if (Inputs.count(entryIdentity(O))) {
        llvm::errs() << "pkc: error: output " << O
                     << " would overwrite an input\n";
        return UsageError;
      }
      if (!AllOutputs.insert(O).second ||
          !Identities.insert(entryIdentity(O)).second) {
        llvm::errs() << "pkc: error: two inputs would both write " << O << "\n";
        return UsageError;
      }
    }
    OutputsOf[absolute(F)] = Outs;
  }
  // The depfile is an output too.
  if (!Opts.DepFile.empty()) {
    std::string D = entryIdentity(Opts.DepFile);
    if (Inputs.count(D) || Identities.count(D)) {
      llvm::errs() << "pkc: error: the depfile " << Opts.DepFile
                   << " would overwrite "
                   << (Inputs.count(D) ? "an input" : "an output") << "\n";
      return UsageError;
    }
  }

  std::vector<FileOutputs> Compiled;
  ExitCode Exit = compileAll(DB, Files, Opts, /*FS=*/nullptr, llvm::outs(),
                             llvm::errs(), Compiled);
  llvm::outs().flush();
  if (Exit != Success || !WriteFiles || Compiled.empty())
    return Exit;

  std::vector<OutputFile> Outputs;
  std::set<std::string> Deps;
  for (const FileOutputs &C : Compiled) {
    Deps.insert(C.Dependencies.begin(), C.Dependencies.end());
    for (const std::string &O : OutputsOf[absolute(C.InputPath)]) {
      if (llvm::StringRef(O).ends_with(".pk.cpp"))
        Outputs.push_back({O, C.Cpp});
      else if (llvm::StringRef(O).ends_with(".pk.cu"))
        Outputs.push_back({O, C.Cu});
      else
        Outputs.push_back({O, C.H});
    }
  }

  if (std::error_code EC = fs::create_directories(Opts.OutDir)) {
    llvm::errs() << "pkc: error: cannot create " << Opts.OutDir << ": "
                 << EC.message() << "\n";
    return UsageError;
  }
  for (const OutputFile &O : Outputs)
    if (!writeAtomically(O.Path, O.Text))
      return UsageError;

  if (!Opts.DepFile.empty()) {
    std::string Text;
    for (const std::string &O : AllOutputs)
      Text += escapeMake(O) + " ";
    Text += ":";
    for (const std::string &D : Deps)
      Text += " \\\n  " + escapeMake(D);
    Text += "\n";
    if (!writeAtomically(absolute(Opts.DepFile), Text))
      return UsageError;
  }
  return Success;
}

InMemoryResult
pk::driver::compileInMemory(llvm::StringRef FileName, llvm::StringRef Code,
                            llvm::ArrayRef<std::string> CompilerArgs,
                            const DriverOptions &Opts) {
  // The source lies in memory over the real file system, which still
  // serves the headers it includes.
  std::string Path = absolute(FileName);
  auto Memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  Memory->addFile(Path, /*ModificationTime=*/0,
                  llvm::MemoryBuffer::getMemBufferCopy(Code, Path));
  auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::vfs::getRealFileSystem());
  FS->pushOverlay(Memory);

  llvm::SmallString<256> Cwd;
  fs::current_path(Cwd);
  clang::tooling::FixedCompilationDatabase DB(Cwd, CompilerArgs);
  InMemoryResult R;
  std::vector<FileOutputs> Compiled;
  {
    llvm::raw_string_ostream Printed(R.Printed);
    R.Exit = compileAll(DB, {Path}, Opts, FS, Printed, Printed, Compiled);
  }
  if (R.Exit == Success && !Compiled.empty()) {
    R.Cpp = std::move(Compiled.front().Cpp);
    R.Cu = std::move(Compiled.front().Cu);
    R.H = std::move(Compiled.front().H);
  }
  return R;
}
