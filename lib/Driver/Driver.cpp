//===- Driver.cpp - pkc's work on a list of files -------------------------===//

#include "Driver/Driver.h"
#include "Frontend/Frontend.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

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

/// Writes `Text` to `Path` through a temporary in the same directory and a
/// rename, so a reader never sees a half-written file.
bool writeAtomically(const std::string &Path, const std::string &Text) {
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
    Inputs.insert(absolute(F));
  }

  // Plan the outputs first: refuse to overwrite an input or to write two
  // outputs to one path.
  std::map<std::string, std::vector<std::string>> OutputsOf;
  std::set<std::string> AllOutputs;
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
      if (Inputs.count(O)) {
        llvm::errs() << "pkc: error: output " << O
                     << " would overwrite an input\n";
        return UsageError;
      }
      if (!AllOutputs.insert(O).second) {
        llvm::errs() << "pkc: error: two inputs would both write " << O << "\n";
        return UsageError;
      }
    }
    OutputsOf[absolute(F)] = Outs;
  }

  PipelineOptions PO;
  PO.Emit = Opts.Emit;
  PO.PrintAfterAll = Opts.PrintAfterAll;
  PO.Out = &llvm::outs();
  PO.Log = &llvm::errs();

  std::map<std::string, std::vector<cuda::KernelText>> CudaOf;
  frontend::Options FO;
  FO.ExtraArgsBefore = Opts.ExtraArgsBefore;
  std::vector<frontend::FileResult> Results;
  bool Ok = frontend::compileFiles(
      DB, Files, FO,
      [&](ir::Function &F) {
        KernelArtifacts A = compileKernel(F, PO);
        frontend::KernelResult R;
        R.Diags = std::move(A.Diags);
        R.CppBody = std::move(A.CppBody);
        if (R.Diags.empty())
          CudaOf[absolute(F.File)].push_back(std::move(A.Cuda));
        return R;
      },
      Results);
  llvm::outs().flush();
  // Under `-Xclang -verify` a file with the expected errors counts as
  // success, but it still has no output to write.
  if (!Ok || llvm::any_of(Results, [](const frontend::FileResult &R) {
        return R.HadErrors;
      }))
    return Ok ? Success : UserError;
  if (!WriteFiles)
    return Success;

  std::vector<OutputFile> Outputs;
  std::set<std::string> Deps;
  for (const frontend::FileResult &R : Results) {
    Deps.insert(R.Dependencies.begin(), R.Dependencies.end());
    const std::vector<std::string> &Outs = OutputsOf[absolute(R.InputPath)];
    std::string Source = path::filename(R.InputPath).str();
    const std::vector<cuda::KernelText> &Cuda = CudaOf[absolute(R.InputPath)];
    std::string Header = path::stem(R.InputPath).str() + ".pk.h";
    for (const std::string &O : Outs) {
      if (llvm::StringRef(O).ends_with(".pk.cpp"))
        Outputs.push_back({O, R.Rewritten});
      else if (llvm::StringRef(O).ends_with(".pk.cu"))
        Outputs.push_back({O, cuda::cudaFile(Source, Header, Cuda)});
      else
        Outputs.push_back({O, cuda::cudaHeader(Source, Cuda)});
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
