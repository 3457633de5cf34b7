// The CM messages of IBTA Vol. 1 chapter 12, field by field as in the spec tables.
//
// Each message is a plain struct (host order, one member per table row) and a WireLayout
// specialization that places every member: byte offsets count from the start of the CM data, i.e.
// byte 24 of the MAD, exactly as the tables do. Reserved fields have no member; they are written
// as zero and ignored on receive. Private data always travels at its full length (the wire carries
// no length), so the members are fixed-size arrays.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>

#include "engine/mad/field_layout.h"
#include "engine/mad/mad_header.h"
#include "engine/mad/units.h"
#include "fastcm/cm_enums.h"
#include "fastcm/fabric.h"
#include "fastcm/params.h"
#include "fastcm/types.h"

namespace fastcm::mad {

// Maximum private data per message (the field's length in its table).
inline constexpr std::size_t kReqPrivateDataSize = 92;
inline constexpr std::size_t kMraPrivateDataSize = 222;
inline constexpr std::size_t kRejPrivateDataSize = 148;
inline constexpr std::size_t kRepPrivateDataSize = 196;
inline constexpr std::size_t kRtuPrivateDataSize = 224;
inline constexpr std::size_t kDreqPrivateDataSize = 220;
inline constexpr std::size_t kDrepPrivateDataSize = 224;
inline constexpr std::size_t kSidrReqPrivateDataSize = 216;
inline constexpr std::size_t kSidrRepPrivateDataSize = 136;
inline constexpr std::size_t kLapPrivateDataSize = 168;
inline constexpr std::size_t kAprPrivateDataSize = 148;
// REJ ARI, APR additional information and SIDR_REP additional information.
inline constexpr std::size_t kAdditionalInfoSize = 72;

template <std::size_t N>
using PrivateData = std::array<std::uint8_t, N>;
using AdditionalInfo = std::array<std::uint8_t, kAdditionalInfoSize>;

enum class TransportServiceType : std::uint8_t { rc = 0, uc = 1, rd = 2, extended = 3 };
enum class ExtendedTransportType : std::uint8_t { none = 0, xrc = 1 };

// The codes an application also reads (fastcm/cm_enums.h holds their one definition).
using fastcm::AprStatus;
using fastcm::MessageKind;
using fastcm::RejReason;
using fastcm::SidrStatus;

// REP "Failover Accepted".
enum class FailoverAccepted : std::uint8_t { accepted = 0, unsupported = 1, rejected = 2 };

// The path fields of a REQ (primary and alternate) and of a LAP (alternate), named after the table
// rows without their "Primary"/"Alternate" prefix.
struct PathFields {
  Lid local_port_lid = 0;
  Lid remote_port_lid = 0;
  Gid local_port_gid;
  Gid remote_port_gid;
  std::uint32_t flow_label = 0;      // 20 bits
  std::uint8_t packet_rate = 0;      // rate code, see units.h
  std::uint8_t traffic_class = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t sl = 0;               // 4 bits
  bool subnet_local = false;
  std::uint8_t local_ack_timeout = 0;  // 5-bit exponent, see units.h

  friend constexpr bool operator==(const PathFields&, const PathFields&) = default;
};

// Table 106: REQ.
struct Req {
  std::uint32_t local_comm_id = 0;
  std::uint32_t vendor_id = 0;  // 24 bits, ECE
  std::uint64_t service_id = 0;
  Guid local_ca_guid = 0;
  QKey local_q_key = 0;
  Qpn local_qpn = 0;
  std::uint8_t responder_resources = 0;
  std::uint32_t local_eecn = 0;
  std::uint8_t initiator_depth = 0;
  std::uint32_t remote_eecn = 0;
  std::uint8_t remote_cm_response_timeout = 0;
  TransportServiceType transport_service_type = TransportServiceType::rc;
  bool end_to_end_flow_control = false;
  std::uint32_t starting_psn = 0;
  std::uint8_t local_cm_response_timeout = 0;
  std::uint8_t retry_count = 0;
  PKey partition_key = 0;
  MtuCode path_packet_payload_mtu = MtuCode::mtu_256;
  bool rdc_exists = false;
  std::uint8_t rnr_retry_count = 0;
  std::uint8_t max_cm_retries = 0;
  bool srq = false;
  ExtendedTransportType extended_transport_type = ExtendedTransportType::none;
  PathFields primary;
  PathFields alternate;
  bool sap_supported = false;
  PrivateData<kReqPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Req&, const Req&) = default;
};

