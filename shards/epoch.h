// Epoch reclamation for data the shards read without locks: an rte_rcu_qsbr variable (Epoch) and
// a queue of deferred frees on it (DeferQueue), so destroy never blocks on a callback in flight.
//
// Model (quiescent-state-based reclamation, as in DPDK's rte_rcu_qsbr.h and Linux's QSBR RCU):
// each reader (a shard, numbered 0..readers-1) is either online or offline. While online it may
// hold pointers into shared data it loaded; it reports a quiescent point (quiescent()) only where
// it holds none, which for a shard is after every batch. A writer first unpublishes an object
// (nothing newly loaded can reach it), then defers its free. Invariant: a deferred function runs
// only after every reader that was online when it was deferred has reported a quiescent point or
// gone offline since, so no reader can still hold the object. Offline readers never delay
// anything: a shard goes offline before it sleeps, so an idle shard never blocks reclamation.
//
// Bounds: the reader count is fixed at construction; a DeferQueue holds at most `capacity`
// pending functions and refuses more (defer() returns false) until reclamation makes room, so a
// reader stuck online (a callback that blocks) shows up as refused deferrals, never as growth.
// A quiescent point costs a reader one load and at most one store (no read-modify-write, no
// fence); going online costs one full fence. Writers pay a token increment per defer() and a scan
// of the readers per function reclaimed.
//
// When not to use it: for data a non-reader thread (an API thread that is not a shard) reads,
// since only registered readers are waited for; for data freed at a high rate by readers
// themselves (the queue bound is the brake, not a pool); and across a blocking call made while
// online (go offline first, or every writer's queue fills).
//
// Neither needs an initialized EAL: the variable and the queue's ring live in our own memory, where
// a ring sized for its bound costs resident memory only for the entries it has held. (A shard's
// destroy queue has room for twice its endpoint table: 24 MiB per shard of a million-endpoint
// engine on four shards, more than the whole heap of an EAL the engine starts.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "runtime/owned_ring.h"

struct rte_rcu_qsbr;

namespace fastcm::shards {

class Epoch {
 public:
  static constexpr std::uint32_t kMaxReaders = 1024;

  // A variable for `readers` readers (1..kMaxReaders), every one registered and offline.
  // Allocates here and never again. Throws std::invalid_argument for a count out of range,
  // std::system_error when DPDK rejects the variable, std::bad_alloc.
  explicit Epoch(std::uint32_t readers);
  ~Epoch();  // Precondition: no DeferQueue on this Epoch is left and no reader is online.
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  // --- Reader `reader` (< readers()): the thread acting as that reader, one thread at a time
  // per reader id (a handover between threads needs its own happens-before). An out-of-range id
  // is undefined behaviour (asserted in debug builds).

  // From now on, writers wait for this reader. Call before loading any protected pointer.
  void online(std::uint32_t reader) noexcept;
  // This reader holds no protected pointer (loaded since it went online or since its last
  // quiescent point): everything deferred before now no longer waits for it. Only while online.
  void quiescent(std::uint32_t reader) noexcept;
  // Writers stop waiting for this reader, which must hold no protected pointer any more. Call
  // before sleeping or blocking; online() again before the next protected load.
  void offline(std::uint32_t reader) noexcept;

  // Any thread.
  [[nodiscard]] std::uint32_t readers() const noexcept { return readers_; }

 private:
  friend class DeferQueue;

  struct VariableDeleter {
    void operator()(rte_rcu_qsbr* v) const noexcept;
  };

  // Acquire partner of every reader's release store in quiescent() and offline(). DPDK's
  // grace-period check may answer from the variable's cached least-acknowledged token (stored
  // relaxed) without loading the readers' counters, so without this the free would not be ordered
  // after the readers' last reads, for the language or for ThreadSanitizer.
  void acquire_readers() const noexcept;

  std::uint32_t readers_;
  std::unique_ptr<rte_rcu_qsbr, VariableDeleter> v_;
};

class DeferQueue {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 24;
  // rte_ring's name limit, less the NUL (RTE_RING_NAMESIZE is 29 in DPDK 22.11).
  static constexpr std::size_t kMaxNameLength = 28;

  // A queue for at most `capacity` (1..kMaxCapacity) pending functions, reclaiming on `epoch`,
  // which must outlive it. `name` (1..kMaxNameLength characters) names its ring in messages.
  // Allocates here and never again. Throws std::invalid_argument for a capacity or name out of
  // range, std::bad_alloc.
  DeferQueue(Epoch& epoch, std::uint32_t capacity, std::string_view name);

  // Runs every function still pending, on the calling thread. Returns at once when no reader is
  // online (the intended use: after the readers have stopped or gone offline); otherwise it
  // first waits until every online reader has reported a quiescent point, so it must never be
  // called by an online reader of the same Epoch (that would wait for itself forever).
  ~DeferQueue();
  DeferQueue(const DeferQueue&) = delete;
  DeferQueue& operator=(const DeferQueue&) = delete;

  // Thread contract: defer(), reclaim() and has_room() from any threads concurrently; deferred
  // functions may then run on several threads at once. Readers may call them too (reclaim() never
  // waits for a reader, not even the caller). Two calls on one queue serialize on its ring for a
  // few instructions (rte_ring's HTS mode on both sides), so a thread preempted inside one makes
  // the others spin until it runs again.

  // Queues `fn(ctx)` to run exactly once, after every reader online now has reported a quiescent
  // point or gone offline; it runs on a thread calling reclaim(), defer() or the destructor.
  // When the queue is full it first reclaims what is due. False, queuing nothing, when the queue
  // is still full: the caller keeps `ctx` and must not free it yet. Call it after unpublishing
  // what `ctx` names. `fn` must not throw and must not use this queue.
  [[nodiscard]] bool defer(void (*fn)(void* ctx), void* ctx) noexcept;

  // Runs, in deferral order, the pending functions whose grace period has ended, stopping at the
  // first that must still wait; returns how many it ran. Never blocks.
  std::size_t reclaim() noexcept;

  // True when a defer() now would succeed, reclaiming first when the queue is full. Exact when
  // the callers serialize their defer() calls (a writer reserving its room before an irrevocable
  // unpublish, under its own lock); with several writers another may take the room first.
  [[nodiscard]] bool has_room() noexcept;

  // Deferred and not yet run (a function counts as run from the moment it starts). Any thread.
  [[nodiscard]] std::uint32_t pending() const noexcept {
    // Relaxed: a count for callers' bookkeeping, no data is published through this load.
    return pending_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

 private:
  // One ring entry: the function, and the epoch token its grace period waits for.
  struct Deferred {
    std::uint64_t token;
    void (*fn)(void*);
    void* ctx;
  };

  // Moves the oldest entry into `out`; with `only_if_due`, only when its grace period has ended.
  // False when it took nothing.
  [[nodiscard]] bool take_oldest(Deferred& out, bool only_if_due) noexcept;
  void run(const Deferred& deferred) noexcept;
  [[nodiscard]] bool reserve() noexcept;

  Epoch& epoch_;
  std::uint32_t capacity_;
  runtime::OwnedRing ring_;  // Deferred entries, in token order per writer; HTS on both sides
  // Deferrals admitted and not yet started, kept <= capacity_ so the ring (sized for exactly
  // capacity_) never refuses an enqueue. reserve()'s release increment is the partner of run()'s
  // acquire decrement: it orders everything before defer() (ctx's contents) before fn(ctx) however
  // the ring's own atomics are seen.
  std::atomic<std::uint32_t> pending_{0};
};

}  // namespace fastcm::shards
