// The listen's check that it is handed each connection's REQ once (--role both): a second
// req_received for one connection means the engine took a retransmitted or duplicated REQ for a
// new one.
//
// The storm's lane k runs connections k, k + W, k + 2W, ... one after another (storm.h), so one
// number per lane suffices: the highest connection (plus one) whose REQ the listen has had. A REQ
// of that connection or an earlier one of the lane is a duplicate. Exact while connection numbers
// are the storm's (runs of at most kQpnSpan connections, storm_qpns.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace fastcm::bench {

class ReqLedger {
 public:
  explicit ReqLedger(std::uint32_t window)
      : window_(window), last_(std::make_unique<std::atomic<std::uint64_t>[]>(window)) {}

  // True the first time connection `connection`'s REQ reaches the listen, false for a later one.
  // Thread contract: any thread; lock-free. The server shards of a lane's successive connections
  // differ, hence the atomic maximum.
  [[nodiscard]] bool first(std::uint64_t connection) noexcept {
    std::atomic<std::uint64_t>& last = last_[connection % window_];
    // Relaxed: a per-lane maximum, nothing else is published through it.
    std::uint64_t seen = last.load(std::memory_order_relaxed);
    do {
      if (seen > connection) return false;
    } while (!last.compare_exchange_weak(seen, connection + 1, std::memory_order_relaxed));
    return true;
  }

 private:
  std::uint32_t window_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> last_;
};

}  // namespace fastcm::bench
