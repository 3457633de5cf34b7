// cm_peer: fastcm's side of the interop event scenarios (tests/interop), the CM alone over the umad
// fabric of a Soft-RoCE device (no queue pairs: the QPNs it names are made up, so its peers must
// not send data). Its REQs are rdma_cm's (examples/rping_common/rdma_cm_req.h), so Linux rdma_cm
// listeners take them; it listens on rdma_cm TCP ports, so Linux rdma_cm clients reach it.
//
//   cm_peer serve --port P [--connections N] [--reject TEXT] [--accept-delay MS] [--no-auto-mra]
//     accepts (or with --reject refuses, REJ 28 carrying TEXT as private data) N connections,
//     answering each REQ after MS milliseconds (the engine's automatic MRA goes out at half the
//     client's CM response timeout unless --no-auto-mra), and takes each through the client's
//     DREQ and time-wait;
//   cm_peer connect --target-ip IP --port P --expect OUTCOME [--source-ip IP] [--reason R]
//                   [--cm-timeout T] [--cm-retries N]
//     sends one REQ and checks the outcome: established (then DREQ, DREP, time-wait), rejected
//     (a REJ, with reason R when given), timeout (the REQ's retries run out), or stale (once
//     established, a second REQ naming the same QPN: the listener must answer it REJ 10 "stale
//     connection" and disconnect the first, IBTA 12.9.8.3.1).
//
// Prints "cm_peer: listening" (serve), a line per event ("event rej_received connection=1 reason=28
// private_data=\"...\""), the engine's message counters, then "outcome ok" or "outcome failed: WHY".
// Exit status: 0 for outcome ok, 1 otherwise (also when the device cannot be opened), 2 for a
// usage error. SIGINT/SIGTERM end a serve early (outcome: whether every connection so far went
// as expected) and a connect as failed.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "examples/rping_common/cm_stack.h"
#include "examples/rping_common/event_loop.h"
#include "examples/rping_common/rdma_cm_req.h"
#include "fabric/roce_udp/ip_gid.h"
#include "fastcm/cm_enums.h"

namespace fastcm::interop {
namespace {

using examples::CmStack;
using examples::EventLoop;

constexpr std::uint32_t kFakeQpnBase = 0x80'0000;  // 24 bits, far from what rxe hands out
constexpr std::uint32_t kMaxHeld = 64;

struct Options {
  std::string mode;
  std::string device;
  std::uint16_t port = 0;
  std::uint32_t connections = 1;
  std::optional<std::string> reject;
  std::uint32_t accept_delay_ms = 0;
  bool no_auto_mra = false;
  std::string target_ip;
  std::string source_ip;
  std::string expect;
  std::optional<std::uint16_t> reason;
  std::uint8_t cm_timeout = examples::kRdmaCmResponseTimeout;
  std::uint8_t cm_retries = examples::kRdmaCmMaxRetries;
};

std::string quoted(std::span<const std::uint8_t> data) {
  const auto end = std::find(data.begin(), data.end(), std::uint8_t{0});
  std::string out(1, '"');
  for (auto it = data.begin(); it != end; ++it) out += std::isprint(*it) != 0 ? static_cast<char>(*it) : '?';
  out += '"';
  return out;
}

class Peer {
 public:
  Peer(CmStack& cm, EventLoop& loop, const Options& o) : cm_(cm), loop_(loop), o_(o) {}

  bool serve() {
    ListenParams listen;
    listen.service_id = rdma_cm::service_id(rdma_cm::PortSpace::tcp, o_.port);
    listen.delivery = cm_.delivery;
    Id listen_id;
    if (cm_.engine->listen(listen, listen_id) != Status::ok) return failed("listen refused");
    std::printf("cm_peer: listening on rdma_cm TCP port %u\n", o_.port);
    while (ended_ < o_.connections && !loop_.stop_requested()) {
      wait();
      answer_held();
    }
    if (loop_.stop_requested()) std::printf("cm_peer: stopped by %s\n", loop_.stop_signal().c_str());
    (void)cm_.engine->destroy(listen_id);
    return !bad_ ? ok() : failed(why_);
  }

