#include "fabric/loopback/loopback_config.h"

#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace fastcm::loopback {
namespace {

constexpr Guid kNodeGuidBase = 0x0002'c903'0000'0000;  // a Mellanox-style OUI, for readability
constexpr std::uint64_t kLinkLocalPrefix = 0xfe80'0000'0000'0000;
constexpr Lid kMaxUnicastLid = 0xbfff;
constexpr std::uint8_t kMaxLmc = 7;
constexpr std::uint8_t kMaxDefaultPorts = LoopbackConfig::kLidsPerHca - 1;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("LoopbackConfig: " + what);
}

std::string port_name(std::size_t hca, std::size_t port) {
  return "HCA " + std::to_string(hca) + " port index " + std::to_string(port);
}

}  // namespace

LoopbackConfig LoopbackConfig::make(std::uint16_t hca_count, std::uint8_t ports_per_hca) {
  if (hca_count == 0) fail("hca_count must be at least 1");
  if (ports_per_hca == 0 || ports_per_hca > kMaxDefaultPorts) fail("ports_per_hca must be 1..15");
  if (std::size_t{hca_count} * ports_per_hca > kMaxPorts) fail("more than " + std::to_string(kMaxPorts) + " ports");
  LoopbackConfig cfg;
  cfg.hcas.resize(hca_count);
  for (std::uint16_t h = 0; h < hca_count; ++h) {
    for (std::uint8_t p = 1; p <= ports_per_hca; ++p) cfg.hcas[h].ports.push_back(default_port(h, p));
  }
  return cfg;
}

PortAttr LoopbackConfig::default_port(std::uint16_t hca, std::uint8_t port_num) {
  PortAttr a;
  a.port_num = port_num;
  a.node_guid = kNodeGuidBase + (Guid{hca} + 1) * 0x100;
  a.port_guid = a.node_guid + port_num;
  a.gid_table[0] = Gid::from_parts(kLinkLocalPrefix, a.port_guid);
  a.gid_count = 1;
  a.lid = static_cast<Lid>(hca * kLidsPerHca + port_num);
  a.lmc = 0;
  a.sm_lid = 1;
  a.pkey_table[0] = 0xffff;
  a.pkey_table[1] = 0x8001;
  a.pkey_count = 2;
  a.active_mtu = 5;    // 4096 bytes
  a.active_rate = 16;  // 100 Gb/s
  a.link_layer = LinkLayer::infiniband;
  a.ca = CaLimits{.max_qp_rd_atom = 16, .max_qp_init_rd_atom = 16, .local_ca_ack_delay = 16};
  return a;
}

void LoopbackConfig::validate() const {
  if (hcas.empty()) fail("no HCA");
  if (rx_queue_depth == 0 || rx_queue_depth > kMaxRxQueueDepth) fail("rx_queue_depth out of range");
  std::size_t total_ports = 0;
  std::set<Gid> gids;
  std::set<std::pair<std::uint32_t, std::uint32_t>> lid_ranges;  // [first, last], disjoint
  for (std::size_t h = 0; h < hcas.size(); ++h) {
    const auto& ports = hcas[h].ports;
    if (ports.empty()) fail("HCA " + std::to_string(h) + " has no ports");
    total_ports += ports.size();
    std::set<std::uint8_t> port_nums;
    for (std::size_t p = 0; p < ports.size(); ++p) {
      const PortAttr& a = ports[p];
      const std::string name = port_name(h, p);
      if (a.port_num == 0 || !port_nums.insert(a.port_num).second) {
        fail(name + ": port number 0 or repeated");
      }
      if (a.gid_count == 0 || a.gid_count > kMaxPortGids) fail(name + ": GID table size");
      if (a.pkey_count == 0 || a.pkey_count > kMaxPortPKeys) fail(name + ": P_Key table size");
      for (const Gid& g : a.gids()) {
        if (g == Gid{}) fail(name + ": zero GID");
        if (!gids.insert(g).second) fail(name + ": GID used by two ports");
      }
      if (a.lmc > kMaxLmc) fail(name + ": LMC above 7");
      if (a.link_layer == LinkLayer::ethernet) {
        if (a.lid != 0) fail(name + ": Ethernet port with a LID");
        continue;
      }
      const std::uint32_t first = a.lid;
      const std::uint32_t last = first + (1U << a.lmc) - 1;
      if (first == 0 || last > kMaxUnicastLid) fail(name + ": LID range not unicast");
      // The nearest range starting at or before `last` is the only one that can overlap.
      auto next = lid_ranges.upper_bound({last, std::numeric_limits<std::uint32_t>::max()});
      if (next != lid_ranges.begin() && std::prev(next)->second >= first) {
        fail(name + ": LID range overlaps another port's");
      }
      lid_ranges.insert({first, last});
    }
  }
  if (total_ports > kMaxPorts) fail("more than " + std::to_string(kMaxPorts) + " ports");
}

}  // namespace fastcm::loopback
