//===- shim.cpp - Runtime of the CUDA host-execution shim -----------------===//
//
// Every CUDA thread of a block is a fiber (Boost.Context's fcontext: a switch
// costs tens of nanoseconds). A block's fibers run on one OS thread, one
// after another; a fiber runs until it waits at a barrier or a warp
// collective, or returns. A rendezvous (a Group) completes when every
// thread it needs has arrived; then its threads are ready again. When no
// fiber is ready and some have not returned, the block is deadlocked: the
// launch fails with a message that says who waits where.
//
// Built three times from this file (test/cuda_shim/CMakeLists.txt):
// PK_SHIM_ASAN tells AddressSanitizer about every stack switch;
// PK_SHIM_TSAN makes every fiber a ThreadSanitizer fiber, turns every
// rendezvous into release/acquire on an object of its own, and runs up to
// kTsanBlocks blocks at once, each on its own OS thread.
//
//===----------------------------------------------------------------------===//

// Boost and the standard library before the fake CUDA header's macros.
#include <boost/context/detail/fcontext.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

// ASan annotations whenever this file is built with ASan (pk_cuda_shim_asan,
// or a build whose global flags add -fsanitize=address: unannotated fiber
// switches would make ASan report false stack errors).
#ifndef PK_SHIM_ASAN
#if defined(__SANITIZE_ADDRESS__)
#define PK_SHIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PK_SHIM_ASAN 1
#endif
#endif
#endif
#ifndef PK_SHIM_ASAN
#define PK_SHIM_ASAN 0
#endif
#ifndef PK_SHIM_TSAN
#define PK_SHIM_TSAN 0
#endif
#if PK_SHIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if PK_SHIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#include <cuda_runtime.h>
#include <pk_shim/shim.h>

namespace fctx = boost::context::detail;

namespace pk::shim::detail {
__thread const Coords *t_coords = nullptr;
__thread unsigned char *t_dynamic_smem = nullptr;
} // namespace pk::shim::detail

// The runtime's own handles.
struct CUstream_st {
  unsigned Flags = 0;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point Time{};
  bool Recorded = false;
};

namespace {

using namespace pk::shim;
using namespace pk::shim::detail;

//===----------------------------------------------------------------------===//
// The device the shim reports: an H100/H200-like GPU.
//===----------------------------------------------------------------------===//

constexpr int kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535u, 65535u};
constexpr int kDefaultDynamicSmem = 48 * 1024;
constexpr int kMaxDynamicSmemOptin = 227 * 1024;
constexpr int kSmemPerSM = 228 * 1024;
/// The multiprocessor count the device reports (pk::shim::set_sm_count).
std::atomic<int> g_sms{132};
constexpr int kMaxThreadsPerSM = 2048;
constexpr int kMaxBlocksPerSM = 32;
constexpr size_t kGlobalMemory = size_t(141) << 30;

constexpr int kTsanBlocks = 8;
constexpr size_t kStackBytes =
    (PK_SHIM_ASAN || PK_SHIM_TSAN) ? 256 * 1024 : 64 * 1024;

[[noreturn]] void fatal(const std::string &Msg) {
  std::fprintf(stderr, "pk-shim: fatal: %s\n", Msg.c_str());
  std::fflush(stderr);
  std::abort();
}

//===----------------------------------------------------------------------===//
// Errors: the last one (returned once by cudaGetLastError) or a sticky one
// (returned by every call until reset()).
//===----------------------------------------------------------------------===//

struct ErrorState {
  std::mutex Mu;
  cudaError_t Last = cudaSuccess;
  bool Sticky = false;
  cudaError_t MessageCode = cudaSuccess;
  std::string Message;
};
ErrorState &errors() {
  static ErrorState E;
  return E;
}

cudaError_t record(cudaError_t Code, const std::string &Msg, bool Sticky) {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  if (E.Sticky)
    return E.Last;
  E.Last = Code;
  E.Sticky = Sticky;
  E.MessageCode = Code;
  E.Message = Msg;
  std::fprintf(stderr, "pk-shim: error: %s\n", Msg.c_str());
  std::fflush(stderr);
  return Code;
}

cudaError_t sticky() {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  return E.Sticky ? E.Last : cudaSuccess;
}

#define PK_SHIM_RETURN_IF_STICKY()                                             \
  do {                                                                         \
    if (cudaError_t S = sticky())                                              \
      return S;                                                                \
  } while (0)

std::string hex(const void *P) {
  char Buf[32];
  std::snprintf(Buf, sizeof Buf, "%p", P);
  return Buf;
}

std::string dim_str(dim3 D) {
  return "(" + std::to_string(D.x) + ", " + std::to_string(D.y) + ", " +
         std::to_string(D.z) + ")";
}

//===----------------------------------------------------------------------===//
// Global state: schedule, counters, allocations, streams, attributes.
//===----------------------------------------------------------------------===//

std::atomic<int> g_schedule{int(Schedule::Forward)};
std::atomic<uint64_t> g_seed{0};
std::atomic<bool> g_schedule_explicit{false};
std::once_flag g_env_once;
std::atomic<uint64_t> g_launch_index{0};

void read_schedule_env() {
  std::call_once(g_env_once, [] {
    if (g_schedule_explicit.load())
      return;
    const char *Env = std::getenv("PK_SHIM_SCHEDULE");
    if (!Env || !*Env)
      return;
    std::string S = Env;
    if (S == "forward") {
      g_schedule = int(Schedule::Forward);
    } else if (S.rfind("random:", 0) == 0 && S.size() > 7) {
      char *End = nullptr;
      unsigned long long Seed = std::strtoull(S.c_str() + 7, &End, 10);
      if (*End)
        fatal("PK_SHIM_SCHEDULE=" + S + ": expected random:<decimal seed>");
      g_seed = Seed;
      g_schedule = int(Schedule::Random);
    } else {
      fatal("PK_SHIM_SCHEDULE=" + S + ": expected forward or random:<seed>");
    }
  });
}

struct AtomicStats {
  std::atomic<uint64_t> Launches{0}, RefusedLaunches{0}, Blocks{0}, Threads{0},
      FiberSwitches{0}, Barriers{0}, WarpCollectives{0},
      UndefinedShuffleReads{0}, Errors{0}, BlocksOverBudget{0};
  void add(const Stats &S) {
    Launches += S.Launches;
    RefusedLaunches += S.RefusedLaunches;
    Blocks += S.Blocks;
    Threads += S.Threads;
    FiberSwitches += S.FiberSwitches;
    Barriers += S.Barriers;
    WarpCollectives += S.WarpCollectives;
    UndefinedShuffleReads += S.UndefinedShuffleReads;
    Errors += S.Errors;
    BlocksOverBudget += S.BlocksOverBudget;
  }
};
AtomicStats g_stats;

// set_switch_budget(): the cap (0: none) and the switches made since.
std::atomic<uint64_t> g_switch_budget{0}, g_switches_spent{0};

struct Allocations {
  std::mutex Mu;
  std::map<uintptr_t, size_t> Live; // device allocations: start -> bytes
  std::set<void *> Host;            // cudaMallocHost
};
Allocations &allocations() {
  static Allocations A;
  return A;
}

/// Whether [P, P + N) lies inside one live device allocation.
bool in_device_allocation(const void *P, size_t N) {
  Allocations &A = allocations();
  std::lock_guard<std::mutex> Lock(A.Mu);
  uintptr_t U = reinterpret_cast<uintptr_t>(P);
  auto It = A.Live.upper_bound(U);
  if (It == A.Live.begin())
    return false;
  --It;
  return U >= It->first && U - It->first <= It->second &&
         N <= It->second - (U - It->first);
}

struct Handles {
  std::mutex Mu;
  std::set<CUstream_st *> Streams;
  std::set<CUevent_st *> Events;
  std::map<const void *, int> MaxDynamicSmem;
};
Handles &handles() {
  static Handles H;
  return H;
}

bool valid_stream(cudaStream_t S) {
  if (S == nullptr || S == cudaStreamLegacy || S == cudaStreamPerThread)
    return true;
  Handles &H = handles();
  std::lock_guard<std::mutex> Lock(H.Mu);
  return H.Streams.count(S) != 0;
}

