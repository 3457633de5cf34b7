// The seeded random soak of issue 3: a few hundred connections between a client and a server
// engine on two 2-port HCAs of a loopback fabric that loses, duplicates, delays and reorders every
// CM MAD in both directions. A seeded script plays both applications: it connects from either
// port to either port with random private data, accepts, rejects, answers slowly (so the engine
// MRAs by itself) or MRAs explicitly, disconnects from either side or both at once, destroys from
// callbacks and between steps, and asks for a service nobody listens on; about a third of the
// endpoints take their events by EventQueue instead of callbacks, and now and then the script
// makes a call the endpoint's state forbids. InvariantChecker watches every event and call. The
// run ends when nothing moves any more; then, with every endpoint destroyed and its time-wait
// over, both listens' backlogs and every endpoint slot must come back and no MAD may be taken.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tests/conformance/harness.h"
#include "tests/conformance/invariant_checker.h"
#include "tests/conformance/scenario.h"
#include "tests/conformance/soak_checks.h"
#include "tests/conformance/soak_plan.h"

namespace fastcm::test::soak {
namespace {

constexpr std::uint32_t kConnections = 400;
constexpr std::uint64_t kStartWindowNs = 8 * Cluster::kSecond;
constexpr std::uint64_t kMaxRunNs = 3600 * Cluster::kSecond;  // of virtual time, to catch livelock
constexpr std::uint32_t kMaxEndpoints = 64;  // per engine, time-wait included: exhaustion happens
constexpr std::uint32_t kBacklog = 24;  // REQs the server application holds unanswered, at most
constexpr std::uint32_t kQueueCapacity = 4096;  // never full here: a full queue would lose events
constexpr std::uint64_t kPollIntervalNs = 5 * kMs;  // how often the application drains its queues

struct SoakCase {
  std::uint64_t seed = 0;
  double loss_pct = 0;
  std::uint64_t reorder_window_ns = 3 * kMs;
};

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
    for (Side side : {Side::client, Side::server})
      queues_[index(side)] = engine(side).create_event_queue(kQueueCapacity);
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
    for (std::uint32_t conn = 0; conn < kConnections; ++conn)
      plans_.push_back(make_plan(rng_, conn, kStartWindowNs));
  }

  void run() {
    for (Plan& plan : plans_)
      agenda_.emplace(plan.start_ns, Entry{false, [this, &plan] { start(plan); }});
    drive();
    // Nothing moves and the script is through: what is still held is idle (rejected, timed out,
    // out of time-wait) or established (kept, or half-open after the peer gave up on its RTU).
    for (Endpoint& ep : checker_.endpoints()) {
      if (ep.destroy_called) continue;
      if (ep.phase != Phase::done && ep.phase != Phase::established)
        checker_.violation(&ep, "stuck when quiescent");
      destroy(ep);
    }
    drive();
    checker_.check_all_released();
    const std::size_t half_open = check_both_sides_agree(checker_, plans_, cluster_);
    const auto probe = [this](std::uint32_t i, bool polled) {
      Plan plan;
      plan.conn = kConnections + i;  // QPNs no connection of the soak used
      plan.polled[index(Side::server)] = polled;
      plan.max_cm_retries = 0;
      return request(plan, cluster_, {});
    };
    check_backlog_is_whole(cluster_, *queues_[index(Side::server)], kBacklog, probe,
                           [this] { drive(); });
    check_nothing_leaks(cluster_, kMaxEndpoints);
    const Tally t = tally(checker_, cluster_);
    check_coverage(t, cluster_, mra_events_, kConnections);
    std::cout << "soak seed " << case_.seed << " loss " << case_.loss_pct << "% reorder window "
              << case_.reorder_window_ns / kMs << " ms: " << kConnections
              << " connections, virtual " << cluster_.clock().now_ns() / Cluster::kSecond
              << " s, create_id retries " << create_id_retries_ << ", half-open " << half_open
              << ", MRA events " << mra_events_ << "\n";
    print_summary(t, rej_reasons_);
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

  [[nodiscard]] std::vector<std::uint8_t> private_data(const Plan& plan, Side from,
                                                       Msg kind) const {
    return soak::private_data(case_.seed, plan, from, kind);
  }

  // Runs `action` on `ep` after `delay`, then retires the endpoint if that left it idle.
  void at(std::uint64_t delay, Endpoint& ep, std::function<void(Endpoint&)> action,
          bool before_poll = false) {
    agenda_.emplace(cluster_.clock().now_ns() + delay,
                    Entry{before_poll, [this, &ep, action = std::move(action)] {
                            action(ep);
                            retire_if_done(ep);
                          }});
  }
  // A destroy after `delay`. A polled endpoint's destroy runs before the application drains its
  // queue: it races the events already waiting there, which must never come out of poll.
  void destroy_at(std::uint64_t delay, Endpoint& ep) {
    const auto gone = [this](Endpoint& e) { destroy(e); };
    at(delay, ep, gone, ep.polled);
  }

  void start(Plan& plan) {
    Id id;
    const bool polled = plan.polled[index(Side::client)];
    const Delivery delivery =
        polled ? Delivery{.queue = queues_[index(Side::client)]} : cluster_.client().delivery();
    const Status s = engine(Side::client).create_id(delivery, &plan, id);
    if (s == Status::no_resources) {  // every slot busy (time-wait included): try again later
      ++create_id_retries_;
      agenda_.emplace(cluster_.clock().now_ns() + 20 * kMs,
                      Entry{false, [this, &plan] { start(plan); }});
      return;
    }
    ASSERT_EQ(s, Status::ok);
    Endpoint& ep = checker_.created(Side::client, id, plan.conn, polled);
    plan.client_ep = &ep;
    const std::vector<std::uint8_t> data = private_data(plan, Side::client, Msg::req);
    const ReqParams p = request(plan, cluster_, data);
    (void)checker_.call(ep, Call::send_req, [&] { return engine(Side::client).send_req(id, p); });
    at(rng_.below(3 * Cluster::kSecond), ep, [this](Endpoint& c) { meddle(c); });
    if (plan.client == ClientPlan::destroy_while_connecting) destroy_at(plan.client_delay_ns, ep);
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
        if (!eps[i]->polled)
          checker_.violation(eps[i], "a polled event for an endpoint with callbacks");
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
      if (e.context != &plan && !before_context)
        checker_.violation(&ep, "event context is not the endpoint's");
      if (rng_.chance(10)) meddle(ep);
      reacts(ep, plan, e);
    }
    retire_if_done(ep);
  }

