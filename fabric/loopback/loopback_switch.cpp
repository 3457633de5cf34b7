#include "fabric/loopback/loopback_switch.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace fastcm::loopback {
namespace {

constexpr PKey kPKeyBase = 0x7fff;
constexpr PKey kPKeyFullMember = 0x8000;
constexpr std::size_t kAttrIdOffset = 16;  // MAD header: attribute ID, big-endian

// Fabric-wide port attributes, HCA by HCA, of a config that passed validate().
std::vector<PortAttr> flatten(const LoopbackConfig& config) {
  config.validate();
  std::vector<PortAttr> attrs;
  for (const LoopbackHcaConfig& hca : config.hcas) {
    attrs.insert(attrs.end(), hca.ports.begin(), hca.ports.end());
  }
  return attrs;
}

// The receiver's P_Key table index accepting `pkey` (IBTA 10.9.3: same 15-bit base, not both
// limited members); nullopt when none does.
std::optional<std::uint16_t> match_pkey(std::span<const PKey> table, PKey pkey) noexcept {
  if ((pkey & kPKeyBase) == 0) return std::nullopt;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if ((table[i] & kPKeyBase) == (pkey & kPKeyBase) && ((table[i] | pkey) & kPKeyFullMember) != 0) {
      return static_cast<std::uint16_t>(i);
    }
  }
  return std::nullopt;
}

std::uint16_t attribute_id(const MadPacket& pkt) noexcept {
  return static_cast<std::uint16_t>(pkt.mad[kAttrIdOffset] << 8 | pkt.mad[kAttrIdOffset + 1]);
}

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.fetch_add(by, std::memory_order_relaxed);
}

}  // namespace

LoopbackSwitch::LoopbackSwitch(const LoopbackConfig& config, const Clock& clock)
    : clock_(clock),
      attrs_(flatten(config)),
      routes_(attrs_),
      faults_(config.fault_seed, static_cast<std::uint32_t>(attrs_.size())) {
  first_port_.push_back(0);
  for (const LoopbackHcaConfig& hca : config.hcas) {
    for (std::size_t p = 0; p < hca.ports.size(); ++p) {
      local_index_.push_back(static_cast<std::uint16_t>(p));
    }
    first_port_.push_back(static_cast<std::uint32_t>(local_index_.size()));
  }
  ports_.reserve(attrs_.size());
  for (std::size_t p = 0; p < attrs_.size(); ++p) {
    ports_.push_back(
        std::make_unique<PortState>(config.rx_queue_depth, static_cast<std::uint32_t>(p)));
  }
}

std::span<const PortAttr> LoopbackSwitch::hca_ports(std::size_t hca) const noexcept {
  return std::span<const PortAttr>(attrs_).subspan(first_port_[hca],
                                                   first_port_[hca + 1] - first_port_[hca]);
}

std::uint32_t LoopbackSwitch::port_of(PortRef ref) const {
  if (ref.hca >= hca_count() || ref.port >= first_port_[ref.hca + 1] - first_port_[ref.hca]) {
    throw std::out_of_range("loopback: no port " + std::to_string(ref.port) + " on HCA " +
                            std::to_string(ref.hca));
  }
  return first_port_[ref.hca] + ref.port;
}

std::optional<LoopbackSwitch::Target> LoopbackSwitch::resolve(std::uint32_t src,
                                                              const MadAddress& out) noexcept {
  const PortAttr& from = attrs_[src];
  if (out.pkey_index >= from.pkeys().size() ||
      (out.grh.present && out.grh.gid_index >= from.gids().size())) {
    bump(ports_[src]->tx.invalid_address);
    return std::nullopt;
  }
  // A GRH routes by GID (a router, or RoCE); otherwise the subnet routes by LID. Ethernet ports
  // have no LIDs, so a RoCE MAD without a GRH, and any MAD across link layers, has no route.
  const std::optional<Route> route = out.grh.present ? routes_.by_gid(out.grh.remote_gid)
                                                     : routes_.by_lid(out.remote_lid);
  if (!route || attrs_[route->port].link_layer != from.link_layer) {
    bump(ports_[src]->tx.no_route);
    return std::nullopt;
  }
  const std::optional<std::uint16_t> pkey_index =
      match_pkey(attrs_[route->port].pkeys(), from.pkey_table[out.pkey_index]);
  if (out.remote_qpn != kGsiQpn || out.remote_qkey != kGsiQKey || !pkey_index) {
    bump(ports_[route->port]->rx.dropped_invalid);
    return std::nullopt;
  }
  return Target{.port = route->port, .pkey_index = *pkey_index, .gid_index = route->gid_index};
}