int dynamic_smem_limit(const void *Func) {
  Handles &H = handles();
  std::lock_guard<std::mutex> Lock(H.Mu);
  auto It = H.MaxDynamicSmem.find(Func);
  return It == H.MaxDynamicSmem.end() ? kDefaultDynamicSmem : It->second;
}

//===----------------------------------------------------------------------===//
// Fiber stacks: mmap'd with a guard page below, pooled across launches.
//===----------------------------------------------------------------------===//

struct Stack {
  char *Lo = nullptr;
  size_t Size = 0;
};

class StackPool {
  std::mutex Mu;
  std::vector<Stack> Free;

public:
  Stack get() {
    Stack S;
    {
      std::lock_guard<std::mutex> Lock(Mu);
      if (!Free.empty()) {
        S = Free.back();
        Free.pop_back();
      }
    }
    if (!S.Lo) {
      size_t Page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      void *M = mmap(nullptr, kStackBytes + Page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (M == MAP_FAILED)
        fatal("cannot map a fiber stack of " + std::to_string(kStackBytes) +
              " bytes");
      if (mprotect(M, Page, PROT_NONE) != 0)
        fatal("cannot protect a fiber stack's guard page");
      S = {static_cast<char *>(M) + Page, kStackBytes};
    }
#if PK_SHIM_ASAN
    // Frames of an earlier fiber may have left poisoned redzones behind.
    ASAN_UNPOISON_MEMORY_REGION(S.Lo, S.Size);
#endif
    return S;
  }
  void put(Stack S) {
    std::lock_guard<std::mutex> Lock(Mu);
    Free.push_back(S);
  }
};
StackPool &stacks() {
  static StackPool P;
  return P;
}

#if PK_SHIM_TSAN
/// ThreadSanitizer fibers, reused across launches (a launch's worker keeps
/// its own until it ends: never two concurrent blocks on one TSan fiber).
class TsanFiberPool {
  std::mutex Mu;
  std::vector<void *> Free;

public:
  void *get() {
    {
      std::lock_guard<std::mutex> Lock(Mu);
      if (!Free.empty()) {
        void *F = Free.back();
        Free.pop_back();
        return F;
      }
    }
    return __tsan_create_fiber(0);
  }
  void put(void *F) {
    std::lock_guard<std::mutex> Lock(Mu);
    Free.push_back(F);
  }
};
TsanFiberPool &tsan_fibers() {
  static TsanFiberPool P;
  return P;
}
#endif

//===----------------------------------------------------------------------===//
// Blocks: fibers, rendezvous groups, the scheduler.
//===----------------------------------------------------------------------===//

/// Thrown into a fiber to unwind it when its block is abandoned.
struct Unwind {};

/// One rendezvous: a __syncthreads* of the whole block, or one warp
/// collective over the lanes of Mask.
struct Group {
  bool IsBlock = false;
  int Kind = 0; // BarrierKind or WarpOp
  unsigned Mask = 0;
  int Warp = 0;
  int Width = 32;
  int Bytes = 4;
  unsigned Arrived = 0;  // warp: lanes that arrived
  int Count = 0;         // block: threads that arrived
  int Preds = 0;         // block: ... with a non-zero predicate
  int Refs = 0;          // arrived threads that have not left yet
  const char *File = ""; // where the first thread arrived
  int Line = 0;
  uint64_t Val[32];
  int Arg[32];
  char Sync = 0; // ThreadSanitizer's synchronisation object
};

enum class FiberState : uint8_t { Fresh, Running, Ready, Waiting, Done };

struct Fiber {
  Coords C{};
  fctx::fcontext_t Ctx = nullptr;
  Stack Stk;
  int Linear = 0;
  FiberState State = FiberState::Fresh;
  Group *G = nullptr; // the rendezvous it waits at
  const char *File = "";
  int Line = 0;
  uint64_t Result = 0;
  bool Abort = false;
  void *Fake = nullptr; // AddressSanitizer's fake stack
  void *Tsan = nullptr; // ThreadSanitizer's fiber
};

const char *barrier_name(int K) {
  switch (BarrierKind(K)) {
  case BarrierKind::Sync:
    return "__syncthreads";
  case BarrierKind::Count:
    return "__syncthreads_count";
  case BarrierKind::And:
    return "__syncthreads_and";
  case BarrierKind::Or:
    return "__syncthreads_or";
  }
  return "?";
}

const char *warp_op_name(int Op) {
  switch (WarpOp(Op)) {
  case WarpOp::SyncWarp:
    return "__syncwarp";
  case WarpOp::Ballot:
    return "__ballot_sync";
  case WarpOp::Any:
    return "__any_sync";
  case WarpOp::All:
    return "__all_sync";
  case WarpOp::ShflIdx:
    return "__shfl_sync";
  case WarpOp::ShflUp:
    return "__shfl_up_sync";
  case WarpOp::ShflDown:
    return "__shfl_down_sync";
  case WarpOp::ShflXor:
    return "__shfl_xor_sync";
  }
  return "?";
}

bool is_shuffle(int Op) {
  return Op == int(WarpOp::ShflIdx) || Op == int(WarpOp::ShflUp) ||
         Op == int(WarpOp::ShflDown) || Op == int(WarpOp::ShflXor);
}

std::string base_name(const char *File) {
  const char *Slash = std::strrchr(File, '/');
  return Slash ? Slash + 1 : File;
}

std::string where(const char *File, int Line) {
  return base_name(File) + ":" + std::to_string(Line);
}

std::string mask_str(unsigned Mask) {
  char Buf[16];
  std::snprintf(Buf, sizeof Buf, "0x%08x", Mask);
  return Buf;
}

/// "0-15, 17, 20-31" for a sorted list of ids.
std::string ranges(const std::vector<int> &Ids) {
  std::string S;
  for (size_t I = 0; I < Ids.size();) {
    size_t J = I;
    while (J + 1 < Ids.size() && Ids[J + 1] == Ids[J] + 1)
      ++J;
    if (!S.empty())
      S += ", ";
    S += std::to_string(Ids[I]);
    if (J > I)
      S += "-" + std::to_string(Ids[J]);
    I = J + 1;
  }
  return S;
}

std::string lanes_str(unsigned Mask) {
  std::vector<int> L;
  for (int I = 0; I < 32; ++I)
    if (Mask & (1u << I))
      L.push_back(I);
  return ranges(L);
}

uint64_t splitmix64(uint64_t &X) {
  uint64_t Z = (X += 0x9e3779b97f4a7c15ull);
  Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ull;
  Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebull;
  return Z ^ (Z >> 31);
}

/// The source lane of a shuffle, as PTX's shfl.sync defines it (a lane
/// outside the caller's segment of `Width` lanes reads its own value).
int source_lane(WarpOp Op, int Lane, int B, int Width) {
  const int SegMask = (32 - Width) & 31;
  const int BVal = B & 31;
  const int CVal = Op == WarpOp::ShflUp ? 0 : 31;
  const int MaxLane = (Lane & SegMask) | (CVal & ~SegMask & 31);
  const int MinLane = Lane & SegMask;
  int J = Lane;
  bool InRange = true;
  switch (Op) {
  case WarpOp::ShflUp:
    J = Lane - BVal;
    InRange = J >= MaxLane;
    break;
  case WarpOp::ShflDown:
    J = Lane + BVal;
    InRange = J <= MaxLane;
    break;
  case WarpOp::ShflXor:
    J = Lane ^ BVal;
    InRange = J <= MaxLane;
    break;
  case WarpOp::ShflIdx:
    J = MinLane | (BVal & ~SegMask & 31);
    InRange = J <= MaxLane;
    break;
  default:
    break;
  }
  return InRange ? J : Lane;
}

/// Runs the blocks of one launch on the calling OS thread.
struct Worker {
  const LaunchDesc &L;
  const uint64_t LaunchIndex;
  const Schedule Sched;
  const uint64_t Seed;
  const int NThreads;
  const int NWarps;

  std::vector<Fiber> Fibers;
  std::vector<int> Ready, Round;
  std::vector<std::vector<Group *>> Pending; // per warp
  std::vector<unsigned> Exited;              // per warp, absent lanes too
  std::vector<Group *> FreeGroups;
  Group *Bar = nullptr;
  int NDone = 0;
  uint3 BlockIdx{0, 0, 0};
  uint64_t Rng = 0;

