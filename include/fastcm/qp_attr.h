// QP attributes derived from a connection, in a struct that maps field for field onto
// struct ibv_qp_attr, with a mask whose bits equal enum ibv_qp_attr_mask (IBV_QP_*), so a verbs
// user copies the fields and passes the mask to ibv_modify_qp unchanged.
#pragma once

#include <cstdint>

#include "fastcm/types.h"

namespace fastcm {

enum class QpState : std::uint8_t { reset = 0, init = 1, rtr = 2, rts = 3 };  // = enum ibv_qp_state
enum class MigState : std::uint8_t { migrated = 0, rearm = 1, armed = 2 };     // = enum ibv_mig_state

// Bit values of enum ibv_qp_attr_mask.
namespace qp_mask {
inline constexpr std::uint32_t state = 1u << 0;
inline constexpr std::uint32_t access_flags = 1u << 3;
inline constexpr std::uint32_t pkey_index = 1u << 4;
inline constexpr std::uint32_t port = 1u << 5;
inline constexpr std::uint32_t qkey = 1u << 6;
inline constexpr std::uint32_t av = 1u << 7;
inline constexpr std::uint32_t path_mtu = 1u << 8;
inline constexpr std::uint32_t timeout = 1u << 9;
inline constexpr std::uint32_t retry_cnt = 1u << 10;
inline constexpr std::uint32_t rnr_retry = 1u << 11;
inline constexpr std::uint32_t rq_psn = 1u << 12;
inline constexpr std::uint32_t max_qp_rd_atomic = 1u << 13;
inline constexpr std::uint32_t alt_path = 1u << 14;
inline constexpr std::uint32_t min_rnr_timer = 1u << 15;
inline constexpr std::uint32_t sq_psn = 1u << 16;
inline constexpr std::uint32_t max_dest_rd_atomic = 1u << 17;
inline constexpr std::uint32_t path_mig_state = 1u << 18;
inline constexpr std::uint32_t dest_qpn = 1u << 20;
}  // namespace qp_mask

// = struct ibv_ah_attr with its struct ibv_global_route.
struct AhAttr {
  Gid dgid;
  std::uint32_t flow_label = 0;
  std::uint8_t sgid_index = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t traffic_class = 0;
  Lid dlid = 0;
  std::uint8_t sl = 0;
  std::uint8_t src_path_bits = 0;
  std::uint8_t static_rate = 0;
  bool is_global = false;
  std::uint8_t port_num = 0;

  friend constexpr bool operator==(const AhAttr&, const AhAttr&) = default;
};

// Access flags (= enum ibv_access_flags) the CM sets for INIT.
namespace qp_access {
inline constexpr std::uint32_t local_write = 1u << 0;
inline constexpr std::uint32_t remote_write = 1u << 1;
inline constexpr std::uint32_t remote_read = 1u << 2;
inline constexpr std::uint32_t remote_atomic = 1u << 3;
}  // namespace qp_access

struct QpAttr {
  std::uint32_t mask = 0;  // qp_mask bits of the fields below that are set
  QpState qp_state = QpState::reset;
  std::uint8_t path_mtu = 0;          // MTU code = enum ibv_mtu
  MigState path_mig_state = MigState::migrated;
  QKey qkey = 0;
  std::uint32_t rq_psn = 0;
  std::uint32_t sq_psn = 0;
  Qpn dest_qp_num = 0;
  std::uint32_t qp_access_flags = 0;
  AhAttr ah_attr;
  AhAttr alt_ah_attr;
  std::uint16_t pkey_index = 0;
  std::uint16_t alt_pkey_index = 0;
  std::uint8_t max_rd_atomic = 0;       // initiator depth, capped to max_qp_init_rd_atom
  std::uint8_t max_dest_rd_atomic = 0;  // responder resources, capped to max_qp_rd_atom
  std::uint8_t min_rnr_timer = 0;
  std::uint8_t port_num = 0;
  std::uint8_t timeout = 0;
  std::uint8_t retry_cnt = 0;
  std::uint8_t rnr_retry = 0;
  std::uint8_t alt_port_num = 0;
  std::uint8_t alt_timeout = 0;
};

}  // namespace fastcm
