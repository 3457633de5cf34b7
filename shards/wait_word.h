// A one-shot completion flag between two threads: one sets it once, the other waits for it.
//
// Why not std::atomic::wait/notify_one: the waiter's flag lives on its stack and may be gone as
// soon as it sees the flag set, so the setter must not touch the object after the store. A raw
// futex wake on the address is safe either way (the kernel looks up waiters by address and
// touches no memory), which is also how glibc's own completions work.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace fastcm::shards {

// Sets `word` to 1 and wakes its waiter. The caller must not use `word` afterwards.
inline void set_and_wake(std::atomic<std::uint32_t>& word) noexcept {
  void* const address = &word;
  // Release: pairs with wait_until_set's acquire; the waiter sees everything written before.
  word.store(1, std::memory_order_release);
  (void)::syscall(SYS_futex, address, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Returns once set_and_wake(word) ran. Spins briefly (a shard usually answers within
// microseconds), then sleeps in the kernel.
inline void wait_until_set(std::atomic<std::uint32_t>& word) noexcept {
  for (int spin = 0; spin < 64; ++spin) {
    if (word.load(std::memory_order_acquire) != 0) return;  // pairs: set_and_wake's store
    std::this_thread::yield();
  }
  while (word.load(std::memory_order_acquire) == 0) {  // pairs: set_and_wake's store
    // Sleeps only while the word is still 0 (the kernel re-checks it atomically).
    (void)::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  }
}

}  // namespace fastcm::shards
