//===- Pch.h - A precompiled <pk/pk.h>, cached between runs ------*- C++
//-*-===//
//
// Parsing <pk/pk.h> (the eager reference, the runtime's headers, a good part
// of the C++ standard library) is most of pkc's time on a kernel file: about
// 2.3 s of a 2.6 s run on a small file (AMD EPYC Zen 3), where loading the
// same declarations from a precompiled header takes about 0.3 s. With a cache
// directory (`pkc --pch-dir=<dir>`; pk_add_kernels and the lit suite give one)
// pkc builds that header once per set of compiler flags and includes it in
// front of every file whose first directive is `#include <pk/pk.h>`: the
// header's own include guard then skips the file's include, so the file is
// read as before. Other files are parsed in full, as without the cache.
//
// A cached header is used only when every file it was built from still has
// the size and modification time it had (a sidecar `.deps` lists them; Clang
// checks them again when it loads the header), else it is rebuilt. Entries
// are written through a temporary and a rename, so pkc runs in parallel (a
// build, lit) never read a half-written one.
//
//===----------------------------------------------------------------------===//

#ifndef PK_FRONTEND_PCH_H
#define PK_FRONTEND_PCH_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace pk::frontend {

/// A precompiled <pk/pk.h> that a compile may include first.
struct PrecompiledPkHeader {
  /// The .pch file, for `-include-pch`.
  std::string Path;
  /// Every file the header was built from (for pkc's depfile, which cannot
  /// see them through the header).
  std::vector<std::string> Dependencies;
};

/// How a depfile names a file: its real path (symlinks and `..` resolved;
/// a `..` cannot be dropped by hand, since an include dir such as
/// `<gcc>/12/../../../../include/c++/12` may pass through a symlink), or
/// the absolute path without `.` and `..` when it does not exist.
std::string dependencyPath(llvm::StringRef Absolute);

/// True when the first preprocessing directive of `Source` (after blank
/// lines and comments) is `#include <pk/pk.h>`: including the precompiled
/// header in front of the file then changes nothing.
bool includesPkHeaderFirst(llvm::StringRef Source);

/// The precompiled <pk/pk.h> in `CacheDir` for compiling `MainFile` with
/// `Args` (the command line as pkc runs it, the tool's name first, without
/// the main file) in `Directory`: reused when valid, built otherwise. None
/// when it cannot be built (the compile then parses the header itself and
/// reports whatever is wrong with it).
std::optional<PrecompiledPkHeader>
precompiledPkHeader(llvm::StringRef CacheDir, llvm::StringRef Directory,
                    llvm::StringRef MainFile,
                    const std::vector<std::string> &Args);

} // namespace pk::frontend

#endif // PK_FRONTEND_PCH_H
