// The process's own resource use, read from the kernel: resident memory and CPU time.
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

}  // namespace fastcm::bench
