//===- pk/workspace.h - Per-thread scratch memory for generated code ------===//
//
// The temporaries of a kernel call (the values pkc keeps in memory between
// fused groups) and the packed panels of a matrix product come from an
// arena per thread, kept across calls: a loop of same-shape calls allocates
// nothing once the arena has reached the largest size it needed.
//
//===----------------------------------------------------------------------===//
#ifndef PK_WORKSPACE_H
#define PK_WORKSPACE_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>

namespace pk::rt {

/// `Bytes` bytes of the calling thread's arena, 64-byte aligned, for the
/// lifetime of this object. The arena is a stack: workspaces on one thread
/// are released in the reverse order of their creation (they are scoped).
/// A workspace that does not fit above the live ones takes a block of its
/// own, and the arena remembers the peak so that the next time it is empty
/// it grows to hold everything at once. The destructor gives the memory
/// back, also when the kernel throws. Each thread (the caller, OpenMP's
/// workers) has its own arena, so concurrent calls never share memory.
class Workspace {
public:
  explicit Workspace(int64_t Bytes)
      : Size(
            static_cast<size_t>((std::max<int64_t>(Bytes, 0) + 63) / 64 * 64)) {
    Arena &A = arena();
    // The peak counts every live workspace, also those that took a block of
    // their own: counting only the arena's part would move one nesting
    // level into the arena per call, so a program whose first call
    // overflowed d levels deep allocated for d + 1 calls.
    A.Height += Size;
    A.Peak = std::max(A.Peak, A.Height);
    if (A.Used == 0 && A.Peak > A.Capacity) {
      // Grow (at least double, so that growing shapes reallocate rarely).
      release(A.Base);
      A.Capacity = std::max(A.Peak, 2 * A.Capacity);
      A.Base = allocate(A.Capacity);
    }
    if (A.Used + Size <= A.Capacity) {
      Ptr = A.Base + A.Used;
      A.Used += Size;
      return;
    }
    Own = allocate(Size);
    Ptr = Own;
  }
  Workspace(const Workspace &) = delete;
  Workspace &operator=(const Workspace &) = delete;
  ~Workspace() {
    arena().Height -= Size;
    if (Own)
      release(Own);
    else
      arena().Used -= Size;
  }
  unsigned char *data() const { return Ptr; }

  /// Bytes the calling thread's arena holds.
  static size_t arena_capacity() { return arena().Capacity; }

private:
  struct Arena {
    unsigned char *Base = nullptr;
    size_t Capacity = 0, Used = 0, Peak = 0;
    size_t Height = 0; ///< bytes of the live workspaces, in the arena or not
    ~Arena() { release(Base); }
  };
  static Arena &arena() {
    thread_local Arena A;
    return A;
  }
  static unsigned char *allocate(size_t Bytes) {
    if (Bytes == 0)
      return nullptr;
    return static_cast<unsigned char *>(
        ::operator new(Bytes, std::align_val_t(64)));
  }
  static void release(unsigned char *P) {
    if (P)
      ::operator delete(P, std::align_val_t(64));
  }

  size_t Size;
  unsigned char *Ptr = nullptr;
  unsigned char *Own = nullptr;
};

/// Bytes of a temporary with `Elem`-byte elements and these extents,
/// rounded up to 64 so that every buffer of a workspace starts on a cache
/// line (and a vector boundary).
inline int64_t buffer_bytes(int64_t Elem,
                            std::initializer_list<int64_t> Extents) {
  int64_t N = Elem;
  for (int64_t E : Extents)
    N *= E;
  return (N + 63) / 64 * 64;
}

} // namespace pk::rt

#endif // PK_WORKSPACE_H
