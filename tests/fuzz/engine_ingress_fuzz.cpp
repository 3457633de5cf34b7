// Fuzz target for what reaches an engine from the fabric (issue 13), structure-aware: each input
// is a script (ingress_script.h) that sets up live connections between a client and a server
// engine (ingress_rig.h), then runs steps: MADs aimed at a connection as its peer would send them
// (then one field mutated), the same from elsewhere, virtual-clock steps and API calls.
//
// Invariants, checked after every step:
//  - no event names a destroyed Id (checked as each event arrives);
//  - an injected MAD changes a live endpoint (its state, or an event for it) only when it names
//    that endpoint's whole identity and may change it in its state (connection_identity.h), or
//    claims its remote QP connected again; the target engine handles the MAD alone first, so a
//    change is pinned on the MAD before any answer travels. Answers that follow may change only
//    the other end of an endpoint that changed (or could have), or the endpoint the MAD was sent
//    in the name of from its own port (no one on the fabric can tell that MAD from its own);
//  - an injected REQ or SIDR_REQ is the only MAD that creates an endpoint;
//  - an API call changes only its endpoint and that endpoint's peer;
//  - every event names an endpoint the script knows (made by create_id or announced by an event);
//  - at the end of the input, after destroying everything and running the clock until no timer
//    is left: no MAD is in flight, mad_buffers_in_use() is 0 and each engine's endpoint table is
//    whole again (max_endpoints create_id calls succeed).
// A violation prints what broke and aborts. Clock steps may change any endpoint (timers).
//
// FASTCM_FUZZ_TRACE=1 in the environment prints each step and every endpoint's state after it, to
// read a saved crash input: `FASTCM_FUZZ_TRACE=1 fastcm_fuzz_engine_ingress crash-<sha1>`.
//
// FASTCM_FUZZ_MATCHING=ours_only in the environment relaxes "names the whole identity" to "names
// our comm ID" (what Linux's cm.c checks), to fuzz the other invariants on an engine that matches
// messages on that alone; the default (whole_identity) is the goal issue 13 sets.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/mad/codec.h"
#include "tests/fuzz/cm_message_types.h"
#include "tests/fuzz/connection_identity.h"
#include "tests/fuzz/fuzz_entry_point.h"
#include "tests/fuzz/ingress_rig.h"
#include "tests/fuzz/ingress_script.h"

