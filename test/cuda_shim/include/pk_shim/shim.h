//===- pk_shim/shim.h - Test-facing API of the CUDA host-execution shim ---===//
//
// The shim runs the unchanged text of pkc's .pk.cu files on the CPU: g++
// compiles them as C++ against the fake <cuda_runtime.h> next to this folder,
// every CUDA thread becomes a fiber, every block runs its fibers on one OS
// thread, and barriers and warp collectives are real rendezvous between the
// fibers. docs/cuda-shim.md describes how and what it catches.
//
// This header is what a test needs besides the CUDA API itself: choosing the
// schedule, reading the counters, resetting a sticky error. It does not
// define any CUDA name, so it can be included anywhere.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SHIM_SHIM_H
#define PK_SHIM_SHIM_H

#include <cstdint>
#include <string>

namespace pk::shim {

/// The order in which the ready fibers of a block run. A fiber runs until it
/// waits at a barrier or a warp collective (or returns); then the scheduler
/// picks the next ready fiber. Ready fibers run in rounds: every fiber that
/// was ready at the start of a round runs once in that round, in increasing
/// thread order (Forward) or in an order drawn from a seeded generator
/// (Random; reproducible: the order of a block depends on the seed, the
/// number of launches since the schedule was set, and the block's index).
enum class Schedule { Forward, Random };

/// Selects the schedule of later launches. Once called, the environment
/// variable PK_SHIM_SCHEDULE (`forward` or `random:<seed>`, read at the first
/// launch otherwise) no longer applies.
void set_schedule(Schedule S, uint64_t Seed = 0);
Schedule schedule();
uint64_t schedule_seed();

/// The multiprocessor count the device reports (cudaDevAttrMultiProcessorCount
/// and cudaDeviceProp): 132, as an H100/H200, until set; launchers that size
/// their work by it (pkc's matmul picks its tile size) then take other
/// paths. A value below 1 restores 132.
void set_sm_count(int SMs);
int sm_count();

/// How the runtime was built (which static library was linked).
enum class Mode { Plain, AddressSanitizer, ThreadSanitizer };
Mode mode();
const char *mode_name();

/// Blocks that run at the same time in ThreadSanitizer mode (one OS thread
/// each; larger grids queue on these threads). 1 in the other modes.
int concurrent_blocks();

/// Counters since the start of the program or the last reset_stats().
struct Stats {
  uint64_t Launches = 0;        ///< kernels that ran (not refused)
  uint64_t RefusedLaunches = 0; ///< launches refused (bad configuration)
  uint64_t Blocks = 0;          ///< blocks that ran
  uint64_t Threads = 0;         ///< CUDA threads (fibers) started
  uint64_t FiberSwitches = 0;   ///< context switches, both directions
  uint64_t Barriers = 0;        ///< completed __syncthreads* rendezvous
  uint64_t WarpCollectives = 0; ///< completed warp collectives
  /// Shuffles that read a lane that did not take part (exited, or not in
  /// the mask): CUDA leaves the value undefined, the shim returns all bits
  /// set (NaN for floats) and counts it here.
  uint64_t UndefinedShuffleReads = 0;
  uint64_t Errors = 0; ///< launches that ended in an error (deadlock, UB)
  /// Blocks not run because the fiber-switch budget was spent (below).
  uint64_t BlocksOverBudget = 0;
};
Stats stats();
void reset_stats();

/// A cap on the work of the launches to come, for callers that would rather
/// skip a run than wait for it (the fuzz driver): once `Switches` fiber
/// switches have been made since this call, every launch runs none of its
/// remaining blocks and counts them in Stats::BlocksOverBudget; the outputs
/// are then incomplete. The cap is reached or not the same way on every run
/// of the same launches (one worker, a fixed schedule). 0: no cap (the
/// default).
void set_switch_budget(uint64_t Switches);

/// The full text of the last error the shim recorded (a refused launch, a
/// deadlock, a misuse of a collective), or "" when none. The same text is
/// what cudaGetErrorString() returns for the error code that
/// cudaGetLastError() reports, and what the shim printed to stderr.
std::string last_error_message();

/// Clears the recorded error, sticky or not, like cudaDeviceReset() (which
/// calls it). Allocations stay valid.
void reset();

/// Bytes of each fiber stack (64 KiB plain, more under the sanitizers).
std::size_t fiber_stack_bytes();

} // namespace pk::shim

#endif // PK_SHIM_SHIM_H
