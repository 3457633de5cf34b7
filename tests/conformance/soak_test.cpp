// The seeded random soak of issue 3: a few hundred connections between a client and a server
// engine on two 2-port HCAs of a loopback fabric that loses, duplicates, delays and reorders every
// CM MAD in both directions. A seeded script plays both applications: it connects from either
// port to either port with random private data, accepts, rejects, answers slowly (so the engine
// MRAs by itself) or MRAs explicitly, disconnects from either side or both at once, destroys from
// callbacks and between steps, and asks for a service nobody listens on. InvariantChecker watches
// every event and call. The run ends when nothing moves any more; then, with every endpoint
// destroyed and its time-wait over, every endpoint slot must come back and no MAD may be taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tests/conformance/harness.h"
#include "tests/conformance/invariant_checker.h"

namespace fastcm::test {
namespace {

constexpr std::uint64_t kUs = 1'000;
constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint32_t kConnections = 400;
constexpr std::uint64_t kStartWindowNs = 8 * Cluster::kSecond;
constexpr std::uint64_t kMaxRunNs = 3600 * Cluster::kSecond;  // of virtual time, to catch livelock
constexpr std::uint32_t kMaxEndpoints = 64;  // per engine, time-wait included: exhaustion happens
constexpr std::uint32_t kBacklog = 24;       // REQs the server application holds unanswered, at most
constexpr std::uint64_t kListenedService = 0x1000'0000'0000'5000;
constexpr std::uint64_t kPolledService = 0x1000'0000'0000'5001;  // its listen delivers by EventQueue
constexpr std::uint64_t kUnlistenedService = 0x1000'0000'0000'6000;
constexpr std::uint32_t kQueueCapacity = 4096;   // never full here: a full queue would lose events
constexpr std::uint64_t kPollIntervalNs = 2 * kMs;  // how often the application drains its queues
constexpr std::uint8_t kPacketLifeTime = 12;     // 16.8 ms, above every injected delay
constexpr std::uint8_t kCmResponseTimeout = 16;  // 268 ms; the engine MRAs after half of it
constexpr std::uint8_t kMraServiceTimeout = 21;  // 8.6 s, in the script's own MRAs
constexpr std::uint8_t kTargetAckDelay = 14;     // with the packet life time: 100 ms of time-wait

// REJ reasons (IBTA Table 112) the script can provoke.
constexpr std::uint16_t kRejNoResources = 3;
constexpr std::uint16_t kRejTimeout = 4;
constexpr std::uint16_t kRejInvalidCommId = 6;
constexpr std::uint16_t kRejInvalidServiceId = 8;
constexpr std::uint16_t kRejConsumer = 28;

enum class ServerPlan : std::uint8_t { accept, accept_slowly, mra_then_accept, reject, destroy_in_callback, destroy_later };
enum class ClientPlan : std::uint8_t { rtu, rtu_slowly, mra_then_rtu, reject_rep, destroy_in_callback, destroy_while_connecting };
enum class Release : std::uint8_t { client_dreq, server_dreq, both_dreq, client_destroy, server_destroy, keep };
enum class Msg : std::uint8_t { req, rep, rej, rtu, mra, dreq, drep };

constexpr std::size_t wire_length(Msg m) {
  switch (m) {
    case Msg::req: return kMaxReqPrivateData;
    case Msg::rep: return kMaxRepPrivateData;
    case Msg::rej: return kMaxRejPrivateData;
    case Msg::rtu: return kMaxRtuPrivateData;
    case Msg::mra: return kMaxMraPrivateData;
    case Msg::dreq: return kMaxDreqPrivateData;
    case Msg::drep: return kMaxDrepPrivateData;
  }
  return 0;
}

constexpr std::size_t index(Side s) { return static_cast<std::size_t>(s); }
constexpr Side peer_of(Side s) { return s == Side::client ? Side::server : Side::client; }

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E37'79B9'7F4A'7C15;
  x = (x ^ (x >> 30)) * 0xBF58'476D'1CE4'E5B9;
  x = (x ^ (x >> 27)) * 0x94D0'49BB'1331'11EB;
  return x ^ (x >> 31);
}

// One connection of the script: what each application will do, and what each side's DREQ and
// DREP carried once sent (an empty vector: sent by destroy, without private data).
struct Plan {
  std::uint32_t conn = 0;
  std::uint64_t start_ns = 0;
  std::uint16_t client_port = 0;  // port index on the client's HCA
  std::uint16_t server_port = 0;  // port index on the server's HCA the REQ goes to
  bool listened = true;
  std::uint8_t max_cm_retries = 5;
  ServerPlan server = ServerPlan::accept;
  std::uint64_t server_delay_ns = 0;
  bool server_establishes = false;  // establish() racing the RTU, as when data comes first
  ClientPlan client = ClientPlan::rtu;
  std::uint64_t client_delay_ns = 0;
  Release release = Release::keep;
  std::uint64_t hold_ns = 0;
  std::array<bool, 2> polled{};            // per side: events by EventQueue instead of callback
  std::array<bool, 2> destroys_on_dreq{};  // per side: destroy instead of send_drep
  std::array<std::optional<std::vector<std::uint8_t>>, 2> dreq_sent;
  std::array<std::optional<std::vector<std::uint8_t>>, 2> drep_sent;
  Endpoint* client_ep = nullptr;

