// One side of a CM scenario between two processes on ibsim's simulated fabric: the fastcm engine
// (worker threads, the real clock) over the umad fabric, run under umad2sim by the ibsim tests.
//
//   ibsim_peer --role server --scenario NAME
//   ibsim_peer --role client --scenario NAME --target-lid LID --target-gid GID(32 hex digits)
//
// Prints one line per fact the tests check ("ready lid=.. gid=..", "event ..", "outcome ok"),
// line-buffered on stdout. A server runs until SIGTERM, then prints its counters and leaks and
// exits 0 when none leaked; a client exits 0 when its scenario ended as it expects, 1 otherwise
// (after "outcome failed: ..."), 2 when the fabric or the engine cannot start.
#include <infiniband/umad.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/mad/codec.h"
#include "fabric/umad/umad_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace fastcm::ibsim {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMadHeaderBytes = 24;
// umad2sim 0.10 copies only the first 224 bytes of a received MAD (its receive buffer is one ibsim
// request, 288 bytes, less the 64-byte umad header); the last 32 are whatever malloc left there.
constexpr std::size_t kSimulatedMadBytes = 224;
constexpr std::uint64_t kServiceId = 0x0000'0000'0001'2345;
constexpr std::uint8_t kCmTimeout = 16;  // 4.096 µs · 2^16 ≈ 268 ms: quick retries, room for a slow (ASan) peer
constexpr auto kScenarioDeadline = std::chrono::seconds(30);
// ibsim drops a client's MADs still in flight when the client disconnects, so a process whose
// last MAD nobody answers (a DREP) waits this long before it exits.
constexpr auto kLastMadGrace = std::chrono::milliseconds(200);

std::atomic<bool> g_stop{false};  // set by the SIGTERM handler, read by the server's loop

struct Options {
  std::string role;
  std::string scenario;
  Lid target_lid = 0;
  Gid target_gid{};
};

std::string hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  char two[3];
  for (const std::uint8_t b : bytes) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

bool parse_gid(std::string_view text, Gid& gid) {
  if (text.size() != 32) return false;
  for (std::size_t i = 0; i < 16; ++i) {
    const std::string byte(text.substr(2 * i, 2));
    char* end = nullptr;
    gid.raw[i] = static_cast<std::uint8_t>(std::strtoul(byte.c_str(), &end, 16));
    if (end != byte.c_str() + 2) return false;
  }
  return true;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--role") o.role = value;
    else if (key == "--scenario") o.scenario = value;
    else if (key == "--target-lid") o.target_lid = static_cast<Lid>(std::strtoul(value, nullptr, 0));
    else if (key == "--target-gid") {
      if (!parse_gid(value, o.target_gid)) return false;
    } else return false;
  }
  return (o.role == "server" || o.role == "client") && !o.scenario.empty();
}

// umad2sim dereferences a null agent when a MAD of a class nobody registered arrives, and a
// process with IsSM set (which ibsim requires to deliver CM MADs to QP1) may get SMInfo (0x81)
// and traps (0x01): agents for those classes on a second fd of the port take them and ignore them.
class SimulatorDummyAgents {
 public:
  SimulatorDummyAgents() : fd_(umad_open_port(nullptr, 0)) {
    long all[16 / sizeof(long)] = {};
    if (fd_ < 0) return;
    (void)umad_register(fd_, 0x01, 1, 0, all);
    (void)umad_register(fd_, 0x81, 1, 0, all);
  }
  ~SimulatorDummyAgents() {
    if (fd_ >= 0) umad_close_port(fd_);
  }
  SimulatorDummyAgents(const SimulatorDummyAgents&) = delete;
  SimulatorDummyAgents& operator=(const SimulatorDummyAgents&) = delete;

 private:
  int fd_;
};