  std::string Error;
  cudaError_t ErrorCode = cudaSuccess;
  bool Aborting = false;
  bool WarnedUndefined = false;

  fctx::fcontext_t SchedCtx = nullptr;
  unsigned char *Smem = nullptr;
  Stats Local;

#if PK_SHIM_ASAN
  const void *MainBottom = nullptr;
  size_t MainSize = 0;
  void *SchedFake = nullptr;
#endif
#if PK_SHIM_TSAN
  void *TsanSched = nullptr;
  char BlockStart = 0; // released by the scheduler, acquired by each fiber
  char BlockEnd = 0;   // released by each fiber when it returns
  // Thread I of every block of this launch uses stack I and TSan fiber I:
  // creating a TSan fiber costs ~0.5 ms, and a stack reused by another
  // fiber of the same block would look like a race on the stack.
  std::vector<Stack> OwnStacks;
  std::vector<void *> OwnFibers;
#endif

  Worker(const LaunchDesc &L, uint64_t LaunchIndex, Schedule Sched,
         uint64_t Seed)
      : L(L), LaunchIndex(LaunchIndex), Sched(Sched), Seed(Seed),
        NThreads(int(L.Block.x * L.Block.y * L.Block.z)),
        NWarps((NThreads + 31) / 32), Fibers(NThreads), Pending(NWarps),
        Exited(NWarps) {
    // Reserved up front: nothing here reallocates while fibers run.
    Ready.reserve(NThreads);
    Round.reserve(NThreads);
    for (auto &P : Pending)
      P.reserve(32);
    Smem = static_cast<unsigned char *>(
        ::operator new(L.Smem, std::align_val_t(16)));
#if PK_SHIM_TSAN
    // Taken by the launching thread before the workers start: a worker
    // that took them from the pools while others run blocks would be
    // ordered after those blocks by the pools' mutex, hiding their races.
    for (int I = 0; I < NThreads; ++I) {
      OwnStacks.push_back(stacks().get());
      OwnFibers.push_back(tsan_fibers().get());
    }
#endif
  }
  ~Worker() {
#if PK_SHIM_TSAN
    for (const Stack &S : OwnStacks)
      if (S.Lo)
        stacks().put(S);
    for (void *F : OwnFibers)
      if (F)
        tsan_fibers().put(F);
#endif
    ::operator delete(Smem, std::align_val_t(16));
    for (Group *G : FreeGroups)
      delete G;
  }

  void fail(cudaError_t Code, const std::string &Msg) {
    if (Error.empty()) {
      Error = Msg;
      ErrorCode = Code;
    }
  }

  std::string kernel_at() const {
    return std::string("kernel ") + L.Name + ", block " +
           dim_str(dim3(BlockIdx)) + " of grid " + dim_str(L.Grid) +
           ", blockDim " + dim_str(L.Block);
  }

  std::string thread_str(const Fiber &F) const {
    std::string S = "thread " + std::to_string(F.Linear);
    if (L.Block.y > 1 || L.Block.z > 1)
      S += " " + dim_str(dim3(F.C.ThreadIdx));
    return S + " (lane " + std::to_string(F.Linear & 31) + " of warp " +
           std::to_string(F.Linear >> 5) + ")";
  }

  Group *new_group() {
#if PK_SHIM_TSAN
    // A fresh object: ThreadSanitizer forgets a freed object's clock.
    return new Group();
#else
    if (FreeGroups.empty())
      return new Group();
    Group *G = FreeGroups.back();
    FreeGroups.pop_back();
    *G = Group();
    return G;
#endif
  }
  void free_group(Group *G) {
#if PK_SHIM_TSAN
    delete G;
#else
    FreeGroups.push_back(G);
#endif
  }

