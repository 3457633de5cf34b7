// The loopback fabric: several simulated HCAs with several ports each, in one process, joined by a
// simulated switch with seeded fault injection. The default transport of fastcm, and the one its
// tests run on (client and server engines on different HCAs of one LoopbackFabric).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

// Its sibling public headers by file name: they are installed together as <fastcm/loopback/...>.
#include "fault_rule.h"
#include "loopback_config.h"
#include "port_counters.h"
#include "fastcm/clock.h"
#include "fastcm/fabric.h"

namespace fastcm::loopback {

// The switch delivers a MAD by destination LID (LMC ranges included), or by destination GID when
// its address carries a GRH. On arrival the receiving port's QP1 checks it: destination QP 1, the
// GSI Q_Key, and a P_Key its table accepts. The received address names the sender: its base LID,
// QP 1, the GSI Q_Key, the receiver's matching P_Key index, the SL, and with a GRH the sender's
// source GID and the receiver's GID index. Each port has a bounded receive queue
// (LoopbackConfig::rx_queue_depth): a MAD that finds it full is dropped and counted.
//
// Per-MAD paths (Fabric::send_burst, recv_burst) take no lock and never allocate.
class LoopbackFabric {
 public:
  // Preallocates every port's queue. `clock` times injected delays and must outlive the fabric.
  // Throws std::invalid_argument for a config LoopbackConfig::validate() rejects, std::system_error
  // when an eventfd or ring cannot be set up, std::bad_alloc.
  LoopbackFabric(const LoopbackConfig& config, const Clock& clock);
  ~LoopbackFabric();
  LoopbackFabric(const LoopbackFabric&) = delete;
  LoopbackFabric& operator=(const LoopbackFabric&) = delete;

  // Thread contract for the rest: any thread, unless stated.

  [[nodiscard]] std::size_t hca_count() const noexcept;

  // HCA `index` as a Fabric: its ports only, indexed from 0 in config order. The reference stays
  // valid for the LoopbackFabric's lifetime. Throws std::out_of_range for index >= hca_count().
  [[nodiscard]] Fabric& hca(std::size_t index);

  // Installs a fault rule (see FaultRule), replacing one with the same from, to and attr_id.
  // Throws std::out_of_range when from/to name no port, std::invalid_argument for a bad
  // percentage or window, std::length_error beyond 64 rules; nothing changes then.
  // Thread contract: not while any thread is inside send_burst of this fabric (a control call
  // between test steps); concurrent recv_burst is fine.
  void set_fault(const FaultRule& rule);

  // Removes every fault rule. MADs already held back stay held. Thread contract: as set_fault.
  void clear_faults() noexcept;

  // The port's counters (see PortCounters). Throws std::out_of_range for an unknown port.
  [[nodiscard]] PortCounters counters(PortRef port) const;

  // MADs in flight to the port: queued, held back by a delay rule, or being copied in by a sender.
  // Exact while no thread sends to or receives from the port. Throws std::out_of_range.
  [[nodiscard]] std::size_t pending(PortRef port) const;

  // pending() summed over every port: 0 means the fabric is quiescent.
  [[nodiscard]] std::size_t total_pending() const noexcept;

  // The clock time from which the port's next MAD can be received (at most now when one can be
  // received now), or nullopt when nothing is in flight to it. Lets a virtual-clock test driver
  // jump straight to the next delivery. Moves the port's queued MADs into its holding area, which
  // recv_burst releases in deliver-at order. Throws std::out_of_range.
  // Thread contract: the port's consumer thread only, like recv_burst.
  [[nodiscard]] std::optional<std::uint64_t> next_delivery_ns(PortRef port);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastcm::loopback