// Table 107: MRA.
struct Mra {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  MessageKind message_mraed = MessageKind::req;
  std::uint8_t service_timeout = 0;  // 5-bit exponent
  PrivateData<kMraPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Mra&, const Mra&) = default;
};

// Table 108: REJ.
struct Rej {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  MessageKind message_rejected = MessageKind::req;
  std::uint8_t rejected_info_length = 0;  // bytes of ARI in use, at most 72
  RejReason reason = RejReason::consumer_reject;
  AdditionalInfo ari{};
  PrivateData<kRejPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Rej&, const Rej&) = default;
};

// Table 110: REP. The ECE vendor ID is split over three bytes on the wire.
struct Rep {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  QKey local_q_key = 0;
  Qpn local_qpn = 0;
  std::uint8_t vendor_id_h = 0;
  std::uint32_t local_ee_context_number = 0;
  std::uint8_t vendor_id_m = 0;
  std::uint32_t starting_psn = 0;
  std::uint8_t vendor_id_l = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t target_ack_delay = 0;
  FailoverAccepted failover_accepted = FailoverAccepted::accepted;
  bool end_to_end_flow_control = false;
  std::uint8_t rnr_retry_count = 0;
  bool srq = false;
  Guid local_ca_guid = 0;
  PrivateData<kRepPrivateDataSize> private_data{};

  [[nodiscard]] constexpr std::uint32_t vendor_id() const noexcept {
    return std::uint32_t{vendor_id_h} << 16 | std::uint32_t{vendor_id_m} << 8 | vendor_id_l;
  }
  constexpr void set_vendor_id(std::uint32_t id) noexcept {
    vendor_id_h = static_cast<std::uint8_t>(id >> 16);
    vendor_id_m = static_cast<std::uint8_t>(id >> 8);
    vendor_id_l = static_cast<std::uint8_t>(id);
  }
  friend constexpr bool operator==(const Rep&, const Rep&) = default;
};

// Table 111: RTU.
struct Rtu {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  PrivateData<kRtuPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Rtu&, const Rtu&) = default;
};

// Table 112: DREQ.
struct Dreq {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::uint32_t remote_qpn_eecn = 0;
  PrivateData<kDreqPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Dreq&, const Dreq&) = default;
};

// Table 113: DREP.
struct Drep {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  PrivateData<kDrepPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Drep&, const Drep&) = default;
};

// Table 115: LAP.
struct Lap {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::uint32_t remote_qpn_eecn = 0;
  std::uint8_t remote_cm_response_timeout = 0;
  PathFields alternate;
  PrivateData<kLapPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Lap&, const Lap&) = default;
};

// Table 116: APR.
struct Apr {
  std::uint32_t local_comm_id = 0;
  std::uint32_t remote_comm_id = 0;
  std::uint8_t additional_info_length = 0;  // at most 72
  AprStatus ap_status = AprStatus::success;
  AdditionalInfo additional_info{};
  PrivateData<kAprPrivateDataSize> private_data{};

  friend constexpr bool operator==(const Apr&, const Apr&) = default;
};

// Table 119: SIDR_REQ.
struct SidrReq {
  std::uint32_t request_id = 0;
  PKey partition_key = 0;
  std::uint64_t service_id = 0;
  PrivateData<kSidrReqPrivateDataSize> private_data{};

  friend constexpr bool operator==(const SidrReq&, const SidrReq&) = default;
};

