// A call an application thread posts to an endpoint's shard instead of waiting for it
// (fastcm/engine.h, "Posted calls"): which call, on which endpoint, and a copy of its parameters,
// private data included, in one fixed-size record. Records come from PostedCallPool, an
// rte_mempool of EngineConfig::posted_calls records; a thread that finds it empty fills a record
// on its own stack instead and waits until the shard has run it, so the pool bounds what is queued
// without ever refusing a call.
//
// Thread contract: the posting thread fills a record (prepare) and posts it; the inbox's ring
// publishes the record to the shard (the ring's release/acquire pair on its tail), which runs it
// (run) and then completes it: a pooled record goes back to its pool with the others the shard
// ran in the same burst (FinishedCalls), a stack record's waiter is woken. Neither side touches
// the record after its part.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "fastcm/event.h"
#include "fastcm/id.h"
#include "fastcm/params.h"
#include "fastcm/status.h"

struct rte_mempool;

namespace fastcm::engine {
class Protocol;
}

namespace fastcm::shards {

class PostedCallPool;
class FinishedCalls;

class PostedCall {
 public:
  // A stack record: its poster waits for it (wait_until_run).
  PostedCall() noexcept = default;
  PostedCall(const PostedCall&) = delete;
  PostedCall& operator=(const PostedCall&) = delete;

  // Fill the record with a call and its parameters, spans copied into the record. Errors:
  // invalid_argument when private data, ARI or info is longer than the call's message carries
  // (the record must then be prepared again before it is posted).
  void prepare_set_context(Id id, void* context) noexcept;
  void prepare_establish(Id id) noexcept;
  // send_rtu, send_dreq or send_drep: their only parameter is the private data.
  [[nodiscard]] Status prepare(Id id, ApiCall call, std::span<const std::uint8_t> private_data) noexcept;
  // The other sends: `Message` is their parameter struct (ReqParams ... SidrRepParams).
  template <typename Message>
  [[nodiscard]] Status prepare(Id id, const Message& p) noexcept;

  [[nodiscard]] Id id() const noexcept { return id_; }
  [[nodiscard]] ApiCall call() const noexcept { return call_; }

  // The shard's thread, ahead of run(): starts loading what run() reads first (the call, its Id
  // and its parameters), lines the posting thread wrote on another core. Changes nothing.
  void prefetch() const noexcept {
    constexpr std::size_t kLine = 64;
    const auto* end = reinterpret_cast<const char*>(&params_ + 1);
    for (const auto* line = reinterpret_cast<const char*>(this); line < end; line += kLine) __builtin_prefetch(line);
  }
  // The shard's thread: runs the call on `protocol` (Protocol::run_posted: a refusal becomes a
  // call_failed event), then completes the record: a stack record's waiter is woken, a pooled
  // record joins `finished`. The record must not be touched afterwards.
  void run(engine::Protocol& protocol, FinishedCalls& finished) noexcept;
  // The poster of a stack record, after posting it: returns once the shard has run it.
  void wait_until_run() noexcept;

 private:
  friend class PostedCallPool;
  friend class FinishedCalls;
  using Bytes = std::span<const std::uint8_t>;
  using Params = std::variant<std::monostate, void*, Bytes, ReqParams, RepParams, RejParams, MraParams, LapParams,
                              AprParams, SidrReqParams, SidrRepParams>;

  [[nodiscard]] Status dispatch(engine::Protocol& protocol) const noexcept;
  // Copies `field` into `room` (at most `max` bytes) and points `field` at the copy.
  [[nodiscard]] static bool keep(Bytes& field, std::span<std::uint8_t> room, std::size_t max) noexcept;

  Id id_;
  ApiCall call_ = ApiCall::establish;
  PostedCallPool* pool_ = nullptr;  // the pool the record goes back to; null for a stack record
  // A stack record: set by the shard once it ran (wait_word.h). A pooled one, in ThreadSanitizer
  // builds only: stored (release) by give_back() and loaded (acquire) by the next take(), an order
  // the pool's ring gives already but TSan cannot see inside DPDK.
  std::atomic<std::uint32_t> done_{0};
  Params params_;
  std::array<std::uint8_t, kMaxRtuPrivateData> private_data_;  // the longest private data
  std::array<std::uint8_t, kMaxAdditionalInfo> info_;          // ARI or info
};

// The engine's bounded supply of PostedCall records: an rte_mempool without per-thread caches, so
// `capacity` records are the exact bound on calls queued and none sit in a cache. Needs EAL.
// Thread contract: take and give_back from any threads at once (multi-producer, multi-consumer).
class PostedCallPool {
 public:
  // Throws std::system_error (DPDK's rte_errno) when DPDK cannot make the pool. `name` is unique
  // among the process's mempools; capacity ≥ 1.
  PostedCallPool(const std::string& name, std::uint32_t capacity);
  ~PostedCallPool();
  PostedCallPool(const PostedCallPool&) = delete;
  PostedCallPool& operator=(const PostedCallPool&) = delete;

  // A free record, or null when every record is posted. Never blocks.
  [[nodiscard]] PostedCall* take() noexcept;
  // Returns records take() gave, in one operation on the pool's ring per FinishedCalls::kCapacity
  // records. Never blocks.
  void give_back(std::span<PostedCall* const> calls) noexcept;
  // Records taken and not yet given back (a snapshot).
  [[nodiscard]] std::uint32_t in_use() const noexcept;

 private:
  rte_mempool* pool_ = nullptr;
};

// The pooled records a shard ran in one burst, given back to the pool together when the burst ends
// (one ring operation per burst rather than per record: the pool's ring is shared with every
// posting thread, and each operation on it moves its cache lines between cores). Holds up to
// kCapacity; a record beyond that gives the held ones back at once. Until a flush the held records
// count as taken (PostedCallPool::in_use), so a poster may meet an empty pool for that long and
// wait for its shard instead (engine.h, "Posted calls": the hand-off).
// Thread contract: the owning shard's thread only. Never blocks, never allocates.
class FinishedCalls {
 public:
  static constexpr std::size_t kCapacity = 32;

  void add(PostedCall& call) noexcept {
    if (count_ == held_.size()) flush();
    held_[count_++] = &call;
  }
  // Gives every held record back to its pool (all come from the engine's one pool).
  void flush() noexcept;

 private:
  std::array<PostedCall*, kCapacity> held_{};
  std::size_t count_ = 0;
};

}  // namespace fastcm::shards