namespace fastcm::fuzz {
namespace {

namespace mad = fastcm::mad;
using MadBytes = std::array<std::uint8_t, mad::kMadSize>;

constexpr std::uint64_t kServiceId = 0x1000'0000'0000'0042;
constexpr std::uint64_t kInjectTid = 0x7E57'0000'0000'0001;
constexpr std::uint8_t kPacketLifeTime = 14;  // 67 ms: retries and time-wait in virtual time
// The end-of-input drain: timers and deliveries stepped through before the engines must be idle.
constexpr int kMaxDrainSteps = 100'000;

Matching matching_from_environment() {
  const char* v = std::getenv("FASTCM_FUZZ_MATCHING");
  return v != nullptr && std::string_view(v) == "ours_only" ? Matching::ours_only
                                                            : Matching::whole_identity;
}

bool trace_from_environment() {
  const char* v = std::getenv("FASTCM_FUZZ_TRACE");
  return v != nullptr && std::string_view(v) == "1";
}

// Names for the trace, in enumerator order (ingress_script.h).
constexpr const char* kStepNames[] = {"inject_from_peer", "inject_from_elsewhere", "clock", "api"};
constexpr const char* kMessageNames[] = {"class_port_info", "req",  "mra",      "rej",
                                         "rep",             "rtu",  "dreq",     "drep",
                                         "sidr_req",        "sidr_rep", "lap",  "apr"};
constexpr const char* kMutationNames[] = {"none", "field", "known_value", "byte", "pkey"};
constexpr const char* kApiNames[] = {"send_rep",  "send_rtu",  "send_rej",      "send_mra",
                                     "send_dreq", "send_drep", "establish",     "destroy",
                                     "send_lap",  "send_apr",  "send_sidr_rep", "reconnect",
                                     "connect",   "toggle_listen"};
static_assert(std::size(kStepNames) == static_cast<std::size_t>(StepKind::count_) &&
              std::size(kMessageNames) == static_cast<std::size_t>(Message::count_) &&
              std::size(kMutationNames) == static_cast<std::size_t>(Mutation::count_) &&
              std::size(kApiNames) == static_cast<std::size_t>(ApiCall::count_));

template <typename E, std::size_t N>
const char* name_of(const char* const (&names)[N], E e) {
  return names[static_cast<std::size_t>(e)];
}

// What the script knows of one endpoint.
struct Endpoint {
  Side side = Side::server;
  Id id;
  std::optional<std::size_t> peer;  // the other end of its connection, when known
  Lid req_source = 0;               // passive: the LID its REQ came from (0: not known)
  ConnectionInfo info;              // as of the last look (kept once destroyed)
  std::string_view state = "idle";  // "stale" once connection_info refuses the Id
  bool destroyed = false;
  bool got_event = false;           // an event for it since the last look
};

// Writes `value`'s low `width` bits (all 64 for a wider field, over its first bits) at `place`.
void write_field(MadBytes& bytes, const mad::FieldPlace& place, std::uint64_t value) {
  const unsigned bits = std::min(place.width, 64U);
  for (unsigned k = 0; k < bits; ++k) {
    const std::size_t bit = place.bit + k;
    const std::size_t at = place.byte + bit / 8;
    if (at >= bytes.size()) return;
    const auto mask = static_cast<std::uint8_t>(0x80U >> (bit % 8));
    const bool one = ((value >> (bits - 1 - k)) & 1U) != 0;
    bytes[at] = static_cast<std::uint8_t>(one ? bytes[at] | mask : bytes[at] & ~mask);
  }
}

// The header fields and those of message M, where they lie in the MAD.
template <typename M>
std::vector<mad::FieldPlace> field_places() {
  std::vector<mad::FieldPlace> places;
  const auto add = [&places](const mad::FieldPlace& place, const auto&) {
    places.push_back(place);
  };
  const mad::MadHeader header;
  mad::visit_header_fields(header, add);
  const M msg{};
  mad::visit_fields(msg, add);
  return places;
}

mad::PathFields path_fields(Lid from, Lid to) {
  mad::PathFields f;
  f.local_port_lid = from;
  f.remote_port_lid = to;
  f.subnet_local = true;
  f.local_ack_timeout = 17;
  return f;
}

class Input {
 public:
  Input(Matching matching, bool trace) : matching_(matching), trace_(trace) {}

  void run(ScriptReader& script) {
    ListenParams lp;
    lp.service_id = kServiceId;
    lp.delivery = rig_.delivery(Side::server);
    require(rig_.engine(Side::server).listen(lp, listen_) == Status::ok, "setup: listen");
    const std::size_t connections = 1 + script.byte() % kMaxConnections;
    for (std::size_t i = 0; i < connections; ++i) set_up(script.pick<Setup>());
    trace_endpoints("after setup");
    for (std::size_t step = 0; step < kMaxSteps && !script.done(); ++step) {
      const StepKind kind = script.pick<StepKind>();
      if (trace_) std::fprintf(stderr, "step %zu: %s", step, name_of(kStepNames, kind));
      switch (kind) {
        case StepKind::inject_from_peer: inject(script, std::nullopt); break;
        case StepKind::inject_from_elsewhere: inject(script, script.pick<Source>()); break;
        case StepKind::clock: clock_step(script.byte()); break;
        case StepKind::api: api_step(script); break;
        case StepKind::count_: break;
      }
      trace_endpoints("after it");
    }
    finish();
  }

 private:
  // With FASTCM_FUZZ_TRACE=1: the end of a step's line, then each endpoint the script knows.
  void trace_endpoints(const char* when) const {
    if (!trace_) return;
    std::fprintf(stderr, "\n  %s:", when);
    for (std::size_t i = 0; i < eps_.size(); ++i) {
      const Endpoint& ep = eps_[i];
      std::fprintf(stderr, " #%zu %s 0x%x %.*s%s", i, ep.side == Side::server ? "server" : "client",
                   ep.info.local_comm_id, static_cast<int>(ep.state.size()), ep.state.data(),
                   ep.destroyed ? " (destroyed)" : "");
      if (ep.peer) std::fprintf(stderr, " peer #%zu", *ep.peer);
      std::fprintf(stderr, ";");
    }
    std::fprintf(stderr, "\n");
  }

  // ---- looking at the endpoints ----------------------------------------------------------------

  [[nodiscard]] std::optional<std::size_t> find(Side side, Id id) const {
    for (std::size_t i = 0; i < eps_.size(); ++i) {
      if (eps_[i].side == side && eps_[i].id == id) return i;
    }
    return std::nullopt;
  }