  void run_block(uint3 Idx);
  void resume(Fiber &F);
  void abort_block();
  void report_deadlock();
  void complete_barrier(Group *G);
  void try_complete_warp(Group *G);
  void thread_exited(Fiber &F);
};

thread_local Worker *t_worker = nullptr;
thread_local Fiber *t_fiber = nullptr;

/// From a fiber back to its block's scheduler. Final: the fiber has
/// returned and is never resumed.
void switch_to_scheduler(Worker &W, Fiber &F, bool Final) {
#if PK_SHIM_ASAN
  __sanitizer_start_switch_fiber(Final ? nullptr : &F.Fake, W.MainBottom,
                                 W.MainSize);
#endif
#if PK_SHIM_TSAN
  __tsan_switch_to_fiber(W.TsanSched, __tsan_switch_to_fiber_no_sync);
#endif
  (void)Final;
  fctx::transfer_t T = fctx::jump_fcontext(W.SchedCtx, nullptr);
  W.SchedCtx = T.fctx;
#if PK_SHIM_ASAN
  __sanitizer_finish_switch_fiber(F.Fake, &W.MainBottom, &W.MainSize);
#endif
  (void)F;
}

void fiber_main(fctx::transfer_t T) {
  Worker &W = *static_cast<Worker *>(T.data);
  W.SchedCtx = T.fctx;
#if PK_SHIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &W.MainBottom, &W.MainSize);
#endif
  Fiber &F = *t_fiber;
#if PK_SHIM_TSAN
  __tsan_acquire(&W.BlockStart);
#endif
  try {
    W.L.Thunk(W.L.Context);
  } catch (const Unwind &) {
  } catch (const std::exception &E) {
    W.fail(cudaErrorLaunchFailure, W.kernel_at() + ": " + W.thread_str(F) +
                                       " threw an exception: " + E.what());
  } catch (...) {
    W.fail(cudaErrorLaunchFailure,
           W.kernel_at() + ": " + W.thread_str(F) + " threw an exception");
  }
  W.thread_exited(F);
  F.State = FiberState::Done;
#if PK_SHIM_TSAN
  __tsan_release(&W.BlockEnd);
#endif
  switch_to_scheduler(W, F, /*Final=*/true);
  fatal("a finished fiber was resumed");
}

void Worker::resume(Fiber &F) {
  t_fiber = &F;
  t_coords = &F.C;
  if (F.State == FiberState::Fresh) {
#if PK_SHIM_TSAN
    F.Stk = OwnStacks[F.Linear];
    F.Tsan = OwnFibers[F.Linear];
#else
    F.Stk = stacks().get();
#endif
    F.Ctx = fctx::make_fcontext(F.Stk.Lo + F.Stk.Size, F.Stk.Size, fiber_main);
    ++Local.Threads;
  }
  F.State = FiberState::Running;
#if PK_SHIM_ASAN
  __sanitizer_start_switch_fiber(&SchedFake, F.Stk.Lo, F.Stk.Size);
#endif
#if PK_SHIM_TSAN
  __tsan_switch_to_fiber(F.Tsan, __tsan_switch_to_fiber_no_sync);
#endif
  fctx::transfer_t T = fctx::jump_fcontext(F.Ctx, this);
#if PK_SHIM_ASAN
  __sanitizer_finish_switch_fiber(SchedFake, nullptr, nullptr);
#endif
  F.Ctx = T.fctx;
  Local.FiberSwitches += 2;
  t_fiber = nullptr;
  t_coords = nullptr;
  if (F.State == FiberState::Done) {
#if !PK_SHIM_TSAN
    stacks().put(F.Stk);
#endif
    F.Stk = Stack();
  }
}

void Worker::run_block(uint3 Idx) {
  BlockIdx = Idx;
  std::memset(Smem, 0xFF, L.Smem);
  t_dynamic_smem = Smem;
#if PK_SHIM_TSAN
  __tsan_release(&BlockStart);
#endif
  for (int I = 0; I < NThreads; ++I) {
    Fiber &F = Fibers[I];
    F = Fiber();
    F.Linear = I;
    F.C.ThreadIdx =
        uint3{unsigned(I) % L.Block.x, (unsigned(I) / L.Block.x) % L.Block.y,
              unsigned(I) / (L.Block.x * L.Block.y)};
    F.C.BlockIdx = Idx;
    F.C.BlockDim = L.Block;
    F.C.GridDim = L.Grid;
  }
  for (int Wp = 0; Wp < NWarps; ++Wp) {
    Pending[Wp].clear();
    int Present = std::min(32, NThreads - 32 * Wp);
    Exited[Wp] = Present == 32 ? 0u : ~((1u << Present) - 1u);
  }
  Bar = nullptr;
  NDone = 0;
  Aborting = false;
  uint64_t BlockLinear =
      Idx.x + uint64_t(L.Grid.x) * (Idx.y + uint64_t(L.Grid.y) * Idx.z);
  Rng = Seed ^ (LaunchIndex * 0xd1b54a32d192ed03ull) ^
        (BlockLinear * 0x8cb92ba72f3d8dd7ull);

  Ready.clear();
  for (int I = 0; I < NThreads; ++I)
    Ready.push_back(I);
  while (!Ready.empty() && Error.empty()) {
    Round.swap(Ready);
    Ready.clear();
    if (Sched == Schedule::Forward) {
      std::sort(Round.begin(), Round.end());
    } else {
      for (size_t I = Round.size(); I > 1; --I)
        std::swap(Round[I - 1], Round[splitmix64(Rng) % I]);
    }
    for (int I : Round) {
      resume(Fibers[I]);
      if (!Error.empty())
        break;
    }
  }
  if (Error.empty() && NDone < NThreads)
    report_deadlock();
  if (!Error.empty())
    abort_block();
#if PK_SHIM_TSAN
  __tsan_acquire(&BlockEnd);
#endif
  ++Local.Blocks;
}

/// Unwinds every fiber that has started and not returned.
void Worker::abort_block() {
  Aborting = true;
  for (Fiber &F : Fibers) {
    if (F.State == FiberState::Fresh) {
      F.State = FiberState::Done;
      ++NDone;
    } else if (F.State != FiberState::Done) {
      F.Abort = true;
      resume(F);
      if (F.State != FiberState::Done)
        fatal("an abandoned fiber did not unwind");
    }
  }
}

void Worker::report_deadlock() {
  // Group the threads by what they wait at.
  std::vector<std::pair<std::string, std::vector<int>>> Waits;
  auto Add = [&](const std::string &Key, int Id) {
    for (auto &[K, Ids] : Waits)
      if (K == Key) {
        Ids.push_back(Id);
        return;
      }
    Waits.push_back({Key, {Id}});
  };
  bool AtBarrier = false, AtWarp = false, AnyExited = false;
  for (const Fiber &F : Fibers) {
    if (F.State == FiberState::Done) {
      Add("have returned", F.Linear);
      AnyExited = true;
      continue;
    }
    const Group *G = F.G;
    if (!G) {
      Add("have not started", F.Linear);
      continue;
    }
    std::string Key = "wait at ";
    if (G->IsBlock) {
      AtBarrier = true;
      Key += std::string(barrier_name(G->Kind)) + " (" + where(F.File, F.Line) +
             ")";
    } else {
      AtWarp = true;
      unsigned Missing = G->Mask & ~Exited[G->Warp] & ~G->Arrived;
      Key += std::string(warp_op_name(G->Kind)) + "(mask " + mask_str(G->Mask) +
             ") (" + where(F.File, F.Line) + "), for lanes " +
             lanes_str(Missing) + " of their warp";
    }
    Add(Key, F.Linear);
  }
  std::ostringstream OS;
  OS << "deadlock in " << kernel_at() << ": no thread can go on.";
  for (auto &[Key, Ids] : Waits)
    OS << "\n  threads " << ranges(Ids) << " " << Key;
  if (L.Block.y > 1 || L.Block.z > 1)
    OS << "\n  (thread numbers are linear: x + y*blockDim.x + "
          "z*blockDim.x*blockDim.y)";
  if (AtBarrier)
    OS << "\n  CUDA requires every thread of a block to reach each "
          "__syncthreads"
       << (AnyExited ? " (a thread that returned never arrives)" : "")
       << "; otherwise the behaviour is undefined (a GPU may hang).";
  if (AtWarp)
    OS << "\n  A warp collective waits for every non-exited lane named in "
          "its mask; each of them must execute the same collective with the "
          "same mask (undefined behaviour otherwise).";
  fail(cudaErrorLaunchTimeout, OS.str());
}

void Worker::complete_barrier(Group *G) {
  Bar = nullptr;
  uint64_t R = 0;
  switch (BarrierKind(G->Kind)) {
  case BarrierKind::Sync:
    break;
  case BarrierKind::Count:
    R = uint64_t(G->Preds);
    break;
  case BarrierKind::And:
    R = G->Preds == G->Count;
    break;
  case BarrierKind::Or:
    R = G->Preds > 0;
    break;
  }
  for (Fiber &F : Fibers) {
    F.Result = R;
    F.State = FiberState::Ready;
    Ready.push_back(F.Linear);
  }
  ++Local.Barriers;
}

void Worker::try_complete_warp(Group *G) {
  const unsigned Required = G->Mask & ~Exited[G->Warp];
  if ((G->Arrived & Required) != Required)
    return;
  auto &P = Pending[G->Warp];
  P.erase(std::find(P.begin(), P.end(), G));
  unsigned Ballot = 0;
  for (int Lane = 0; Lane < 32; ++Lane)
    if ((G->Arrived & (1u << Lane)) && G->Val[Lane])
      Ballot |= 1u << Lane;
  const uint64_t Poison = G->Bytes >= 8 ? ~0ull : (1ull << (8 * G->Bytes)) - 1;
  for (int Lane = 0; Lane < 32; ++Lane) {
    if (!(G->Arrived & (1u << Lane)))
      continue;
    Fiber &F = Fibers[32 * G->Warp + Lane];
    uint64_t R = 0;
    switch (WarpOp(G->Kind)) {
    case WarpOp::SyncWarp:
      break;
    case WarpOp::Ballot:
      R = Ballot;
      break;
    case WarpOp::Any:
      R = Ballot != 0;
      break;
    case WarpOp::All:
      R = Ballot == G->Arrived;
      break;
    default: {
      int J = source_lane(WarpOp(G->Kind), Lane, G->Arg[Lane], G->Width);
      if (J == Lane || (G->Arrived & (1u << J))) {
        R = G->Val[J];
        break;
      }
      R = Poison;
      ++Local.UndefinedShuffleReads;
      if (!WarnedUndefined) {
        WarnedUndefined = true;
        std::fprintf(
            stderr,
            "pk-shim: warning: %s: %s in %s(mask %s) (%s) reads lane %d, "
            "which %s; CUDA leaves the value undefined, the shim returns all "
            "bits set (further reads in this launch are only counted)\n",
            kernel_at().c_str(), thread_str(F).c_str(), warp_op_name(G->Kind),
            mask_str(G->Mask).c_str(), where(F.File, F.Line).c_str(), J,
            (Exited[G->Warp] & (1u << J)) ? "has exited (or does not exist)"
                                          : "is not in the mask");
      }
      break;
    }
    }
    F.Result = R;
    F.State = FiberState::Ready;
    Ready.push_back(F.Linear);
  }
  ++Local.WarpCollectives;
}

void Worker::thread_exited(Fiber &F) {
  ++NDone;
  const int Wp = F.Linear >> 5;
  Exited[Wp] |= 1u << (F.Linear & 31);
  if (Aborting)
    return;
  // Collectives waiting for this lane now wait for one lane fewer.
  Group *Copy[32];
  size_t N = Pending[Wp].size();
  std::copy(Pending[Wp].begin(), Pending[Wp].end(), Copy);
  for (size_t I = 0; I < N; ++I)
    try_complete_warp(Copy[I]);
}

/// After a rendezvous: the caller's result, or unwinding when the block is
/// abandoned.
uint64_t finish_wait(Worker &W, Fiber &F) {
  Group *G = F.G;
  F.G = nullptr;
#if PK_SHIM_TSAN
  __tsan_acquire(&G->Sync);
#endif
  const uint64_t R = F.Result;
  if (--G->Refs == 0)
    W.free_group(G);
  if (F.Abort)
    throw Unwind{};
  return R;
}

struct Current {
  Worker &W;
  Fiber &F;
};
Current current(const char *What) {
  if (!t_fiber || !t_worker)
    fatal(std::string(What) +
          " called outside a kernel launched through the shim");
  return {*t_worker, *t_fiber};
}

[[noreturn]] void fail_in_fiber(Worker &W, cudaError_t Code,
                                const std::string &Msg) {
  W.fail(Code, Msg);
  throw Unwind{};
}

} // namespace

