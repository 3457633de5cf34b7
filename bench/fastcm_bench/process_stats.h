// The process's own resource use, read from the kernel: resident memory, CPU time, context
// switches.
#pragma once

#include <cstdint>

namespace fastcm::bench {

// Resident set size now (/proc/self/statm, resident pages x page size); 0 if unreadable.
// Thread contract: any thread.
[[nodiscard]] std::uint64_t resident_bytes() noexcept;

// The peak resident set size so far (VmHWM in /proc/self/status); 0 if unreadable.
[[nodiscard]] std::uint64_t peak_resident_bytes() noexcept;

// CPU time of every thread of the process (CLOCK_PROCESS_CPUTIME_ID), in seconds.
[[nodiscard]] double process_cpu_seconds() noexcept;

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in seconds.
[[nodiscard]] double thread_cpu_seconds() noexcept;

// Context switches of every thread of the process so far (getrusage): a thread that slept
// (voluntary: a worker waiting for work, a caller waiting for a shard) or was taken off its core
// (involuntary: preemption, a yield that let another thread run).
struct ContextSwitches {
  std::uint64_t voluntary = 0;
  std::uint64_t involuntary = 0;
  [[nodiscard]] ContextSwitches since(const ContextSwitches& start) const noexcept {
    return {voluntary - start.voluntary, involuntary - start.involuntary};
  }
};
[[nodiscard]] ContextSwitches process_context_switches() noexcept;

}  // namespace fastcm::bench
