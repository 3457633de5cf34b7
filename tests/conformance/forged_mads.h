// CM messages forged for an endpoint under test, as its peer would send them: the endpoint's IDs
// (from connection_info), addressed to its port. A third HCA (kToolHca) or the peer's own port
// puts them on the wire raw; the scenarios then spoil one field or the source.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "engine/mad/codec.h"
#include "fastcm/connection_info.h"
#include "fastcm/fabric.h"
#include "tests/conformance/scenario.h"

namespace fastcm::test {

inline constexpr std::uint16_t kToolHca = 2;
inline constexpr Qpn kToolQpn = 0x7E57;
inline constexpr std::uint64_t kToolTid = 0x7E57'0000'0000'0001;

// The messages of the matrix. `req_again` repeats the REQ that created a passive endpoint (its
// sender's comm ID, CA GUID and QPN); every other one names the endpoint's IDs as its peer would.
enum class Msg : std::uint8_t {
  req_again,
  mra_req,
  mra_rep,
  mra_lap,
  rej,
  rep,
  rtu,
  dreq,
  drep,
  lap,
  apr,
  sidr_rep
};

inline constexpr std::array kEveryMsg = {Msg::req_again, Msg::mra_req, Msg::mra_rep, Msg::mra_lap,
                                  Msg::rej,       Msg::rep,     Msg::rtu,     Msg::dreq,
                                  Msg::drep,      Msg::lap,     Msg::apr,     Msg::sidr_rep};

constexpr std::string_view column(Msg m) noexcept {
  constexpr std::string_view names[] = {"REQ again", "MRA(REQ)", "MRA(REP)", "MRA(LAP)",
                                        "REJ",       "REP",      "RTU",      "DREQ",
                                        "DREP",      "LAP",      "APR",      "SIDR_REP"};
  return names[static_cast<std::size_t>(m)];
}

// What the tool knows of its target: the endpoint's view of its connection, and where it lives.
struct Target {
  ConnectionInfo info;
  Lid lid = 0;       // the target port's LID
  Lid peer_lid = 0;  // the other engine's port
  Guid tool_guid = 0;
};

template <mad::CmMessage M>
MadPacket packet(const Target& t, const M& msg) {
  MadPacket p;
  p.addr.remote_lid = t.lid;
  EXPECT_TRUE(mad::encode(mad::cm_header(mad::Method::send, mad::WireLayout<M>::kAttr, kToolTid),
                          msg, mad::MadSpan(p.mad))
                  .ok());
  return p;
}

inline mad::PathFields path_fields(const Target& t) {
  mad::PathFields f;
  f.local_port_lid = t.peer_lid;
  f.remote_port_lid = t.lid;
  f.subnet_local = true;
  f.local_ack_timeout = 17;
  return f;
}

// `m` as the target's peer (or, for req_again, its requester) would send it.
inline MadPacket build(Msg m, const Target& t) {
  const std::uint32_t ours = t.info.local_comm_id;
  const std::uint32_t theirs = t.info.remote_comm_id;
  switch (m) {
    case Msg::req_again: {
      mad::Req req;
      req.local_comm_id = theirs;
      req.service_id = kServiceId;
      req.local_ca_guid = t.info.remote_ca_guid;
      req.local_qpn = t.info.remote_qpn;
      req.remote_cm_response_timeout = 16;
      req.local_cm_response_timeout = 16;
      req.partition_key = 0xFFFF;
      req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
      req.max_cm_retries = 3;
      req.primary = path_fields(t);
      return packet(t, req);
    }
    case Msg::mra_req:
    case Msg::mra_rep:
    case Msg::mra_lap: {
      mad::Mra mra;
      mra.local_comm_id = theirs;
      mra.remote_comm_id = ours;
      mra.message_mraed = m == Msg::mra_req   ? mad::MessageKind::req
                          : m == Msg::mra_rep ? mad::MessageKind::rep
                                              : mad::MessageKind::lap_or_none;
      mra.service_timeout = 10;
      return packet(t, mra);
    }
    case Msg::rej: {
      mad::Rej rej;
      rej.local_comm_id = theirs;
      rej.remote_comm_id = ours;
      rej.message_rejected = mad::MessageKind::lap_or_none;
      rej.reason = mad::RejReason::consumer_reject;
      return packet(t, rej);
    }
    case Msg::rep: {
      mad::Rep rep;
      rep.local_comm_id = theirs != 0 ? theirs : 0x7E57'0001;
      rep.remote_comm_id = ours;
      rep.local_qpn = t.info.remote_qpn != 0 ? t.info.remote_qpn : kToolQpn;
      rep.local_ca_guid = t.info.remote_ca_guid != 0 ? t.info.remote_ca_guid : t.tool_guid;
      return packet(t, rep);
    }
    case Msg::rtu:
      return packet(t,
                    mad::Rtu{.local_comm_id = theirs, .remote_comm_id = ours, .private_data = {}});
    case Msg::dreq:
      return packet(t, mad::Dreq{.local_comm_id = theirs,
                                 .remote_comm_id = ours,
                                 .remote_qpn_eecn = t.info.local_qpn,
                                 .private_data = {}});
    case Msg::drep:
      return packet(t,
                    mad::Drep{.local_comm_id = theirs, .remote_comm_id = ours, .private_data = {}});
    case Msg::lap: {
      mad::Lap lap;
      lap.local_comm_id = theirs;
      lap.remote_comm_id = ours;
      lap.remote_qpn_eecn = t.info.local_qpn;
      lap.remote_cm_response_timeout = 16;
      lap.alternate = path_fields(t);
      lap.alternate.sl = 3;
      return packet(t, lap);
    }
    case Msg::apr: {
      mad::Apr apr;
      apr.local_comm_id = theirs;
      apr.remote_comm_id = ours;
      return packet(t, apr);
    }
    case Msg::sidr_rep: {
      mad::SidrRep rep;
      rep.request_id = ours;
      rep.qpn = kToolQpn;
      rep.service_id = kServiceId;
      return packet(t, rep);
    }
  }
  return {};
}

}  // namespace fastcm::test