  std::size_t track(Side side, Id id) {
    Endpoint& ep = eps_.emplace_back();
    ep.side = side;
    ep.id = id;
    if (rig_.engine(side).connection_info(id, ep.info) == Status::ok) ep.state = to_string(ep.info.state);
    return eps_.size() - 1;
  }

  // The endpoint whose REQ made the server endpoint `passive`: a client's, or the server's own
  // (an API step may reconnect a server endpoint, whose REQ then reaches its own engine's listen).
  // It names that endpoint's comm ID, and its CA GUID or, when `req_from` is known, comes from its
  // port: the CA GUID a REQ claims is not checked, so one forged on the endpoint's port with
  // another GUID makes the server answer that endpoint all the same.
  // `their_id`: the sender's comm ID the REQ or SIDR_REQ named, when known (connection_info has no
  // SIDR request ID).
  void link_peer(std::size_t passive, std::optional<Lid> req_from = std::nullopt,
                 std::optional<std::uint32_t> their_id = std::nullopt) {
    const ConnectionInfo& info = eps_[passive].info;
    const std::uint32_t named = their_id.value_or(info.remote_comm_id);
    for (std::size_t i = 0; i < eps_.size(); ++i) {
      if (i == passive || eps_[i].destroyed || eps_[i].id.comm_id() != named) continue;
      const PortAttr& port = rig_.port(eps_[i].side);
      if (info.remote_ca_guid == port.node_guid || req_from == port.lid) {
        eps_[i].peer = passive;
        eps_[passive].peer = i;
        eps_[passive].req_source = req_from.value_or(port.lid);
      }
    }
  }

  // Two endpoints are connected when either is the other's peer: a later REQ naming an endpoint
  // makes it the peer of the new one, and the older passive endpoint still names it.
  [[nodiscard]] bool connected(std::size_t a, std::size_t b) const {
    return eps_[a].peer == b || eps_[b].peer == a;
  }

  // Takes in the events since the last look and every endpoint's state. Returns, per endpoint,
  // whether it changed; endpoints announced by a REQ or SIDR_REQ event are added (and counted in
  // `created`), any other event for an unknown Id is a violation.
  std::vector<bool> look(std::size_t* created = nullptr) {
    const std::vector<RecordedEvent>& events = rig_.events();
    for (; events_seen_ < events.size(); ++events_seen_) {
      const RecordedEvent& e = events[events_seen_];
      if (const std::optional<std::size_t> i = find(e.side, e.id)) {
        eps_[*i].got_event = true;
        continue;
      }
      require(e.type == EventType::req_received || e.type == EventType::sidr_req_received,
              "an event names an endpoint that no create_id, REQ or SIDR_REQ made", e.id.raw);
      const std::size_t i = track(e.side, e.id);
      link_peer(i);
      if (created != nullptr) ++*created;
    }
    std::vector<bool> changed(eps_.size(), false);
    for (std::size_t i = 0; i < eps_.size(); ++i) {
      Endpoint& ep = eps_[i];
      if (ep.destroyed) continue;
      ConnectionInfo now;
      const std::string_view state =
          rig_.engine(ep.side).connection_info(ep.id, now) == Status::ok ? to_string(now.state) : std::string_view("stale");
      changed[i] = ep.got_event || state != ep.state;
      ep.got_event = false;
      ep.state = state;
      if (state != "stale") ep.info = now;
    }
    return changed;
  }

  // ---- setup -----------------------------------------------------------------------------------

  [[nodiscard]] Path path_to_server() const {
    return loopback::path_record(rig_.port(Side::client), rig_.port(Side::server), kPacketLifeTime);
  }

  [[nodiscard]] ReqParams req_params() {
    ReqParams p;
    p.service_id = kServiceId;
    p.primary = path_to_server();
    p.qpn = next_qpn_++;
    p.starting_psn = 0x1111;
    p.responder_resources = 8;
    p.initiator_depth = 8;
    p.remote_cm_response_timeout = 16;
    p.local_cm_response_timeout = 16;
    p.max_cm_retries = 3;
    return p;
  }

  [[nodiscard]] RepParams rep_params() {
    RepParams p;
    p.qpn = next_qpn_++;
    p.starting_psn = 0x2222;
    p.responder_resources = 4;
    p.initiator_depth = 4;
    return p;
  }

  [[nodiscard]] SidrReqParams sidr_req_params() const {
    SidrReqParams p;
    p.service_id = kServiceId;
    p.path = path_to_server();
    p.timeout = 16;
    p.max_retries = 2;
    return p;
  }