void LoopbackSwitch::received_address(std::uint32_t src, const MadAddress& out,
                                      const Target& target, MadAddress& dst) const noexcept {
  // Field by field, every field: the slot held another MAD's address before.
  const PortAttr& from = attrs_[src];
  dst.port_index = local_index_[target.port];
  dst.remote_lid = from.lid;
  dst.remote_qpn = kGsiQpn;
  dst.remote_qkey = kGsiQKey;
  dst.pkey_index = target.pkey_index;
  dst.sl = out.sl;
  if (out.grh.present) {
    dst.grh = GrhInfo{.present = true,
                      .gid_index = target.gid_index,
                      .hop_limit = out.grh.hop_limit,
                      .traffic_class = out.grh.traffic_class,
                      .flow_label = out.grh.flow_label,
                      .remote_gid = from.gid_table[out.grh.gid_index]};
  } else {
    dst.grh = GrhInfo{};
  }
}

std::size_t LoopbackSwitch::send(std::uint32_t src, std::span<const MadPacket* const> pkts) noexcept {
  SenderCounters& tx = ports_[src]->tx;
  bump(tx.sent, pkts.size());
  // Read once per burst: set_fault/clear_faults never run during a send (their contract).
  const bool faulty = !faults_.empty();
  std::optional<std::uint64_t> now;  // read once per burst, and only for a delayed MAD
  Run run;
  for (const MadPacket* pkt : pkts) {
    const std::optional<Target> target = resolve(src, pkt->addr);
    if (!target) continue;
    const FaultDecision fate =
        faulty ? faults_.decide(src, target->port, attribute_id(*pkt)) : FaultDecision{};
    if (fate.copies == 0) {
      bump(tx.dropped_by_fault);
      continue;
    }
    if (fate.copies > 1) bump(tx.duplicated);
    std::uint64_t deliver_at = PortQueue::kDue;
    if (fate.delay_ns > 0) {
      if (!now) now = clock_.now_ns();
      const std::uint64_t room = std::numeric_limits<std::uint64_t>::max() - *now;
      deliver_at = *now + std::min(fate.delay_ns, room);
      bump(tx.delayed);
    }
    for (std::uint8_t copy = 0; copy < fate.copies; ++copy) add(src, run, {pkt, *target, deliver_at});
  }
  deliver(src, run);
  return pkts.size();
}

void LoopbackSwitch::add(std::uint32_t src, Run& run, const Run::Copy& copy) noexcept {
  if (run.count == run.copies.size() || (run.count > 0 && run.copies[0].target.port != copy.target.port)) {
    deliver(src, run);
  }
  run.copies[run.count++] = copy;
}

void LoopbackSwitch::deliver(std::uint32_t src, Run& run) noexcept {
  if (run.count == 0) return;
  PortState& to = *ports_[run.copies[0].target.port];
  std::array<PortQueue::Slot*, PortQueue::kBurst> slots;
  std::array<std::uint64_t, PortQueue::kBurst> deliver_at;
  const std::size_t taken = to.queue.try_acquire({slots.data(), run.count});
  for (std::size_t i = 0; i < taken; ++i) {
    const Run::Copy& copy = run.copies[i];
    received_address(src, copy.pkt->addr, copy.target, slots[i]->pkt.addr);
    slots[i]->pkt.mad = copy.pkt->mad;
    deliver_at[i] = copy.deliver_at_ns;
  }
  if (taken < run.count) bump(to.rx.dropped_queue_full, run.count - taken);
  if (taken > 0) {
    to.queue.publish({slots.data(), taken}, {deliver_at.data(), taken});
    to.queue.notify();
  }
  run.count = 0;
}

std::size_t LoopbackSwitch::receive(std::uint32_t dst, std::span<MadPacket* const> bufs) noexcept {
  PortState& port = *ports_[dst];
  const std::size_t n = port.queue.receive(bufs, clock_);
  if (n > 0) bump(port.rx.delivered, n);
  return n;
}

PortCounters LoopbackSwitch::counters(std::uint32_t port) const noexcept {
  const PortState& p = *ports_[port];
  const auto get = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  return PortCounters{.sent = get(p.tx.sent),
                      .no_route = get(p.tx.no_route),
                      .invalid_address = get(p.tx.invalid_address),
                      .dropped_by_fault = get(p.tx.dropped_by_fault),
                      .duplicated = get(p.tx.duplicated),
                      .delayed = get(p.tx.delayed),
                      .delivered = get(p.rx.delivered),
                      .dropped_queue_full = get(p.rx.dropped_queue_full),
                      .dropped_invalid = get(p.rx.dropped_invalid)};
}

}  // namespace fastcm::loopback