// Sends every REQ once more after the first REP arrives for it, so the server sees a duplicate
// REQ in the REP-sent state; checks that the REP answering it is the REP it sent first.
class DuplicateReqFabric final : public Fabric {
 public:
  explicit DuplicateReqFabric(Fabric& inner) : inner_(inner) {}
  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return inner_.ports(); }
  std::size_t send_burst(std::uint16_t port, std::span<const MadPacket* const> pkts) noexcept override {
    for (const MadPacket* p : pkts) {
      if (attr(*p) == mad::AttrId::req && !req_saved_.load(std::memory_order_relaxed)) {
        req_ = *p;
        req_saved_.store(true, std::memory_order_release);  // pairs: recv_burst's acquire
      }
    }
    return inner_.send_burst(port, pkts);
  }
  std::size_t recv_burst(std::uint16_t port, std::span<MadPacket* const> bufs) noexcept override {
    const std::size_t n = inner_.recv_burst(port, bufs);
    for (std::size_t i = 0; i < n; ++i) {
      if (attr(*bufs[i]) != mad::AttrId::rep) continue;
      if (!first_rep_) {
        if (!req_saved_.load(std::memory_order_acquire)) continue;  // pairs: send_burst's release
        first_rep_ = *bufs[i];
        const MadPacket* again[] = {&req_};
        (void)inner_.send_burst(port, again);
      } else if (reps_identical_.load(std::memory_order_relaxed) < 0) {
        // The REP the server kept and sent again, after the MAD header and up to what umad2sim
        // carries. A lone flag read by the main thread: nothing else is published with it.
        const bool same = std::memcmp(first_rep_->mad.data() + kMadHeaderBytes, bufs[i]->mad.data() + kMadHeaderBytes,
                                      kSimulatedMadBytes - kMadHeaderBytes) == 0;
        reps_identical_.store(same ? 1 : 0, std::memory_order_relaxed);
      }
    }
    return n;
  }
  [[nodiscard]] int rx_event_fd(std::uint16_t port) const noexcept override { return inner_.rx_event_fd(port); }
  bool arm_rx_event(std::uint16_t port) noexcept override { return inner_.arm_rx_event(port); }

  // Whether the second REP repeated the first; nullopt until a second REP came.
  [[nodiscard]] std::optional<bool> reps_identical() const {
    const int v = reps_identical_.load(std::memory_order_relaxed);
    return v < 0 ? std::nullopt : std::optional<bool>(v == 1);
  }

 private:
  static mad::AttrId attr(const MadPacket& p) {
    return static_cast<mad::AttrId>(p.mad[16] << 8 | p.mad[17]);
  }
  Fabric& inner_;
  MadPacket req_{};                         // written by the sender before req_saved_
  std::atomic<bool> req_saved_{false};
  std::optional<MadPacket> first_rep_;      // the poller thread's only
  std::atomic<int> reps_identical_{-1};
};

Path path_to(const PortAttr& local, Lid lid, const Gid& gid) {
  Path p;
  p.local_lid = local.lid;
  p.remote_lid = lid;
  p.local_gid = local.gids()[0];
  p.remote_gid = gid;
  p.mtu = local.active_mtu;
  p.packet_life_time = kCmTimeout;
  p.port = local.port_num;
  p.pkey = local.pkeys().empty() ? PKey{0xFFFF} : local.pkeys()[0];
  return p;
}

