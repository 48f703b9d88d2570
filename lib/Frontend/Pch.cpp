//===- Pch.cpp - A precompiled <pk/pk.h>, cached between runs -------------===//

#include "Frontend/Pch.h"

#include "clang/Basic/Version.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Tooling/Tooling.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

using namespace clang;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace pk::frontend {

bool includesPkHeaderFirst(llvm::StringRef S) {
  // Blank space and comments, then the directive.
  while (true) {
    S = S.ltrim();
    if (S.consume_front("//")) {
      S = S.drop_until([](char C) { return C == '\n'; });
      continue;
    }
    if (S.consume_front("/*")) {
      size_t End = S.find("*/");
      if (End == llvm::StringRef::npos)
        return false;
      S = S.drop_front(End + 2);
      continue;
    }
    break;
  }
  if (!S.consume_front("#"))
    return false;
  S = S.ltrim(" \t");
  if (!S.consume_front("include"))
    return false;
  S = S.ltrim(" \t");
  return S.starts_with("<pk/pk.h>");
}

std::string dependencyPath(llvm::StringRef Absolute) {
  llvm::SmallString<256> Real;
  if (!fs::real_path(Absolute, Real))
    return std::string(Real);
  llvm::SmallString<256> P(Absolute);
  path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P);
}

namespace {

/// The arguments that decide what the header's declarations are: the
/// command without the tool's name and the main file, without -verify (a
/// check of the main file's diagnostics) and without an -I of the main
/// file's own directory (each file of a directory has one from
/// pk_add_kernels; the header's includes are all `<...>` and do not look
/// there unless the directory holds a pk/ of its own), each -I once.
std::vector<std::string> headerArguments(llvm::StringRef Directory,
                                         llvm::StringRef Main,
                                         const std::vector<std::string> &Args) {
  std::vector<std::string> Out;
  llvm::SmallString<256> MainDir(path::parent_path(Main));
  fs::make_absolute(Directory, MainDir);
  path::remove_dots(MainDir, /*remove_dot_dot=*/true);
  llvm::SmallString<256> OwnPk(MainDir);
  path::append(OwnPk, "pk");
  const bool DropMainDir = !fs::exists(OwnPk);
  std::set<std::string> Dirs;
  for (size_t I = 1; I < Args.size(); ++I) {
    llvm::StringRef A = Args[I];
    if (A == "--")
      break; // inputs only from here (a compile database's command)
    if (A == "-c" || A == "-S" || A == "-E")
      continue; // the phase: the parse is -fsyntax-only either way
    if (A == "-Xclang" && I + 1 < Args.size() &&
        llvm::StringRef(Args[I + 1]).starts_with("-verify")) {
      ++I;
      continue;
    }
    if (A.starts_with("-I")) {
      std::string Dir =
          A == "-I" && I + 1 < Args.size() ? Args[++I] : A.drop_front(2).str();
      llvm::SmallString<256> Abs(Dir);
      fs::make_absolute(Directory, Abs);
      path::remove_dots(Abs, /*remove_dot_dot=*/true);
      if ((DropMainDir && Abs == MainDir) ||
          !Dirs.insert(std::string(Abs)).second)
        continue;
      Out.push_back("-I" + Dir);
      continue;
    }
    Out.push_back(A.str());
  }
  return Out;
}

/// One dependency of a header: its size and modification time when the
/// header was built.
struct Stamp {
  uint64_t Size = 0;
  int64_t MTime = 0; // nanoseconds since the epoch
};

std::optional<Stamp> stampOf(const std::string &File) {
  fs::file_status St;
  if (fs::status(File, St))
    return std::nullopt;
  return Stamp{St.getSize(),
               std::chrono::duration_cast<std::chrono::nanoseconds>(
                   St.getLastModificationTime().time_since_epoch())
                   .count()};
}

/// The files of a .deps sidecar ("<size> <mtime> <path>" lines) when every
/// one still has that size and time.
std::optional<std::vector<std::string>> validDeps(const std::string &Deps) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf =
      llvm::MemoryBuffer::getFile(Deps);
  if (!Buf)
    return std::nullopt;
  std::vector<std::string> Files;
  llvm::SmallVector<llvm::StringRef> Lines;
  (*Buf)->getBuffer().split(Lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef L : Lines) {
    auto [SizeText, Rest] = L.split(' ');
    auto [TimeText, File] = Rest.split(' ');
    uint64_t Size;
    int64_t Time;
    if (SizeText.getAsInteger(10, Size) || TimeText.getAsInteger(10, Time) ||
        File.empty())
      return std::nullopt;
    std::optional<Stamp> Now = stampOf(File.str());
    if (!Now || Now->Size != Size || Now->MTime != Time)
      return std::nullopt;
    Files.push_back(File.str());
  }
  if (Files.empty())
    return std::nullopt;
  return Files;
}

/// Writes `Text` to `Path` through a temporary and a rename (LLVM's
/// writeToOutput).
bool writeAtomically(const std::string &Path, llvm::StringRef Text) {
  llvm::Error E = llvm::writeToOutput(Path, [&](llvm::raw_ostream &OS) {
    OS << Text;
    return llvm::Error::success();
  });
  if (!E)
    return true;
  llvm::consumeError(std::move(E));
  return false;
}