  void expect_ok(Status s, const char* what) { require(s == Status::ok, what); }

  // One connection brought to `setup` through the API, each step settled.
  void set_up(Setup setup) {
    Engine& client = rig_.engine(Side::client);
    Engine& server = rig_.engine(Side::server);
    Id c;
    expect_ok(client.create_id(rig_.delivery(Side::client), nullptr, c), "setup: create_id");
    const std::size_t ci = track(Side::client, c);
    if (setup == Setup::sidr) {
      expect_ok(client.send_sidr_req(c, sidr_req_params()), "setup: send_sidr_req");
    } else {
      expect_ok(client.send_req(c, req_params()), "setup: send_req");
    }
    rig_.settle();
    look();
    // A SIDR endpoint names no remote comm ID to link by: its peer is the endpoint it announced.
    require(eps_.size() == ci + 2 && eps_[ci + 1].side == Side::server,
            "setup: the server announced the REQ");
    eps_[ci].peer = ci + 1;
    eps_[ci + 1].peer = ci;
    const Id s = eps_[*eps_[ci].peer].id;
    const auto step = [this](Status st, const char* what) {
      expect_ok(st, what);
      rig_.settle();
      look();
    };
    if (setup == Setup::sidr || setup == Setup::req) return;
    const MraParams mra{.service_timeout = 16, .private_data = {}};
    if (setup == Setup::mra_req) return step(server.send_mra(s, mra), "setup: MRA");
    step(server.send_rep(s, rep_params()), "setup: REP");
    if (setup == Setup::rep) return;
    if (setup == Setup::mra_rep) return step(client.send_mra(c, mra), "setup: MRA");
    step(client.send_rtu(c, {}), "setup: RTU");
    if (setup == Setup::established) return;
    if (setup == Setup::lap) {
      return step(client.send_lap(c, LapParams{.alternate = path_to_server(),
                                               .remote_cm_response_timeout = 16,
                                               .private_data = {}}),
                  "setup: LAP");
    }
    step(client.send_dreq(c, {}), "setup: DREQ");
    if (setup == Setup::dreq) return;
    step(server.send_drep(s, {}), "setup: DREP");
  }

  // ---- injected MADs ---------------------------------------------------------------------------

  // A value for Mutation::known_value, from what the script knows about `target`.
  [[nodiscard]] std::uint64_t known_value(KnownValue pick, std::size_t target) const {
    const Endpoint& t = eps_[target];
    const std::size_t other = (target + 1 + 2 * (t.peer.has_value() ? 1 : 0)) % eps_.size();
    switch (pick) {
      case KnownValue::zero: return 0;
      case KnownValue::target_comm_id: return t.info.local_comm_id;
      case KnownValue::peer_comm_id: return t.peer ? eps_[*t.peer].info.local_comm_id : 0;
      case KnownValue::other_comm_id: return eps_[other].info.local_comm_id;
      case KnownValue::target_qpn: return t.info.local_qpn;
      case KnownValue::peer_qpn: return t.info.remote_qpn;
      case KnownValue::other_qpn: return eps_[other].info.local_qpn;
      case KnownValue::count_: break;
    }
    return 0;
  }