//===----------------------------------------------------------------------===//
// Device-side entry points.
//===----------------------------------------------------------------------===//

namespace pk::shim::detail {

int block_barrier(BarrierKind Kind, int Predicate, const char *File, int Line) {
  auto [W, F] = current(barrier_name(int(Kind)));
  Group *G = W.Bar;
  if (!G) {
    G = W.new_group();
    G->IsBlock = true;
    G->Kind = int(Kind);
    G->File = File;
    G->Line = Line;
    W.Bar = G;
  } else if (G->Kind != int(Kind)) {
    fail_in_fiber(W, cudaErrorLaunchFailure,
                  W.kernel_at() + ": " + W.thread_str(F) + " calls " +
                      barrier_name(int(Kind)) + " (" + where(File, Line) +
                      ") while other threads wait at " + barrier_name(G->Kind) +
                      " (" + where(G->File, G->Line) +
                      "): undefined behaviour in CUDA");
  }
  ++G->Count;
  G->Preds += Predicate != 0;
  ++G->Refs;
  F.G = G;
  F.File = File;
  F.Line = Line;
  F.State = FiberState::Waiting;
#if PK_SHIM_TSAN
  __tsan_release(&G->Sync);
#endif
  if (G->Count == W.NThreads)
    W.complete_barrier(G);
  switch_to_scheduler(W, F, false);
  return static_cast<int>(finish_wait(W, F));
}

uint64_t warp_collective(WarpOp Op, unsigned Mask, uint64_t Value, int Bytes,
                         int Arg, int Width, const char *File, int Line) {
  auto [W, F] = current(warp_op_name(int(Op)));
  const int Lane = F.Linear & 31, Wp = F.Linear >> 5;
  const unsigned Bit = 1u << Lane;
  auto Here = [&] {
    return W.kernel_at() + ": " + W.thread_str(F) + " calls " +
           warp_op_name(int(Op)) + "(mask " + mask_str(Mask) + ") (" +
           where(File, Line) + ")";
  };
  if (!(Mask & Bit))
    fail_in_fiber(W, cudaErrorLaunchFailure,
                  Here() + " without its own lane in the mask: undefined "
                           "behaviour in CUDA");
  if (is_shuffle(int(Op)) &&
      (Width < 1 || Width > 32 || (Width & (Width - 1)) != 0))
    fail_in_fiber(W, cudaErrorLaunchFailure,
                  Here() + " with width " + std::to_string(Width) +
                      ": the width must be a power of 2 in [1, 32]");
  // Join the pending rendezvous of the same collective over the same mask.
  // A lane named by another pending collective may still go there later
  // (CUDA only asks that it eventually executes a matching call), so a
  // mismatch shows as a deadlock, reported with every lane's position.
  Group *G = nullptr;
  for (Group *Q : W.Pending[Wp])
    if (Q->Mask == Mask && Q->Kind == int(Op) && Q->Width == Width) {
      G = Q;
      break;
    }
  if (!G) {
    G = W.new_group();
    G->Kind = int(Op);
    G->Mask = Mask;
    G->Warp = Wp;
    G->Width = Width;
    G->Bytes = Bytes;
    G->File = File;
    G->Line = Line;
    W.Pending[Wp].push_back(G);
  }
  G->Arrived |= Bit;
  G->Val[Lane] = Value;
  G->Arg[Lane] = Arg;
  ++G->Refs;
  F.G = G;
  F.File = File;
  F.Line = Line;
  F.State = FiberState::Waiting;
#if PK_SHIM_TSAN
  __tsan_release(&G->Sync);
#endif
  W.try_complete_warp(G);
  switch_to_scheduler(W, F, false);
  return finish_wait(W, F);
}

unsigned active_mask() {
  auto [W, F] = current("__activemask");
  (void)W;
  return 1u << (F.Linear & 31);
}

void launch_kernel(const LaunchDesc &D) {
  read_schedule_env();
  if (sticky())
    return; // like CUDA: the launch fails with the sticky error
  const std::string Refused =
      std::string("kernel ") + D.Name + ": launch refused: ";
  auto Refuse = [&](cudaError_t Code, const std::string &Why) {
    ++g_stats.RefusedLaunches;
    record(Code, Refused + Why, false);
  };
  if (D.ConfigError)
    return Refuse(cudaErrorInvalidConfiguration, D.ConfigError);
  const unsigned B[3] = {D.Block.x, D.Block.y, D.Block.z};
  const unsigned G[3] = {D.Grid.x, D.Grid.y, D.Grid.z};
  for (int I = 0; I < 3; ++I) {
    const char *Axis = I == 0 ? "x" : I == 1 ? "y" : "z";
    if (B[I] == 0 || G[I] == 0)
      return Refuse(cudaErrorInvalidConfiguration,
                    "gridDim " + dim_str(D.Grid) + ", blockDim " +
                        dim_str(D.Block) + " has an extent of 0");
    if (B[I] > kMaxBlockDim[I])
      return Refuse(cudaErrorInvalidConfiguration,
                    std::string("blockDim.") + Axis + " = " +
                        std::to_string(B[I]) + " exceeds " +
                        std::to_string(kMaxBlockDim[I]));
    if (G[I] > kMaxGridDim[I])
      return Refuse(cudaErrorInvalidConfiguration,
                    std::string("gridDim.") + Axis + " = " +
                        std::to_string(G[I]) + " exceeds " +
                        std::to_string(kMaxGridDim[I]));
  }
  const uint64_t NThreads = uint64_t(B[0]) * B[1] * B[2];
  if (NThreads > uint64_t(kMaxThreadsPerBlock))
    return Refuse(cudaErrorInvalidConfiguration,
                  "blockDim " + dim_str(D.Block) + " has " +
                      std::to_string(NThreads) +
                      " threads, more than the 1024 of a block");
  const int Limit = dynamic_smem_limit(D.Func);
  if (D.Smem > size_t(Limit))
    return Refuse(cudaErrorInvalidValue,
                  std::to_string(D.Smem) +
                      " bytes of dynamic shared memory, more than the "
                      "kernel's limit of " +
                      std::to_string(Limit) +
                      " (49152 unless raised with cudaFuncSetAttribute(" +
                      "kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                      "bytes), at most " +
                      std::to_string(kMaxDynamicSmemOptin) + ")");
  if (!valid_stream(D.Stream))
    return Refuse(cudaErrorInvalidResourceHandle,
                  "stream " + hex(D.Stream) + " is not a live stream");

  const uint64_t Index = g_launch_index++;
  const Schedule Sched = Schedule(g_schedule.load());
  const uint64_t Seed = g_seed.load();
  const uint64_t NBlocks = uint64_t(G[0]) * G[1] * G[2];
  const int NWorkers =
      PK_SHIM_TSAN ? int(std::min<uint64_t>(kTsanBlocks, NBlocks)) : 1;