// A ClassPortInfo Get straight through the fabric, with no engine (the engine sends none, and its
// poller would be a second consumer of the port): the GetResp reaches us only because the fabric
// sends a Get with a MAD-layer timeout.
int class_port_info(Fabric& fabric, Lid target) {
  const auto fail = [](const char* why) {
    std::printf("outcome failed: %s\n", why);
    return 1;
  };
  MadPacket get;
  get.addr.remote_lid = target;
  const mad::MadHeader hdr = mad::cm_header(mad::Method::get, mad::AttrId::class_port_info, 0x5151);
  if (!mad::encode(hdr, mad::ClassPortInfo{}, mad::MadSpan(get.mad)).ok()) return fail("encode");
  const MadPacket* out[] = {&get};
  if (fabric.send_burst(0, out) != 1) return fail("send_burst refused the Get");
  const auto deadline = Clock::now() + kScenarioDeadline;
  MadPacket in;
  MadPacket* slot[] = {&in};
  while (Clock::now() < deadline) {
    if (fabric.recv_burst(0, slot) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    // Past what umad2sim carries a ClassPortInfo is reserved (zero); the simulator leaves garbage.
    std::fill(in.mad.begin() + kSimulatedMadBytes, in.mad.end(), std::uint8_t{0});
    mad::DecodedMad d;
    if (!mad::decode(in.mad, d).ok() || d.header.method != mad::Method::get_resp) {
      std::printf("dropped an undecodable or unexpected MAD\n");
      continue;
    }
    const auto& cpi = std::get<mad::ClassPortInfo>(d.message);
    std::printf("get_resp tid_low=0x%x class_version=%u capability_mask=0x%x\n",
                static_cast<std::uint32_t>(d.header.transaction_id), cpi.class_version, cpi.capability_mask);
    std::printf("outcome ok\n");
    return 0;
  }
  return fail("no GetResp");
}

// The engine, its event queue and the scenario's bookkeeping: one process's side.
class Peer {
 public:
  Peer(Fabric& fabric, const Options& options) : fabric_(fabric), options_(options) {}

  bool start() {
    EngineConfig config;
    config.max_endpoints = 1024;
    config.mad_buffers = 4096;
    config.auto_mra_fraction = 0;  // the scenarios send MRAs themselves
    engine_ = Engine::create(fabric_, clock_, config);
    if (!engine_) return false;
    queue_ = engine_->create_event_queue(1024);
    return queue_ != nullptr;
  }

  int run_server() {
    if (options_.scenario != "idle") {
      ListenParams lp;
      lp.service_id = kServiceId;
      lp.delivery.queue = queue_;
      Id listen;
      if (engine_->listen(lp, listen) != Status::ok) return fail("listen refused");
    }
    print_ready();
    while (!g_stop.load(std::memory_order_relaxed)) {  // a flag alone: nothing else is published
      if (!drain(&Peer::on_server_event)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (slow_rep_at_ && Clock::now() >= *slow_rep_at_) {
        slow_rep_at_.reset();
        accept(slow_id_);
      }
    }
    return finish();
  }

  int run_client() {
    print_ready();
    const PortAttr& port = fabric_.ports()[0];
    Path path = path_to(port, options_.target_lid, options_.target_gid);
    if (options_.scenario == "wrong-gid") {
      // Only a path with a GRH names a GID the server must own (the REQ then leaves with a GRH).
      path.remote_gid.raw[15] ^= 0x01;
      path.subnet_local = false;
      path.hop_limit = 2;
    }
    Delivery d;
    d.queue = queue_;
    if (engine_->create_id(d, nullptr, id_) != Status::ok) return fail("create_id refused");
    if (options_.scenario == "sidr") {
      SidrReqParams sp;
      sp.service_id = kServiceId;
      sp.path = path;
      sp.timeout = kCmTimeout;
      if (engine_->send_sidr_req(id_, sp) != Status::ok) return fail("send_sidr_req refused");
    } else {
      ReqParams rp;
      rp.service_id = kServiceId;
      rp.primary = path;
      rp.qpn = 0x200 + static_cast<Qpn>(port.lid);
      rp.starting_psn = 0x1234;
      rp.responder_resources = 4;
      rp.initiator_depth = 4;
      rp.remote_cm_response_timeout = kCmTimeout;
      rp.local_cm_response_timeout = kCmTimeout;
      rp.max_cm_retries = 3;
      static constexpr std::uint8_t kHello[] = {'h', 'e', 'l', 'l', 'o'};
      rp.private_data = kHello;
      if (engine_->send_req(id_, rp) != Status::ok) return fail("send_req refused");
    }
    const auto deadline = Clock::now() + kScenarioDeadline;
    while (!outcome_) {
      if (Clock::now() > deadline) return fail("no outcome within the deadline");
      if (!drain(&Peer::on_client_event)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (*outcome_ != "ok") return fail(*outcome_);
    if (last_mad_unanswered_) std::this_thread::sleep_for(kLastMadGrace);
    return finish();
  }

  [[nodiscard]] std::optional<bool> duplicate_check() const {
    const auto* dup = dynamic_cast<const DuplicateReqFabric*>(&fabric_);
    return dup ? dup->reps_identical() : std::nullopt;
  }

 private:
  using Handler = void (Peer::*)(const Event&);

  void print_ready() const {
    const PortAttr& p = fabric_.ports()[0];
    std::printf("ready lid=%u gid=%s\n", p.lid, hex(p.gids()[0].raw).c_str());
  }

  int fail(const std::string& why) {
    std::printf("outcome failed: %s\n", why.c_str());
    return 1;
  }

  // Takes the queued events and hands each to `handler`; false when there were none.
  bool drain(Handler handler) {
    std::array<Event, 16> events;
    const std::size_t n = engine_->poll(*queue_, events);
    for (std::size_t i = 0; i < n; ++i) {
      std::printf("event %s\n", to_string(events[i].type).data());
      (this->*handler)(events[i]);
      engine_->release(events[i]);
    }
    return n != 0;
  }

  void accept(Id id) {
    RepParams rep;
    rep.qpn = 0x300 + accepted_;
    rep.starting_psn = 0x4321;
    rep.responder_resources = 4;
    rep.initiator_depth = 4;
    static constexpr std::uint8_t kWelcome[] = {'w', 'e', 'l', 'c', 'o', 'm', 'e'};
    rep.private_data = kWelcome;
    if (engine_->send_rep(id, rep) == Status::ok) ++accepted_;
  }

  void on_server_event(const Event& e) {
    const std::string& s = options_.scenario;
    switch (e.type) {
      case EventType::req_received:
        passive_.push_back(e.id);
        std::printf("req private=%s\n", hex(e.private_data.first(5)).c_str());
        if (s == "reject") {
          static constexpr std::uint8_t kNo[] = {'n', 'o', ' ', 't', 'h', 'a', 'n', 'k', 's'};
          RejParams rej;
          rej.private_data = kNo;
          (void)engine_->send_rej(e.id, rej);
        } else if (s == "slow") {
          MraParams mra;
          mra.service_timeout = 20;  // ≈ 4.3 s: far longer than the REP takes
          (void)engine_->send_mra(e.id, mra);
          slow_id_ = e.id;
          slow_rep_at_ = Clock::now() + std::chrono::milliseconds(300);
        } else {
          accept(e.id);
        }
        break;
      case EventType::rtu_received:
        std::printf("established\n");
        if (s == "server-dreq") (void)engine_->send_dreq(e.id, {});
        break;
      case EventType::dreq_received: (void)engine_->send_drep(e.id, {}); break;
      case EventType::lap_received: {
        AprParams apr;  // status 0: the alternate path is accepted
        (void)engine_->send_apr(e.id, apr);
        break;
      }
      case EventType::sidr_req_received: {
        passive_.push_back(e.id);
        SidrRepParams rep;
        rep.qpn = 0x4242;
        rep.qkey = 0x1234'5678;
        (void)engine_->send_sidr_rep(e.id, rep);
        break;
      }
      case EventType::timewait_exit:
        ++disconnected_;
        std::printf("disconnected %u\n", disconnected_);
        break;
      default: break;
    }
  }

  void on_client_event(const Event& e) {
    const std::string& s = options_.scenario;
    switch (e.type) {
      case EventType::rep_received:
        std::printf("rep private=%s\n", hex(e.private_data.first(7)).c_str());
        (void)engine_->send_rtu(e.id, {});
        std::printf("established\n");
        if (s == "lap") {
          LapParams lap;
          lap.alternate = path_to(fabric_.ports()[0], options_.target_lid, options_.target_gid);
          lap.remote_cm_response_timeout = kCmTimeout;
          (void)engine_->send_lap(e.id, lap);
        } else if (s != "passive-dreq") {
          (void)engine_->send_dreq(e.id, {});
        }
        break;
      case EventType::apr_received:
        std::printf("apr status=%u\n", std::get<AprReceived>(e.params).status);
        (void)engine_->send_dreq(e.id, {});
        break;
      case EventType::mra_received:
        std::printf("mra service_timeout=%u\n", std::get<MraReceived>(e.params).service_timeout);
        break;
      case EventType::rej_received: {
        const auto& rej = std::get<RejReceived>(e.params);
        std::printf("rej reason=%u ari=%s private=%s\n", rej.reason, hex(rej.ari).c_str(),
                    hex(e.private_data.first(9)).c_str());
        outcome_ = "ok";
        break;
      }
      case EventType::dreq_received:
        (void)engine_->send_drep(e.id, {});
        last_mad_unanswered_ = true;
        break;
      case EventType::timewait_exit: outcome_ = "ok"; break;
      case EventType::req_error: outcome_ = "ok"; break;  // the timeout scenario's end
      case EventType::sidr_rep_received: {
        const auto& rep = std::get<SidrRepReceived>(e.params);
        std::printf("sidr_rep status=%u qpn=0x%x qkey=0x%x\n", rep.status, rep.qpn, rep.qkey);
        outcome_ = "ok";
        break;
      }
      case EventType::sidr_req_error:
      case EventType::rep_error:
      case EventType::dreq_error:
      case EventType::lap_error: outcome_ = "unexpected " + std::string(to_string(e.type)); break;
      default: break;
    }
  }

  // Counters, leaks, and the exit status: 0 when nothing leaked.
  int finish() {
    std::array<PortCounters, 2> c{};
    engine_->counters(c);
    const PortCounters& p = c[fabric_.ports()[0].port_num < c.size() ? fabric_.ports()[0].port_num : 1];
    std::printf("counter req_duplicate=%llu rep_retried=%llu req_retried=%llu\n",
                static_cast<unsigned long long>(p.of(CmMessageKind::req).duplicate),
                static_cast<unsigned long long>(p.of(CmMessageKind::rep).retried),
                static_cast<unsigned long long>(p.of(CmMessageKind::req).retried));
    if (const auto* umad = dynamic_cast<const umad::UmadFabric*>(&fabric_)) {
      const umad::UmadPortCounters f = umad->counters(0);
      std::printf("fabric sent=%llu received=%llu failed_sends=%llu bad_pkey_index=%llu\n",
                  static_cast<unsigned long long>(f.sent), static_cast<unsigned long long>(f.received),
                  static_cast<unsigned long long>(f.failed_sends), static_cast<unsigned long long>(f.bad_pkey_index));
    }
    if (const std::optional<bool> same = duplicate_check()) std::printf("duplicate_rep identical=%d\n", *same ? 1 : 0);
    if (!id_.empty()) (void)engine_->destroy_sync(id_);
    for (const Id id : passive_) (void)engine_->destroy_sync(id);  // stale once gone: ignored
    // Endpoints still in time-wait hold their last MADs until it ends: wait for that, bounded.
    const auto deadline = Clock::now() + kScenarioDeadline;
    while (engine_->mad_buffers_in_use() != 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::uint32_t leaked = engine_->mad_buffers_in_use();
    std::printf("leaked_mads=%u\noutcome ok\n", leaked);
    return leaked == 0 ? 0 : 1;
  }

  Fabric& fabric_;
  const Options& options_;
  SteadyClock clock_;
  std::unique_ptr<Engine> engine_;
  EventQueue* queue_ = nullptr;
  Id id_{};
  std::vector<Id> passive_;  // the server's endpoints, destroyed before the leak check
  std::uint32_t accepted_ = 0;
  std::uint32_t disconnected_ = 0;
  Id slow_id_{};
  std::optional<Clock::time_point> slow_rep_at_;
  std::optional<std::string> outcome_;
  bool last_mad_unanswered_ = false;
};

}  // namespace
}  // namespace fastcm::ibsim

int main(int argc, char** argv) {
  using namespace fastcm;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ibsim::Options options;
  if (!ibsim::parse(argc, argv, options)) {
    std::fprintf(stderr, "usage: ibsim_peer --role server|client --scenario NAME [--target-lid L --target-gid G]\n");
    return 2;
  }
  std::signal(SIGTERM, [](int) { ibsim::g_stop.store(true, std::memory_order_relaxed); });
  const ibsim::SimulatorDummyAgents dummies;
  std::string error;
  if (options.scenario == "open-errors") {  // what a wrong device or port name gets back
    umad::UmadConfig no_device;
    no_device.device = "nosuch";
    umad::UmadConfig no_port;
    no_port.ports = {5};
    for (const umad::UmadConfig& bad : {no_device, no_port}) {
      const bool opened = umad::open_umad_fabric(bad, error) != nullptr;
      std::printf("%s: %s\n", opened ? "opened" : "error", error.c_str());
    }
    return 0;
  }
  std::unique_ptr<umad::UmadFabric> fabric = umad::UmadFabric::open(umad::UmadConfig{}, error);
  if (!fabric) {
    std::printf("outcome failed: %s\n", error.c_str());
    return 2;
  }
  const umad::PortAttrSources src = fabric->sources(0);
  std::printf("sources gids=%s mtu=%s ca_limits=%s rx_event_fd=%d\n", src.gids, src.mtu, src.ca_limits,
              fabric->rx_event_fd(0));
  if (options.scenario == "cpi") return ibsim::class_port_info(*fabric, options.target_lid);
  std::unique_ptr<Fabric> duplicating;
  if (options.scenario == "duplicate") duplicating = std::make_unique<ibsim::DuplicateReqFabric>(*fabric);
  ibsim::Peer peer(duplicating ? *duplicating : *fabric, options);
  if (!peer.start()) {
    std::printf("outcome failed: the engine did not start\n");
    return 2;
  }
  return options.role == "server" ? peer.run_server() : peer.run_client();
}
