#include "fabric/umad/umad_fabric.h"

#include "fabric/umad/port_discovery.h"
#include "fabric/umad/umad_port.h"

namespace fastcm::umad {

std::unique_ptr<Fabric> open_umad_fabric(const UmadConfig& config, std::string& error) {
  return UmadFabric::open(config, error);
}

std::unique_ptr<UmadFabric> UmadFabric::open(const UmadConfig& config, std::string& error) {
  std::unique_ptr<UmadFabric> fabric(new UmadFabric());
  std::vector<DiscoveredPort> found;
  if (!discover_ports(config, fabric->device_, found, error)) return nullptr;
  for (const DiscoveredPort& port : found) {
    std::unique_ptr<UmadPort> opened = UmadPort::open(fabric->device_, port, error);
    if (!opened) return nullptr;
    fabric->attrs_.push_back(port.attr);
    fabric->ports_.push_back(std::move(opened));
  }
  return fabric;
}

UmadFabric::~UmadFabric() = default;

std::size_t UmadFabric::send_burst(std::uint16_t port_index, std::span<const MadPacket* const> pkts) noexcept {
  return port_index < ports_.size() ? ports_[port_index]->send(pkts) : 0;
}

std::size_t UmadFabric::recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept {
  return port_index < ports_.size() ? ports_[port_index]->recv(port_index, bufs) : 0;
}

int UmadFabric::rx_event_fd(std::uint16_t port_index) const noexcept {
  return port_index < ports_.size() ? ports_[port_index]->event_fd() : -1;
}

bool UmadFabric::arm_rx_event(std::uint16_t port_index) noexcept {
  return port_index < ports_.size() && ports_[port_index]->arm();
}

UmadPortCounters UmadFabric::counters(std::uint16_t port_index) const noexcept {
  return port_index < ports_.size() ? ports_[port_index]->counters() : UmadPortCounters{};
}

PortAttrSources UmadFabric::sources(std::uint16_t port_index) const noexcept {
  return port_index < ports_.size() ? ports_[port_index]->sources() : PortAttrSources{};
}

}  // namespace fastcm::umad
