// Spoofed CM messages: a message that names a live endpoint by our comm ID must match the rest of
// its connection's identity to act on it — the sender's comm ID, the QPN it names, the port it
// arrives on, and the sender's address (LID, GID, P_Key) — or be dropped, counted by its own
// reason, with nothing else changed: neither endpoint's state, no event, no timer moved (a
// spoofed MRA must not stretch a wait), nothing sent in answer.
//
// Each cell forges one message, as the endpoint's peer would send it, in a state where the real
// one acts, spoils one identity field (or none: the control, which must act), and sends it raw
// from the peer's port or from a third HCA. One fresh cluster per cell.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tests/conformance/forged_mads.h"
#include "tests/conformance/invariant_checker.h"  // name(EventType)
#include "tests/conformance/state_setup.h"

namespace fastcm::test {
namespace {

// What the forger changes in the message the peer would send.
enum class Forgery : std::uint8_t {
  none,     // the control: the real message, which the state acts on
  comm_id,  // the sender's comm ID
  ca_guid,  // a REP's CA GUID (a comm ID is the peer's only with its CA)
  qpn,      // the QPN the message names: ours in a DREQ or LAP, the sender's in a REP
  source,   // sent from another node (a third HCA)
  pkey,     // sent from the peer's port under another partition
  port,     // sent from the peer's port to another port of the endpoint's HCA
};

constexpr std::string_view label(Forgery f) noexcept {
  constexpr std::string_view names[] = {"none", "comm_id", "ca_guid", "qpn", "source", "pkey", "port"};
  return names[static_cast<std::size_t>(f)];
}

constexpr std::optional<DropReason> reason_of(Forgery f) noexcept {
  switch (f) {
    case Forgery::none: return std::nullopt;
    case Forgery::comm_id:
    case Forgery::ca_guid: return DropReason::wrong_comm_id;
    case Forgery::qpn: return DropReason::wrong_qpn;
    case Forgery::source:
    case Forgery::pkey: return DropReason::wrong_source;
    case Forgery::port: return DropReason::wrong_port;
  }
  return std::nullopt;
}

// The states a cell starts from: the setups' states, plus an active side whose LAP is unanswered.
struct Start {
  EndpointState state;
  bool lap_sent = false;  // from established_active: the client sent a LAP the server holds
};

std::string label(const Start& s) {
  return s.lap_sent ? "lap_sent" : std::string(fastcm::test::label(s.state));
}

// Everything a dropped message must leave as it was.
struct Snapshot {
  std::string target_state;
  std::string peer_state;
  std::size_t target_events = 0;
  std::size_t peer_events = 0;
  std::optional<std::uint64_t> target_timer;
  std::optional<std::uint64_t> peer_timer;
  std::uint64_t target_sent = 0;  // MADs the target's engine sent or resent, on both its ports
};

class SpoofCell {
 public:
  // Two ports per HCA, so a forgery can arrive on the port the connection does not use. On
  // Ethernet (RoCE) ports MADs carry a GRH and route by GID: the source GID must match.
  explicit SpoofCell(LinkLayer link = LinkLayer::infiniband) : cluster_(fabric(link)), setup_(cluster_) {
    // Nobody reads the forger's port: what is sent to it vanishes (and shows in the counters).
    cluster_.fabric().set_fault(loopback::FaultRule{.to = loopback::PortRef{kToolHca, 0}, .loss_pct = 100});
  }

  // Brings a fresh endpoint to `start` and learns what its peer knows of it.
  void reach(const Start& start) {
    reached_ = setup_.reach(start.state);
    if (start.lap_sent) {
      LapParams lap;
      lap.alternate = cluster_.path_to_server();
      lap.remote_cm_response_timeout = 16;
      EXPECT_EQ(cluster_.client().engine().send_lap(reached_.target, lap), Status::ok);
      cluster_.settle();
    }
    EXPECT_EQ(setup_.engine_on(reached_.host).connection_info(reached_.target, target_.info), Status::ok);
    target_.lid = port_of(reached_.host).lid;
    target_.peer_lid = port_of(StateSetup::other(reached_.host)).lid;
    target_.tool_guid = cluster_.fabric().hca(kToolHca).ports()[0].node_guid;
  }

  [[nodiscard]] const Target& target() const { return target_; }

