// The listen table of the sharded engine: every shard reads it without a lock, control-path
// writers publish immutable snapshots and retire the old ones through epoch reclamation
// (epoch.h).
//
// Semantics (those of the single-threaded listen table it replaced): fixed capacity; add() refuses a
// listen with the same port, mask and masked service ID as a live one (service_in_use); a listen's
// Id has kListenGenerationTag in its generation and its slot in comm_id(), the lowest free slot is
// taken and every reuse of a slot gets a new generation; match() prefers the longest mask, then a
// port-specific listen over an every-port one, then the lowest slot.
//
// Readers (shards) use the engine::Listens interface: match() is one acquire load of the current
// snapshot and a scan of its live listens in precedence order: no lock, no atomic
// read-modify-write.
// Backlog counts live outside the snapshots, in one atomic word per slot holding the slot's
// generation and count, so a count taken against a listen dies with it: take_backlog() fails once
// the listen is removed, and release_backlog() for a removed listen is ignored even after its slot
// has been reused.
//
// Bounds: `capacity` listens; a snapshot is allocated per add/remove (control path only) and
// retired snapshots wait in a queue of kRetireCapacity. A reader stuck online (never reporting a
// quiescent point) therefore makes the kRetireCapacity+1-th change in a row fail with
// no_resources rather than grow memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "engine/listens.h"
#include "fastcm/engine.h"
#include "fastcm/id.h"
#include "fastcm/status.h"
#include "shards/epoch.h"

namespace fastcm::shards {

class ListenRegistry final : public engine::Listens {
 public:
  static constexpr std::uint32_t kMaxCapacity = std::uint32_t{1} << 20;
  // Retired snapshots awaiting their grace period, at most.
  static constexpr std::uint32_t kRetireCapacity = 64;

  // Room for `capacity` (1..kMaxCapacity) listens; shards are `epoch`'s readers, and `epoch` must
  // outlive the registry. Throws std::invalid_argument for a capacity out of range,
  // std::bad_alloc.
  ListenRegistry(std::uint32_t capacity, Epoch& epoch);
  // Frees every snapshot. Precondition: no shard uses the registry any more and none holds a
  // Listen from it (each has passed a quiescent point or gone offline since its last match()).
  // A shard still online is waited for until its next quiescent point (see ~DeferQueue), so an
  // online shard must not destroy the registry.
  ~ListenRegistry() override;

  // --- Writers: any thread, serialized by the registry's lock (control path), also a shard's
  // thread inside a callback: a writer never waits for readers, it queues the old snapshot.

  // Adds a listen and returns its Id in `out` (untouched on error). Errors: invalid_argument (no
  // delivery or both a handler and a queue, or backlog 0), service_in_use (a live listen has the
  // same port, mask and masked service ID), no_resources (every slot taken, the retire queue full,
  // or no memory for the new snapshot). Nothing changes on error.
  Status add(const ListenParams& params, Id& out) noexcept;

  // Removes the listen `id`: no match() after it returns finds it, its backlog count dies with it.
  // Never waits and never fails for lack of room: with the retire queue full (a stalled shard) the
  // dead listen stays in the published snapshot, skipped by match(), until the next publish.
  // Errors: stale_id (`id` names no live listen of this registry); nothing changes then.
  Status remove(Id id) noexcept;

  // Runs the deferred frees of retired snapshots that are due; returns how many it freed. add()
  // and remove() do this too; a control thread may call it to return memory when no change
  // follows. Any thread (takes the lock).
  std::size_t reclaim() noexcept;

  // --- Readers: engine::Listens, see engine/listens.h for the thread contracts. A Listen from
  // match() is valid until the calling shard's next quiescent point, so take_backlog() takes one
  // that shard matched since then; keep its Id (BacklogRef), never the pointer, beyond that.
  // release_backlog() may come from any thread.
  [[nodiscard]] const engine::Listen* match(std::uint64_t service_id,
                                            std::uint8_t port_num) noexcept override;
  [[nodiscard]] bool take_backlog(const engine::Listen& listen) noexcept override;
  void release_backlog(engine::BacklogRef ref) noexcept override;

  // --- Any thread.

  // True while `id` names a listen added here and not yet removed.
  [[nodiscard]] bool live(Id id) const noexcept;
  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
  // Snapshots published since construction (the initial empty one included) and snapshots freed;
  // published - freed is the current snapshot plus those awaiting their grace period.
  [[nodiscard]] std::uint64_t snapshots_published() const noexcept {
    // Relaxed: statistics; no data is published through these counters.
    return published_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t snapshots_freed() const noexcept {
    return freed_.load(std::memory_order_relaxed);
  }

 private:
  struct Snapshot;

  [[nodiscard]] std::atomic<std::uint64_t>* backlog_word(Id id) const noexcept;
  // A new snapshot: the current one's listens without `removed` (an empty Id removes none) and
  // with `*added` (null adds none), in match() precedence order. Null when memory runs out.
  // Under mutex_.
  // The current snapshot's live listens plus `added` (may be null), in precedence order; null when
  // out of memory.
  [[nodiscard]] Snapshot* next_snapshot(const engine::Listen* added) noexcept;
  // Whether `listen` (from any snapshot) has not been removed since. Any thread.
  [[nodiscard]] bool alive(const engine::Listen& listen) const noexcept;
  // Replaces the current snapshot with `next` and retires the old one. Under mutex_, with room in
  // the retire queue checked under the same lock.
  void publish(Snapshot* next) noexcept;
  static void free_snapshot(void* snapshot) noexcept;

  std::uint32_t capacity_;
  // Per slot: generation (high 32 bits) and backlog count (low 32 bits). The generation carries
  // kListenGenerationTag only while the slot holds a live listen, so one comparison with a listen
  // Id's generation checks both "live" and "same listen". Writers change the generation under
  // mutex_; readers compare-and-swap the count.
  std::unique_ptr<std::atomic<std::uint64_t>[]> backlog_;
  // The registry's lock: serializes add/remove/reclaim (the control path, where a lock costs no
  // MAD). Readers never take it.
  std::mutex mutex_;
  // The current snapshot. Release store in publish() under mutex_; its partner is the acquire load
  // in match(), which makes the snapshot's contents visible to the shard.
  std::atomic<Snapshot*> current_{nullptr};
  std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> freed_{0};
  // Last member: destroyed first, while the counters its deferred frees update still exist.
  DeferQueue retired_;
};

}  // namespace fastcm::shards
