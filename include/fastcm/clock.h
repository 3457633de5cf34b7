// Monotonic time sources. The engine and the fabrics read time only through `Clock`, so tests
// drive every timer and every fault-injected delay with a `VirtualClock` instead of sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace fastcm {

// A monotonic nanosecond counter. Its epoch is arbitrary: only differences mean anything.
class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // Current time in nanoseconds; never smaller than an earlier reading made on any thread that
  // happens-before this call. Thread contract: callable from any thread at any time.
  [[nodiscard]] virtual std::uint64_t now_ns() const noexcept = 0;
};

// std::chrono::steady_clock (CLOCK_MONOTONIC on Linux), for production use.
class SteadyClock final : public Clock {
 public:
  [[nodiscard]] std::uint64_t now_ns() const noexcept override {
    const auto since_epoch = std::chrono::steady_clock::now().time_since_epoch();
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
  }
};

// A clock that moves only when told to, for tests. Usually one driver thread moves it while the
// code under test reads it, possibly from other threads.
//
// Memory order: advance()/set() publish with release and now_ns() reads with acquire, so a thread
// that reads a time T also sees everything the mover wrote before moving the clock to T.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(std::uint64_t start_ns = 0) noexcept : now_(start_ns) {}

  // Thread contract: any thread. Acquire partner: the release in advance() and set().
  [[nodiscard]] std::uint64_t now_ns() const noexcept override {
    return now_.load(std::memory_order_acquire);
  }

  // Moves the clock forward by `ns` and returns the new time. Wraps past 2^64-1 ns (585 years),
  // which no test reaches. Thread contract: any thread; concurrent advances all take effect.
  std::uint64_t advance(std::uint64_t ns) noexcept {
    return now_.fetch_add(ns, std::memory_order_release) + ns;  // acquire partner: now_ns()
  }

  // Moves the clock to `ns`. The clock never goes back: when `ns` is earlier than the current
  // time, nothing changes and false is returned; otherwise true. Thread contract: any thread.
  bool set(std::uint64_t ns) noexcept {
    std::uint64_t cur = now_.load(std::memory_order_relaxed);
    while (cur <= ns) {
      // release: acquire partner is now_ns(); relaxed on failure, where nothing is published.
      if (now_.compare_exchange_weak(cur, ns, std::memory_order_release,
                                     std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

 private:
  std::atomic<std::uint64_t> now_;
};

}  // namespace fastcm
