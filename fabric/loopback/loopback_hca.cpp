#include "fabric/loopback/loopback_hca.h"

namespace fastcm::loopback {

LoopbackHca::LoopbackHca(LoopbackSwitch& fabric_switch, std::size_t hca) noexcept
    : switch_(fabric_switch),
      first_port_(fabric_switch.first_port(hca)),
      ports_(fabric_switch.hca_ports(hca)) {}

std::size_t LoopbackHca::send_burst(std::uint16_t port_index,
                                    std::span<const MadPacket* const> pkts) noexcept {
  if (port_index >= ports_.size()) return 0;
  return switch_.send(first_port_ + port_index, pkts);
}

std::size_t LoopbackHca::recv_burst(std::uint16_t port_index,
                                    std::span<MadPacket* const> bufs) noexcept {
  if (port_index >= ports_.size()) return 0;
  return switch_.receive(first_port_ + port_index, bufs);
}

int LoopbackHca::rx_event_fd(std::uint16_t port_index) const noexcept {
  if (port_index >= ports_.size()) return -1;
  return switch_.queue(first_port_ + port_index).event_fd();
}

bool LoopbackHca::arm_rx_event(std::uint16_t port_index) noexcept {
  if (port_index >= ports_.size()) return false;
  return switch_.queue(first_port_ + port_index).arm();
}

}  // namespace fastcm::loopback