// Table 120: SIDR_REP. The ECE vendor ID is split as bits 23..8 and 7..0.
struct SidrRep {
  std::uint32_t request_id = 0;
  SidrStatus status = SidrStatus::success;
  std::uint8_t additional_info_length = 0;  // at most 72
  std::uint16_t vendor_id_h = 0;
  Qpn qpn = 0;
  std::uint8_t vendor_id_l = 0;
  std::uint64_t service_id = 0;
  QKey q_key = 0;
  AdditionalInfo class_port_info{};  // "Additional Information": a ClassPortInfo on redirect
  PrivateData<kSidrRepPrivateDataSize> private_data{};

  [[nodiscard]] constexpr std::uint32_t vendor_id() const noexcept {
    return std::uint32_t{vendor_id_h} << 8 | vendor_id_l;
  }
  constexpr void set_vendor_id(std::uint32_t id) noexcept {
    vendor_id_h = static_cast<std::uint16_t>(id >> 8);
    vendor_id_l = static_cast<std::uint8_t>(id);
  }
  friend constexpr bool operator==(const SidrRep&, const SidrRep&) = default;
};

// ClassPortInfo (IBTA Table 146 in chapter 13), the CM class's attribute 0x0001.
struct ClassPortInfo {
  std::uint8_t base_version = kMadBaseVersion;
  std::uint8_t class_version = kCmClassVersion;
  std::uint16_t capability_mask = 0;
  std::uint32_t capability_mask2 = 0;  // 27 bits
  std::uint8_t resp_time_value = 0;    // 5-bit exponent
  Gid redirect_gid;
  std::uint8_t redirect_tc = 0;
  std::uint8_t redirect_sl = 0;        // 4 bits
  std::uint32_t redirect_fl = 0;       // 20 bits
  Lid redirect_lid = 0;
  PKey redirect_p_key = 0;
  Qpn redirect_qp = 0;
  QKey redirect_q_key = 0;
  Gid trap_gid;
  std::uint8_t trap_tc = 0;
  std::uint8_t trap_sl = 0;
  std::uint32_t trap_fl = 0;
  Lid trap_lid = 0;
  PKey trap_p_key = 0;
  std::uint8_t trap_hl = 0;
  Qpn trap_qp = 0;
  QKey trap_q_key = 0;

  friend constexpr bool operator==(const ClassPortInfo&, const ClassPortInfo&) = default;
};

// ---- Layouts -------------------------------------------------------------------------------

// WireLayout<M>: the attribute ID of M, its field list, and the checks that span several fields.
template <typename M>
struct WireLayout;

inline constexpr FieldCheck kValidMtu = is_valid_mtu_code;
inline constexpr FieldCheck kValidRate = is_valid_packet_rate;
inline constexpr FieldCheck kTwoBitKind = at_most<2>;  // MRAed/rejected message, failover accepted
inline constexpr FieldCheck kInfoLength = at_most<kAdditionalInfoSize>;

// REQ paths: the primary path at byte 52, the alternate (same shape) at byte 96.
using ReqPathLayout = FieldList<
    Field<"local_port_lid", &PathFields::local_port_lid, 0, 0, 16>,
    Field<"remote_port_lid", &PathFields::remote_port_lid, 2, 0, 16>,
    Bytes<"local_port_gid", &PathFields::local_port_gid, 4, 16>,
    Bytes<"remote_port_gid", &PathFields::remote_port_gid, 20, 16>,
    Field<"flow_label", &PathFields::flow_label, 36, 0, 20>,
    Field<"packet_rate", &PathFields::packet_rate, 39, 2, 6, kValidRate>,
    Field<"traffic_class", &PathFields::traffic_class, 40, 0, 8>,
    Field<"hop_limit", &PathFields::hop_limit, 41, 0, 8>,
    Field<"sl", &PathFields::sl, 42, 0, 4>,
    Field<"subnet_local", &PathFields::subnet_local, 42, 4, 1>,
    Field<"local_ack_timeout", &PathFields::local_ack_timeout, 43, 0, 5>>;

