//===- pk/cpuinfo.h - What the CPU running the program has ------*- C++ -*-===//
//
// The run-time facts that pk's runtime sizes its work by: the cache sizes
// Linux lists for CPU 0 (sysfs), read once per process. The generated code
// and the runtime routines ask here rather than using constants or the build
// machine's flags, so one binary adapts to the machine it runs on (the
// stream threshold of <pk/stream.h>, the blocking of <pk/gemm.h>).
//
// Not sysconf(_SC_LEVEL*_CACHE_SIZE): under a hypervisor glibc reports what
// CPUID says, e.g. a whole EPYC socket's 384 MiB of L3 where a core shares
// 32 MiB, while sysfs lists the caches the kernel sees.
//
//===----------------------------------------------------------------------===//
#ifndef PK_CPUINFO_H
#define PK_CPUINFO_H

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace pk::rt {

/// Cache sizes in bytes; 0 where Linux lists no such cache (or no list).
struct CacheSizes {
  int64_t L1d = 0;       ///< level-1 data cache
  int64_t L2 = 0;        ///< level-2 (unified) cache
  int64_t LastLevel = 0; ///< the largest cache listed
};

namespace detail {

/// One line of a sysfs cache file ("48K", "Data", "2"), or "" when absent.
inline bool read_sysfs_line(int Index, const char *Field, char *Buf,
                            size_t Size) {
  char Path[80];
  std::snprintf(Path, sizeof Path,
                "/sys/devices/system/cpu/cpu0/cache/index%d/%s", Index, Field);
  std::FILE *File = std::fopen(Path, "r");
  if (!File)
    return false;
  bool Ok = std::fgets(Buf, int(Size), File) != nullptr;
  std::fclose(File);
  if (Ok)
    Buf[std::strcspn(Buf, "\n")] = '\0';
  return Ok;
}

/// "48K", "2048K", "300M" -> bytes; 0 when unreadable.
inline int64_t parse_cache_size(const char *Text) {
  long long Value = 0;
  char Unit = 0;
  if (std::sscanf(Text, "%lld%c", &Value, &Unit) < 1 || Value <= 0)
    return 0;
  int64_t Bytes = Value;
  if (Unit == 'K')
    Bytes <<= 10;
  else if (Unit == 'M')
    Bytes <<= 20;
  else if (Unit == 'G')
    Bytes <<= 30;
  return Bytes;
}

inline CacheSizes read_cache_sizes() {
  CacheSizes C;
  for (int Index = 0; Index < 16; ++Index) {
    char Size[32], Level[8], Type[32];
    if (!read_sysfs_line(Index, "size", Size, sizeof Size))
      break;
    const int64_t Bytes = parse_cache_size(Size);
    if (Bytes > C.LastLevel)
      C.LastLevel = Bytes;
    if (!read_sysfs_line(Index, "level", Level, sizeof Level) ||
        !read_sysfs_line(Index, "type", Type, sizeof Type))
      continue;
    if (std::strcmp(Level, "1") == 0 && std::strcmp(Type, "Data") == 0)
      C.L1d = Bytes;
    else if (std::strcmp(Level, "2") == 0 && std::strcmp(Type, "Instruction"))
      C.L2 = Bytes;
  }
  return C;
}

} // namespace detail

/// The caches of CPU 0, read from sysfs on the first call.
inline const CacheSizes &cache_sizes() {
  static const CacheSizes Sizes = detail::read_cache_sizes();
  return Sizes;
}

} // namespace pk::rt

#endif // PK_CPUINFO_H
