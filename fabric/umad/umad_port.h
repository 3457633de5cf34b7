// One opened umad port: its fd, its MAD agent for the CM class, and the per-MAD send and receive
// path (no allocation, no lock: the send buffer lives on the caller's stack, the receive buffer
// belongs to the port's single consumer).
//
// Thread contract: send() from any thread; recv() and arm() from the port's consumer thread;
// event_fd(), counters() from any thread. open() on the control path (blocks on the device open).
#pragma once

#include <infiniband/umad.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "fabric/umad/port_discovery.h"
#include "fabric/umad/umad_fabric.h"
#include "fastcm/fabric.h"

namespace fastcm::umad {

class UmadPort {
 public:
  // Opens `port` of `device` and registers the CM agent. On failure returns null with `error` set
  // to one line: no permission, the CM class owned by someone else (the kernel's ib_cm), or the
  // device refusing the open.
  [[nodiscard]] static std::unique_ptr<UmadPort> open(const std::string& device, const DiscoveredPort& port,
                                                      std::string& error);
  ~UmadPort();
  UmadPort(const UmadPort&) = delete;
  UmadPort& operator=(const UmadPort&) = delete;

  // As Fabric::send_burst / recv_burst / arm_rx_event for this port; `port_index` is what
  // received packets report.
  std::size_t send(std::span<const MadPacket* const> pkts) noexcept;
  std::size_t recv(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept;
  bool arm() noexcept;
  [[nodiscard]] int event_fd() const noexcept { return event_fd_; }

  [[nodiscard]] UmadPortCounters counters() const noexcept;
  [[nodiscard]] const PortAttrSources& sources() const noexcept { return info_.sources; }

 private:
  explicit UmadPort(const DiscoveredPort& info) : info_(info) {}

  // One MAD as ib_umad reads and writes it: the ib_user_mad header (umad_size() bytes), then the
  // MAD; libibumad's accessors (umad_get_mad, umad_get_mad_addr, ...) find the parts.
  struct alignas(8) UmadBuffer {
    std::array<std::uint8_t, sizeof(ib_user_mad) + kMadSize> bytes;
  };

  // False (and counted) when `pkt` cannot be addressed from this port.
  bool address(const MadPacket& pkt, UmadBuffer& out) noexcept;
  // PortAttr GID index of hardware GID index `hw` (received GRHs name the hardware index).
  [[nodiscard]] std::uint8_t gid_index_of_hw(std::uint8_t hw) const noexcept;
  [[nodiscard]] std::uint8_t roce_source_gid(std::uint8_t requested, const Gid& destination) const noexcept;

  DiscoveredPort info_;
  int fd_ = -1;
  int agent_ = -1;
  int event_fd_ = -1;
  UmadBuffer rx_{};  // the consumer's receive buffer

  // Statistics, each updated with relaxed fetch_add (or by the single consumer) and read relaxed
  // by counters(): no ordering with anything else is needed.
  struct Counters {
    std::atomic<std::uint64_t> sent{0}, send_errors{0}, send_without_grh{0}, send_bad_address{0};
    std::atomic<std::uint64_t> received{0}, failed_sends{0}, short_mads{0}, bad_pkey_index{0}, recv_errors{0};
  };
  Counters counters_;
};

}  // namespace fastcm::umad