  std::atomic<bool> Stop{false};
  std::mutex ResultMu;
  std::string Error;
  cudaError_t ErrorCode = cudaSuccess;
  Stats Total;
  // The workers are built here, in the launching thread (see Worker()).
  std::vector<std::unique_ptr<Worker>> Workers;
  for (int I = 0; I < NWorkers; ++I)
    Workers.push_back(std::make_unique<Worker>(D, Index, Sched, Seed));
  // Worker I runs blocks I, I + NWorkers, ...: a fixed assignment, so that
  // in TSan mode each of up to kTsanBlocks blocks has its own OS thread even
  // when one worker would have finished them all before the others started.
  auto Work = [&](Worker &W, uint64_t First) {
#if PK_SHIM_TSAN
    W.TsanSched = __tsan_get_current_fiber();
#endif
    t_worker = &W;
    for (uint64_t Bk = First; Bk < NBlocks; Bk += uint64_t(NWorkers)) {
      if (Stop.load())
        break;
      const uint64_t Budget = g_switch_budget.load();
      if (Budget && g_switches_spent.load() >= Budget) {
        W.Local.BlocksOverBudget +=
            (NBlocks - Bk + uint64_t(NWorkers) - 1) / uint64_t(NWorkers);
        break;
      }
      uint3 Idx{unsigned(Bk % G[0]), unsigned((Bk / G[0]) % G[1]),
                unsigned(Bk / (uint64_t(G[0]) * G[1]))};
      const uint64_t Before = W.Local.FiberSwitches;
      W.run_block(Idx);
      g_switches_spent += W.Local.FiberSwitches - Before;
      if (!W.Error.empty()) {
        Stop = true;
        break;
      }
    }
    t_worker = nullptr;
    t_dynamic_smem = nullptr;
    std::lock_guard<std::mutex> Lock(ResultMu);
    if (!W.Error.empty() && Error.empty()) {
      Error = W.Error;
      ErrorCode = W.ErrorCode;
    }
    Total.Blocks += W.Local.Blocks;
    Total.Threads += W.Local.Threads;
    Total.FiberSwitches += W.Local.FiberSwitches;
    Total.Barriers += W.Local.Barriers;
    Total.WarpCollectives += W.Local.WarpCollectives;
    Total.UndefinedShuffleReads += W.Local.UndefinedShuffleReads;
    Total.BlocksOverBudget += W.Local.BlocksOverBudget;
  };
  // Each launch runs on fresh OS threads: a fresh thread's `static
  // thread_local` (__shared__) arrays start zeroed, so a block never reads
  // what an earlier launch left in static shared memory.
  std::vector<std::thread> Threads;
  for (int I = 0; I < NWorkers; ++I)
    Threads.emplace_back(Work, std::ref(*Workers[I]), uint64_t(I));
  for (std::thread &T : Threads)
    T.join();
  Workers.clear();
  Total.Launches = 1;
  if (!Error.empty()) {
    Total.Errors = 1;
    record(ErrorCode, Error, /*Sticky=*/true);
  }
  g_stats.add(Total);
}

} // namespace pk::shim::detail

//===----------------------------------------------------------------------===//
// Test-facing API.
//===----------------------------------------------------------------------===//

namespace pk::shim {

void set_sm_count(int SMs) { g_sms = SMs < 1 ? 132 : SMs; }
int sm_count() { return g_sms.load(); }

void set_schedule(Schedule S, uint64_t Seed) {
  g_schedule_explicit = true;
  g_schedule = int(S);
  g_seed = Seed;
  g_launch_index = 0;
}
Schedule schedule() {
  read_schedule_env();
  return Schedule(g_schedule.load());
}
uint64_t schedule_seed() {
  read_schedule_env();
  return g_seed.load();
}

Mode mode() {
  return PK_SHIM_TSAN   ? Mode::ThreadSanitizer
         : PK_SHIM_ASAN ? Mode::AddressSanitizer
                        : Mode::Plain;
}
const char *mode_name() {
  return PK_SHIM_TSAN ? "tsan" : PK_SHIM_ASAN ? "asan" : "plain";
}
int concurrent_blocks() { return PK_SHIM_TSAN ? kTsanBlocks : 1; }
std::size_t fiber_stack_bytes() { return kStackBytes; }

Stats stats() {
  Stats S;
  S.Launches = g_stats.Launches;
  S.RefusedLaunches = g_stats.RefusedLaunches;
  S.Blocks = g_stats.Blocks;
  S.Threads = g_stats.Threads;
  S.FiberSwitches = g_stats.FiberSwitches;
  S.Barriers = g_stats.Barriers;
  S.WarpCollectives = g_stats.WarpCollectives;
  S.UndefinedShuffleReads = g_stats.UndefinedShuffleReads;
  S.Errors = g_stats.Errors;
  S.BlocksOverBudget = g_stats.BlocksOverBudget;
  return S;
}

void set_switch_budget(uint64_t Switches) {
  g_switch_budget = Switches;
  g_switches_spent = 0;
}

void reset_stats() {
  g_stats.Launches = 0;
  g_stats.RefusedLaunches = 0;
  g_stats.Blocks = 0;
  g_stats.Threads = 0;
  g_stats.FiberSwitches = 0;
  g_stats.Barriers = 0;
  g_stats.WarpCollectives = 0;
  g_stats.UndefinedShuffleReads = 0;
  g_stats.Errors = 0;
  g_stats.BlocksOverBudget = 0;
}

std::string last_error_message() {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  return E.Message;
}

void reset() {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  E.Last = cudaSuccess;
  E.Sticky = false;
  E.MessageCode = cudaSuccess;
  E.Message.clear();
}

} // namespace pk::shim

//===----------------------------------------------------------------------===//
// The CUDA runtime API on host memory.
//===----------------------------------------------------------------------===//

namespace {

cudaError_t api_error(cudaError_t Code, const std::string &Msg) {
  return record(Code, Msg, false);
}

cudaError_t device_malloc(void **DevPtr, size_t Size, const char *Fn) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!DevPtr)
    return api_error(cudaErrorInvalidValue,
                     std::string(Fn) + ": the result pointer is null");
  *DevPtr = nullptr;
  if (Size == 0)
    return cudaSuccess;
  // Exactly Size bytes (AddressSanitizer sees the true end), aligned like
  // CUDA's allocations, filled with 0xFF (NaN as float) so that reading
  // memory nobody wrote shows.
  void *P = nullptr;
  if (posix_memalign(&P, 256, Size) != 0 || !P)
    return api_error(cudaErrorMemoryAllocation,
                     std::string(Fn) + ": out of memory for " +
                         std::to_string(Size) + " bytes");
  std::memset(P, 0xFF, Size);
  Allocations &A = allocations();
  std::lock_guard<std::mutex> Lock(A.Mu);
  A.Live[reinterpret_cast<uintptr_t>(P)] = Size;
  *DevPtr = P;
  return cudaSuccess;
}

/// Unlike CUDA, frees even after a sticky error (then returns it), so that
/// a test that provoked one does not leak.
cudaError_t device_free(void *DevPtr, const char *Fn) {
  bool Live = false;
  if (DevPtr) {
    Allocations &A = allocations();
    std::lock_guard<std::mutex> Lock(A.Mu);
    Live = A.Live.erase(reinterpret_cast<uintptr_t>(DevPtr)) != 0;
  }
  if (Live)
    std::free(DevPtr);
  PK_SHIM_RETURN_IF_STICKY();
  if (DevPtr && !Live)
    return api_error(cudaErrorInvalidValue,
                     std::string(Fn) + "(" + hex(DevPtr) +
                         "): not the start of a live cudaMalloc allocation");
  return cudaSuccess;
}

cudaError_t check_stream(cudaStream_t S, const char *Fn) {
  if (!valid_stream(S))
    return api_error(cudaErrorInvalidResourceHandle,
                     std::string(Fn) + ": stream " + hex(S) +
                         " is not a live stream");
  return cudaSuccess;
}

cudaError_t copy(void *Dst, const void *Src, size_t Count, cudaMemcpyKind Kind,
                 const char *Fn) {
  PK_SHIM_RETURN_IF_STICKY();
  if (Count == 0)
    return cudaSuccess;
  if (!Dst || !Src)
    return api_error(cudaErrorInvalidValue, std::string(Fn) + ": null pointer");
  const bool DstDev =
      Kind == cudaMemcpyHostToDevice || Kind == cudaMemcpyDeviceToDevice;
  const bool SrcDev =
      Kind == cudaMemcpyDeviceToHost || Kind == cudaMemcpyDeviceToDevice;
  if (Kind < cudaMemcpyHostToHost || Kind > cudaMemcpyDefault)
    return api_error(cudaErrorInvalidMemcpyDirection,
                     std::string(Fn) + ": invalid cudaMemcpyKind " +
                         std::to_string(int(Kind)));
  if (DstDev && !in_device_allocation(Dst, Count))
    return api_error(cudaErrorInvalidValue,
                     std::string(Fn) + ": destination [" + hex(Dst) + ", +" +
                         std::to_string(Count) +
                         ") is not inside one device allocation");
  if (SrcDev && !in_device_allocation(Src, Count))
    return api_error(cudaErrorInvalidValue,
                     std::string(Fn) + ": source [" + hex(Src) + ", +" +
                         std::to_string(Count) +
                         ") is not inside one device allocation");
  std::memcpy(Dst, Src, Count);
  return cudaSuccess;
}