// LAP's alternate path orders traffic class, hop limit and packet rate differently from the REQ.
using LapPathLayout = FieldList<
    Field<"local_port_lid", &PathFields::local_port_lid, 0, 0, 16>,
    Field<"remote_port_lid", &PathFields::remote_port_lid, 2, 0, 16>,
    Bytes<"local_port_gid", &PathFields::local_port_gid, 4, 16>,
    Bytes<"remote_port_gid", &PathFields::remote_port_gid, 20, 16>,
    Field<"flow_label", &PathFields::flow_label, 36, 0, 20>,
    Field<"traffic_class", &PathFields::traffic_class, 39, 0, 8>,
    Field<"hop_limit", &PathFields::hop_limit, 40, 0, 8>,
    Field<"packet_rate", &PathFields::packet_rate, 41, 2, 6, kValidRate>,
    Field<"sl", &PathFields::sl, 42, 0, 4>,
    Field<"subnet_local", &PathFields::subnet_local, 42, 4, 1>,
    Field<"local_ack_timeout", &PathFields::local_ack_timeout, 43, 0, 5>>;

template <>
struct WireLayout<Req> {
  static constexpr AttrId kAttr = AttrId::req;
  using Fields = FieldList<
      Field<"local_comm_id", &Req::local_comm_id, 0, 0, 32>,
      Field<"vendor_id", &Req::vendor_id, 5, 0, 24>,
      Field<"service_id", &Req::service_id, 8, 0, 64>,
      Field<"local_ca_guid", &Req::local_ca_guid, 16, 0, 64>,
      Field<"local_q_key", &Req::local_q_key, 28, 0, 32>,
      Field<"local_qpn", &Req::local_qpn, 32, 0, 24>,
      Field<"responder_resources", &Req::responder_resources, 35, 0, 8>,
      Field<"local_eecn", &Req::local_eecn, 36, 0, 24>,
      Field<"initiator_depth", &Req::initiator_depth, 39, 0, 8>,
      Field<"remote_eecn", &Req::remote_eecn, 40, 0, 24>,
      Field<"remote_cm_response_timeout", &Req::remote_cm_response_timeout, 43, 0, 5>,
      Field<"transport_service_type", &Req::transport_service_type, 43, 5, 2>,
      Field<"end_to_end_flow_control", &Req::end_to_end_flow_control, 43, 7, 1>,
      Field<"starting_psn", &Req::starting_psn, 44, 0, 24>,
      Field<"local_cm_response_timeout", &Req::local_cm_response_timeout, 47, 0, 5>,
      Field<"retry_count", &Req::retry_count, 47, 5, 3>,
      Field<"partition_key", &Req::partition_key, 48, 0, 16>,
      Field<"path_packet_payload_mtu", &Req::path_packet_payload_mtu, 50, 0, 4, kValidMtu>,
      Field<"rdc_exists", &Req::rdc_exists, 50, 4, 1>,
      Field<"rnr_retry_count", &Req::rnr_retry_count, 50, 5, 3>,
      Field<"max_cm_retries", &Req::max_cm_retries, 51, 0, 4>,
      Field<"srq", &Req::srq, 51, 4, 1>,
      Field<"extended_transport_type", &Req::extended_transport_type, 51, 5, 3>,
      Group<"primary_", &Req::primary, 52, ReqPathLayout>,
      Group<"alternate_", &Req::alternate, 96, ReqPathLayout>,
      Field<"sap_supported", &Req::sap_supported, 139, 5, 1>,
      Bytes<"private_data", &Req::private_data, 140, kReqPrivateDataSize>>;