  // `message` as the peer of `target` would send it, encoded.
  [[nodiscard]] MadBytes build(Message message, std::size_t target) const {
    const Endpoint& t = eps_[target];
    const ConnectionInfo& c = t.info;
    const ConnectionInfo* peer = t.peer ? &eps_[*t.peer].info : nullptr;
    const std::uint32_t ours = c.local_comm_id;
    const std::uint32_t theirs = c.remote_comm_id != 0 ? c.remote_comm_id
                                 : peer != nullptr     ? peer->local_comm_id
                                                       : 0x7E57'0001;
    const Qpn their_qpn = c.remote_qpn != 0 ? c.remote_qpn
                          : peer != nullptr ? peer->local_qpn
                                            : 0x7E57;
    const Lid from = rig_.port(other(t.side)).lid;
    const Lid to = rig_.port(t.side).lid;
    const Guid their_guid = rig_.port(other(t.side)).node_guid;
    // What the peer would MRA or REJ: our REQ, our REP, or neither.
    const mad::MessageKind kind = c.state == CepState::req_sent || c.state == CepState::mra_req_rcvd
                                      ? mad::MessageKind::req
                                  : c.state == CepState::rep_sent || c.state == CepState::mra_rep_rcvd
                                      ? mad::MessageKind::rep
                                      : mad::MessageKind::lap_or_none;
    MadBytes bytes{};
    const auto encode = [&bytes](const auto& msg) {
      using M = std::remove_cvref_t<decltype(msg)>;
      constexpr mad::AttrId attr = mad::WireLayout<M>::kAttr;
      const mad::MadHeader h = mad::cm_header(first_allowed_method(attr), attr, kInjectTid);
      require(mad::encode(h, msg, mad::MadSpan(bytes)).ok(), "the injected message encodes");
    };
    switch (message) {
      case Message::class_port_info: encode(mad::ClassPortInfo{}); break;
      case Message::req: {
        mad::Req req;
        req.local_comm_id = theirs;
        req.service_id = kServiceId;
        req.local_ca_guid = their_guid;
        req.local_qpn = their_qpn;
        req.remote_cm_response_timeout = 16;
        req.local_cm_response_timeout = 16;
        req.partition_key = 0xFFFF;
        req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
        req.max_cm_retries = 3;
        req.primary = path_fields(from, to);
        encode(req);
        break;
      }
      case Message::mra:
        encode(mad::Mra{.local_comm_id = theirs, .remote_comm_id = ours, .message_mraed = kind,
                        .service_timeout = 10, .private_data = {}});
        break;
      case Message::rej: {
        mad::Rej rej;
        rej.local_comm_id = theirs;
        rej.remote_comm_id = ours;
        rej.message_rejected = kind;
        rej.reason = mad::RejReason::consumer_reject;
        encode(rej);
        break;
      }
      case Message::rep: {
        mad::Rep rep;
        rep.local_comm_id = theirs;
        rep.remote_comm_id = ours;
        rep.local_qpn = their_qpn;
        rep.local_ca_guid = their_guid;
        rep.starting_psn = 0x3333;
        rep.rnr_retry_count = 7;
        encode(rep);
        break;
      }
      case Message::rtu:
        encode(mad::Rtu{.local_comm_id = theirs, .remote_comm_id = ours, .private_data = {}});
        break;
      case Message::dreq:
        encode(mad::Dreq{.local_comm_id = theirs, .remote_comm_id = ours,
                         .remote_qpn_eecn = c.local_qpn, .private_data = {}});
        break;
      case Message::drep:
        encode(mad::Drep{.local_comm_id = theirs, .remote_comm_id = ours, .private_data = {}});
        break;
      case Message::sidr_req:
        encode(mad::SidrReq{.request_id = theirs, .partition_key = 0xFFFF,
                            .service_id = kServiceId, .private_data = {}});
        break;
      case Message::sidr_rep: {
        mad::SidrRep rep;
        rep.request_id = ours;
        rep.qpn = their_qpn;
        rep.service_id = kServiceId;
        rep.q_key = 0x1234;
        encode(rep);
        break;
      }
      case Message::lap: {
        mad::Lap lap;
        lap.local_comm_id = theirs;
        lap.remote_comm_id = ours;
        lap.remote_qpn_eecn = c.local_qpn;
        lap.remote_cm_response_timeout = 16;
        lap.alternate = path_fields(from, to);
        lap.alternate.sl = 3;
        encode(lap);
        break;
      }
      case Message::apr: {
        mad::Apr apr;
        apr.local_comm_id = theirs;
        apr.remote_comm_id = ours;
        encode(apr);
        break;
      }
      case Message::count_: break;
    }
    return bytes;
  }

  static const std::vector<mad::FieldPlace>& places_of(Message message) {
    static const auto table = [] {
      std::array<std::vector<mad::FieldPlace>, static_cast<std::size_t>(Message::count_)> t;
      std::size_t i = 0;
      for_each_message_type([&]<typename M>(std::type_identity<M>) { t[i++] = field_places<M>(); });
      return t;
    }();
    return table[static_cast<std::size_t>(message)];
  }

