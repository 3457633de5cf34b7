// Untrusted input (dropped or answered as the spec says, and counted): a tool speaking raw MADs
// from the QP1 of the endpoint's peer (the address the endpoint accepts its peer's messages from;
// spoof_test.cpp covers every other source) sends, to an endpoint in each CM state, (a) malformed
// MADs and (b) every CM message carrying that endpoint's IDs. A message the state ignores must
// change nothing but one counter: neither endpoint's state, no event, nothing sent but the answer
// the spec asks for.
//
// Both suites are tables run cell by cell, each cell on a fresh cluster; the whole table of what
// was observed is printed when a cell differs from what is expected, and is always recorded as the
// test property "reactions" (see it with --gtest_output=xml).
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/mad/codec.h"
#include "tests/conformance/forged_mads.h"
#include "tests/conformance/invariant_checker.h"
#include "tests/conformance/state_setup.h"

namespace fastcm::test {
namespace {

constexpr EngineConfig kSmallEngine{.max_endpoints = 8, .max_listens = 4, .mad_buffers = 128};

// CmMessageKind follows the attribute IDs: ClassPortInfo (0x0001), then REQ (0x0010) upwards.
constexpr std::size_t kind_index(mad::AttrId attr) noexcept {
  return attr == mad::AttrId::class_port_info ? 0 : static_cast<std::size_t>(attr) - 0x000F;
}
constexpr std::string_view kind_name(std::size_t k) noexcept {
  return mad::attr_name(static_cast<mad::AttrId>(k == 0 ? 0x0001 : 0x000F + k));
}

// Writes `value` into the field `name` ("alternate_packet_rate" for a grouped one) of an encoded M.
template <mad::CmMessage M>
void set_field(MadPacket& p, std::string_view name, std::uint8_t value) {
  M msg{};
  std::optional<mad::FieldPlace> at;
  mad::visit_fields(msg, [&](const mad::FieldPlace& place, const auto&) {
    if (std::string(place.prefix) + std::string(place.name) == name) at = place;
  });
  ASSERT_TRUE(at.has_value()) << name;
  ASSERT_LE(at->bit + at->width, 8u) << name << " spans bytes";
  const unsigned shift = 8 - at->bit - at->width;
  const auto mask = static_cast<std::uint8_t>(((1u << at->width) - 1) << shift);
  p.mad[at->byte] =
      static_cast<std::uint8_t>((p.mad[at->byte] & ~mask) | ((value << shift) & mask));
}

// What one injection did, both sides: counters that moved, state changes, events.
struct Observation {
  std::vector<std::string> target;      // on the target's engine and endpoint
  std::vector<std::string> peer;        // on the other engine and endpoint
  std::uint64_t injected_received = 0;  // the target engine's received count of the injected kind
  bool target_changed = false;          // state changed or an event was delivered
  bool peer_changed = false;
};

void counter_moves(const PortCounters& a, const PortCounters& b, std::vector<std::string>& out) {
  const auto add = [&out](std::string_view what, std::string_view name, std::uint64_t n) {
    if (n == 0) return;
    out.push_back(std::string(what) + std::string(name) + (n > 1 ? " x" + std::to_string(n) : ""));
  };
  for (std::size_t r = 0; r < kDropReasons; ++r) {
    add("drop:", to_string(static_cast<DropReason>(r)), b.drops[r] - a.drops[r]);
  }
  for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
    add("dup:", kind_name(k), b.messages[k].duplicate - a.messages[k].duplicate);
    add("sent:", kind_name(k), b.messages[k].sent - a.messages[k].sent);
    add("resent:", kind_name(k), b.messages[k].retried - a.messages[k].retried);
  }
}

// Brings a fresh endpoint to `state`, lets the tool send what `make` builds for it (nothing when
// `make` gives nullopt), and reports what moved.
template <typename Make>
std::optional<Observation> observe(EndpointState state, Make make) {
  loopback::LoopbackConfig fabric = loopback::LoopbackConfig::make(3, 1);
  fabric.rx_queue_depth = 64;
  Cluster cluster(fabric, kSmallEngine);
  StateSetup setup(cluster);
  const Reached r = setup.reach(state);
  // The tool sends from the peer's port; answers to it vanish on the way (they show in the
  // counters of whoever sent them), so the peer's engine sees nothing of the injection.
  const std::uint16_t peer_hca = r.host == Host::server ? 1 : 0;
  cluster.fabric().set_fault(
      loopback::FaultRule{.to = loopback::PortRef{peer_hca, 0}, .loss_pct = 100});
  Target t;
  EXPECT_EQ(setup.engine_on(r.host).connection_info(r.target, t.info), Status::ok);
  t.lid = (r.host == Host::server ? cluster.server_port() : cluster.client_port()).lid;
  t.peer_lid = (r.host == Host::server ? cluster.client_port() : cluster.server_port()).lid;
  t.tool_guid = cluster.fabric().hca(kToolHca).ports()[0].node_guid;
  const std::optional<MadPacket> pkt = make(t);
  if (!pkt) return std::nullopt;

  Peer& self = setup.on(r.host);
  Peer& other = setup.across(r.host);
  const PortCounters self_before = self.port_counters();
  const PortCounters other_before = other.port_counters();
  const std::string self_state(setup.state_of(r.host, r.target));
  const std::string other_state(r.peer.empty() ? ""
                                               : setup.state_of(StateSetup::other(r.host), r.peer));
  const std::size_t self_events = self.events().size();
  const std::size_t other_events = other.events().size();
  mad::MadHeader hdr;
  const bool has_header = mad::decode_header(pkt->mad, hdr).ok();

  const MadPacket* burst[] = {&*pkt};
  EXPECT_EQ(cluster.fabric().hca(peer_hca).send_burst(0, burst), 1u);
  cluster.settle();

  Observation o;
  const PortCounters self_after = self.port_counters();
  counter_moves(self_before, self_after, o.target);
  counter_moves(other_before, other.port_counters(), o.peer);
  if (has_header) {
    const std::size_t k = kind_index(hdr.attribute_id);
    o.injected_received = self_after.messages[k].received - self_before.messages[k].received;
  }
  const std::string self_now(setup.state_of(r.host, r.target));
  if (self_now != self_state) o.target.push_back("state:" + self_now);
  for (std::size_t i = self_events; i < self.events().size(); ++i) {
    o.target.push_back("event:" + std::string(to_string(self.events()[i].type)));
  }
  o.target_changed = self_now != self_state || self.events().size() != self_events;
  if (!r.peer.empty()) {
    const std::string other_now(setup.state_of(StateSetup::other(r.host), r.peer));
    if (other_now != other_state) o.peer.push_back("state:" + other_now);
    o.peer_changed = other_now != other_state;
  }
  for (std::size_t i = other_events; i < other.events().size(); ++i) {
    o.peer.push_back("event:" + std::string(to_string(other.events()[i].type)));
    o.peer_changed = true;
  }
  return o;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// A table of observations, one row per state, as Markdown.
class ReactionTable {
 public:
  explicit ReactionTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add_row(std::string_view state, std::vector<std::string> cells) {
    rows_.emplace_back(state, std::move(cells));
  }
  [[nodiscard]] std::string markdown() const {
    std::ostringstream os;
    os << "| state |";
    for (const std::string& c : columns_) os << ' ' << c << " |";
    os << "\n|---|";
    for (std::size_t i = 0; i < columns_.size(); ++i) os << "---|";
    for (const auto& [state, cells] : rows_) {
      os << "\n| " << state << " |";
      for (const std::string& c : cells) os << ' ' << c << " |";
    }
    return os.str() + "\n";
  }

 private:
  std::vector<std::string> columns_;
  std::vector<std::pair<std::string, std::vector<std::string>>> rows_;
};

// ---- (a) malformed MADs ------------------------------------------------------------------------

struct Malformation {
  std::string_view name;
  Msg base;                     // a well-formed message for the target, then...
  void (*spoil)(MadPacket& p);  // ...made invalid
};

const Malformation kMalformations[] = {
    {"base version 2", Msg::dreq, [](MadPacket& p) { p.mad[0] = 2; }},
    {"mgmt class 0x04", Msg::dreq, [](MadPacket& p) { p.mad[1] = 0x04; }},
    {"class version 1", Msg::dreq, [](MadPacket& p) { p.mad[2] = 1; }},
    {"method Get", Msg::dreq, [](MadPacket& p) { p.mad[3] = 0x01; }},
    {"method GetResp", Msg::rtu, [](MadPacket& p) { p.mad[3] = 0x81; }},
    {"attribute 0x0020", Msg::dreq, [](MadPacket& p) { p.mad[17] = 0x20; }},
    {"attribute 0x0000", Msg::drep, [](MadPacket& p) { p.mad[17] = 0x00; }},
    {"REQ MTU 0", Msg::req_again,
     [](MadPacket& p) { set_field<mad::Req>(p, "path_packet_payload_mtu", 0); }},
    {"REQ MTU 6", Msg::req_again,
     [](MadPacket& p) { set_field<mad::Req>(p, "path_packet_payload_mtu", 6); }},
    {"REQ type 3 not XRC", Msg::req_again,
     [](MadPacket& p) { set_field<mad::Req>(p, "transport_service_type", 3); }},
    {"REQ rate 1", Msg::req_again,
     [](MadPacket& p) { set_field<mad::Req>(p, "primary_packet_rate", 1); }},
    {"MRA kind 3", Msg::mra_req, [](MadPacket& p) { set_field<mad::Mra>(p, "message_mraed", 3); }},
    {"REJ kind 3", Msg::rej, [](MadPacket& p) { set_field<mad::Rej>(p, "message_rejected", 3); }},
    {"REJ ARI 73", Msg::rej,
     [](MadPacket& p) { set_field<mad::Rej>(p, "rejected_info_length", 73); }},
    {"REP failover 3", Msg::rep,
     [](MadPacket& p) { set_field<mad::Rep>(p, "failover_accepted", 3); }},
    {"LAP rate 1", Msg::lap,
     [](MadPacket& p) { set_field<mad::Lap>(p, "alternate_packet_rate", 1); }},
    {"APR info 73", Msg::apr,
     [](MadPacket& p) { set_field<mad::Apr>(p, "additional_info_length", 73); }},
    {"SIDR_REP info 73", Msg::sidr_rep,
     [](MadPacket& p) { set_field<mad::SidrRep>(p, "additional_info_length", 73); }},
};

TEST(BadMad, MalformedMadsInEveryStateOnlyCountAsMalformed) {
  std::vector<std::string> columns;
  for (const Malformation& m : kMalformations) columns.emplace_back(m.name);
  ReactionTable table(columns);
  bool all_as_expected = true;
  for (const EndpointState state : kEveryEndpointState) {
    std::vector<std::string> cells;
    for (const Malformation& m : kMalformations) {
      const auto o = observe(state, [&m](const Target& t) {
        std::optional<MadPacket> p = build(m.base, t);
        m.spoil(*p);
        return p;
      });
      // Exactly one counter moved, on the target's engine; the message was not even received.
      const bool expected = o && o->target == std::vector<std::string>{"drop:malformed"} &&
                            o->peer.empty() && o->injected_received == 0;
      all_as_expected = all_as_expected && expected;
      cells.push_back(o ? (expected ? "M" : "**" + join(o->target) + " / " + join(o->peer) + "**")
                        : "?");
    }
    table.add_row(label(state), std::move(cells));
  }
  EXPECT_TRUE(all_as_expected) << "M = dropped and counted as malformed, nothing else\n"
                               << table.markdown();
  ::testing::Test::RecordProperty("reactions", table.markdown());
}

// ---- (b) well-formed messages in every state ---------------------------------------------------

// Reaction codes: O, U, D = dropped and counted as out_of_state, unknown_comm_id or duplicate (a
// duplicate also counts per message: counters.h); "R:x" = a duplicate answered by sending x again
// (counted per message); A = accepted: the message changed the endpoint's state or reached its
// application (the detail is in the printed table); "-" = not applicable. For O, U and D nothing
// else may move on either side; for R only the repeated answer's echo: the peer counts it as a
// duplicate and may answer it again in turn, which the target counts as a duplicate.
struct Row {
  EndpointState state;
  std::string_view expected;  // one code per column of kEveryMsg, separated by spaces
};

// One column per message, in kEveryMsg order:
//   REQ again, MRA(REQ), MRA(REP), MRA(LAP), REJ, REP, RTU, DREQ, DREP, LAP, APR, SIDR_REP.
// clang-format off
const Row kExpected[] = {
    {EndpointState::idle,                "-     O O O O O     O O      O O O O"},
    {EndpointState::req_sent,            "-     A O O A A     O O      O O O O"},
    {EndpointState::mra_req_rcvd,        "-     D O O A A     O O      O O O O"},
    {EndpointState::req_rcvd,            "D     O O O A O     O O      O O O O"},
    {EndpointState::mra_req_sent,        "R:mra O O O A O     O O      O O O O"},
    {EndpointState::rep_sent,            "R:rep O A O A O     A A      O O O O"},
    {EndpointState::rep_rcvd,            "-     O O O A D     O O      O O O O"},
    {EndpointState::mra_rep_sent,        "-     O O O A R:mra O O      O O O O"},
    {EndpointState::mra_rep_rcvd,        "R:rep O D O A O     A A      O O O O"},
    {EndpointState::established_active,  "-     O O O A R:rtu O A      O A O O"},
    {EndpointState::established_passive, "D     O O O A O     D A      O A O O"},
    {EndpointState::dreq_sent,           "-     O O O A O     O A      A O O O"},
    {EndpointState::dreq_rcvd,           "D     O O O O O     O D      O O O O"},  // DREP: no DREQ of ours crossed
    {EndpointState::timewait,            "-     O O O O O     O R:drep D O O O"},
    {EndpointState::sidr_req_sent,       "-     O O O O O     O O      O O O A"},
    {EndpointState::sidr_req_rcvd,       "-     O O O O O     O O      O O O O"},
};
// clang-format on

std::vector<std::string> codes(std::string_view row) {
  std::vector<std::string> out;
  std::istringstream in{std::string(row)};
  for (std::string code; in >> code;) out.push_back(code);
  return out;
}

// The counter index of a message of the matrix.
constexpr CmMessageKind kind_of(Msg m) noexcept {
  switch (m) {
    case Msg::req_again: return CmMessageKind::req;
    case Msg::mra_req:
    case Msg::mra_rep:
    case Msg::mra_lap: return CmMessageKind::mra;
    case Msg::rej: return CmMessageKind::rej;
    case Msg::rep: return CmMessageKind::rep;
    case Msg::rtu: return CmMessageKind::rtu;
    case Msg::dreq: return CmMessageKind::dreq;
    case Msg::drep: return CmMessageKind::drep;
    case Msg::lap: return CmMessageKind::lap;
    case Msg::apr: return CmMessageKind::apr;
    case Msg::sidr_rep: return CmMessageKind::sidr_rep;
  }
  return CmMessageKind::count_;
}

// The code of an observation ("?" when it fits none).
std::string classify(Msg m, const Observation& o) {
  if (o.target_changed) return "A";
  const std::string dup = "dup:" + std::string(kind_name(static_cast<std::size_t>(kind_of(m))));
  const auto has = [&o](const std::string& token) {
    return std::find(o.target.begin(), o.target.end(), token) != o.target.end();
  };
  if (o.peer.empty() && o.target.size() == 1) {
    if (has("drop:out_of_state")) return "O";
    if (has("drop:unknown_comm_id")) return "U";
  }
  if (o.peer.empty() && o.target.size() == 2 && has("drop:duplicate") && has(dup)) return "D";
  // A duplicate answered again: the per-message duplicate count and the answer. The answer may in
  // turn be a duplicate to the peer, which answers it again in the same way; nothing else moves.
  if (o.peer_changed || !has(dup)) return "?";
  const auto answers = [](const std::string& t) {
    return t.starts_with("sent:") || t.starts_with("resent:");
  };
  const auto repeats = [](const std::string& t) {
    return t.starts_with("dup:") || t.starts_with("resent:") || t == "drop:duplicate";
  };
  const bool one_answer = std::count_if(o.target.begin(), o.target.end(), answers) == 1;
  const bool rest_repeats =
      std::all_of(o.target.begin(), o.target.end(),
                  [&](const std::string& t) { return repeats(t) || answers(t); }) &&
      std::all_of(o.peer.begin(), o.peer.end(), repeats);
  if (!one_answer || !rest_repeats) return "?";
  const std::string& answer = *std::find_if(o.target.begin(), o.target.end(), answers);
  return "R:" + answer.substr(answer.find(':') + 1);
}

TEST(BadMad, EveryMessageInEveryStateMovesExactlyOneCounterOrIsAccepted) {
  std::vector<std::string> columns;
  for (const Msg m : kEveryMsg) columns.emplace_back(column(m));
  ReactionTable table(columns);
  bool all_as_expected = true;
  for (const Row& row : kExpected) {
    const std::vector<std::string> expected_codes = codes(row.expected);
    ASSERT_EQ(expected_codes.size(), kEveryMsg.size()) << label(row.state);
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < kEveryMsg.size(); ++i) {
      const Msg m = kEveryMsg[i];
      const auto o = observe(row.state, [m](const Target& t) -> std::optional<MadPacket> {
        // A repeated REQ belongs to an endpoint a REQ created.
        if (m == Msg::req_again && (t.info.active || t.info.remote_qpn == 0)) {
          return std::nullopt;
        }
        return build(m, t);
      });
      const std::string code = o ? classify(m, *o) : "-";
      const bool expected = code == expected_codes[i] && (!o || o->injected_received == 1);
      all_as_expected = all_as_expected && expected;
      std::string cell = code;
      if (o && (code == "A" || code.starts_with("R") || !expected)) {
        cell += " (" + join(o->target) + (o->peer.empty() ? "" : "; peer: " + join(o->peer)) + ")";
      }
      if (!expected) cell = "**" + cell + " expected " + std::string(expected_codes[i]) + "**";
      cells.push_back(cell);
    }
    table.add_row(label(row.state), std::move(cells));
  }
  EXPECT_TRUE(all_as_expected) << table.markdown();
  ::testing::Test::RecordProperty("reactions", table.markdown());
}

TEST(BadMad, DreqNamingALiveEndpointButAnotherQpIsDropped) {
  // 12.9.8.4 ties a DREQ to the QP it names: one for another QP is not about this connection,
  // and no DREP answers it (the IDs are live: only a spoofer or a confused peer sends it).
  const auto o = observe(EndpointState::established_passive, [](const Target& t) {
    Target other = t;
    other.info.local_qpn = t.info.local_qpn + 1;
    return std::optional<MadPacket>(build(Msg::dreq, other));
  });
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->target, (std::vector<std::string>{"drop:wrong_qpn"}));
  EXPECT_TRUE(o->peer.empty());
}

}  // namespace
}  // namespace fastcm::test