  bool connect(const Gid& source, const Gid& target) {
    target_ = examples::RdmaCmTarget{source, target, o_.port, examples::random_source_port()};
    if (!send_req(first_)) return failed(why_);
    while (!finished_ && !loop_.stop_requested()) wait();
    if (!finished_) return failed("stopped by " + loop_.stop_signal());
    return !bad_ ? ok() : failed(why_);
  }

  void print_counters() const {
    std::vector<PortCounters> counters(std::size_t{cm_.port().port_num} + 1);  // index 0 unused
    cm_.engine->counters(counters);
    const PortCounters& c = counters.back();
    for (std::size_t k = 0; k < kCmMessageKinds; ++k) {
      const MessageCounters& m = c.messages[k];
      if (m.sent + m.received == 0) continue;
      std::printf("counters %s sent=%llu received=%llu retried=%llu duplicate=%llu\n",
                  std::string(to_string(static_cast<CmMessageKind>(k))).c_str(), static_cast<unsigned long long>(m.sent),
                  static_cast<unsigned long long>(m.received), static_cast<unsigned long long>(m.retried),
                  static_cast<unsigned long long>(m.duplicate));
    }
  }

 private:
  struct Held {
    Id id;
    std::uint32_t number = 0;
    std::uint64_t due_ns = 0;
  };

  bool ok() {
    std::printf("outcome ok\n");
    return true;
  }
  bool failed(const std::string& why) {
    std::printf("outcome failed: %s\n", why.c_str());
    return false;
  }
  void wrong(const std::string& why) {
    if (!bad_) why_ = why;
    bad_ = true;
  }

  void wait() {
    int timeout_ms = -1;
    for (const Held& h : held_) {
      const std::uint64_t now = cm_.clock.now_ns();
      const int ms = h.due_ns > now ? static_cast<int>((h.due_ns - now) / 1'000'000 + 1) : 0;
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    std::array<std::uint32_t, 2> ready{};
    (void)loop_.wait(timeout_ms, ready);
    cm_.drain_events([this](const Event& e) { on_event(e); });
  }

  static std::uint32_t number_of(const Event& e) {
    return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(e.context));
  }

  void on_event(const Event& e) {
    const std::uint32_t n = e.type == EventType::req_received ? arrivals_ + 1 : number_of(e);
    std::printf("event %s connection=%u", std::string(to_string(e.type)).c_str(), n);
    if (const auto* rej = std::get_if<RejReceived>(&e.params)) {
      std::printf(" reason=%u private_data=%s", rej->reason, quoted(e.private_data).c_str());
    } else if (const auto* mra = std::get_if<MraReceived>(&e.params)) {
      std::printf(" service_timeout=%u", mra->service_timeout);
    } else if (const auto* req = std::get_if<ReqReceived>(&e.params)) {
      std::printf(" remote_qpn=0x%x", req->remote_qpn);
    }
    std::printf("\n");
    if (o_.mode == "serve") {
      on_server_event(e);
    } else {
      on_client_event(e, n);
    }
  }

  // ---- serve ----
  void on_server_event(const Event& e) {
    switch (e.type) {
      case EventType::req_received: {
        const std::uint32_t n = ++arrivals_;
        (void)cm_.engine->set_context(e.id, reinterpret_cast<void*>(std::uintptr_t{n}));
        if (o_.reject) {
          RejParams rej;
          rej.reason = static_cast<std::uint16_t>(RejReason::consumer_reject);
          rej.private_data = std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(o_.reject->data()),
                                                           o_.reject->size());
          const Status st = cm_.engine->send_rej(e.id, rej);
          std::printf("sent rej connection=%u reason=28 private_data=\"%s\" (%s)\n", n, o_.reject->c_str(),
                      std::string(to_string(st)).c_str());
          if (st != Status::ok) wrong("send_rej refused");
          end(e.id);
        } else if (o_.accept_delay_ms > 0 && held_.size() < kMaxHeld) {
          held_.push_back(Held{e.id, n, cm_.clock.now_ns() + std::uint64_t{o_.accept_delay_ms} * 1'000'000});
          std::printf("holding connection=%u for %u ms\n", n, o_.accept_delay_ms);
        } else {
          accept(e.id, n);
        }
        return;
      }
      case EventType::dreq_received:
        (void)cm_.engine->send_drep(e.id, {});
        return;
      case EventType::timewait_exit: end(e.id); return;
      case EventType::rej_received:
      case EventType::rep_error:
        wrong("connection " + std::to_string(number_of(e)) + " failed: " + std::string(to_string(e.type)));
        end(e.id);
        return;
      default: return;
    }
  }

