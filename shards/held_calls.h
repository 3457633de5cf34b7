// HeldCalls: per thread, the posted calls (shards/posted_call.h) an application thread holds back
// while it has a call batch of an engine open (Engine::begin_call_batch), and then queues to their
// shards' inboxes together: one inbox update, and at most one wake-up, per shard per batch instead
// of one per call. A poll loop answering 64 events made 64 compare-and-swaps on the inbox heads its
// shards read, each a cache miss on both sides, and measured as the largest cost of its thread.
//
// Order: a shard runs the items of one thread in the order the thread queued them. Held items keep
// that order per inbox, and every other item the thread queues to any shard (a destroy, a call that
// waits, a command) first releases what the thread holds (release()), so nothing it queued later
// overtakes a held call. Items of different inboxes are independent and may leave in any order.
//
// Bounds: kCapacity items per thread (1 KiB of thread-local storage); the thread releases them when
// the next would not fit. One engine's batch at a time per thread: while one is open, opening
// another engine's does nothing, and that engine's calls are queued at once.
//
// Thread contract: each thread sees only its own state; no synchronisation beyond the inboxes'.
// Release blocks only as a control item does when an inbox is full (yielding until it has room).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace fastcm::shards {

class ShardInbox;

class HeldCalls {
 public:
  static constexpr std::size_t kCapacity = 64;

  // Opens (or, for the engine already open, nests) the calling thread's batch for `engine` (any
  // address naming the engine while it lives). Returns false, changing nothing, when another
  // engine's batch is open on this thread.
  static bool open(const void* engine) noexcept;
  // Closes what open(engine) opened (a call that found another engine's batch open closes
  // nothing); the outermost close releases every held item.
  static void close(const void* engine) noexcept;
  // Holds `item` for `inbox` when the calling thread has `engine`'s batch open (releasing first
  // what it holds when full); false, holding nothing, otherwise.
  [[nodiscard]] static bool hold(const void* engine, ShardInbox& inbox, void* item) noexcept;
  // Queues every item the calling thread holds, in order per inbox. Cheap when it holds none.
  static void release() noexcept {
    if (held_.count != 0) release_all();
  }

 private:
  struct Held {
    ShardInbox* inbox = nullptr;
    void* item = nullptr;
  };
  struct State {
    const void* engine = nullptr;  // whose batch is open; null: none
    std::uint32_t depth = 0;
    std::uint32_t count = 0;
    std::array<Held, kCapacity> items{};
  };

  static void release_all() noexcept;

  static thread_local State held_;
};

}  // namespace fastcm::shards
