// The loopback fabric's switch: every simulated port's state, and the path of a MAD from a sending
// port through routing, receive-side checks and fault injection into the receiving port's queue.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "fabric/loopback/fault_table.h"
#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/port_counters.h"
#include "fabric/loopback/port_queue.h"
#include "fabric/loopback/route_table.h"
#include "fastcm/clock.h"
#include "fastcm/fabric.h"

namespace fastcm::loopback {

// Ports are numbered fabric-wide, HCA by HCA; an HCA's ports are a contiguous range.
class LoopbackSwitch {
 public:
  // Validates `config` (LoopbackConfig::validate's exceptions), then preallocates every queue
  // (PortQueue's exceptions). `clock` must outlive the switch.
  LoopbackSwitch(const LoopbackConfig& config, const Clock& clock);

  [[nodiscard]] std::size_t hca_count() const noexcept { return first_port_.size() - 1; }
  // HCA `hca`'s ports, fabric-wide [first_port(hca), first_port(hca + 1)). hca <= hca_count().
  [[nodiscard]] std::uint32_t first_port(std::size_t hca) const noexcept { return first_port_[hca]; }
  [[nodiscard]] std::span<const PortAttr> hca_ports(std::size_t hca) const noexcept;
  [[nodiscard]] std::size_t port_count() const noexcept { return attrs_.size(); }
  // Fabric-wide index of `ref`; throws std::out_of_range when no such port exists.
  [[nodiscard]] std::uint32_t port_of(PortRef ref) const;

  // Fabric::send_burst / recv_burst for fabric-wide ports `src` / `dst` (< port_count()), with
  // the same thread contracts.
  std::size_t send(std::uint32_t src, std::span<const MadPacket* const> pkts) noexcept;
  std::size_t receive(std::uint32_t dst, std::span<MadPacket* const> bufs) noexcept;

  [[nodiscard]] PortQueue& queue(std::uint32_t port) noexcept { return ports_[port]->queue; }
  [[nodiscard]] const PortQueue& queue(std::uint32_t port) const noexcept {
    return ports_[port]->queue;
  }
  [[nodiscard]] FaultTable& faults() noexcept { return faults_; }
  [[nodiscard]] const Clock& clock() const noexcept { return clock_; }
  // Thread contract: any thread (relaxed loads; see PortCounters).
  [[nodiscard]] PortCounters counters(std::uint32_t port) const noexcept;

 private:
  using Counter = std::atomic<std::uint64_t>;  // every update and read relaxed: pure statistics
  // Written by the port's senders.
  struct alignas(64) SenderCounters {
    Counter sent{0}, no_route{0}, invalid_address{0}, dropped_by_fault{0}, duplicated{0},
        delayed{0};
  };
  // Written by senders to the port (drops) and by its consumer (delivered).
  struct alignas(64) ReceiverCounters {
    Counter delivered{0}, dropped_queue_full{0}, dropped_invalid{0};
  };
  struct PortState {
    PortState(std::uint32_t depth, std::uint32_t id) : queue(depth, id) {}
    PortQueue queue;
    SenderCounters tx;
    ReceiverCounters rx;
  };
  // Where a MAD lands: small enough to come back in registers, and the receiver's address is
  // written from it straight into the queue slot (received_address), not built and copied.
  struct Target {
    std::uint32_t port;        // fabric-wide
    std::uint16_t pkey_index;  // the receiver's P_Key table index accepting the sender's P_Key
    std::uint8_t gid_index;    // the receiver's GID table index the GRH was sent to
  };

  // Copies of MADs bound for one port, queued there together: one operation on each of the
  // port's rings per run, not one per MAD (with many senders per queue, those per-MAD
  // compare-and-swaps and their waits were a tenth of a storm's CPU).
  struct Run {
    struct Copy {
      const MadPacket* pkt;
      Target target;
      std::uint64_t deliver_at_ns;
    };
    std::array<Copy, PortQueue::kBurst> copies;
    std::size_t count = 0;
  };
  // Adds `copy` to `run`, first delivering the run if it is full or bound for another port.
  void add(std::uint32_t src, Run& run, const Run::Copy& copy) noexcept;
  // Queues the run's copies at their port (counting those a full queue drops), wakes its consumer,
  // and empties the run.
  void deliver(std::uint32_t src, Run& run) noexcept;

  // Where a MAD from `src` addressed `out` lands, or nullopt after counting why it cannot.
  std::optional<Target> resolve(std::uint32_t src, const MadAddress& out) noexcept;
  // Writes into `dst` the address the receiver of a MAD from `src` addressed `out` sees.
  void received_address(std::uint32_t src, const MadAddress& out, const Target& target,
                        MadAddress& dst) const noexcept;

  const Clock& clock_;
  std::vector<PortAttr> attrs_;            // fabric-wide order
  std::vector<std::uint16_t> local_index_; // a port's index within its HCA
  std::vector<std::uint32_t> first_port_;  // per HCA, plus one past the last port
  std::vector<std::unique_ptr<PortState>> ports_;
  RouteTable routes_;
  FaultTable faults_;
};

}  // namespace fastcm::loopback
