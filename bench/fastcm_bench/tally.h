// What happened to the storm's connections, counted per thread (thread_slot.h) and summed on
// demand: the progress line reads it 4 times a second while the shards write it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "bench/fastcm_bench/thread_slot.h"

namespace fastcm::bench {

enum class Count : std::uint8_t {
  attempted,           // connections started (create_id + send_req tried)
  established,         // client got the REP and sent the RTU
  rejected,            // client got a REJ before being established
  timed_out,           // REQ retries ran out (req_error)
  failed_calls,        // a client API call was refused before the connection was established
                       // (the status is counted, not the reason)
  failed_disconnects,  // --disconnect: send_dreq was refused (the endpoint is destroyed instead)
  duplicate_events,    // client: a second event of one kind for one endpoint, or an event for an
                       // endpoint the client had destroyed
  disconnected,        // --disconnect: client left time-wait and destroyed its endpoint
  disconnect_timeouts, // --disconnect: DREQ retries ran out (dreq_error), time-wait anyway
  lost_after_established,  // REJ or DREQ from the server after the client was established
  server_established,  // server got the RTU
  server_failed_calls, // a server API call was refused
  server_reqs,         // --role server: REQs handed to the listen (not their retransmissions)
  server_untracked,    // --role server (--flood-rate: a REQ from outside the storm): accepted
                       // while the accepted table was full
  server_outside_storm,  // --flood-rate: REQs from outside the storm handed to the listen (the
                         // flood's that the engine admitted, and the recovery probe's)
  server_duplicate_events,  // --role both: a second REQ of one connection, or an event for an
                            // endpoint the server had destroyed
  count_
};

class Tally {
 public:
  Tally() : rows_(std::make_unique<Row[]>(kMaxThreadSlots)) {}

  // Thread contract: any thread (its own row).
  void add(Count c, std::uint64_t n = 1) noexcept {
    add_own(rows_[thread_slot()].counts[static_cast<std::size_t>(c)], n);
  }
  // The sum over every thread; a snapshot while the storm runs. Thread contract: any thread.
  [[nodiscard]] std::uint64_t sum(Count c) const noexcept {
    std::uint64_t n = 0;
    for (std::uint32_t r = 0; r < kMaxThreadSlots; ++r) {
      n += rows_[r].counts[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
    }
    return n;
  }

 private:
  struct alignas(64) Row {
    std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(Count::count_)> counts{};
  };
  std::unique_ptr<Row[]> rows_;
};

}  // namespace fastcm::bench
