// The umad fabric: fastcm's CM MADs on real HCA ports (InfiniBand and RoCE), through rdma-core's
// libibumad and the kernel's ib_umad. The kernel's ib_cm must not own the CM class on those ports
// (README: "Running on a real HCA").
//
// Each opened port gets one MAD agent for the CM class (0x07, class version 2) receiving Send (CM
// messages) and Get/Set (ClassPortInfo). The engine retransmits by itself, so CM messages go out
// with MAD-layer timeout 0 and retries 0; a Get or Set the caller sends goes out with a MAD-layer
// timeout (the kernel hands a GetResp only to the agent that sent the request and is still
// waiting for it). The MAD layer owns the high 32 bits of a request's transaction ID (it puts its
// agent's ID there); the CM matches on communication IDs and the low 32 bits only.
//
// Thread contract: as fastcm::Fabric. open_umad_fabric and UmadFabric::open run on the caller's
// thread, block on sysfs and device opens, and may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastcm/fabric.h"

namespace fastcm::umad {

struct UmadConfig {
  std::string device;               // empty: the first CA umad_get_ca finds
  std::vector<std::uint8_t> ports;  // HCA port numbers; empty: every active port of the device
  // Used when neither libibverbs nor sysfs can tell (a simulated device such as ibsim's has no
  // verbs device): the active MTU code (4 = 2048 bytes) and the CA's limits.
  std::uint8_t fallback_mtu = 4;
  CaLimits fallback_ca{.max_qp_rd_atom = 16, .max_qp_init_rd_atom = 16, .local_ca_ack_delay = 16};
};

// Opens the ports. On failure returns null and sets `error` to one line naming the cause and the fix.
[[nodiscard]] std::unique_ptr<Fabric> open_umad_fabric(const UmadConfig& config, std::string& error);

// What became of MADs on one port, counted since the fabric was opened. Each field is exact; a
// snapshot taken while traffic flows is not consistent across fields.
struct UmadPortCounters {
  std::uint64_t sent = 0;              // written to the umad device
  std::uint64_t send_errors = 0;       // the umad device refused the write (dropped)
  std::uint64_t send_without_grh = 0;  // on an Ethernet (RoCE) port without a GRH (dropped)
  std::uint64_t send_bad_address = 0;  // pkey_index or GRH gid_index outside the port's tables
  std::uint64_t received = 0;          // handed to the caller by recv_burst
  std::uint64_t failed_sends = 0;      // our own sends coming back with a non-zero status (dropped)
  std::uint64_t short_mads = 0;        // fewer than 256 bytes (dropped)
  std::uint64_t bad_pkey_index = 0;    // received with a P_Key index outside the table (reported as 0)
  std::uint64_t recv_errors = 0;       // umad_recv failed other than with "nothing to read"
};

// Where each port attribute came from: "umad" (libibumad's view of sysfs), "verbs"
// (ibv_query_device/ibv_query_port/ibv_query_gid_table), "sysfs" (read directly) or "config"
// (UmadConfig's fallbacks).
struct PortAttrSources {
  const char* guids_lids_pkeys = "umad";  // node/port GUID, LID, LMC, SM LID, P_Key table, state
  const char* rate = "umad";
  const char* link_layer = "umad";
  const char* gids = "sysfs";   // GID table, each entry's hardware index and type
  const char* mtu = "config";
  const char* ca_limits = "config";
};

class UmadPort;

class UmadFabric final : public Fabric {
 public:
  // As open_umad_fabric, with the concrete type (for counters and sources).
  [[nodiscard]] static std::unique_ptr<UmadFabric> open(const UmadConfig& config, std::string& error);
  ~UmadFabric() override;

  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return attrs_; }
  std::size_t send_burst(std::uint16_t port_index, std::span<const MadPacket* const> pkts) noexcept override;
  std::size_t recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept override;
  // The umad device's fd; -1 when it cannot be waited on (a simulated device, see rx_event_fd in
  // fastcm/fabric.h). arm_rx_event then still tells whether a MAD is waiting.
  [[nodiscard]] int rx_event_fd(std::uint16_t port_index) const noexcept override;
  bool arm_rx_event(std::uint16_t port_index) noexcept override;

  // The CA name the ports belong to.
  [[nodiscard]] const std::string& device() const noexcept { return device_; }
  // Counters and attribute sources of port `port_index` (an index into ports()); zero / defaults
  // outside. Any thread.
  [[nodiscard]] UmadPortCounters counters(std::uint16_t port_index) const noexcept;
  [[nodiscard]] PortAttrSources sources(std::uint16_t port_index) const noexcept;

 private:
  UmadFabric() = default;

  std::string device_;
  std::vector<PortAttr> attrs_;
  std::vector<std::unique_ptr<UmadPort>> ports_;
};

}  // namespace fastcm::umad
