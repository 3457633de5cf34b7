// RecentSlots: per thread, the table slots of the endpoints this thread was last handed by an
// engine (the events poll() returned, the spare endpoints create_id took), so that the API call
// answering one of them (send_rep for a req_received, send_req after create_id) checks the
// endpoint's attachment at its slot instead of decoding the Id to find it: the decode is a keyed
// permutation of six SipHash rounds, and the thread that answers every event limits a poll-mode
// rate.
//
// Never stale: within one engine a slot is a pure function of the Id (the CID names it under the
// engine's fixed key), and an entry is keyed by the engine's serial number, which no other engine
// of the process ever gets. An entry is only ever overwritten by a later one at its index, and
// then recall() answers nullopt and the caller decodes. Direct-mapped by the comm ID, whose bits
// the permutation has already spread.
//
// Bounds: kEntries entries of 16 bytes per thread that uses it (1 KiB), in thread-local storage,
// allocated by the runtime when the thread first touches it.
// Thread contract: each thread sees only its own entries; no synchronisation.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "fastcm/id.h"

namespace fastcm::shards {

class RecentSlots {
 public:
  static constexpr std::uint32_t kEntries = 64;  // one poll()'s worth of events in the bench's loop

  // A serial number for a new engine: never 0 (an empty entry's), never the same twice in a
  // process (2^32 - 1 engines). Any thread.
  [[nodiscard]] static std::uint32_t new_engine_serial() noexcept;

  // Remembers, for the calling thread, that `id` of engine `engine` lives at `slot`.
  static void remember(std::uint32_t engine, Id id, std::uint32_t slot) noexcept {
    entries_[index(id)] = Entry{.id = id.raw, .engine = engine, .slot = slot};
  }
  // The slot the calling thread remembered for `id` of engine `engine`, or nullopt.
  [[nodiscard]] static std::optional<std::uint32_t> recall(std::uint32_t engine, Id id) noexcept {
    const Entry& e = entries_[index(id)];
    if (e.id != id.raw || e.engine != engine) return std::nullopt;
    return e.slot;
  }

 private:
  struct Entry {
    std::uint64_t id = 0;
    std::uint32_t engine = 0;  // 0: empty
    std::uint32_t slot = 0;
  };
  [[nodiscard]] static std::uint32_t index(Id id) noexcept { return id.comm_id() % kEntries; }

  static thread_local std::array<Entry, kEntries> entries_;
};

}  // namespace fastcm::shards
