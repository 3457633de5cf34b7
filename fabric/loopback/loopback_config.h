// What the loopback fabric simulates: its HCAs and their ports, queue sizes and the fault seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastcm/fabric.h"
#include "fastcm/params.h"

namespace fastcm::loopback {

struct LoopbackHcaConfig {
  std::vector<PortAttr> ports;  // in Fabric::ports() order
};

struct LoopbackConfig {
  std::vector<LoopbackHcaConfig> hcas;
  // MADs that may be in flight to one port at a time (queued or held back by a delay rule); a MAD
  // arriving beyond that is dropped and counted. 1 .. kMaxRxQueueDepth.
  std::uint32_t rx_queue_depth = 2048;
  std::uint64_t fault_seed = 1;  // seeds every fault-injection decision

  static constexpr std::uint32_t kMaxRxQueueDepth = 1U << 20;
  static constexpr std::size_t kMaxPorts = 256;  // in all HCAs together
  static constexpr Lid kLidsPerHca = 16;  // default LIDs: HCA h, port p gets h * 16 + p

  // `hca_count` HCAs of `ports_per_hca` ports each, with default_port() attributes.
  // Thread contract: pure. Throws std::invalid_argument when either count is 0, ports_per_hca
  // exceeds 15 (the default LID plan) or there would be more than kMaxPorts ports.
  [[nodiscard]] static LoopbackConfig make(std::uint16_t hca_count, std::uint8_t ports_per_hca);
  [[nodiscard]] static LoopbackConfig two_hcas(std::uint8_t ports_per_hca) {
    return make(2, ports_per_hca);
  }

  // The deterministic default attributes of port `port_num` (1-based) of HCA `hca` (0-based):
  // node GUID 0x0002c90300000000 + (hca + 1) * 0x100, port GUID node GUID + port_num, one GID
  // (fe80::port GUID), LID hca * 16 + port_num, LMC 0, SM LID 1, P_Keys {0xffff, 0x8001}, MTU 4096,
  // 100 Gb/s, InfiniBand, 16 RDMA read/atomic resources each way, CA ACK delay 16.
  // Thread contract: pure; no validation (make() and LoopbackFabric check the result).
  [[nodiscard]] static PortAttr default_port(std::uint16_t hca, std::uint8_t port_num);

  // Checks everything LoopbackFabric relies on and throws std::invalid_argument naming the first
  // problem: no HCA, an HCA without ports, more than kMaxPorts ports in all, a port number 0 or
  // repeated in its HCA, an empty or oversized GID or P_Key table, a zero GID or one used by two
  // ports, an LMC above 7, an InfiniBand port whose LID range is not unicast (1..0xbfff) or
  // overlaps another port's, an Ethernet port with a LID, or rx_queue_depth out of range.
  // Thread contract: pure.
  void validate() const;
};

// The path a subnet manager's path record would give from port `from` to port `to` (the loopback
// has no SA): both ports' LIDs and first GIDs, the smaller active MTU, the sender's active rate,
// the default P_Key, SL 0, subnet-local, and `packet_life_time` (an exponent: 4.096 µs · 2^t),
// which sets the CM's retry waits and time-wait. Thread contract: pure.
[[nodiscard]] inline Path path_record(const PortAttr& from, const PortAttr& to, std::uint8_t packet_life_time) {
  Path p;
  p.local_lid = from.lid;
  p.remote_lid = to.lid;
  p.local_gid = from.gid_table[0];
  p.remote_gid = to.gid_table[0];
  p.mtu = from.active_mtu < to.active_mtu ? from.active_mtu : to.active_mtu;
  p.rate = from.active_rate;
  p.packet_life_time = packet_life_time;
  p.port = from.port_num;
  return p;
}

}  // namespace fastcm::loopback