  // Transport type 3 defers to the extended transport type, of which only XRC (1) is defined;
  // the other transport types carry no extended type.
  static constexpr CodecStatus check(const Req& m) noexcept {
    const bool extended = m.transport_service_type == TransportServiceType::extended;
    const bool xrc = m.extended_transport_type == ExtendedTransportType::xrc;
    const bool none = m.extended_transport_type == ExtendedTransportType::none;
    if (extended ? !xrc : !none) {
      return CodecStatus::fail(CodecErrc::invalid_value,
                               extended ? "extended_transport_type" : "transport_service_type");
    }
    return {};
  }
};

template <>
struct WireLayout<Mra> {
  static constexpr AttrId kAttr = AttrId::mra;
  using Fields = FieldList<
      Field<"local_comm_id", &Mra::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Mra::remote_comm_id, 4, 0, 32>,
      Field<"message_mraed", &Mra::message_mraed, 8, 0, 2, kTwoBitKind>,
      Field<"service_timeout", &Mra::service_timeout, 9, 0, 5>,
      Bytes<"private_data", &Mra::private_data, 10, kMraPrivateDataSize>>;
};

template <>
struct WireLayout<Rej> {
  static constexpr AttrId kAttr = AttrId::rej;
  using Fields = FieldList<
      Field<"local_comm_id", &Rej::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Rej::remote_comm_id, 4, 0, 32>,
      Field<"message_rejected", &Rej::message_rejected, 8, 0, 2, kTwoBitKind>,
      Field<"rejected_info_length", &Rej::rejected_info_length, 9, 0, 7, kInfoLength>,
      Field<"reason", &Rej::reason, 10, 0, 16>,
      Bytes<"ari", &Rej::ari, 12, kAdditionalInfoSize>,
      Bytes<"private_data", &Rej::private_data, 84, kRejPrivateDataSize>>;
};

template <>
struct WireLayout<Rep> {
  static constexpr AttrId kAttr = AttrId::rep;
  using Fields = FieldList<
      Field<"local_comm_id", &Rep::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Rep::remote_comm_id, 4, 0, 32>,
      Field<"local_q_key", &Rep::local_q_key, 8, 0, 32>,
      Field<"local_qpn", &Rep::local_qpn, 12, 0, 24>,
      Field<"vendor_id_h", &Rep::vendor_id_h, 15, 0, 8>,
      Field<"local_ee_context_number", &Rep::local_ee_context_number, 16, 0, 24>,
      Field<"vendor_id_m", &Rep::vendor_id_m, 19, 0, 8>,
      Field<"starting_psn", &Rep::starting_psn, 20, 0, 24>,
      Field<"vendor_id_l", &Rep::vendor_id_l, 23, 0, 8>,
      Field<"responder_resources", &Rep::responder_resources, 24, 0, 8>,
      Field<"initiator_depth", &Rep::initiator_depth, 25, 0, 8>,
      Field<"target_ack_delay", &Rep::target_ack_delay, 26, 0, 5>,
      Field<"failover_accepted", &Rep::failover_accepted, 26, 5, 2, kTwoBitKind>,
      Field<"end_to_end_flow_control", &Rep::end_to_end_flow_control, 26, 7, 1>,
      Field<"rnr_retry_count", &Rep::rnr_retry_count, 27, 0, 3>,
      Field<"srq", &Rep::srq, 27, 3, 1>,
      Field<"local_ca_guid", &Rep::local_ca_guid, 28, 0, 64>,
      Bytes<"private_data", &Rep::private_data, 36, kRepPrivateDataSize>>;
};

template <>
struct WireLayout<Rtu> {
  static constexpr AttrId kAttr = AttrId::rtu;
  using Fields = FieldList<
      Field<"local_comm_id", &Rtu::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Rtu::remote_comm_id, 4, 0, 32>,
      Bytes<"private_data", &Rtu::private_data, 8, kRtuPrivateDataSize>>;
};

template <>
struct WireLayout<Dreq> {
  static constexpr AttrId kAttr = AttrId::dreq;
  using Fields = FieldList<
      Field<"local_comm_id", &Dreq::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Dreq::remote_comm_id, 4, 0, 32>,
      Field<"remote_qpn_eecn", &Dreq::remote_qpn_eecn, 8, 0, 24>,
      Bytes<"private_data", &Dreq::private_data, 12, kDreqPrivateDataSize>>;
};

