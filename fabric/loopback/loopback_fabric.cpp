#include "fabric/loopback/loopback_fabric.h"

#include <stdexcept>
#include <vector>

#include "fabric/loopback/loopback_hca.h"
#include "fabric/loopback/loopback_switch.h"

namespace fastcm::loopback {

struct LoopbackFabric::Impl {
  Impl(const LoopbackConfig& config, const Clock& clock) : fabric_switch(config, clock) {
    hcas.reserve(fabric_switch.hca_count());
    for (std::size_t h = 0; h < fabric_switch.hca_count(); ++h) {
      hcas.push_back(std::make_unique<LoopbackHca>(fabric_switch, h));
    }
  }

  std::uint32_t port_or_any(const std::optional<PortRef>& ref) const {
    return ref ? fabric_switch.port_of(*ref) : FaultTable::kAnyPort;
  }

  LoopbackSwitch fabric_switch;
  std::vector<std::unique_ptr<LoopbackHca>> hcas;
};

LoopbackFabric::LoopbackFabric(const LoopbackConfig& config, const Clock& clock)
    : impl_(std::make_unique<Impl>(config, clock)) {}

LoopbackFabric::~LoopbackFabric() = default;

std::size_t LoopbackFabric::hca_count() const noexcept { return impl_->hcas.size(); }

Fabric& LoopbackFabric::hca(std::size_t index) {
  if (index >= impl_->hcas.size()) throw std::out_of_range("loopback: no such HCA");
  return *impl_->hcas[index];
}

void LoopbackFabric::set_fault(const FaultRule& rule) {
  impl_->fabric_switch.faults().set(impl_->port_or_any(rule.from), impl_->port_or_any(rule.to),
                                    rule);
}

void LoopbackFabric::clear_faults() noexcept { impl_->fabric_switch.faults().clear(); }

PortCounters LoopbackFabric::counters(PortRef port) const {
  const LoopbackSwitch& s = impl_->fabric_switch;
  return s.counters(s.port_of(port));
}

std::size_t LoopbackFabric::pending(PortRef port) const {
  const LoopbackSwitch& s = impl_->fabric_switch;
  return s.queue(s.port_of(port)).in_flight();
}

std::size_t LoopbackFabric::total_pending() const noexcept {
  const LoopbackSwitch& s = impl_->fabric_switch;
  std::size_t total = 0;
  for (std::uint32_t p = 0; p < s.port_count(); ++p) total += s.queue(p).in_flight();
  return total;
}

std::optional<std::uint64_t> LoopbackFabric::next_delivery_ns(PortRef port) {
  LoopbackSwitch& s = impl_->fabric_switch;
  return s.queue(s.port_of(port)).next_delivery_ns(s.clock());
}

}  // namespace fastcm::loopback
