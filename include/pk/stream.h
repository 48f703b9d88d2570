//===- pk/stream.h - Streaming stores for outputs larger than the cache ---===//
//
// A normal store first reads its cache line from memory (the line must be
// owned before part of it changes), so writing an output that does not fit
// in the cache moves every byte twice: read, then written back. A streaming
// (non-temporal) store of a whole 64-byte line skips the read. Generated row
// kernels use these helpers for a pure output (written, never read by the
// loop nest) when its bytes reach stream_threshold(): they compute about
// 1 KiB of the row into a buffer on the stack, then stream it out.
//
// Only whole, aligned lines are streamed; the partial lines at the ends of a
// row are stored normally, so any row length and alignment is exact.
// Streaming stores are weakly ordered: a thread calls stream_fence() after
// its last one, before the barrier that ends its parallel region.
//
// Measured (bench/HISTORY.md, "Streaming stores"), [2048, 4096] on one
// thread: add_rmsnorm 1.46-1.50x, layernorm 1.35-1.47x, rmsnorm 1.27-1.30x
// faster. An output that fits in the cache is slower streamed (0.84-0.90x:
// the next call finds it in memory, not in the cache), hence the threshold.
//
//===----------------------------------------------------------------------===//
#ifndef PK_STREAM_H
#define PK_STREAM_H

#include <pk/cpuinfo.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__CUDA_ARCH__)
#include <emmintrin.h>
#define PK_HAS_STREAM_STORES 1
#else
#define PK_HAS_STREAM_STORES 0
#endif

namespace pk::rt {

/// The bytes of one chunk of a streamed row (the stack buffer's size).
inline constexpr int64_t kStreamChunkBytes = 1024;
/// Elements of type T in one chunk (the buffer's length).
template <class T>
inline constexpr int64_t kStreamChunk = kStreamChunkBytes / int64_t(sizeof(T));
/// stream_threshold() when nothing is streamed.
inline constexpr int64_t kNeverStream = INT64_MAX;

namespace detail {

/// PK_STREAM_THRESHOLD (bytes, or "never"), else 3/4 of the last-level
/// cache (the fraction glibc's memcpy streams at), else never.
inline int64_t default_stream_threshold() {
  if (!PK_HAS_STREAM_STORES)
    return kNeverStream;
  if (const char *Env = std::getenv("PK_STREAM_THRESHOLD")) {
    if (std::strcmp(Env, "never") == 0)
      return kNeverStream;
    char *End = nullptr;
    long long Bytes = std::strtoll(Env, &End, 10);
    if (End != Env && *End == '\0' && Bytes >= 0)
      return Bytes;
    std::fprintf(stderr,
                 "pk: ignoring PK_STREAM_THRESHOLD=%s (expected a number of "
                 "bytes or \"never\")\n",
                 Env);
  }
  int64_t Cache = cache_sizes().LastLevel;
  return Cache > 0 ? Cache / 4 * 3 : kNeverStream;
}

inline std::atomic<int64_t> &stream_threshold_slot() {
  static std::atomic<int64_t> Slot{default_stream_threshold()};
  return Slot;
}

} // namespace detail

/// Outputs of at least this many bytes are written with streaming stores.
inline int64_t stream_threshold() {
  return detail::stream_threshold_slot().load(std::memory_order_relaxed);
}

/// Overrides the threshold for the whole process (0: stream every output a
/// kernel can stream; kNeverStream: none). Ignored without streaming
/// stores. For tests and tuning; the default suits most machines.
inline void set_stream_threshold(int64_t Bytes) {
  if (PK_HAS_STREAM_STORES)
    detail::stream_threshold_slot().store(Bytes < 0 ? kNeverStream : Bytes,
                                          std::memory_order_relaxed);
}

/// Whether a kernel streams outputs of `Bytes` bytes in all.
inline bool stream_stores(int64_t Bytes) {
  return PK_HAS_STREAM_STORES && Bytes > 0 && Bytes >= stream_threshold();
}

/// How many elements to compute before the next stream_store at `Dst`: at
/// most `Left`, otherwise up to the 64-byte line boundary nearest below
/// `Dst` + kStreamChunkBytes (so every chunk but the first and last streams
/// whole lines only). At least kStreamChunk<T> - 64 / sizeof(T) + 1.
template <class T> inline int64_t stream_chunk(const T *Dst, int64_t Left) {
  auto Addr = reinterpret_cast<uintptr_t>(Dst);
  auto End = ((Addr + uintptr_t(kStreamChunkBytes)) & ~uintptr_t(63)) - Addr;
  int64_t Elems = static_cast<int64_t>(End / sizeof(T));
  return Left < Elems ? Left : Elems;
}

/// Copies `N` elements from `Src` to `Dst`: whole 64-byte lines of `Dst`
/// with streaming stores, the partial lines at either end normally.
template <class T> inline void stream_store(T *Dst, const T *Src, int64_t N) {
  auto *D = reinterpret_cast<char *>(Dst);
  const auto *S = reinterpret_cast<const char *>(Src);
  const int64_t Bytes = N * int64_t(sizeof(T));
  int64_t At = 0;
#if PK_HAS_STREAM_STORES
  int64_t Head = int64_t((64 - (reinterpret_cast<uintptr_t>(D) & 63)) & 63);
  Head = Head < Bytes ? Head : Bytes;
  std::memcpy(D, S, size_t(Head));
  for (At = Head; At + 64 <= Bytes; At += 64)
    for (int Part = 0; Part < 64; Part += 16)
      _mm_stream_si128(
          reinterpret_cast<__m128i *>(D + At + Part),
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(S + At + Part)));
#endif
  std::memcpy(D + At, S + At, size_t(Bytes - At));
}

/// Orders this thread's streaming stores before its later stores (and the
/// barrier at the end of an OpenMP region).
inline void stream_fence() {
#if PK_HAS_STREAM_STORES
  _mm_sfence();
#endif
}

} // namespace pk::rt

#endif // PK_STREAM_H