  [[nodiscard]] Qpn qpn(Side s) const { return (s == Side::client ? 0x10000u : 0x20000u) + conn; }
  [[nodiscard]] std::uint32_t psn(Side s) const { return (conn * (s == Side::client ? 7919u : 104729u)) & 0xFFFFFFu; }
};

struct SoakCase {
  std::uint64_t seed = 0;
  double loss_pct = 0;
  std::uint64_t reorder_window_ns = 3 * kMs;
};

// Whether received private data (full wire length) is `sent` followed by zeros.
bool carries(std::span<const std::uint8_t> got, std::span<const std::uint8_t> sent, Msg kind) {
  return got.size() == wire_length(kind) && std::equal(sent.begin(), sent.end(), got.begin()) &&
         std::all_of(got.begin() + static_cast<std::ptrdiff_t>(sent.size()), got.end(),
                     [](std::uint8_t b) { return b == 0; });
}

class SoakRun {
 public:
  explicit SoakRun(const SoakCase& c)
      : case_(c),
        cluster_(fabric_config(c.seed), engine_config()),
        checker_(cluster_.client().engine(), cluster_.server().engine()),
        rng_(c.seed) {
    loopback::FaultRule faults;  // every direction, every attribute
    faults.loss_pct = c.loss_pct;
    faults.dup_pct = 5;
    faults.reorder_pct = 10;
    faults.delay_ns = 100 * kUs;
    faults.reorder_window_ns = c.reorder_window_ns;
    cluster_.fabric().set_fault(faults);
    cluster_.client().react = [this](const Event& e) { on_event(Side::client, e); };
    cluster_.server().react = [this](const Event& e) { on_event(Side::server, e); };
    for (Side side : {Side::client, Side::server}) queues_[index(side)] = engine(side).create_event_queue(kQueueCapacity);
    batch_.resize(kQueueCapacity);
    ListenParams lp;
    lp.service_id = kListenedService;
    lp.delivery = cluster_.server().delivery();
    lp.context = &listen_context_;
    lp.backlog = kBacklog;
    EXPECT_EQ(engine(Side::server).listen(lp, listen_ids_[0]), Status::ok);
    lp.service_id = kPolledService;
    lp.delivery = Delivery{.queue = queues_[index(Side::server)]};
    EXPECT_EQ(engine(Side::server).listen(lp, listen_ids_[1]), Status::ok);
    for (std::uint32_t conn = 0; conn < kConnections; ++conn) plans_.push_back(make_plan(conn));
  }

  void run() {
    for (Plan& plan : plans_) agenda_.emplace(plan.start_ns, Entry{false, [this, &plan] { start(plan); }});
    drive();
    // Nothing moves and the script is through: what is still held is idle (rejected, timed out,
    // out of time-wait) or established (kept, or half-open after the peer gave up on its RTU).
    for (Endpoint& ep : checker_.endpoints()) {
      if (ep.destroy_called) continue;
      if (ep.phase != Phase::done && ep.phase != Phase::established) checker_.violation(&ep, "stuck when quiescent");
      destroy(ep);
    }
    drive();
    checker_.check_all_released();
    check_both_sides_agree();
    check_backlog_is_whole();
    check_nothing_leaks();
    check_faults_were_exercised();
    report();
  }

  InvariantChecker& checker() { return checker_; }

 private:
  static loopback::LoopbackConfig fabric_config(std::uint64_t seed) {
    loopback::LoopbackConfig config = loopback::LoopbackConfig::two_hcas(2);
    config.fault_seed = seed;
    return config;
  }
  static EngineConfig engine_config() {
    EngineConfig config;
    config.max_endpoints = kMaxEndpoints;
    config.mad_buffers = 4096;
    config.mra_service_timeout = 20;  // 4.3 s
    return config;
  }

  // ---- the script ------------------------------------------------------------------------------

  std::uint64_t below(std::uint64_t n) { return rng_() % n; }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(std::uint64_t pct) { return below(100) < pct; }
  template <std::size_t N>
  std::size_t pick(const std::array<std::uint64_t, N>& weights) {
    std::uint64_t r = below(std::accumulate(weights.begin(), weights.end(), std::uint64_t{0}));
    std::size_t i = 0;
    while (r >= weights[i]) r -= weights[i++];
    return i;
  }

  Plan make_plan(std::uint32_t conn) {
    Plan p;
    p.conn = conn;
    p.start_ns = below(kStartWindowNs);
    p.client_port = static_cast<std::uint16_t>(below(2));
    p.server_port = static_cast<std::uint16_t>(below(2));
    p.listened = !chance(8);
    constexpr std::array<std::uint8_t, 5> kRetries{0, 1, 3, 5, 8};
    p.max_cm_retries = kRetries[pick(std::array<std::uint64_t, 5>{10, 10, 25, 35, 20})];
    p.server = static_cast<ServerPlan>(pick(std::array<std::uint64_t, 6>{40, 15, 10, 15, 8, 12}));
    if (p.server == ServerPlan::accept_slowly) p.server_delay_ns = between(20 * kMs, 1500 * kMs);
    if (p.server == ServerPlan::mra_then_accept) p.server_delay_ns = between(200 * kMs, 3000 * kMs);
    if (p.server == ServerPlan::destroy_later) p.server_delay_ns = between(0, 400 * kMs);
    p.server_establishes = chance(15);
    p.client = static_cast<ClientPlan>(pick(std::array<std::uint64_t, 6>{50, 12, 8, 8, 7, 15}));
    if (p.client == ClientPlan::rtu_slowly) p.client_delay_ns = between(50 * kMs, 1000 * kMs);
    if (p.client == ClientPlan::mra_then_rtu) p.client_delay_ns = between(200 * kMs, 2000 * kMs);
    if (p.client == ClientPlan::destroy_while_connecting) p.client_delay_ns = between(0, 2 * kMs);
    p.release = static_cast<Release>(pick(std::array<std::uint64_t, 6>{25, 20, 16, 14, 14, 4}));
    p.hold_ns = between(0, 2000 * kMs);
    p.destroys_on_dreq = {chance(20), chance(20)};
    p.polled = {chance(30), chance(30)};
    return p;
  }