template <>
struct WireLayout<Drep> {
  static constexpr AttrId kAttr = AttrId::drep;
  using Fields = FieldList<
      Field<"local_comm_id", &Drep::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Drep::remote_comm_id, 4, 0, 32>,
      Bytes<"private_data", &Drep::private_data, 8, kDrepPrivateDataSize>>;
};

template <>
struct WireLayout<Lap> {
  static constexpr AttrId kAttr = AttrId::lap;
  using Fields = FieldList<
      Field<"local_comm_id", &Lap::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Lap::remote_comm_id, 4, 0, 32>,
      Field<"remote_qpn_eecn", &Lap::remote_qpn_eecn, 12, 0, 24>,
      Field<"remote_cm_response_timeout", &Lap::remote_cm_response_timeout, 15, 0, 5>,
      Group<"alternate_", &Lap::alternate, 20, LapPathLayout>,
      Bytes<"private_data", &Lap::private_data, 64, kLapPrivateDataSize>>;
};

template <>
struct WireLayout<Apr> {
  static constexpr AttrId kAttr = AttrId::apr;
  using Fields = FieldList<
      Field<"local_comm_id", &Apr::local_comm_id, 0, 0, 32>,
      Field<"remote_comm_id", &Apr::remote_comm_id, 4, 0, 32>,
      Field<"additional_info_length", &Apr::additional_info_length, 8, 0, 8, kInfoLength>,
      Field<"ap_status", &Apr::ap_status, 9, 0, 8>,
      Bytes<"additional_info", &Apr::additional_info, 12, kAdditionalInfoSize>,
      Bytes<"private_data", &Apr::private_data, 84, kAprPrivateDataSize>>;
};

template <>
struct WireLayout<SidrReq> {
  static constexpr AttrId kAttr = AttrId::sidr_req;
  using Fields = FieldList<
      Field<"request_id", &SidrReq::request_id, 0, 0, 32>,
      Field<"partition_key", &SidrReq::partition_key, 4, 0, 16>,
      Field<"service_id", &SidrReq::service_id, 8, 0, 64>,
      Bytes<"private_data", &SidrReq::private_data, 16, kSidrReqPrivateDataSize>>;
};

template <>
struct WireLayout<SidrRep> {
  static constexpr AttrId kAttr = AttrId::sidr_rep;
  using Fields = FieldList<
      Field<"request_id", &SidrRep::request_id, 0, 0, 32>,
      Field<"status", &SidrRep::status, 4, 0, 8>,
      Field<"additional_info_length", &SidrRep::additional_info_length, 5, 0, 8, kInfoLength>,
      Field<"vendor_id_h", &SidrRep::vendor_id_h, 6, 0, 16>,
      Field<"qpn", &SidrRep::qpn, 8, 0, 24>,
      Field<"vendor_id_l", &SidrRep::vendor_id_l, 11, 0, 8>,
      Field<"service_id", &SidrRep::service_id, 12, 0, 64>,
      Field<"q_key", &SidrRep::q_key, 20, 0, 32>,
      Bytes<"class_port_info", &SidrRep::class_port_info, 24, kAdditionalInfoSize>,
      Bytes<"private_data", &SidrRep::private_data, 96, kSidrRepPrivateDataSize>>;
};

