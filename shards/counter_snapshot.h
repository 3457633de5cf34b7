// A seqlock over one shard's per-port counters: the shard publishes a copy after every batch, any
// thread reads a consistent copy without stopping it (engine.h: counters are readable from any thread).
//
// The shard keeps counting in plain memory on its hot path; only the publish (once per batch, a
// few hundred bytes per port) touches shared memory. Words are copied through atomic_refs, stored
// with release and loaded with acquire, so the racing copy is defined behaviour and ordered
// against the sequence number without standalone fences (which GCC's TSan rejects).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>

#include "fastcm/counters.h"

namespace fastcm::shards {

class CounterSnapshot {
 public:
  explicit CounterSnapshot(std::size_t ports)
      : ports_(ports), words_(std::make_unique<std::uint64_t[]>(ports * kWordsPerPort)) {}

  // Writer: the owning shard's thread only.
  void publish(std::span<const PortCounters> live) noexcept {
    const std::uint32_t seq = seq_.load(std::memory_order_relaxed);
    seq_.store(seq + 1, std::memory_order_relaxed);
    for (std::size_t p = 0; p < ports_ && p < live.size(); ++p) {
      const auto* src = reinterpret_cast<const std::uint64_t*>(&live[p]);
      for (std::size_t w = 0; w < kWordsPerPort; ++w) {
        // Release: a reader whose acquire load sees this word also sees the odd sequence above,
        // so its second sequence load tells it the copy is torn.
        std::atomic_ref<std::uint64_t>(words_[p * kWordsPerPort + w]).store(src[w], std::memory_order_release);
      }
    }
    // Release: pairs with the reader's first acquire load; an even value means the words are whole.
    seq_.store(seq + 2, std::memory_order_release);
  }

  // Reader: any thread. Copies the last published counters of port index p into out[p] for every
  // p < min(ports, out.size()); retries while a publish is under way (a few hundred ns at most).
  void read(std::span<PortCounters> out) const noexcept {
    const std::size_t ports = std::min(ports_, out.size());
    for (;;) {
      const std::uint32_t before = seq_.load(std::memory_order_acquire);  // pairs: publish's final store
      if ((before & 1u) == 0) {
        for (std::size_t p = 0; p < ports; ++p) {
          auto* dst = reinterpret_cast<std::uint64_t*>(&out[p]);
          for (std::size_t w = 0; w < kWordsPerPort; ++w) {
            // Acquire: pairs with publish's release store of the word; keeps the second sequence
            // load below after it.
            dst[w] = std::atomic_ref<std::uint64_t>(words_[p * kWordsPerPort + w]).load(std::memory_order_acquire);
          }
        }
        if (seq_.load(std::memory_order_relaxed) == before) return;
      }
      std::this_thread::yield();
    }
  }

 private:
  static_assert(std::is_trivially_copyable_v<PortCounters> && sizeof(PortCounters) % 8 == 0);
  static constexpr std::size_t kWordsPerPort = sizeof(PortCounters) / sizeof(std::uint64_t);

  std::size_t ports_;
  std::unique_ptr<std::uint64_t[]> words_;
  std::atomic<std::uint32_t> seq_{0};
};

}  // namespace fastcm::shards