cudaError_t fill(void *DevPtr, int Value, size_t Count, const char *Fn) {
  PK_SHIM_RETURN_IF_STICKY();
  if (Count == 0)
    return cudaSuccess;
  if (!in_device_allocation(DevPtr, Count))
    return api_error(cudaErrorInvalidValue,
                     std::string(Fn) + ": [" + hex(DevPtr) + ", +" +
                         std::to_string(Count) +
                         ") is not inside one device allocation");
  std::memset(DevPtr, Value, Count);
  return cudaSuccess;
}

cudaError_t check_device(int Device, const char *Fn) {
  if (Device != 0)
    return api_error(cudaErrorInvalidDevice,
                     std::string(Fn) + ": device " + std::to_string(Device) +
                         " does not exist (the shim has device 0 only)");
  return cudaSuccess;
}

} // namespace

cudaError_t cudaMalloc(void **DevPtr, size_t Size) {
  return device_malloc(DevPtr, Size, "cudaMalloc");
}
cudaError_t cudaMallocAsync(void **DevPtr, size_t Size, cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  if (cudaError_t E = check_stream(Stream, "cudaMallocAsync"))
    return E;
  return device_malloc(DevPtr, Size, "cudaMallocAsync");
}
cudaError_t cudaMallocManaged(void **DevPtr, size_t Size, unsigned int) {
  return device_malloc(DevPtr, Size, "cudaMallocManaged");
}
cudaError_t cudaMallocHost(void **Ptr, size_t Size) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Ptr)
    return api_error(cudaErrorInvalidValue, "cudaMallocHost: null pointer");
  *Ptr = Size ? std::malloc(Size) : nullptr;
  if (Size && !*Ptr)
    return api_error(cudaErrorMemoryAllocation,
                     "cudaMallocHost: out of memory");
  if (*Ptr) {
    Allocations &A = allocations();
    std::lock_guard<std::mutex> Lock(A.Mu);
    A.Host.insert(*Ptr);
  }
  return cudaSuccess;
}
cudaError_t cudaFree(void *DevPtr) { return device_free(DevPtr, "cudaFree"); }
cudaError_t cudaFreeAsync(void *DevPtr, cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  if (cudaError_t E = check_stream(Stream, "cudaFreeAsync"))
    return E;
  return device_free(DevPtr, "cudaFreeAsync");
}
cudaError_t cudaFreeHost(void *Ptr) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Ptr)
    return cudaSuccess;
  {
    Allocations &A = allocations();
    std::lock_guard<std::mutex> Lock(A.Mu);
    if (!A.Host.erase(Ptr))
      return record(cudaErrorInvalidValue,
                    "cudaFreeHost(" + hex(Ptr) +
                        "): not a live cudaMallocHost allocation",
                    false);
  }
  std::free(Ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *Dst, const void *Src, size_t Count,
                       cudaMemcpyKind Kind) {
  return copy(Dst, Src, Count, Kind, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void *Dst, const void *Src, size_t Count,
                            cudaMemcpyKind Kind, cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  if (cudaError_t E = check_stream(Stream, "cudaMemcpyAsync"))
    return E;
  return copy(Dst, Src, Count, Kind, "cudaMemcpyAsync");
}
cudaError_t cudaMemset(void *DevPtr, int Value, size_t Count) {
  return fill(DevPtr, Value, Count, "cudaMemset");
}
cudaError_t cudaMemsetAsync(void *DevPtr, int Value, size_t Count,
                            cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  if (cudaError_t E = check_stream(Stream, "cudaMemsetAsync"))
    return E;
  return fill(DevPtr, Value, Count, "cudaMemsetAsync");
}
cudaError_t cudaMemGetInfo(size_t *Free, size_t *Total) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Free || !Total)
    return api_error(cudaErrorInvalidValue, "cudaMemGetInfo: null pointer");
  size_t Used = 0;
  {
    Allocations &A = allocations();
    std::lock_guard<std::mutex> Lock(A.Mu);
    for (auto &[P, N] : A.Live)
      Used += N;
  }
  *Total = kGlobalMemory;
  *Free = Used < kGlobalMemory ? kGlobalMemory - Used : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  PK_SHIM_RETURN_IF_STICKY();
  return cudaSuccess;
}
cudaError_t cudaDeviceReset() {
  pk::shim::reset();
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *Device) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Device)
    return api_error(cudaErrorInvalidValue, "cudaGetDevice: null pointer");
  *Device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int Device) {
  PK_SHIM_RETURN_IF_STICKY();
  return check_device(Device, "cudaSetDevice");
}
cudaError_t cudaGetDeviceCount(int *Count) {
  if (!Count)
    return api_error(cudaErrorInvalidValue, "cudaGetDeviceCount: null pointer");
  *Count = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *Value, cudaDeviceAttr Attr,
                                   int Device) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Value)
    return api_error(cudaErrorInvalidValue,
                     "cudaDeviceGetAttribute: null pointer");
  if (cudaError_t E = check_device(Device, "cudaDeviceGetAttribute"))
    return E;
  switch (Attr) {
  case cudaDevAttrMaxThreadsPerBlock:
    *Value = kMaxThreadsPerBlock;
    break;
  case cudaDevAttrMaxBlockDimX:
  case cudaDevAttrMaxBlockDimY:
  case cudaDevAttrMaxBlockDimZ:
    *Value = int(kMaxBlockDim[Attr - cudaDevAttrMaxBlockDimX]);
    break;
  case cudaDevAttrMaxGridDimX:
  case cudaDevAttrMaxGridDimY:
  case cudaDevAttrMaxGridDimZ:
    *Value = int(kMaxGridDim[Attr - cudaDevAttrMaxGridDimX]);
    break;
  case cudaDevAttrMaxSharedMemoryPerBlock:
    *Value = kDefaultDynamicSmem;
    break;
  case cudaDevAttrTotalConstantMemory:
    *Value = 64 * 1024;
    break;
  case cudaDevAttrWarpSize:
    *Value = 32;
    break;
  case cudaDevAttrMaxRegistersPerBlock:
    *Value = 64 * 1024;
    break;
  case cudaDevAttrClockRate:
    *Value = 1980000;
    break;
  case cudaDevAttrMultiProcessorCount:
    *Value = g_sms.load();
    break;
  case cudaDevAttrL2CacheSize:
    *Value = 50 * 1024 * 1024;
    break;
  case cudaDevAttrMaxThreadsPerMultiProcessor:
    *Value = kMaxThreadsPerSM;
    break;
  case cudaDevAttrComputeCapabilityMajor:
    *Value = 9;
    break;
  case cudaDevAttrComputeCapabilityMinor:
    *Value = 0;
    break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
    *Value = kSmemPerSM;
    break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin:
    *Value = kMaxDynamicSmemOptin;
    break;
  case cudaDevAttrMaxBlocksPerMultiprocessor:
    *Value = kMaxBlocksPerSM;
    break;
  default:
    return api_error(cudaErrorInvalidValue,
                     "cudaDeviceGetAttribute: attribute " +
                         std::to_string(int(Attr)) +
                         " is not modelled by the shim");
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *Prop, int Device) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Prop)
    return api_error(cudaErrorInvalidValue,
                     "cudaGetDeviceProperties: null pointer");
  if (cudaError_t E = check_device(Device, "cudaGetDeviceProperties"))
    return E;
  *Prop = cudaDeviceProp{};
  std::snprintf(Prop->name, sizeof Prop->name, "pk CUDA shim (%s, H100-like)",
                pk::shim::mode_name());
  Prop->totalGlobalMem = kGlobalMemory;
  Prop->sharedMemPerBlock = kDefaultDynamicSmem;
  Prop->regsPerBlock = 64 * 1024;
  Prop->warpSize = 32;
  Prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
  for (int I = 0; I < 3; ++I) {
    Prop->maxThreadsDim[I] = int(kMaxBlockDim[I]);
    Prop->maxGridSize[I] = int(kMaxGridDim[I]);
  }
  Prop->clockRate = 1980000;
  Prop->totalConstMem = 64 * 1024;
  Prop->major = 9;
  Prop->minor = 0;
  Prop->multiProcessorCount = g_sms.load();
  Prop->l2CacheSize = 50 * 1024 * 1024;
  Prop->maxThreadsPerMultiProcessor = kMaxThreadsPerSM;
  Prop->sharedMemPerMultiprocessor = kSmemPerSM;
  Prop->sharedMemPerBlockOptin = kMaxDynamicSmemOptin;
  Prop->maxBlocksPerMultiProcessor = kMaxBlocksPerSM;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *Stream) {
  return cudaStreamCreateWithFlags(Stream, cudaStreamDefault);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *Stream,
                                      unsigned int Flags) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Stream)
    return api_error(cudaErrorInvalidValue, "cudaStreamCreate: null pointer");
  auto *S = new CUstream_st();
  S->Flags = Flags;
  Handles &H = handles();
  std::lock_guard<std::mutex> Lock(H.Mu);
  H.Streams.insert(S);
  *Stream = S;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  Handles &H = handles();
  std::unique_lock<std::mutex> Lock(H.Mu);
  if (!H.Streams.erase(Stream)) {
    Lock.unlock();
    return api_error(cudaErrorInvalidResourceHandle,
                     "cudaStreamDestroy(" + hex(Stream) +
                         "): not a live stream");
  }
  delete Stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  return check_stream(Stream, "cudaStreamSynchronize");
}
cudaError_t cudaStreamQuery(cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  return check_stream(Stream, "cudaStreamQuery");
}