  // What a violation needs to be read: the endpoint's identity and what the MAD named.
  static void describe(const ConnectionInfo& c, std::string_view state, const mad::AnyMessage& msg,
                       MadSource source, bool elsewhere) {
    std::fprintf(stderr,
                 "engine_ingress_fuzz: endpoint in %.*s: comm IDs local 0x%x remote 0x%x, QPNs "
                 "local 0x%x remote 0x%x, path from LID %u P_Key 0x%x\n"
                 "engine_ingress_fuzz: the MAD came from LID %u P_Key 0x%x (%s) and names:",
                 static_cast<int>(state.size()), state.data(), c.local_comm_id, c.remote_comm_id,
                 c.local_qpn, c.remote_qpn, c.primary.remote_lid, c.primary.pkey, source.lid,
                 source.pkey, elsewhere ? "elsewhere" : "the peer's port");
    std::visit(
        [](const auto& m) {
          mad::visit_fields(m, [](const mad::FieldPlace& place, const auto& value) {
            using V = std::remove_cvref_t<decltype(value)>;
            if constexpr (std::is_integral_v<V>) {
              if (place.name.find("comm_id") != std::string_view::npos ||
                  place.name.find("qpn") != std::string_view::npos ||
                  place.name == "request_id" || place.name == "local_ca_guid") {
                std::fprintf(stderr, " %.*s=0x%llx", static_cast<int>(place.name.size()),
                             place.name.data(), static_cast<unsigned long long>(value));
              }
            }
          });
        },
        msg);
    std::fprintf(stderr, "\n");
  }

  void inject(ScriptReader& script, std::optional<Source> elsewhere) {
    const std::size_t target = script.byte() % eps_.size();
    const Message message = script.pick<Message>();
    MadBytes bytes = build(message, target);
    const Side target_side = eps_[target].side;
    const Mutation mutation = script.pick<Mutation>();
    std::uint16_t pkey_index = 0;
    if (mutation == Mutation::field || mutation == Mutation::known_value) {
      const std::vector<mad::FieldPlace>& places = places_of(message);
      const mad::FieldPlace& place = places[script.byte() % places.size()];
      write_field(bytes, place, mutation == Mutation::known_value
                                    ? known_value(script.pick<KnownValue>(), target)
                                    : script.u64());
    } else if (mutation == Mutation::byte) {
      const std::uint8_t at = script.byte();
      const std::uint8_t x = script.byte();
      bytes[at] = static_cast<std::uint8_t>(bytes[at] ^ (x == 0 ? 1 : x));
    } else if (mutation == Mutation::pkey) {
      pkey_index = 1;  // the default ports' second P_Key, 0x8001
    }

    std::uint16_t sender = Rig::hca(other(target_side));
    if (elsewhere) sender = *elsewhere == Source::tool ? Rig::kToolHca : Rig::hca(target_side);
    const PortAttr& from = rig_.port_of_hca(sender);
    const MadSource source{.lid = from.lid, .pkey = from.pkey_table[pkey_index]};
    if (trace_) {
      std::fprintf(stderr, " %s to #%zu, mutation %s, from LID %u P_Key 0x%x",
                   name_of(kMessageNames, message), target, name_of(kMutationNames, mutation),
                   source.lid, source.pkey);
    }

    mad::DecodedMad decoded;
    const bool well_formed = mad::decode(bytes, decoded).ok();
    // The comm ID the MAD names as its sender's (a SIDR_REQ's request ID), if any.
    const std::optional<std::uint32_t> sender_comm_id =
        well_formed ? std::visit(
                          []<typename M>(const M& m) -> std::optional<std::uint32_t> {
                            if constexpr (requires { m.local_comm_id; }) return m.local_comm_id;
                            if constexpr (requires { m.request_id; }) return m.request_id;
                            return std::nullopt;
                          },
                          decoded.message)
                    : std::nullopt;
    // Which endpoints this MAD may change, judged on their state and IDs before it arrives, and
    // which it may make answer (it names their whole identity: in a state it cannot change, the
    // answer to a duplicate, such as a DREP from time-wait, still reaches the peer).
    std::vector<bool> may(eps_.size(), false);
    std::vector<bool> answers(eps_.size(), false);
    std::vector<std::string_view> before(eps_.size());
    for (std::size_t i = 0; i < eps_.size(); ++i) before[i] = eps_[i].state;
    const int attribute = bytes[16] << 8 | bytes[17];
    const auto check = [&](bool holds, const char* what, std::size_t i) {
      if (!holds) {
        describe(eps_[i].info, before[i], decoded.message, source, elsewhere.has_value());
        violated_by_change(what, eps_[i].id.raw, eps_[i].side == Side::server, before[i],
                           eps_[i].state, attribute);
      }
    };
    if (well_formed) {
      for (std::size_t i = 0; i < eps_.size(); ++i) {
        const ConnectionInfo& c = eps_[i].info;
        if (eps_[i].side != target_side) continue;
        // A destroyed endpoint's state moved on unseen: only its identity counts.
        const Lid req_source = eps_[i].req_source;
        // Any endpoint the MAD names, not only the one it was built for: a mutated field may
        // name another.
        const bool named = names(c, req_source, decoded.message, source, matching_);
        may[i] = claims_stale(c, req_source, decoded.message, source, matching_) ||
                 (eps_[i].destroyed
                      ? named
                      : may_change_by_name(c, req_source, decoded.message, source, matching_));
        answers[i] = may[i] || named;
      }
    }

    MadPacket pkt;
    pkt.addr.remote_lid = rig_.port(target_side).lid;
    pkt.addr.pkey_index = pkey_index;
    pkt.mad = bytes;
    const MadPacket* burst[] = {&pkt};
    require(rig_.fabric().hca(sender).send_burst(0, burst) == 1, "the fabric takes the MAD");

    // The target's engine alone first: what changes now, changed on this MAD.
    rig_.settle(target_side);
    std::size_t created = 0;
    const std::vector<bool> first = look(&created);
    // Made by this REQ, whatever peer link_peer guessed from the IDs it names.
    for (std::size_t i = eps_.size() - created; i < eps_.size(); ++i) {
      eps_[i].req_source = source.lid;
      link_peer(i, source.lid, sender_comm_id);
    }
    const bool creates = well_formed && (std::holds_alternative<mad::Req>(decoded.message) ||
                                         std::holds_alternative<mad::SidrReq>(decoded.message));
    require(created == 0 || creates, "only a REQ or SIDR_REQ creates an endpoint");
    for (std::size_t i = 0; i < may.size(); ++i) {
      check(!first[i] || may[i],
            "a live endpoint changed on a MAD that does not name its whole identity, or is not "
            "valid in its state",
            i);
    }
    // Then the answers: only the other ends of what changed (or may have) move. An engine that
    // matches on our comm ID alone accepts answers to spoofs that name it (a REQ to the client
    // naming the server's comm ID makes the client REJ the server), so ours_only skips this.
    rig_.settle();
    const std::vector<bool> then = look();
    if (matching_ == Matching::ours_only) return;
    // A MAD from an endpoint's own port in its name (its comm ID as the sender's) is, for anyone
    // on the fabric, that endpoint's own: the answers to it may reach the endpoint.
    const auto in_its_name = [&](std::size_t i) {
      return sender_comm_id && *sender_comm_id == eps_[i].info.local_comm_id &&
             rig_.port(eps_[i].side).lid == source.lid;
    };
    for (std::size_t i = 0; i < may.size(); ++i) {
      bool cause = may[i] || first[i] || in_its_name(i);
      for (std::size_t j = 0; j < may.size() && !cause; ++j) {
        cause = connected(i, j) && (answers[j] || first[j]);
      }
      check(!then[i] || cause,
            "an endpoint changed on the answer to a MAD that changed nothing it is connected to",
            i);
    }
  }