  void answer_held() {
    const std::uint64_t now = cm_.clock.now_ns();
    std::erase_if(held_, [&](const Held& h) {
      if (h.due_ns > now) return false;
      accept(h.id, h.number);
      return true;
    });
  }

  void accept(Id id, std::uint32_t n) {
    RepParams rep;
    rep.qpn = kFakeQpnBase + n;
    rep.starting_psn = n;
    rep.responder_resources = 1;
    rep.initiator_depth = 1;
    const Status st = cm_.engine->send_rep(id, rep);
    std::printf("sent rep connection=%u (%s)\n", n, std::string(to_string(st)).c_str());
    if (st != Status::ok) {
      wrong("send_rep refused");
      end(id);
    }
  }

  void end(Id id) {
    (void)cm_.engine->destroy(id);
    ++ended_;
  }

  // ---- connect ----
  bool send_req(Id& id) {
    const std::uint32_t n = ++arrivals_;
    if (cm_.engine->create_id(cm_.delivery, reinterpret_cast<void*>(std::uintptr_t{n}), id) != Status::ok) {
      why_ = "create_id refused";
      return false;
    }
    std::array<std::uint8_t, rdma_cm::kIpHeaderSize> header{};
    ReqParams req = examples::rdma_cm_req(cm_.port(), target_, header);
    req.qpn = kFakeQpnBase + 1;  // the second REQ of --expect stale names the first one's QPN again
    req.starting_psn = n;
    req.remote_cm_response_timeout = o_.cm_timeout;
    req.local_cm_response_timeout = o_.cm_timeout;
    req.max_cm_retries = o_.cm_retries;
    const Status st = cm_.engine->send_req(id, req);
    std::printf("sent req connection=%u qpn=0x%x (%s)\n", n, req.qpn, std::string(to_string(st)).c_str());
    if (st != Status::ok) why_ = "send_req refused";
    return st == Status::ok;
  }

  void on_client_event(const Event& e, std::uint32_t n) {
    const bool stale = o_.expect == "stale";
    switch (e.type) {
      case EventType::rep_received:
        (void)cm_.engine->send_rtu(e.id, {});
        if (o_.expect == "established") {
          std::printf("sent dreq connection=%u (%s)\n", n, std::string(to_string(cm_.engine->send_dreq(e.id, {}))).c_str());
        } else if (stale && n == 1) {
          if (!send_req(second_)) finish(why_);
        } else {
          finish("connection " + std::to_string(n) + " was established, expected " + o_.expect);
        }
        return;
      case EventType::rej_received: {
        const auto& rej = std::get<RejReceived>(e.params);
        if (stale && n == 2) {
          stale_rej_ = rej.reason == static_cast<std::uint16_t>(RejReason::stale_conn);
          if (!stale_rej_) finish("the second REQ got REJ " + std::to_string(rej.reason) + ", not 10 (stale connection)");
          maybe_finish_stale();
        } else if (o_.expect == "rejected" && (!o_.reason || *o_.reason == rej.reason)) {
          finish({});
        } else {
          finish("REJ reason " + std::to_string(rej.reason) + " where " + o_.expect + " was expected");
        }
        return;
      }
      case EventType::req_error:
        finish(o_.expect == "timeout" ? std::string{} : "the REQ's retries ran out, expected " + o_.expect);
        return;
      case EventType::dreq_received:
        (void)cm_.engine->send_drep(e.id, {});
        if (stale && n == 1) stale_dreq_ = true;
        return;
      case EventType::timewait_exit:
        if (n == 1) first_over_ = true;
        if (stale) {
          maybe_finish_stale();
        } else {
          finish({});
        }
        return;
      default: return;
    }
  }

