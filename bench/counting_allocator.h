// A process-wide allocation counter for benchmarks: linking counting_allocator.cpp into an
// executable replaces the global operator new/delete and interposes malloc, calloc, realloc,
// posix_memalign, aligned_alloc and memalign (free and delete are not counted), so every heap
// allocation of every thread (the engine, libstdc++, DPDK, EAL's threads) is counted while a
// counting window is open.
#pragma once

#include <cstdint>

namespace fastcm::bench {

// Opens the counting window: zeroes the count; the first `traces` allocations made inside the
// window print a backtrace (symbols, to stderr, without allocating). Thread: one thread opens and
// closes windows; allocations are counted from every thread.
void start_counting(std::uint32_t traces) noexcept;

// Closes the window and returns the allocations counted in it. Thread: the one that opened it.
[[nodiscard]] std::uint64_t stop_counting() noexcept;

}  // namespace fastcm::bench