template <>
struct WireLayout<ClassPortInfo> {
  static constexpr AttrId kAttr = AttrId::class_port_info;
  using Fields = FieldList<
      Field<"base_version", &ClassPortInfo::base_version, 0, 0, 8>,
      Field<"class_version", &ClassPortInfo::class_version, 1, 0, 8>,
      Field<"capability_mask", &ClassPortInfo::capability_mask, 2, 0, 16>,
      Field<"capability_mask2", &ClassPortInfo::capability_mask2, 4, 0, 27>,
      Field<"resp_time_value", &ClassPortInfo::resp_time_value, 7, 3, 5>,
      Bytes<"redirect_gid", &ClassPortInfo::redirect_gid, 8, 16>,
      Field<"redirect_tc", &ClassPortInfo::redirect_tc, 24, 0, 8>,
      Field<"redirect_sl", &ClassPortInfo::redirect_sl, 25, 0, 4>,
      Field<"redirect_fl", &ClassPortInfo::redirect_fl, 25, 4, 20>,
      Field<"redirect_lid", &ClassPortInfo::redirect_lid, 28, 0, 16>,
      Field<"redirect_p_key", &ClassPortInfo::redirect_p_key, 30, 0, 16>,
      Field<"redirect_qp", &ClassPortInfo::redirect_qp, 33, 0, 24>,
      Field<"redirect_q_key", &ClassPortInfo::redirect_q_key, 36, 0, 32>,
      Bytes<"trap_gid", &ClassPortInfo::trap_gid, 40, 16>,
      Field<"trap_tc", &ClassPortInfo::trap_tc, 56, 0, 8>,
      Field<"trap_sl", &ClassPortInfo::trap_sl, 57, 0, 4>,
      Field<"trap_fl", &ClassPortInfo::trap_fl, 57, 4, 20>,
      Field<"trap_lid", &ClassPortInfo::trap_lid, 60, 0, 16>,
      Field<"trap_p_key", &ClassPortInfo::trap_p_key, 62, 0, 16>,
      Field<"trap_hl", &ClassPortInfo::trap_hl, 64, 0, 8>,
      Field<"trap_qp", &ClassPortInfo::trap_qp, 65, 0, 24>,
      Field<"trap_q_key", &ClassPortInfo::trap_q_key, 68, 0, 32>>;
};

// Every field list ends inside the 232-byte CM data area; the private data ends exactly at it.
static_assert(WireLayout<Req>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Mra>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Rej>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Rep>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Rtu>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Dreq>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Drep>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Lap>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<Apr>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<SidrReq>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<SidrRep>::Fields::kEnd == kCmDataSize);
static_assert(WireLayout<ClassPortInfo>::Fields::kEnd == 72);

// The public limits (fastcm/params.h, fastcm/fabric.h; the C API's copies are checked against
// those in capi/) are the wire sizes of these tables: a change on either side fails here.
template <typename Array>
inline constexpr std::size_t kLength = std::tuple_size_v<Array>;
static_assert(fastcm::kMadSize == kMadSize);
static_assert(kMaxReqPrivateData == kLength<decltype(Req::private_data)>);
static_assert(kMaxMraPrivateData == kLength<decltype(Mra::private_data)>);
static_assert(kMaxRejPrivateData == kLength<decltype(Rej::private_data)>);
static_assert(kMaxRepPrivateData == kLength<decltype(Rep::private_data)>);
static_assert(kMaxRtuPrivateData == kLength<decltype(Rtu::private_data)>);
static_assert(kMaxDreqPrivateData == kLength<decltype(Dreq::private_data)>);
static_assert(kMaxDrepPrivateData == kLength<decltype(Drep::private_data)>);
static_assert(kMaxSidrReqPrivateData == kLength<decltype(SidrReq::private_data)>);
static_assert(kMaxSidrRepPrivateData == kLength<decltype(SidrRep::private_data)>);
static_assert(kMaxLapPrivateData == kLength<decltype(Lap::private_data)>);
static_assert(kMaxAprPrivateData == kLength<decltype(Apr::private_data)>);
static_assert(kMaxAdditionalInfo == kLength<decltype(Rej::ari)>);
static_assert(kMaxAdditionalInfo == kLength<decltype(Apr::additional_info)>);
static_assert(kMaxAdditionalInfo == kLength<decltype(SidrRep::class_port_info)>);

}  // namespace fastcm::mad