  void on_req(Endpoint& ep, const Event& e) {
    const auto* req = std::get_if<ReqReceived>(&e.params);
    if (req == nullptr || e.private_data.size() != kMaxReqPrivateData ||
        e.context != &listen_context_) {
      return checker_.violation(&ep,
                                "req_received without its parameters, private data or context");
    }
    std::uint32_t conn = 0;
    for (std::size_t i = 0; i < 4; ++i) conn = conn << 8 | e.private_data[i];
    if (conn >= plans_.size())
      return checker_.violation(&ep, "REQ private data names no connection");
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
    at(rng_.below(3 * Cluster::kSecond), ep, [this](Endpoint& s) { meddle(s); });
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
        if (rep == nullptr || rep->remote_qpn != plan.qpn(Side::server) ||
            rep->starting_psn != plan.psn(Side::server) ||
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
        if (!sent || !carries(e.private_data, *sent, Msg::dreq))
          checker_.violation(&ep, "DREQ the peer never sent");
        if (plan.destroys_on_dreq[index(ep.side)]) {
          destroy(ep);
        } else {
          const std::vector<std::uint8_t> data = private_data(plan, ep.side, Msg::drep);
          if (checker_.call(ep, Call::send_drep,
                            [&] { return engine(ep.side).send_drep(ep.id, data); }) == Status::ok) {
            plan.drep_sent[index(ep.side)] = data;
          }
        }
        break;
      }
      case EventType::drep_received: {
        // The peer's own DREP, or the empty one it answers for a connection it already forgot.
        const auto& sent = plan.drep_sent[index(from)];
        if (!carries(e.private_data, {}, Msg::drep) &&
            !(sent && carries(e.private_data, *sent, Msg::drep))) {
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
        ep.side == Side::server
            ? std::set<std::uint16_t>{kRejTimeout, kRejInvalidCommId, kRejConsumer}
        : plan.listened ? std::set<std::uint16_t>{kRejNoResources, kRejTimeout, kRejStaleConnection,
                                                  kRejConsumer}
                        : std::set<std::uint16_t>{kRejInvalidServiceId};
    if (possible.count(rej->reason) == 0) {
      checker_.violation(&ep,
                         "REJ reason " + std::to_string(rej->reason) + " the script cannot cause");
    }
    const Side from = peer_of(ep.side);
    const bool scripted = rej->reason == kRejConsumer &&
                          (from == Side::server ? plan.server == ServerPlan::reject
                                                : plan.client == ClientPlan::reject_rep);
    const std::vector<std::uint8_t> expected =
        scripted ? private_data(plan, from, Msg::rej) : std::vector<std::uint8_t>{};
    if (!carries(e.private_data, expected, Msg::rej))
      checker_.violation(&ep, "REJ private data differs");
    if (rej->reason == kRejTimeout) {
      // The ARI names the CA that timed out: the peer's.
      const Guid guid = from == Side::server ? cluster_.server_port().node_guid
                                             : cluster_.client_port().node_guid;
      std::array<std::uint8_t, 8> ari{};
      for (std::size_t i = 0; i < ari.size(); ++i)
        ari[i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
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
    (void)checker_.call(ep, Call::send_rep,
                        [&] { return engine(Side::server).send_rep(ep.id, p); });
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
    if (checker_.call(ep, Call::send_rtu,
                      [&] { return engine(Side::client).send_rtu(ep.id, data); }) != Status::ok) {
      return;
    }
    // The server endpoint this client talks to: the one whose REP it accepted.
    const auto it =
        server_by_comm_id_.find(ep.established_info ? ep.established_info->remote_comm_id : 0);
    Endpoint* server = it == server_by_comm_id_.end() ? nullptr : it->second;
    if (server == nullptr)
      return checker_.violation(&ep, "established with a server endpoint never seen");
    if (plan.server_establishes) {
      at(rng_.between(0, 300 * kUs), *server, [this](Endpoint& s) {
        (void)checker_.call(s, Call::establish,
                            [&] { return engine(Side::server).establish(s.id); });
      });
    }
    const auto disconnect = [this, &plan](Endpoint& x) {
      const std::vector<std::uint8_t> pd = private_data(plan, x.side, Msg::dreq);
      if (checker_.call(x, Call::send_dreq, [&] { return engine(x.side).send_dreq(x.id, pd); }) ==
          Status::ok) {
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
    constexpr std::array<Call, 7> kCalls{Call::send_rep, Call::send_rtu,  Call::send_rej,
                                         Call::send_mra, Call::send_dreq, Call::send_drep,
                                         Call::establish};
    const Call what = kCalls[rng_.below(kCalls.size())];
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
        default: break;  // kCalls holds only the calls above
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
      if (info.state == CepState::established) plan.dreq_sent[index(ep.side)].emplace();
      if (info.state == CepState::dreq_rcvd) plan.drep_sent[index(ep.side)].emplace();
    }
    (void)checker_.destroy(ep);
  }

  // An endpoint back to idle is given back, from its callback or a little later.
  void retire_if_done(Endpoint& ep) {
    if (ep.phase != Phase::done || ep.destroy_called || !retiring_.insert(&ep).second) return;
    if (checker_.in_callback(ep) && rng_.chance(50)) return destroy(ep);
    destroy_at(rng_.between(0, 200 * kMs), ep);
  }

  // ---- driving the clock -----------------------------------------------------------------------

  [[nodiscard]] bool quiescent() {
    return cluster_.fabric().total_pending() == 0 && !engine(Side::client).next_timer_ns() &&
           !engine(Side::server).next_timer_ns() && queues_[0]->size() == 0 &&
           queues_[1]->size() == 0;
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
        ADD_FAILURE() << "seed " << case_.seed << ": still busy after "
                      << kMaxRunNs / Cluster::kSecond << " s";
        return;
      }
      const std::uint64_t next =
          agenda_.empty() ? now + kPollIntervalNs
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
      const auto it = std::find_if(
          agenda_.begin(), due, [&](const auto& e) { return e.second.before_poll == before_poll; });
      if (it == due) return;
      const std::function<void()> action = std::move(it->second.run);
      agenda_.erase(it);
      action();
    }
  }

  Engine& engine(Side side) {
    return (side == Side::client ? cluster_.client() : cluster_.server()).engine();
  }

  SoakCase case_;
  Cluster cluster_;
  InvariantChecker checker_;
  ScriptRng rng_;
  std::vector<Plan> plans_;  // never resized after construction: the agenda holds references
  struct Entry {
    bool before_poll = false;
    std::function<void()> run;
  };
  std::multimap<std::uint64_t, Entry> agenda_;  // by time; equal times in order
  std::array<EventQueue*, 2> queues_{};         // per side, for endpoints with poll delivery
  std::vector<Event> batch_;
  std::map<std::uint32_t, Endpoint*> server_by_comm_id_;  // the latest with that comm ID
  std::set<const Endpoint*> retiring_;
  std::array<Id, 2> listen_ids_;  // callback delivery (kListenedService), poll (kPolledService)
  int listen_context_ = 0;        // its address is the listen's context
  std::size_t create_id_retries_ = 0;
  std::size_t mra_events_ = 0;
  std::array<std::map<std::uint16_t, std::size_t>, 2> rej_reasons_;
};

class Soak : public ::testing::TestWithParam<SoakCase> {};

TEST_P(Soak, EveryEndpointEndsCleanlyAndNothingLeaks) {
  SoakRun run(GetParam());
  run.run();
  InvariantChecker& checker = run.checker();
  EXPECT_EQ(checker.violation_count(), 0u) << "seed " << GetParam().seed;
  for (const std::string& v : checker.violations())
    ADD_FAILURE() << "seed " << GetParam().seed << ": " << v;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Soak,
                         ::testing::Values(SoakCase{0x5EED'0001, 5, 3 * kMs},
                                           SoakCase{0x5EED'0002, 7, 400 * kMs},
                                           SoakCase{0x5EED'0003, 8, 3 * kMs},
                                           SoakCase{0x5EED'0004, 10, 400 * kMs}),
                         [](const ::testing::TestParamInfo<SoakCase>& param) {
                           return "seed" + std::to_string(param.param.seed & 0xFFFF);
                         });

// The soak cannot starve an engine of MADs (the harness must receive every MAD that is due), so
// "nothing leaks" under a tight pool is checked here, with the smallest pool an engine takes.
class TightPool : public ConnectScenario {
 protected:
  TightPool() : ConnectScenario(loopback::LoopbackConfig::two_hcas(1), config()) {}
  static EngineConfig config() {
    EngineConfig c;
    c.mad_buffers = 32;  // Engine::create's minimum: one receive burst
    c.max_endpoints = 48;
    return c;
  }
};

// A callback can answer the MAD it was handed: the burst's unfilled buffers went back first.
TEST_F(TightPool, CallbacksAnswerFromTheSmallestPool) {
  connect();
  cluster_.run_for(Cluster::kSecond);
  EXPECT_EQ(state_of(client(), client_id_), "established");
  EXPECT_EQ(state_of(server(), server_id_), "established");
}

// Destroying an established endpoint when no MAD is left for its DREQ still frees it after
// time-wait, with its MADs.
TEST_F(TightPool, DestroyWithoutAMadForTheDreqStillFreesTheEndpoint) {
  FASTCM_LOOPBACK_ONLY("LID routing (REQs to an unassigned LID that reach no one)");
  connect();
  cluster_.run_for(Cluster::kSecond);
  ASSERT_EQ(state_of(client(), client_id_), "established");
  ReqParams to_nowhere = req_params();  // each REQ keeps its MAD for retries
  to_nowhere.primary.remote_lid = 0x0F00;
  std::vector<Id> waiting;
  // Until the sent half of every shard is full: then create_id (no room for a handshake) or
  // send_req refuses.
  Status s = Status::ok;
  while (s == Status::ok) {
    Id id;
    s = client().engine().create_id(client().delivery(), nullptr, id);
    if (s != Status::ok) break;
    to_nowhere.qpn = 0x100 + static_cast<Qpn>(waiting.size());
    s = client().engine().send_req(id, to_nowhere);
    waiting.push_back(id);
  }
  ASSERT_EQ(s, Status::no_resources);
  ASSERT_LE(client().engine().mad_buffers_in_use(), config().mad_buffers);
  ASSERT_EQ(client().engine().destroy(client_id_), Status::ok);
  for (Id id : waiting) ASSERT_EQ(client().engine().destroy(id), Status::ok);
  cluster_.run_for(60 * Cluster::kSecond);
  EXPECT_EQ(client().engine().mad_buffers_in_use(), 0u);
  std::vector<Id> all;
  Id id;
  while (all.size() <= config().max_endpoints &&
         client().engine().create_id(client().delivery(), nullptr, id) == Status::ok) {
    all.push_back(id);
  }
  EXPECT_EQ(all.size(), config().max_endpoints);
}

}  // namespace
}  // namespace fastcm::test::soak