  // Makes the target's engine's newest endpoint (the one its last event names) the target, one
  // whose peer holds no endpoint: a raw REQ made it.
  void retarget_to_last_event() {
    ASSERT_FALSE(target_peer().events().empty());
    reached_.target = target_peer().events().back().id;
    reached_.peer = Id{};
    EXPECT_EQ(setup_.engine_on(reached_.host).connection_info(reached_.target, target_.info), Status::ok);
  }

  // Sends `m`, spoiled by `f`, and reports what moved; "" when nothing did.
  std::string inject(Msg m, Forgery f) {
    Target t = target_;
    if (f == Forgery::comm_id) t.info.remote_comm_id ^= 0x0055'AA00;
    if (f == Forgery::ca_guid) t.info.remote_ca_guid ^= 0x100;
    if (f == Forgery::qpn && m == Msg::rep) t.info.remote_qpn += 1;
    if (f == Forgery::qpn && m != Msg::rep) t.info.local_qpn += 1;
    MadPacket pkt = build(m, t);
    return send(pkt, f);
  }

  // Sends `pkt` (addressed to the target's port) from where `f` says and reports what moved.
  std::string send(MadPacket pkt, Forgery f) {
    const std::uint16_t peer_hca = reached_.host == Host::server ? 1 : 0;
    const std::uint16_t from_hca = f == Forgery::source ? kToolHca : peer_hca;
    if (f == Forgery::pkey) pkt.addr.pkey_index = 1;  // 0x8001: both ports hold it, the connection uses 0xFFFF
    if (f == Forgery::port) pkt.addr.remote_lid = static_cast<Lid>(target_.lid + 1);
    const std::uint8_t arrival_port = f == Forgery::port ? 2 : 1;
    if (port_of(reached_.host).link_layer == LinkLayer::ethernet) {
      pkt.addr.grh.present = true;
      pkt.addr.grh.hop_limit = 1;
      pkt.addr.grh.remote_gid = port_of(reached_.host, arrival_port - 1u).gid_table[0];
    }

    const Snapshot before = snapshot();
    const PortCounters counters_before = target_peer().port_counters(arrival_port);
    const MadPacket* burst[] = {&pkt};
    EXPECT_EQ(cluster_.fabric().hca(from_hca).send_burst(0, burst), 1u);
    cluster_.settle();
    const Snapshot after = snapshot();
    const PortCounters counters_after = target_peer().port_counters(arrival_port);

    std::vector<std::string> moved;
    if (after.target_state != before.target_state) moved.push_back("state:" + after.target_state);
    if (after.peer_state != before.peer_state) moved.push_back("peer state:" + after.peer_state);
    for (std::size_t i = before.target_events; i < after.target_events; ++i) {
      moved.push_back("event:" + std::string(to_string(target_peer().events()[i].type)));
    }
    if (after.peer_events != before.peer_events) moved.push_back("peer event");
    if (after.target_timer != before.target_timer) moved.push_back("timer");
    if (after.peer_timer != before.peer_timer) moved.push_back("peer timer");
    if (after.target_sent != before.target_sent) moved.push_back("sent");
    for (std::size_t r = 0; r < kDropReasons; ++r) {
      if (counters_after.drops[r] != counters_before.drops[r]) {
        moved.push_back("drop:" + std::string(to_string(static_cast<DropReason>(r))));
      }
    }
    std::string out;
    for (const std::string& s : moved) out += (out.empty() ? "" : ", ") + s;
    return out;
  }

 private:
  [[nodiscard]] const PortAttr& port_of(Host h, std::size_t index = 0) const {
    return h == Host::server ? cluster_.server_port(index) : cluster_.client_port(index);
  }
  static loopback::LoopbackConfig fabric(LinkLayer link) {
    loopback::LoopbackConfig config = loopback::LoopbackConfig::make(3, 2);
    for (loopback::LoopbackHcaConfig& hca : config.hcas) {
      for (PortAttr& port : hca.ports) {
        port.link_layer = link;
        if (link == LinkLayer::ethernet) port.lid = 0;
      }
    }
    return config;
  }
  [[nodiscard]] Peer& target_peer() { return setup_.on(reached_.host); }

