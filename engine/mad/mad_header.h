// The common MAD header (IBTA Table 145) and the CM class's methods and attributes (chapter 12).
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/mad/field_layout.h"

namespace fastcm::mad {

inline constexpr std::uint8_t kMadBaseVersion = 1;
inline constexpr std::uint8_t kCmMgmtClass = 0x07;
inline constexpr std::uint8_t kCmClassVersion = 2;

// The whole method byte (response bit 0x80 included).
enum class Method : std::uint8_t { get = 0x01, set = 0x02, send = 0x03, get_resp = 0x81 };

enum class AttrId : std::uint16_t {
  class_port_info = 0x0001,
  req = 0x0010,
  mra = 0x0011,
  rej = 0x0012,
  rep = 0x0013,
  rtu = 0x0014,
  dreq = 0x0015,
  drep = 0x0016,
  sidr_req = 0x0017,
  sidr_rep = 0x0018,
  lap = 0x0019,
  apr = 0x001A,
};

// MAD status bits of a GetResp (IBTA 13.4.7): the invalid-field code sits in bits 2..4.
enum class MadStatus : std::uint16_t {
  ok = 0,
  busy = 0x0001,
  bad_version = 0x0004,            // class/base version not supported
  unsupported_method = 0x0008,
  unsupported_method_attr = 0x000C,
  invalid_attr_value = 0x001C,
};

// Transaction IDs: the sender's MAD layer may own the upper 32 bits and rewrite them in flight
// (the kernel's MAD layer keeps its agent there; ibsim rewrites bits 32-63), so a CM matches
// responses on the low 32 bits only.
[[nodiscard]] constexpr std::uint32_t tid_cm_part(std::uint64_t tid) noexcept {
  return static_cast<std::uint32_t>(tid);
}

struct MadHeader {
  std::uint8_t base_version = kMadBaseVersion;
  std::uint8_t mgmt_class = kCmMgmtClass;
  std::uint8_t class_version = kCmClassVersion;
  Method method = Method::send;
  std::uint16_t status = 0;
  std::uint16_t class_specific = 0;
  std::uint64_t transaction_id = 0;
  AttrId attribute_id = AttrId::req;
  std::uint32_t attribute_modifier = 0;

  friend constexpr bool operator==(const MadHeader&, const MadHeader&) = default;
};

// Bytes 18-19 are reserved.
using MadHeaderLayout = FieldList<
    Field<"base_version", &MadHeader::base_version, 0, 0, 8>,
    Field<"mgmt_class", &MadHeader::mgmt_class, 1, 0, 8>,
    Field<"class_version", &MadHeader::class_version, 2, 0, 8>,
    Field<"method", &MadHeader::method, 3, 0, 8>,
    Field<"status", &MadHeader::status, 4, 0, 16>,
    Field<"class_specific", &MadHeader::class_specific, 6, 0, 16>,
    Field<"transaction_id", &MadHeader::transaction_id, 8, 0, 64>,
    Field<"attribute_id", &MadHeader::attribute_id, 16, 0, 16>,
    Field<"attribute_modifier", &MadHeader::attribute_modifier, 20, 0, 32>>;
static_assert(MadHeaderLayout::kEnd == kMadHeaderSize);

[[nodiscard]] constexpr MadHeader cm_header(Method method, AttrId attr, std::uint64_t tid,
                                            std::uint32_t attr_mod = 0) noexcept {
  MadHeader h;
  h.method = method;
  h.attribute_id = attr;
  h.transaction_id = tid;
  h.attribute_modifier = attr_mod;
  return h;
}

// The IBTA message name in snake_case ("req", "class_port_info"), or "" for an unknown ID.
[[nodiscard]] constexpr std::string_view attr_name(AttrId attr) noexcept {
  switch (attr) {
    case AttrId::class_port_info: return "class_port_info";
    case AttrId::req: return "req";
    case AttrId::mra: return "mra";
    case AttrId::rej: return "rej";
    case AttrId::rep: return "rep";
    case AttrId::rtu: return "rtu";
    case AttrId::dreq: return "dreq";
    case AttrId::drep: return "drep";
    case AttrId::sidr_req: return "sidr_req";
    case AttrId::sidr_rep: return "sidr_rep";
    case AttrId::lap: return "lap";
    case AttrId::apr: return "apr";
  }
  return "";
}

// Chapter 12 defines ClassPortInfo for Get/Set (answered by GetResp); every other CM attribute is
// carried by Send only.
[[nodiscard]] constexpr bool method_allowed(AttrId attr, Method method) noexcept {
  if (attr == AttrId::class_port_info) {
    return method == Method::get || method == Method::set || method == Method::get_resp;
  }
  return method == Method::send;
}

}  // namespace fastcm::mad