  void maybe_finish_stale() {
    if (stale_rej_ && stale_dreq_ && first_over_) finish({});
  }

  void finish(const std::string& why) {
    if (finished_) return;
    finished_ = true;
    if (!why.empty()) wrong(why);
    for (const Id id : {first_, second_}) {
      if (!id.empty()) (void)cm_.engine->destroy(id);
    }
  }

  CmStack& cm_;
  EventLoop& loop_;
  const Options& o_;
  std::vector<Held> held_;
  std::uint32_t arrivals_ = 0;
  std::uint32_t ended_ = 0;
  bool bad_ = false;
  std::string why_;
  // connect
  examples::RdmaCmTarget target_;
  Id first_;
  Id second_;
  bool finished_ = false;
  bool stale_rej_ = false;
  bool stale_dreq_ = false;
  bool first_over_ = false;
};

int parse(int argc, char** argv, Options& o) {
  CLI::App app{"fastcm's side of the interop event scenarios (the CM alone, over umad)."};
  app.require_subcommand(1);
  app.add_option("--device", o.device, "RDMA device (default: the first umad CA)");
  CLI::App* serve = app.add_subcommand("serve", "listen and accept, refuse or answer late");
  serve->add_option("--port", o.port, "rdma_cm TCP port")->required();
  serve->add_option("--connections", o.connections, "connections to see end")->capture_default_str();
  serve->add_option("--reject", o.reject, "refuse every REQ: REJ 28 with this text as private data");
  serve->add_option("--accept-delay", o.accept_delay_ms, "answer each REQ this many milliseconds late");
  serve->add_flag("--no-auto-mra", o.no_auto_mra, "no automatic MRA while a REQ waits");
  CLI::App* connect = app.add_subcommand("connect", "send one REQ and check what comes of it");
  connect->add_option("--target-ip", o.target_ip, "the listener's address")->required();
  connect->add_option("--source-ip", o.source_ip, "the local port's address");
  connect->add_option("--port", o.port, "the listener's rdma_cm TCP port")->required();
  connect->add_option("--expect", o.expect, "established, rejected, timeout or stale")
      ->required()->check(CLI::IsMember({"established", "rejected", "timeout", "stale"}));
  connect->add_option("--reason", o.reason, "with --expect rejected: the REJ reason");
  connect->add_option("--cm-timeout", o.cm_timeout, "CM response timeout exponent")->check(CLI::Range(0, 31));
  connect->add_option("--cm-retries", o.cm_retries, "REQ retries")->check(CLI::Range(0, 15));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.mode = serve->parsed() ? "serve" : "connect";
  return -1;
}

int run(int argc, char** argv) {
  EventLoop::block_stop_signals();  // before the engine's threads start: they inherit the mask
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;
  std::string error;
  std::unique_ptr<CmStack> cm = CmStack::open(o.device, 0, error, o.no_auto_mra ? 0.0 : EngineConfig{}.auto_mra_fraction);
  EventLoop loop;
  if (cm == nullptr || !loop.ok() || !loop.watch(cm->events->event_fd(), 0)) {
    std::printf("outcome failed: %s\n", cm == nullptr ? error.c_str() : "epoll or signalfd failed");
    return 1;
  }
  Peer peer(*cm, loop, o);
  bool ok = false;
  if (o.mode == "serve") {
    ok = peer.serve();
  } else {
    const std::optional<Gid> target = roce::gid_from_ip_text(o.target_ip);
    const std::optional<Gid> source = o.source_ip.empty() && target ? examples::source_gid_for(cm->port(), *target)
                                                                     : roce::gid_from_ip_text(o.source_ip);
    if (!target || !source) {
      std::printf("outcome failed: no usable --target-ip or source address\n");
      return 1;
    }
    ok = peer.connect(*source, *target);
  }
  peer.print_counters();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace fastcm::interop

int main(int argc, char** argv) { return fastcm::interop::run(argc, argv); }