  Snapshot snapshot() {
    Snapshot s;
    Peer& self = setup_.on(reached_.host);
    Peer& other = setup_.across(reached_.host);
    s.target_state = setup_.state_of(reached_.host, reached_.target);
    s.peer_state = reached_.peer.empty() ? "" : setup_.state_of(StateSetup::other(reached_.host), reached_.peer);
    s.target_events = self.events().size();
    s.peer_events = other.events().size();
    s.target_timer = self.engine().next_timer_ns();
    s.peer_timer = other.engine().next_timer_ns();
    for (std::uint8_t port = 1; port <= 2; ++port) {
      for (const MessageCounters& m : self.port_counters(port).messages) s.target_sent += m.sent + m.retried;
    }
    return s;
  }

  Cluster cluster_;
  StateSetup setup_;
  Reached reached_;
  Target target_;
};

// Whether the forgery applies to the message in that state: the active side learns the peer's
// comm ID and QP from the REP, so before it only the source can be wrong.
bool applies(Msg m, const Start& start, Forgery f) {
  const bool before_rep = start.state == EndpointState::req_sent || start.state == EndpointState::mra_req_rcvd;
  switch (f) {
    // A SIDR_REP names our request ID alone: only where it comes from can be wrong.
    case Forgery::comm_id: return !before_rep && m != Msg::sidr_rep;
    case Forgery::ca_guid: return m == Msg::rep && !before_rep;
    case Forgery::qpn: return m == Msg::dreq || m == Msg::lap || (m == Msg::rep && !before_rep);
    default: return true;
  }
}

constexpr Forgery kEveryForgery[] = {Forgery::none,   Forgery::comm_id, Forgery::ca_guid, Forgery::qpn,
                                     Forgery::source, Forgery::pkey,    Forgery::port};

// Every forgery of `m` against every start: the control acts, each forgery only moves its counter.
void expect_spoofs_dropped(Msg m, std::initializer_list<Start> starts, LinkLayer link = LinkLayer::infiniband) {
  for (const Start& start : starts) {
    for (const Forgery f : kEveryForgery) {
      if (!applies(m, start, f)) continue;
      SCOPED_TRACE(std::string(column(m)) + " in " + label(start) + ", forged " + std::string(label(f)));
      SpoofCell cell(link);
      cell.reach(start);
      const std::string moved = cell.inject(m, f);
      if (const std::optional<DropReason> why = reason_of(f)) {
        EXPECT_EQ(moved, "drop:" + std::string(to_string(*why)));
      } else {
        EXPECT_NE(moved, "") << "the real message changed nothing: the forge is broken";
      }
    }
  }
}

using S = EndpointState;

TEST(Spoof, Rej) {
  expect_spoofs_dropped(Msg::rej, {{S::req_sent}, {S::mra_req_rcvd}, {S::req_rcvd}, {S::mra_req_sent},
                                   {S::rep_sent}, {S::rep_rcvd}, {S::mra_rep_sent}, {S::mra_rep_rcvd},
                                   {S::established_active}, {S::established_passive}, {S::dreq_sent}});
}

TEST(Spoof, Rep) {
  // The first REP in req_sent and mra_req_rcvd; repeated ones answered with the MRA or RTU again.
  expect_spoofs_dropped(Msg::rep, {{S::req_sent}, {S::mra_req_rcvd}, {S::mra_rep_sent}, {S::established_active}});
}

TEST(Spoof, Rtu) { expect_spoofs_dropped(Msg::rtu, {{S::rep_sent}, {S::mra_rep_rcvd}}); }

TEST(Spoof, Mra) {
  expect_spoofs_dropped(Msg::mra_req, {{S::req_sent}});
  expect_spoofs_dropped(Msg::mra_rep, {{S::rep_sent}});
  expect_spoofs_dropped(Msg::mra_lap, {{S::established_active, true}});
}

TEST(Spoof, Dreq) {
  // In time-wait a DREQ is answered with a DREP again: a forged one must not be.
  expect_spoofs_dropped(Msg::dreq, {{S::rep_sent}, {S::mra_rep_rcvd}, {S::established_active},
                                    {S::established_passive}, {S::dreq_sent}, {S::timewait}});
}

TEST(Spoof, Drep) { expect_spoofs_dropped(Msg::drep, {{S::dreq_sent}}); }

// In dreq_rcvd a DREP answers only a DREQ of ours that crossed the peer's
// (Release.DreqCollisionIsAnsweredByBothSidesAndBothTimeWait): without one it answers nothing here,
// and a server's DREP to a DREQ forged on our port naming a connection it forgot would otherwise
// end ours.
TEST(Spoof, ADrepInDreqRcvdWithoutADreqOfOursIsDropped) {
  SpoofCell cell;
  cell.reach({S::dreq_rcvd});
  EXPECT_EQ(cell.inject(Msg::drep, Forgery::none), "drop:out_of_state");
}

TEST(Spoof, Lap) { expect_spoofs_dropped(Msg::lap, {{S::established_active}, {S::established_passive}}); }

TEST(Spoof, Apr) { expect_spoofs_dropped(Msg::apr, {{S::established_active, true}}); }

TEST(Spoof, SidrRep) { expect_spoofs_dropped(Msg::sidr_rep, {{S::sidr_req_sent}}); }

// A REQ from the remote QP (QPN and CA GUID) of a live connection says that the peer lost it
// (12.9.8.3.2): the connection is torn down only when the REQ comes from the peer's address. The
// REQ itself is rejected "stale connection" to its sender either way.
TEST(Spoof, StaleReqTearsTheConnectionDownOnlyFromItsPeer) {
  for (const S state : {S::established_active, S::established_passive}) {
    for (const Forgery f : {Forgery::none, Forgery::source, Forgery::pkey, Forgery::port}) {
      SCOPED_TRACE(std::string(fastcm::test::label(state)) + ", forged " + std::string(label(f)));
      SpoofCell cell;
      cell.reach({state});
      Target t = cell.target();
      t.info.remote_comm_id ^= 0x0055'AA00;  // a new connection's REQ from the same QP
      const std::string moved = cell.send(build(Msg::req_again, t), f);
      if (f == Forgery::none) {
        EXPECT_EQ(moved.rfind("state:dreq_sent", 0), 0u) << moved;
      } else {
        EXPECT_EQ(moved, "sent, drop:" + std::string(to_string(*reason_of(f))));
      }
    }
  }
}

// The whole matrix: every forged message (each identity field wrong in turn) against an endpoint
// in every state a setup reaches, not only those where the real message acts: none tears the
// connection down or moves it on; each is dropped and counted, whatever the reason (a state that
// ignores the real message may count it out_of_state or duplicate instead of the forgery's own).
// The figure of issue 13's closing note is this test's last line of output.
TEST(Spoof, NoForgeryInAnyStateTearsDownOrAdvances) {
  std::vector<Start> starts;
  for (const EndpointState state : kEveryEndpointState) starts.push_back({state});
  starts.push_back({S::established_active, true});
  std::size_t cells = 0;
  std::size_t moved_cells = 0;
  for (const Msg m : kEveryMsg) {
    if (m == Msg::req_again) continue;  // a REQ naming a live QP: StaleReqTearsTheConnectionDownOnlyFromItsPeer
    for (const Start& start : starts) {
      for (const Forgery f : kEveryForgery) {
        if (f == Forgery::none || !applies(m, start, f)) continue;
        SCOPED_TRACE(std::string(column(m)) + " in " + label(start) + ", forged " + std::string(label(f)));
        SpoofCell cell;
        cell.reach(start);
        const std::string moved = cell.inject(m, f);
        ++cells;
        const bool one_drop = moved.rfind("drop:", 0) == 0 && moved.find(',') == std::string::npos;
        moved_cells += one_drop ? 0 : 1;
        EXPECT_TRUE(one_drop) << moved;
      }
    }
  }
  std::printf("spoof matrix: %zu forged MADs in %zu states, %zu torn down or advanced\n", cells, starts.size(),
              moved_cells);
}

// RoCE has no LIDs: the source GID tells the peer from another node.
TEST(Spoof, OnRoceTheSourceGidCounts) {
  expect_spoofs_dropped(Msg::rej, {{S::req_sent}, {S::established_passive}}, LinkLayer::ethernet);
  expect_spoofs_dropped(Msg::dreq, {{S::established_active}}, LinkLayer::ethernet);
}

// A CM that made no endpoint for our REQ (no listen, a stale REQ, its own timeout) rejects it with
// Local Communication ID 0: accepted from where the REQ went, dropped from anywhere else.
TEST(Spoof, RejWithoutSenderIdCountsOnlyFromTheReqDestination) {
  for (const S state : {S::req_sent, S::mra_req_rcvd}) {
    for (const Forgery f : {Forgery::none, Forgery::source, Forgery::pkey, Forgery::port}) {
      SCOPED_TRACE(std::string(fastcm::test::label(state)) + ", forged " + std::string(label(f)));
      SpoofCell cell;
      cell.reach({state});
      mad::Rej rej;
      rej.local_comm_id = 0;
      rej.remote_comm_id = cell.target().info.local_comm_id;
      rej.message_rejected = mad::MessageKind::req;
      rej.reason = mad::RejReason::invalid_service_id;
      const std::string moved = cell.send(packet(cell.target(), rej), f);
      if (f == Forgery::none) {
        EXPECT_EQ(moved, "state:idle, event:rej_received, timer");
      } else {
        EXPECT_EQ(moved, "drop:" + std::string(to_string(*reason_of(f))));
      }
    }
  }
}

// A retransmitted REQ is answered again (12.9.8.1) only when it comes from where the REQ came:
// a copy from elsewhere would make the passive side resend its MRA or REP to the peer.
TEST(Spoof, ARetransmittedReqCountsOnlyFromItsSender) {
  for (const S state : {S::mra_req_sent, S::rep_sent, S::mra_rep_rcvd}) {
    for (const Forgery f : {Forgery::none, Forgery::source, Forgery::pkey, Forgery::port}) {
      SCOPED_TRACE(std::string(fastcm::test::label(state)) + ", forged " + std::string(label(f)));
      SpoofCell cell;
      cell.reach({state});
      const std::string moved = cell.inject(Msg::req_again, f);
      if (f == Forgery::none) {
        EXPECT_NE(moved.find("sent"), std::string::npos) << moved;
      } else {
        EXPECT_EQ(moved, "drop:" + std::string(to_string(*reason_of(f))));
      }
    }
  }
}

// A REQ is rejected only by the side that received it, a REP likewise: a REJ of what the endpoint
// itself sent is about another connection, even from its peer's address (the server's answer to a
// REP forged in the client endpoint's name, sent back to the client's port, is one).
TEST(Spoof, ARejOfWhatTheEndpointSentIsNotAboutIt) {
  struct Cell {
    S state;
    mad::MessageKind rejected;
    const char* moved;
  };
  for (const Cell c : {Cell{S::req_sent, mad::MessageKind::rep, "drop:out_of_state"},
                       Cell{S::req_sent, mad::MessageKind::req, "state:idle, event:rej_received, timer"},
                       Cell{S::rep_rcvd, mad::MessageKind::rep, "drop:out_of_state"},
                       Cell{S::req_rcvd, mad::MessageKind::req, "drop:out_of_state"},
                       Cell{S::rep_sent, mad::MessageKind::req, "drop:out_of_state"},
                       Cell{S::rep_sent, mad::MessageKind::rep, "state:idle, event:rej_received, timer"}}) {
    SCOPED_TRACE(std::string(fastcm::test::label(c.state)) + ", REJ of " +
                 (c.rejected == mad::MessageKind::req ? "REQ" : "REP"));
    SpoofCell cell;
    cell.reach({c.state});
    mad::Rej rej;
    rej.local_comm_id = cell.target().info.remote_comm_id;
    rej.remote_comm_id = cell.target().info.local_comm_id;
    rej.message_rejected = c.rejected;
    rej.reason = mad::RejReason::consumer_reject;
    EXPECT_EQ(cell.send(packet(cell.target(), rej), Forgery::none), c.moved);
  }
}

// A REQ may arrive under another partition than the one it names, from a port that is a member of
// both: the connection's partition is the named one, so a MAD under the arrival partition is not
// the connection's, even from the REQ's sender.
TEST(Spoof, TheConnectionsPartitionIsTheOneItsReqNames) {
  SpoofCell cell;
  cell.reach({S::established_passive});
  Target fresh = cell.target();
  fresh.info.remote_comm_id ^= 0x0055'AA00;  // another connection from the same client
  fresh.info.remote_qpn += 1;
  MadPacket req = build(Msg::req_again, fresh);  // names P_Key 0xFFFF
  ASSERT_EQ(cell.send(req, Forgery::pkey), "event:req_received, timer");  // arrives under 0x8001
  cell.retarget_to_last_event();
  ASSERT_EQ(to_string(cell.target().info.state), std::string_view("req_rcvd"));

  EXPECT_EQ(cell.inject(Msg::rej, Forgery::pkey), "drop:wrong_source");
  EXPECT_EQ(cell.inject(Msg::rej, Forgery::none), "state:idle, event:rej_received, timer");
}

}  // namespace
}  // namespace fastcm::test