  // Private data of one message: the connection number, then bytes that are never zero (so a
  // truncation shows), 4 bytes up to the message's full length.
  [[nodiscard]] std::vector<std::uint8_t> private_data(const Plan& plan, Side from, Msg kind) const {
    std::uint64_t h = splitmix64(case_.seed ^ (std::uint64_t{plan.conn} << 16) ^ (index(from) << 8) ^
                                 static_cast<std::uint64_t>(kind));
    std::vector<std::uint8_t> data(4 + h % (wire_length(kind) - 3));
    for (std::size_t i = 0; i < 4; ++i) data[i] = static_cast<std::uint8_t>(plan.conn >> (24 - 8 * i));
    for (std::size_t i = 4; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>((h = splitmix64(h)) | 1);
    return data;
  }

  // Runs `action` on `ep` after `delay`, then retires the endpoint if that left it idle.
  void at(std::uint64_t delay, Endpoint& ep, std::function<void(Endpoint&)> action, bool before_poll = false) {
    agenda_.emplace(cluster_.clock().now_ns() + delay, Entry{before_poll, [this, &ep, action = std::move(action)] {
                                                               action(ep);
                                                               retire_if_done(ep);
                                                             }});
  }
  // A destroy after `delay`. A polled endpoint's destroy runs before the application drains its
  // queue: it races the events already waiting there, which must never come out of poll.
  void destroy_at(std::uint64_t delay, Endpoint& ep) {
    at(delay, ep, [this](Endpoint& e) { destroy(e); }, ep.polled);
  }

  void start(Plan& plan) {
    Id id;
    const bool polled = plan.polled[index(Side::client)];
    const Delivery delivery = polled ? Delivery{.queue = queues_[index(Side::client)]} : cluster_.client().delivery();
    const Status s = engine(Side::client).create_id(delivery, &plan, id);
    if (s == Status::no_resources) {  // every slot busy (time-wait included): try again later
      ++create_id_retries_;
      agenda_.emplace(cluster_.clock().now_ns() + 20 * kMs, Entry{false, [this, &plan] { start(plan); }});
      return;
    }
    ASSERT_EQ(s, Status::ok);
    Endpoint& ep = checker_.created(Side::client, id, plan.conn, polled);
    plan.client_ep = &ep;
    const std::vector<std::uint8_t> data = private_data(plan, Side::client, Msg::req);
    const ReqParams p = req_params(plan, data);
    (void)checker_.call(ep, Call::send_req, [&] { return engine(Side::client).send_req(id, p); });
    at(below(3 * Cluster::kSecond), ep, [this](Endpoint& c) { meddle(c); });
    if (plan.client == ClientPlan::destroy_while_connecting) destroy_at(plan.client_delay_ns, ep);
  }

  [[nodiscard]] ReqParams req_params(const Plan& plan, std::span<const std::uint8_t> data) const {
    ReqParams p;
    p.service_id = service_of(plan);
    p.primary = Cluster::make_path(cluster_.client_port(plan.client_port), cluster_.server_port(plan.server_port));
    p.primary.packet_life_time = kPacketLifeTime;
    p.qpn = plan.qpn(Side::client);
    p.starting_psn = plan.psn(Side::client);
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.remote_cm_response_timeout = kCmResponseTimeout;
    p.local_cm_response_timeout = kCmResponseTimeout;
    p.max_cm_retries = plan.max_cm_retries;
    p.private_data = data;
    return p;
  }

  [[nodiscard]] static std::uint64_t service_of(const Plan& plan) {
    return !plan.listened ? kUnlistenedService : plan.polled[index(Side::server)] ? kPolledService : kListenedService;
  }

  void on_event(Side side, const Event& e) {
    Endpoint* ep = checker_.begin_event(side, e, false);
    if (ep != nullptr) {
      if (ep->polled) checker_.violation(ep, "a callback for an endpoint with poll delivery");
      handle(*ep, e);
    }
    checker_.end_event(ep);
  }

  // Takes everything waiting in `side`'s queue, feeds each batch to the checker before reacting to
  // any of it, and checks the engine's states once the queue is empty.
  void drain(Side side) {
    std::set<Endpoint*> touched;
    while (const std::size_t n = engine(side).poll(*queues_[index(side)], batch_)) {
      std::vector<Endpoint*> eps(n);
      for (std::size_t i = 0; i < n; ++i) eps[i] = checker_.begin_event(side, batch_[i], true);
      for (std::size_t i = 0; i < n; ++i) {
        if (eps[i] == nullptr) continue;
        if (!eps[i]->polled) checker_.violation(eps[i], "a polled event for an endpoint with callbacks");
        if (!eps[i]->destroy_called) handle(*eps[i], batch_[i]);
        touched.insert(eps[i]);
      }
      for (std::size_t i = 0; i < n; ++i) engine(side).release(batch_[i]);
    }
    for (Endpoint* ep : touched) {
      if (!ep->destroy_called) checker_.check_state(*ep);
    }
  }

  void handle(Endpoint& ep, const Event& e) {
    if (e.type == EventType::req_received) {
      on_req(ep, e);
    } else {
      Plan& plan = plans_[ep.conn];
      // A polled server endpoint's events queued before the application set its context carry none.
      const bool before_context = ep.polled && ep.side == Side::server && e.context == nullptr;
      if (e.context != &plan && !before_context) checker_.violation(&ep, "event context is not the endpoint's");
      if (chance(10)) meddle(ep);
      reacts(ep, plan, e);
    }
    retire_if_done(ep);
  }

  void on_req(Endpoint& ep, const Event& e) {
    const auto* req = std::get_if<ReqReceived>(&e.params);
    if (req == nullptr || e.private_data.size() != kMaxReqPrivateData || e.context != &listen_context_) {
      return checker_.violation(&ep, "req_received without its parameters, private data or context");
    }
    std::uint32_t conn = 0;
    for (std::size_t i = 0; i < 4; ++i) conn = conn << 8 | e.private_data[i];
    if (conn >= plans_.size()) return checker_.violation(&ep, "REQ private data names no connection");
    ep.conn = conn;
    Plan& plan = plans_[conn];
    const PortAttr& here = cluster_.server_port(plan.server_port);
    const PortAttr& there = cluster_.client_port(plan.client_port);
    if (!plan.listened || req->service_id != service_of(plan) ||
        req->listen_id != listen_ids_[plan.polled[index(Side::server)] ? 1 : 0] ||
        req->remote_qpn != plan.qpn(Side::client) || req->starting_psn != plan.psn(Side::client) ||
        req->remote_ca_guid != there.node_guid || req->primary.port != here.port_num ||
        req->primary.local_lid != here.lid || req->primary.remote_lid != there.lid ||
        !carries(e.private_data, private_data(plan, Side::client, Msg::req), Msg::req)) {
      checker_.violation(&ep, "REQ differs from what the client sent");
    }
    server_by_comm_id_[ep.id.comm_id()] = &ep;
    EXPECT_EQ(engine(Side::server).set_context(ep.id, &plan), Status::ok);
    at(below(3 * Cluster::kSecond), ep, [this](Endpoint& s) { meddle(s); });
    switch (plan.server) {
      case ServerPlan::accept: accept(ep, plan); break;
      case ServerPlan::destroy_later:
        accept(ep, plan);
        destroy_at(plan.server_delay_ns, ep);
        break;
      case ServerPlan::accept_slowly:
        at(plan.server_delay_ns, ep, [this, &plan](Endpoint& s) { accept(s, plan); });
        break;
      case ServerPlan::mra_then_accept:
        send_mra(ep, plan);
        at(plan.server_delay_ns, ep, [this, &plan](Endpoint& s) { accept(s, plan); });
        break;
      case ServerPlan::reject: send_rej(ep, plan); break;
      case ServerPlan::destroy_in_callback: destroy(ep); break;
    }
  }

  void reacts(Endpoint& ep, Plan& plan, const Event& e) {
    const Side from = peer_of(ep.side);
    switch (e.type) {
      case EventType::rep_received: {
        const auto* rep = std::get_if<RepReceived>(&e.params);
        if (rep == nullptr || rep->remote_qpn != plan.qpn(Side::server) || rep->starting_psn != plan.psn(Side::server) ||
            !carries(e.private_data, private_data(plan, from, Msg::rep), Msg::rep)) {
          checker_.violation(&ep, "REP differs from what the server sent");
        }
        answer_rep(ep, plan);
        break;
      }
      case EventType::rtu_received:
        if (!carries(e.private_data, private_data(plan, from, Msg::rtu), Msg::rtu)) {
          checker_.violation(&ep, "RTU private data differs");
        }
        break;
      case EventType::rej_received: check_rej(ep, plan, e); break;
      case EventType::mra_received:
        ++mra_events_;
        // Ours carry private data; the engine's automatic ones carry none.
        if (!carries(e.private_data, private_data(plan, from, Msg::mra), Msg::mra) &&
            !carries(e.private_data, {}, Msg::mra)) {
          checker_.violation(&ep, "MRA private data differs");
        }
        break;
      case EventType::dreq_received: {
        const auto& sent = plan.dreq_sent[index(from)];
        if (!sent || !carries(e.private_data, *sent, Msg::dreq)) checker_.violation(&ep, "DREQ the peer never sent");
        if (plan.destroys_on_dreq[index(ep.side)]) {
          destroy(ep);
        } else {
          const std::vector<std::uint8_t> data = private_data(plan, ep.side, Msg::drep);
          if (checker_.call(ep, Call::send_drep, [&] { return engine(ep.side).send_drep(ep.id, data); }) == Status::ok) {
            plan.drep_sent[index(ep.side)] = data;
          }
        }
        break;
      }
      case EventType::drep_received: {
        // The peer's own DREP, or the empty one it answers for a connection it already forgot.
        const auto& sent = plan.drep_sent[index(from)];
        if (!carries(e.private_data, {}, Msg::drep) && !(sent && carries(e.private_data, *sent, Msg::drep))) {
          checker_.violation(&ep, "DREP the peer never sent");
        }
        break;
      }
      default: break;  // req_error, rep_error, dreq_error, user_established, timewait_exit
    }
  }

  void check_rej(Endpoint& ep, const Plan& plan, const Event& e) {
    const auto* rej = std::get_if<RejReceived>(&e.params);
    if (rej == nullptr) return checker_.violation(&ep, "rej_received without its parameters");
    ++rej_reasons_[index(ep.side)][rej->reason];
    // Client: the server's REJ, its REJ for lack of room, its REP timeout, or a REQ retry that
    // found the server's endpoint in time-wait after its REJ was lost; or no listen at all.
    // Server: the client's REJ of the REP, its give-up (timeout), or a REP to a freed client ID.
    const std::set<std::uint16_t> possible =
        ep.side == Side::server ? std::set<std::uint16_t>{kRejTimeout, kRejInvalidCommId, kRejConsumer}
        : plan.listened ? std::set<std::uint16_t>{kRejNoResources, kRejTimeout, kRejStaleConnection, kRejConsumer}
                                : std::set<std::uint16_t>{kRejInvalidServiceId};
    if (possible.count(rej->reason) == 0) {
      checker_.violation(&ep, "REJ reason " + std::to_string(rej->reason) + " the script cannot cause");
    }
    const Side from = peer_of(ep.side);
    const bool scripted = rej->reason == kRejConsumer &&
                          (from == Side::server ? plan.server == ServerPlan::reject : plan.client == ClientPlan::reject_rep);
    const std::vector<std::uint8_t> expected = scripted ? private_data(plan, from, Msg::rej) : std::vector<std::uint8_t>{};
    if (!carries(e.private_data, expected, Msg::rej)) checker_.violation(&ep, "REJ private data differs");
    if (rej->reason == kRejTimeout) {
      // The ARI names the CA that timed out: the peer's.
      const Guid guid = from == Side::server ? cluster_.server_port().node_guid : cluster_.client_port().node_guid;
      std::array<std::uint8_t, 8> ari{};
      for (std::size_t i = 0; i < ari.size(); ++i) ari[i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
      if (!std::equal(rej->ari.begin(), rej->ari.end(), ari.begin(), ari.end())) {
        checker_.violation(&ep, "REJ timeout ARI does not name the peer's CA");
      }
    }
  }

  void answer_rep(Endpoint& ep, Plan& plan) {
    switch (plan.client) {
      case ClientPlan::rtu:
      case ClientPlan::destroy_while_connecting: send_rtu(ep, plan); break;
      case ClientPlan::rtu_slowly:
        at(plan.client_delay_ns, ep, [this, &plan](Endpoint& c) { send_rtu(c, plan); });
        break;
      case ClientPlan::mra_then_rtu:
        send_mra(ep, plan);
        at(plan.client_delay_ns, ep, [this, &plan](Endpoint& c) { send_rtu(c, plan); });
        break;
      case ClientPlan::reject_rep: send_rej(ep, plan); break;
      case ClientPlan::destroy_in_callback: destroy(ep); break;
    }
  }

  void accept(Endpoint& ep, const Plan& plan) {
    const std::vector<std::uint8_t> data = private_data(plan, Side::server, Msg::rep);
    RepParams p;
    p.qpn = plan.qpn(Side::server);
    p.starting_psn = plan.psn(Side::server);
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.target_ack_delay = kTargetAckDelay;
    p.private_data = data;
    (void)checker_.call(ep, Call::send_rep, [&] { return engine(Side::server).send_rep(ep.id, p); });
  }

  void send_mra(Endpoint& ep, const Plan& plan) {
    const std::vector<std::uint8_t> data = private_data(plan, ep.side, Msg::mra);
    MraParams p;
    p.service_timeout = kMraServiceTimeout;
    p.private_data = data;
    (void)checker_.call(ep, Call::send_mra, [&] { return engine(ep.side).send_mra(ep.id, p); });
  }

  void send_rej(Endpoint& ep, const Plan& plan) {
    const std::vector<std::uint8_t> data = private_data(plan, ep.side, Msg::rej);
    RejParams p;
    p.reason = kRejConsumer;
    p.private_data = data;
    (void)checker_.call(ep, Call::send_rej, [&] { return engine(ep.side).send_rej(ep.id, p); });
  }

  void send_rtu(Endpoint& ep, Plan& plan) {
    const std::vector<std::uint8_t> data = private_data(plan, Side::client, Msg::rtu);
    if (checker_.call(ep, Call::send_rtu, [&] { return engine(Side::client).send_rtu(ep.id, data); }) != Status::ok) {
      return;
    }
    // The server endpoint this client talks to: the one whose REP it accepted.
    const auto it = server_by_comm_id_.find(ep.established_info ? ep.established_info->remote_comm_id : 0);
    Endpoint* server = it == server_by_comm_id_.end() ? nullptr : it->second;
    if (server == nullptr) return checker_.violation(&ep, "established with a server endpoint never seen");
    if (plan.server_establishes) {
      at(between(0, 300 * kUs), *server, [this](Endpoint& s) {
        (void)checker_.call(s, Call::establish, [&] { return engine(Side::server).establish(s.id); });
      });
    }
    const auto disconnect = [this, &plan](Endpoint& x) {
      const std::vector<std::uint8_t> pd = private_data(plan, x.side, Msg::dreq);
      if (checker_.call(x, Call::send_dreq, [&] { return engine(x.side).send_dreq(x.id, pd); }) == Status::ok) {
        plan.dreq_sent[index(x.side)] = pd;
      }
    };
    switch (plan.release) {
      case Release::client_dreq: at(plan.hold_ns, ep, disconnect); break;
      case Release::server_dreq: at(plan.hold_ns, *server, disconnect); break;
      case Release::both_dreq:  // the same instant: the DREQs cross
        at(plan.hold_ns, ep, disconnect);
        at(plan.hold_ns, *server, disconnect);
        break;
      case Release::client_destroy: destroy_at(plan.hold_ns, ep); break;
      case Release::server_destroy: destroy_at(plan.hold_ns, *server); break;
      case Release::keep: break;
    }
  }

  // A call the endpoint's phase forbids, at a random moment: it must fail with invalid_state and
  // change nothing (the checker compares the engine's state afterwards).
  void meddle(Endpoint& ep) {
    constexpr std::array<Call, 7> kCalls{Call::send_rep,  Call::send_rtu,  Call::send_rej, Call::send_mra,
                                         Call::send_dreq, Call::send_drep, Call::establish};
    const Call what = kCalls[below(kCalls.size())];
    if (InvariantChecker::allows(ep, what)) return;
    Engine& e = engine(ep.side);
    (void)checker_.call(ep, what, [&] {
      switch (what) {
        case Call::send_rep: return e.send_rep(ep.id, RepParams{});
        case Call::send_rtu: return e.send_rtu(ep.id, {});
        case Call::send_rej: return e.send_rej(ep.id, RejParams{});
        case Call::send_mra: return e.send_mra(ep.id, MraParams{});
        case Call::send_dreq: return e.send_dreq(ep.id, {});
        case Call::send_drep: return e.send_drep(ep.id, {});
        case Call::establish: return e.establish(ep.id);
        case Call::send_req: break;
      }
      return Status::not_supported;
    });
  }

  // Destroys through the checker, noting what the engine sends for it: a DREQ when established,
  // a DREP to a pending DREQ, both without private data. The engine's state says which (a polled
  // endpoint's model may be behind it).
  void destroy(Endpoint& ep) {
    ConnectionInfo info;
    if (!ep.destroy_called && engine(ep.side).connection_info(ep.id, info) == Status::ok) {
      Plan& plan = plans_[ep.conn];
      if (info.state == "established") plan.dreq_sent[index(ep.side)].emplace();
      if (info.state == "dreq_rcvd") plan.drep_sent[index(ep.side)].emplace();
    }
    (void)checker_.destroy(ep);
  }

  // An endpoint back to idle is given back, from its callback or a little later.
  void retire_if_done(Endpoint& ep) {
    if (ep.phase != Phase::done || ep.destroy_called || !retiring_.insert(&ep).second) return;
    if (checker_.in_callback(ep) && chance(50)) return destroy(ep);
    destroy_at(between(0, 200 * kMs), ep);
  }

  // ---- driving the clock -----------------------------------------------------------------------

  [[nodiscard]] bool quiescent() {
    return cluster_.fabric().total_pending() == 0 && !engine(Side::client).next_timer_ns() &&
           !engine(Side::server).next_timer_ns() && queues_[0]->size() == 0 && queues_[1]->size() == 0;
  }

  // Runs the script's agenda and the engines until both are through and nothing moves. Each step
  // runs the clock to the next action (at most a poll interval), then the destroys that race the
  // queued events, then drains the queues, then the other actions due (after a drain, so that
  // the model of a polled endpoint is up to date when the script acts on it).
  void drive() {
    VirtualClock& clock = cluster_.clock();
    const std::uint64_t deadline = clock.now_ns() + kMaxRunNs;
    while (!agenda_.empty() || !quiescent()) {
      const std::uint64_t now = clock.now_ns();
      if (now > deadline) {
        ADD_FAILURE() << "seed " << case_.seed << ": still busy after " << kMaxRunNs / Cluster::kSecond << " s";
        return;
      }
      const std::uint64_t next = agenda_.empty() ? now + kPollIntervalNs
                                                 : std::clamp(agenda_.begin()->first, now, now + kPollIntervalNs);
      cluster_.run_for(next - now);
      run_due(true);
      drain(Side::client);
      drain(Side::server);
      run_due(false);
      drain(Side::client);
      drain(Side::server);
    }
  }

  // Runs the agenda's due actions of one kind, also those they add for now.
  void run_due(bool before_poll) {
    for (;;) {
      const auto due = agenda_.upper_bound(cluster_.clock().now_ns());
      const auto it = std::find_if(agenda_.begin(), due, [&](const auto& e) { return e.second.before_poll == before_poll; });
      if (it == due) return;
      const std::function<void()> action = std::move(it->second.run);
      agenda_.erase(it);
      action();
    }
  }

  // ---- end-of-run checks -----------------------------------------------------------------------

  // A connection both sides count as established is one connection: IDs, QPNs and PSNs crosswise,
  // each on the port the script chose. The server cannot be established alone, nor twice.
  void check_both_sides_agree() {
    std::map<std::uint32_t, std::vector<const Endpoint*>> servers;
    for (const Endpoint& ep : checker_.endpoints()) {
      if (ep.side == Side::server && ep.outcome == Outcome::established) servers[ep.conn].push_back(&ep);
    }
    for (const Plan& plan : plans_) {
      const Endpoint* c = plan.client_ep;
      const auto it = servers.find(plan.conn);
      if (it == servers.end()) {
        if (c != nullptr && c->outcome == Outcome::established) ++half_open_;
        continue;
      }
      if (it->second.size() > 1) checker_.violation(c, "two server endpoints established for one connection");
      const Endpoint* s = it->second.front();
      if (c == nullptr || c->outcome != Outcome::established || !c->established_info || !s->established_info) {
        checker_.violation(s, "server established without the client");
        continue;
      }
      const ConnectionInfo& ci = *c->established_info;
      const ConnectionInfo& si = *s->established_info;
      if (ci.local_comm_id != si.remote_comm_id || ci.remote_comm_id != si.local_comm_id ||
          ci.local_qpn != si.remote_qpn || ci.remote_qpn != si.local_qpn || ci.local_psn != si.remote_psn ||
          ci.remote_psn != si.local_psn || !ci.active || si.active ||
          ci.port != cluster_.client_port(plan.client_port).port_num ||
          si.port != cluster_.server_port(plan.server_port).port_num) {
        checker_.violation(c, "client and server disagree on the connection");
      }
    }
  }

  // Every REQ the soak left in a listen's backlog went out of it: on a clean fabric, kBacklog
  // fresh REQs to each listen all reach the application while it holds them, and one more is
  // refused for lack of room.
  void check_backlog_is_whole() {
    cluster_.fabric().clear_faults();
    for (const bool polled : {false, true}) {
      std::vector<Id> held;
      std::size_t refused = 0;
      cluster_.server().react = [&held](const Event& e) {
        if (e.type == EventType::req_received) held.push_back(e.id);
      };
      cluster_.client().react = [&refused](const Event& e) {
        const auto* rej = std::get_if<RejReceived>(&e.params);
        if (rej != nullptr && rej->reason == kRejNoResources) ++refused;
      };
      std::vector<Id> asking;
      for (std::uint32_t i = 0; i <= kBacklog; ++i) {
        Plan probe;
        probe.conn = kConnections + i;  // QPNs no connection of the soak used
        probe.polled[index(Side::server)] = polled;
        probe.max_cm_retries = 0;
        Id id;
        ASSERT_EQ(engine(Side::client).create_id(cluster_.client().delivery(), nullptr, id), Status::ok);
        EXPECT_EQ(engine(Side::client).send_req(id, req_params(probe, {})), Status::ok);
        asking.push_back(id);
      }
      cluster_.run_for(10 * kMs);
      const std::size_t n = engine(Side::server).poll(*queues_[index(Side::server)], batch_);
      for (std::size_t i = 0; i < n; ++i) {
        if (batch_[i].type == EventType::req_received) held.push_back(batch_[i].id);
        engine(Side::server).release(batch_[i]);
      }
      EXPECT_EQ(held.size(), kBacklog) << (polled ? "polled listen" : "callback listen");
      EXPECT_EQ(refused, 1u) << (polled ? "polled listen" : "callback listen");
      for (Id id : held) EXPECT_EQ(engine(Side::server).destroy(id), Status::ok);
      for (Id id : asking) EXPECT_EQ(engine(Side::client).destroy(id), Status::ok);
      drive();
    }
  }

  // With every endpoint gone and time-wait over, each engine hands out all its slots again and
  // holds no MAD.
  void check_nothing_leaks() {
    for (Side side : {Side::client, Side::server}) {
      Peer& peer = side == Side::client ? cluster_.client() : cluster_.server();
      EXPECT_EQ(peer.engine().mad_buffers_in_use(), 0u);
      std::vector<Id> ids;
      Id id;
      while (ids.size() <= kMaxEndpoints && peer.engine().create_id(peer.delivery(), nullptr, id) == Status::ok) {
        ids.push_back(id);
      }
      EXPECT_EQ(ids.size(), kMaxEndpoints);
      EXPECT_EQ(peer.engine().create_id(peer.delivery(), nullptr, id), Status::no_resources);
      for (Id each : ids) EXPECT_EQ(peer.engine().destroy(each), Status::ok);
      EXPECT_EQ(peer.engine().mad_buffers_in_use(), 0u);
    }
  }

  // The soak proves something only if the faults and the paths it means to exercise happened.
  void check_faults_were_exercised() {
    loopback::PortCounters fabric{};
    for (std::uint16_t hca = 0; hca < 2; ++hca) {
      for (std::uint16_t port = 0; port < 2; ++port) {
        const loopback::PortCounters c = cluster_.fabric().counters({hca, port});
        fabric.dropped_by_fault += c.dropped_by_fault;
        fabric.duplicated += c.duplicated;
        fabric.delayed += c.delayed;
        fabric.dropped_queue_full += c.dropped_queue_full;
      }
    }
    EXPECT_GT(fabric.dropped_by_fault, 0u);
    EXPECT_GT(fabric.duplicated, 0u);
    EXPECT_GT(fabric.delayed, 0u);
    EXPECT_EQ(fabric.dropped_queue_full, 0u);
    for (const std::uint8_t port_num : {std::uint8_t{1}, std::uint8_t{2}}) {
      EXPECT_GT(cluster_.server().port_counters(port_num).of(CmMessageKind::req).received, 0u) << "port " << +port_num;
      EXPECT_GT(cluster_.client().port_counters(port_num).of(CmMessageKind::req).sent, 0u) << "port " << +port_num;
    }
    EXPECT_GT(mra_events_, 0u);
    std::array<std::map<Outcome, std::size_t>, 2> outcomes;
    for (const Endpoint& ep : checker_.endpoints()) ++outcomes[index(ep.side)][ep.outcome];
    for (Outcome o : {Outcome::established, Outcome::rejected_by_peer, Outcome::rejected_by_us, Outcome::timed_out,
                      Outcome::abandoned}) {
      EXPECT_GT(outcomes[index(Side::client)][o], 0u) << "client outcome " << static_cast<int>(o);
    }
    EXPECT_GT(outcomes[index(Side::server)][Outcome::established], kConnections / 3);
    outcomes_ = outcomes;
  }

  void report() {
    std::cout << "soak seed " << case_.seed << " loss " << case_.loss_pct << "%: " << kConnections
              << " connections, virtual " << cluster_.clock().now_ns() / Cluster::kSecond << " s, create_id retries "
              << create_id_retries_ << ", half-open " << half_open_ << ", MRA events " << mra_events_ << "\n";
    for (Side side : {Side::client, Side::server}) {
      std::cout << "  " << (side == Side::client ? "client" : "server") << " outcomes:";
      constexpr const char* kNames[] = {"none", "established", "rejected_by_peer", "rejected_by_us", "timed_out",
                                        "abandoned"};
      for (const auto& [o, n] : outcomes_[index(side)]) std::cout << " " << kNames[static_cast<int>(o)] << "=" << n;
      std::cout << "; REJ reasons:";
      for (const auto& [reason, n] : rej_reasons_[index(side)]) std::cout << " " << reason << "x" << n;
      std::cout << "\n";
    }
    // Paths worth knowing they ran: REQ copies that reached the application again after it
    // answered the first (the engine forgets a rejected REQ, as Linux' CM does), DREQ collisions,
    // and establish() winning the race against the RTU.
    std::map<std::uint32_t, std::size_t> server_endpoints;
    std::map<std::uint32_t, std::size_t> dreqs_received;
    std::size_t early_establish = 0;
    const auto saw = [](const Endpoint& ep, std::string_view what) {
      return std::find(ep.history.begin(), ep.history.end(), what) != ep.history.end();
    };
    for (const Endpoint& ep : checker_.endpoints()) {
      if (ep.side == Side::server) ++server_endpoints[ep.conn];
      if (saw(ep, "dreq_received")) ++dreqs_received[ep.conn];
      if (saw(ep, "user_established")) ++early_establish;
    }
    const auto count = [](const std::map<std::uint32_t, std::size_t>& m, std::size_t at_least) {
      return std::count_if(m.begin(), m.end(), [at_least](const auto& kv) { return kv.second >= at_least; });
    };
    std::cout << "  REQs seen again " << count(server_endpoints, 2) << ", DREQ collisions " << count(dreqs_received, 2)
              << ", establish() before the RTU " << early_establish << "\n";
  }

  Engine& engine(Side side) { return (side == Side::client ? cluster_.client() : cluster_.server()).engine(); }

  SoakCase case_;
  Cluster cluster_;
  InvariantChecker checker_;
  std::mt19937_64 rng_;
  std::vector<Plan> plans_;  // never resized after construction: the agenda holds references
  struct Entry {
    bool before_poll = false;
    std::function<void()> run;
  };
  std::multimap<std::uint64_t, Entry> agenda_;  // by time; equal times in order
  std::array<EventQueue*, 2> queues_{};  // per side, for endpoints with poll delivery
  std::vector<Event> batch_;
  std::map<std::uint32_t, Endpoint*> server_by_comm_id_;        // the latest with that comm ID
  std::set<const Endpoint*> retiring_;
  std::array<Id, 2> listen_ids_;  // callback delivery (kListenedService), poll (kPolledService)
  int listen_context_ = 0;  // its address is the listen's context
  std::size_t create_id_retries_ = 0;
  std::size_t half_open_ = 0;
  std::size_t mra_events_ = 0;
  std::array<std::map<std::uint16_t, std::size_t>, 2> rej_reasons_;
  std::array<std::map<Outcome, std::size_t>, 2> outcomes_;
};

class Soak : public ::testing::TestWithParam<SoakCase> {};

TEST_P(Soak, EveryEndpointEndsCleanlyAndNothingLeaks) {
  SoakRun run(GetParam());
  run.run();
  InvariantChecker& checker = run.checker();
  EXPECT_EQ(checker.violation_count(), 0u) << "seed " << GetParam().seed;
  for (const std::string& v : checker.violations()) ADD_FAILURE() << "seed " << GetParam().seed << ": " << v;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Soak,
                         ::testing::Values(SoakCase{0x5EED'0001, 5, 3 * kMs}, SoakCase{0x5EED'0002, 7, 400 * kMs},
                                           SoakCase{0x5EED'0003, 8, 3 * kMs}, SoakCase{0x5EED'0004, 10, 400 * kMs}),
                         [](const ::testing::TestParamInfo<SoakCase>& param) {
                           return "seed" + std::to_string(param.param.seed & 0xFFFF);
                         });

}  // namespace
}  // namespace fastcm::test