/// Clang's PCH action, writing to a given file and keeping the list of the
/// files it read but `Virtual`.
class BuildHeaderAction : public GeneratePCHAction {
public:
  BuildHeaderAction(std::string Output, std::string Virtual,
                    std::vector<std::string> &Files)
      : Output(std::move(Output)), Virtual(std::move(Virtual)), Files(Files) {}

protected:
  bool BeginInvocation(CompilerInstance &CI) override {
    CI.getFrontendOpts().OutputFile = Output;
    return GeneratePCHAction::BeginInvocation(CI);
  }
  void EndSourceFileAction() override {
    const SourceManager &SM = getCompilerInstance().getSourceManager();
    const FileManager &FM = SM.getFileManager();
    for (auto It = SM.fileinfo_begin(), E = SM.fileinfo_end(); It != E; ++It) {
      llvm::SmallString<256> P(It->first.getName());
      FM.makeAbsolutePath(P);
      std::string Real = dependencyPath(P);
      if (Real != Virtual)
        Files.push_back(std::move(Real));
    }
    GeneratePCHAction::EndSourceFileAction();
  }

private:
  std::string Output, Virtual;
  std::vector<std::string> &Files;
};

} // namespace

std::optional<PrecompiledPkHeader>
precompiledPkHeader(llvm::StringRef CacheDir, llvm::StringRef Directory,
                    llvm::StringRef MainFile,
                    const std::vector<std::string> &Args) {
  if (Args.empty())
    return std::nullopt;
  std::vector<std::string> HeaderArgs =
      headerArguments(Directory, MainFile, Args);
  // The key: Clang's version (a header is read only by the Clang that wrote
  // it), the working directory (relative -I) and the arguments.
  std::string KeyText = getClangFullVersion() + "\n" + Directory.str() + "\n" +
                        llvm::join(HeaderArgs, "\n");
  std::string Key = fmt::format("{:016x}", llvm::xxh3_64bits(KeyText));
  llvm::SmallString<256> Base(CacheDir);
  fs::make_absolute(Base);
  path::append(Base, "pk-" + Key);
  const std::string Pch = (Base + ".pch").str(), Deps = (Base + ".deps").str();

  if (fs::exists(Pch))
    if (std::optional<std::vector<std::string>> Files = validDeps(Deps))
      return PrecompiledPkHeader{Pch, std::move(*Files)};

  // Build it from a header that only includes <pk/pk.h>. It stays beside
  // the .pch: Clang reads it again to print an include stack through it.
  // Runs in parallel may each write it (the same text; the loads do not
  // check its time), so it is not one of the header's dependencies.
  if (fs::create_directories(CacheDir))
    return std::nullopt;
  const std::string Virtual = (Base + ".h").str();
  const llvm::StringRef HeaderText = "#include <pk/pk.h>\n";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Old =
      llvm::MemoryBuffer::getFile(Virtual);
  if ((!Old || (*Old)->getBuffer() != HeaderText) &&
      !writeAtomically(Virtual, HeaderText))
    return std::nullopt;
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS =
      llvm::vfs::createPhysicalFileSystem();
  if (FS->setCurrentWorkingDirectory(Directory))
    return std::nullopt;
  llvm::IntrusiveRefCntPtr<FileManager> Files(
      new FileManager(FileSystemOptions(), FS));

  llvm::SmallString<256> Temp;
  if (fs::createUniqueFile(Pch + "-%%%%%%.tmp", Temp))
    return std::nullopt;
  std::vector<std::string> Command = {Args.front()};
  Command.insert(Command.end(), HeaderArgs.begin(), HeaderArgs.end());
  for (const char *A : {"-fsyntax-only", "-x", "c++-header"})
    Command.push_back(A);
  Command.push_back(Virtual);
  std::vector<std::string> Read;
  tooling::ToolInvocation Invocation(
      Command,
      std::make_unique<BuildHeaderAction>(std::string(Temp),
                                          dependencyPath(Virtual), Read),
      Files.get(), std::make_shared<PCHContainerOperations>());
  // Whatever is wrong with the header, the file's own parse says it.
  IgnoringDiagConsumer Quiet;
  Invocation.setDiagnosticConsumer(&Quiet);
  if (!Invocation.run() || Read.empty()) {
    fs::remove(Temp);
    return std::nullopt;
  }
  std::sort(Read.begin(), Read.end());
  Read.erase(std::unique(Read.begin(), Read.end()), Read.end());
  std::string DepsText;
  for (const std::string &F : Read) {
    std::optional<Stamp> S = stampOf(F);
    if (!S) {
      fs::remove(Temp);
      return std::nullopt;
    }
    DepsText += fmt::format("{} {} {}\n", S->Size, S->MTime, F);
  }
  // The header first, then its list: a reader needs both.
  if (fs::rename(Temp, Pch)) {
    fs::remove(Temp);
    return std::nullopt;
  }
  if (!writeAtomically(Deps, DepsText))
    return std::nullopt;
  return PrecompiledPkHeader{Pch, std::move(Read)};
}

} // namespace pk::frontend
