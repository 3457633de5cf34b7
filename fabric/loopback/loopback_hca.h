// One simulated HCA as a Fabric: its engine sees only its own ports, indexed from 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "fabric/loopback/loopback_switch.h"
#include "fastcm/fabric.h"

namespace fastcm::loopback {

// A view onto the switch: it owns nothing and lives as long as the LoopbackFabric that made it.
// Thread contracts are Fabric's.
class LoopbackHca final : public Fabric {
 public:
  LoopbackHca(LoopbackSwitch& fabric_switch, std::size_t hca) noexcept;

  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return ports_; }
  std::size_t send_burst(std::uint16_t port_index,
                         std::span<const MadPacket* const> pkts) noexcept override;
  std::size_t recv_burst(std::uint16_t port_index,
                         std::span<MadPacket* const> bufs) noexcept override;
  [[nodiscard]] int rx_event_fd(std::uint16_t port_index) const noexcept override;
  bool arm_rx_event(std::uint16_t port_index) noexcept override;

 private:
  LoopbackSwitch& switch_;
  std::uint32_t first_port_;  // fabric-wide index of port_index 0
  std::span<const PortAttr> ports_;
};

}  // namespace fastcm::loopback