  // ---- clock and API steps ---------------------------------------------------------------------

  void clock_step(std::uint8_t exponent) {
    if (trace_) std::fprintf(stderr, " exponent %u", exponent);
    if (exponent == 0) {
      if (const std::optional<std::uint64_t> next = rig_.next_event()) rig_.run_until(*next);
    } else {
      rig_.run_until(rig_.clock().now_ns() + (std::uint64_t{1} << (exponent % 36)));
    }
    look();
  }

  void api_step(ScriptReader& script) {
    const std::size_t e = script.byte() % eps_.size();
    const ApiCall call = script.pick<ApiCall>();
    const std::uint8_t argument = script.byte();
    const Endpoint ep = eps_[e];
    const std::size_t known_before = eps_.size();  // endpoints from here on are the call's own
    bool sidr = false;                             // the call sent a SIDR_REQ
    Engine& engine = rig_.engine(ep.side);
    const Id id = ep.id;
    if (trace_) std::fprintf(stderr, " %s on #%zu, argument %u", name_of(kApiNames, call), e, argument);
    switch (call) {
      case ApiCall::send_rep: (void)engine.send_rep(id, rep_params()); break;
      case ApiCall::send_rtu: (void)engine.send_rtu(id, {}); break;
      case ApiCall::send_rej: (void)engine.send_rej(id, RejParams{}); break;
      case ApiCall::send_mra:
        (void)engine.send_mra(
            id, MraParams{.service_timeout = static_cast<std::uint8_t>(argument % 32),
                          .private_data = {}});
        break;
      case ApiCall::send_dreq: (void)engine.send_dreq(id, {}); break;
      case ApiCall::send_drep: (void)engine.send_drep(id, {}); break;
      case ApiCall::establish: (void)engine.establish(id); break;
      case ApiCall::destroy:
        (void)engine.destroy(id);
        rig_.note_destroyed(id);
        eps_[e].destroyed = true;
        break;
      case ApiCall::send_lap:
        (void)engine.send_lap(id, LapParams{.alternate = ep.info.primary,
                                            .remote_cm_response_timeout = 16,
                                            .private_data = {}});
        break;
      case ApiCall::send_apr:
        (void)engine.send_apr(id, AprParams{.status = static_cast<std::uint8_t>(argument % 3),
                                            .info = {},
                                            .private_data = {}});
        break;
      case ApiCall::send_sidr_rep:
        (void)engine.send_sidr_rep(
            id, SidrRepParams{.status = static_cast<std::uint8_t>(argument % 3),
                              .qpn = next_qpn_++,
                              .info = {},
                              .private_data = {}});
        break;
      case ApiCall::reconnect:
        sidr = (argument & 1) != 0;
        if (sidr ? engine.send_sidr_req(id, sidr_req_params()) == Status::ok
                 : engine.send_req(id, req_params()) == Status::ok) {
          eps_[e].peer.reset();  // the server side of a new request is a new endpoint
        } else {
          sidr = false;
        }
        break;
      case ApiCall::connect: {
        Id c;
        Engine& client = rig_.engine(Side::client);
        if (client.create_id(rig_.delivery(Side::client), nullptr, c) == Status::ok) {
          track(Side::client, c);
          (void)client.send_req(c, req_params());
        }
        break;
      }
      case ApiCall::toggle_listen:
        if (listen_.empty()) {
          ListenParams lp;
          lp.service_id = kServiceId;
          lp.delivery = rig_.delivery(Side::server);
          (void)rig_.engine(Side::server).listen(lp, listen_);
        } else {
          (void)rig_.engine(Side::server).destroy(listen_);
          listen_ = Id{};
        }
        break;
      case ApiCall::count_: break;
    }
    rig_.settle();
    const std::vector<bool> changed = look();
    // A SIDR_REQ names no comm ID to link by (link_peer): the endpoint it announced is its peer.
    if (sidr && eps_.size() == known_before + 1 && eps_.back().side == Side::server) {
      eps_[e].peer = known_before;
      eps_.back().peer = e;
    }
    for (std::size_t i = 0; i < changed.size(); ++i) {
      const bool related = i == e || ep.peer == i || connected(i, e) || i >= known_before;
      require(!changed[i] || related, "an API call changed an endpoint it is not about",
              eps_[i].id.raw);
    }
  }