cudaError_t cudaEventCreate(cudaEvent_t *Event) {
  return cudaEventCreateWithFlags(Event, cudaEventDefault);
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *Event, unsigned int) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Event)
    return api_error(cudaErrorInvalidValue, "cudaEventCreate: null pointer");
  auto *E = new CUevent_st();
  Handles &H = handles();
  std::lock_guard<std::mutex> Lock(H.Mu);
  H.Events.insert(E);
  *Event = E;
  return cudaSuccess;
}
namespace {
bool live_event(cudaEvent_t E) {
  Handles &H = handles();
  std::lock_guard<std::mutex> Lock(H.Mu);
  return H.Events.count(E) != 0;
}
} // namespace
cudaError_t cudaEventDestroy(cudaEvent_t Event) {
  PK_SHIM_RETURN_IF_STICKY();
  Handles &H = handles();
  std::unique_lock<std::mutex> Lock(H.Mu);
  if (!H.Events.erase(Event)) {
    Lock.unlock();
    return api_error(cudaErrorInvalidResourceHandle,
                     "cudaEventDestroy: not a live event");
  }
  delete Event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t Event, cudaStream_t Stream) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!live_event(Event))
    return api_error(cudaErrorInvalidResourceHandle,
                     "cudaEventRecord: not a live event");
  if (cudaError_t E = check_stream(Stream, "cudaEventRecord"))
    return E;
  Event->Time = std::chrono::steady_clock::now();
  Event->Recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t Event) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!live_event(Event))
    return api_error(cudaErrorInvalidResourceHandle,
                     "cudaEventSynchronize: not a live event");
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t Event) {
  return cudaEventSynchronize(Event);
}
cudaError_t cudaEventElapsedTime(float *Ms, cudaEvent_t Start,
                                 cudaEvent_t End) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Ms || !live_event(Start) || !live_event(End) || !Start->Recorded ||
      !End->Recorded)
    return api_error(cudaErrorInvalidResourceHandle,
                     "cudaEventElapsedTime: events not recorded");
  *Ms =
      std::chrono::duration<float, std::milli>(End->Time - Start->Time).count();
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *Func, cudaFuncAttribute Attr,
                                 int Value) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!Func)
    return api_error(cudaErrorInvalidDeviceFunction,
                     "cudaFuncSetAttribute: null function");
  if (Attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (Value < 0 || Value > kMaxDynamicSmemOptin)
      return api_error(
          cudaErrorInvalidValue,
          "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, " +
              std::to_string(Value) + "): at most " +
              std::to_string(kMaxDynamicSmemOptin) + " bytes");
    Handles &H = handles();
    std::lock_guard<std::mutex> Lock(H.Mu);
    H.MaxDynamicSmem[Func] = Value;
    return cudaSuccess;
  }
  if (Attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
    if (Value < -1 || Value > 100)
      return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute(carveout " +
                                                  std::to_string(Value) +
                                                  "): -1 or 0..100");
    return cudaSuccess;
  }
  return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: attribute " +
                                              std::to_string(int(Attr)) +
                                              " is not modelled by the shim");
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *NumBlocks,
                                                          const void *Func,
                                                          int BlockSize,
                                                          size_t DynSmem) {
  PK_SHIM_RETURN_IF_STICKY();
  if (!NumBlocks || !Func || BlockSize <= 0 || BlockSize > kMaxThreadsPerBlock)
    return api_error(cudaErrorInvalidValue,
                     "cudaOccupancyMaxActiveBlocksPerMultiprocessor: invalid "
                     "argument");
  // Threads and shared memory only (registers are unknown here); 1 KiB of
  // shared memory per block is reserved by the hardware.
  int N = std::min(kMaxBlocksPerSM, kMaxThreadsPerSM / BlockSize);
  if (DynSmem)
    N = std::min<int>(N, int(kSmemPerSM / (DynSmem + 1024)));
  *NumBlocks = N;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  cudaError_t R = E.Last;
  if (!E.Sticky)
    E.Last = cudaSuccess;
  return R;
}
cudaError_t cudaPeekAtLastError() {
  ErrorState &E = errors();
  std::lock_guard<std::mutex> Lock(E.Mu);
  return E.Last;
}

const char *cudaGetErrorName(cudaError_t Error) {
  switch (Error) {
#define PK_SHIM_NAME(X)                                                        \
  case X:                                                                      \
    return #X;
    PK_SHIM_NAME(cudaSuccess)
    PK_SHIM_NAME(cudaErrorInvalidValue)
    PK_SHIM_NAME(cudaErrorMemoryAllocation)
    PK_SHIM_NAME(cudaErrorInvalidConfiguration)
    PK_SHIM_NAME(cudaErrorInvalidSymbol)
    PK_SHIM_NAME(cudaErrorInvalidDevicePointer)
    PK_SHIM_NAME(cudaErrorInvalidMemcpyDirection)
    PK_SHIM_NAME(cudaErrorInvalidDeviceFunction)
    PK_SHIM_NAME(cudaErrorNoDevice)
    PK_SHIM_NAME(cudaErrorInvalidDevice)
    PK_SHIM_NAME(cudaErrorInvalidResourceHandle)
    PK_SHIM_NAME(cudaErrorNotReady)
    PK_SHIM_NAME(cudaErrorIllegalAddress)
    PK_SHIM_NAME(cudaErrorLaunchOutOfResources)
    PK_SHIM_NAME(cudaErrorLaunchTimeout)
    PK_SHIM_NAME(cudaErrorAssert)
    PK_SHIM_NAME(cudaErrorIllegalInstruction)
    PK_SHIM_NAME(cudaErrorLaunchFailure)
    PK_SHIM_NAME(cudaErrorNotSupported)
    PK_SHIM_NAME(cudaErrorUnknown)
#undef PK_SHIM_NAME
  }
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t Error) {
  {
    // The full text of the error the shim recorded last, when it is this
    // one (valid until the next error is recorded).
    ErrorState &E = errors();
    std::lock_guard<std::mutex> Lock(E.Mu);
    if (Error != cudaSuccess && Error == E.MessageCode && !E.Message.empty())
      return E.Message.c_str();
  }
  switch (Error) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration argument";
  case cudaErrorInvalidResourceHandle:
    return "invalid resource handle";
  case cudaErrorLaunchTimeout:
    return "the launch timed out and was terminated";
  case cudaErrorLaunchFailure:
    return "unspecified launch failure";
  case cudaErrorInvalidDevice:
    return "invalid device ordinal";
  default:
    return cudaGetErrorName(Error);
  }
}