  // ---- the end of the input -------------------------------------------------------------------

  void finish() {
    for (Endpoint& ep : eps_) {
      if (ep.destroyed) continue;
      (void)rig_.engine(ep.side).destroy(ep.id);
      rig_.note_destroyed(ep.id);
      ep.destroyed = true;
    }
    if (!listen_.empty()) (void)rig_.engine(Side::server).destroy(listen_);
    int steps = 0;
    for (std::optional<std::uint64_t> next = rig_.next_event(); next; next = rig_.next_event()) {
      require(++steps < kMaxDrainSteps,
              "the engines run out of timers once everything is destroyed");
      rig_.clock().set(std::max(*next, rig_.clock().now_ns() + 1));
      rig_.settle();
    }
    require(rig_.fabric().total_pending() == 0, "no MAD is in flight at the end");
    for (const Side s : {Side::server, Side::client}) {
      Engine& engine = rig_.engine(s);
      require(engine.mad_buffers_in_use() == 0, "every MAD buffer is back at the end");
      std::array<Id, Rig::kConfig.max_endpoints> ids;
      for (Id& id : ids) {
        require(engine.create_id(rig_.delivery(s), nullptr, id) == Status::ok,
                "the endpoint table is whole again at the end");
      }
      for (const Id id : ids) require(engine.destroy(id) == Status::ok, "destroy an idle endpoint");
      require(engine.mad_buffers_in_use() == 0, "idle endpoints hold no MAD");
    }
  }

  Rig rig_;
  Matching matching_;
  bool trace_;
  std::vector<Endpoint> eps_;
  std::size_t events_seen_ = 0;
  Id listen_;
  Qpn next_qpn_ = 0x100;
};

}  // namespace
}  // namespace fastcm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fastcm::fuzz::Matching matching = fastcm::fuzz::matching_from_environment();
  static const bool trace = fastcm::fuzz::trace_from_environment();
  fastcm::fuzz::ScriptReader script(std::span<const std::uint8_t>(data, size));
  fastcm::fuzz::Input input(matching, trace);
  input.run(script);
  return 0;
}
