// The world one engine-ingress fuzz input runs in: a server engine (HCA 0) and a client engine
// (HCA 1) on a loopback fabric with a third HCA (2) for MADs from elsewhere, caller-threaded
// over a virtual clock, with every event recorded. Everything is made fresh per input, so each
// input starts from the same state: an engine cannot be reset, and a reused one would carry its
// comm ID generations and timer positions into the next input; a reused fabric would hold its
// ports' delivery order against a clock that starts again at 0.
//
// Thread contract: one thread (the fuzz driver) uses a Rig; nothing in it is thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "fabric/loopback/loopback_config.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace fastcm::fuzz {

// Prints what broke and aborts: libFuzzer (or standalone_fuzz_main.cpp) saves the input.
[[noreturn]] inline void violated(const char* what, std::uint64_t id = 0) {
  std::fprintf(stderr, "engine_ingress_fuzz: violated: %s (id 0x%llx)\n", what,
               static_cast<unsigned long long>(id));
  std::abort();
}

inline void require(bool holds, const char* what, std::uint64_t id = 0) {
  if (!holds) violated(what, id);
}

// violated() for an endpoint that changed: says where and how first.
[[noreturn]] inline void violated_by_change(const char* what, std::uint64_t id, bool server,
                                            std::string_view before, std::string_view after,
                                            int attribute) {
  std::fprintf(stderr,
               "engine_ingress_fuzz: the %s endpoint went %.*s -> %.*s (attribute 0x%04x)\n",
               server ? "server" : "client", static_cast<int>(before.size()), before.data(),
               static_cast<int>(after.size()), after.data(), attribute);
  violated(what, id);
}

enum class Side : std::uint8_t { server, client };

[[nodiscard]] constexpr Side other(Side s) noexcept {
  return s == Side::server ? Side::client : Side::server;
}

struct RecordedEvent {
  Side side = Side::server;
  EventType type = EventType::req_received;
  Id id;
};

class Rig {
 public:
  static constexpr std::uint16_t kServerHca = 0;
  static constexpr std::uint16_t kClientHca = 1;
  static constexpr std::uint16_t kToolHca = 2;
  // Small tables keep per-input setup cheap; the pool holds what 3 connections and a few extra
  // handshakes keep (each sent MAD awaiting retry and each endpoint's last received MAD). The
  // inbox holds what the port's receive queue can (rx_queue_depth): the pool's receive reserve
  // grows with it, and building a default 4096-deep one was most of an input's cost.
  static constexpr std::uint32_t kRxQueueDepth = 64;
  static constexpr EngineConfig kConfig{.threading = Threading::caller,
                                        .shard_inbox = kRxQueueDepth,
                                        .max_endpoints = 16,
                                        .max_listens = 4,
                                        .mad_buffers = 256};
  // A fixed comm-ID key per side makes an input replay the same IDs (a saved crash reproduces);
  // the script learns IDs only as a peer would (connection_info), never from the key. The sides'
  // keys differ, as two engines' would: with one key both would issue the same IDs.
  [[nodiscard]] static EngineConfig config(Side s) {
    EngineConfig c = kConfig;
    c.cid_key = CidKey{0x5EED'0000 + index(s), 0x5EED'1000 + index(s)};
    return c;
  }

  Rig() : config_(fabric_config()), fabric_(config_, clock_) {
    for (const Side s : {Side::server, Side::client}) {
      engines_[index(s)] = Engine::create(fabric_.hca(hca(s)), clock_, config(s));
      require(engines_[index(s)] != nullptr, "Engine::create accepts the rig's configuration");
      delivery_[index(s)] = Delivery{
          .handler = &Rig::on_event, .handler_context = &hooks_[index(s)], .queue = nullptr};
      hooks_[index(s)] = Hook{this, s};
    }
  }

  Rig(const Rig&) = delete;
  Rig& operator=(const Rig&) = delete;
  ~Rig() = default;  // the engines first (members in reverse order), then what they borrow

  [[nodiscard]] Engine& engine(Side s) { return *engines_[index(s)]; }
  [[nodiscard]] const Delivery& delivery(Side s) const { return delivery_[index(s)]; }
  [[nodiscard]] VirtualClock& clock() { return clock_; }
  [[nodiscard]] loopback::LoopbackFabric& fabric() { return fabric_; }
  [[nodiscard]] static std::uint16_t hca(Side s) {
    return s == Side::server ? kServerHca : kClientHca;
  }
  [[nodiscard]] const PortAttr& port_of_hca(std::uint16_t h) const {
    return config_.hcas[h].ports[0];
  }
  [[nodiscard]] const PortAttr& port(Side s) const { return port_of_hca(hca(s)); }

  // Every event so far, in order. on_event checks that none names a destroyed Id.
  [[nodiscard]] const std::vector<RecordedEvent>& events() const { return events_; }
  void note_destroyed(Id id) { destroyed_.push_back(id); }
  [[nodiscard]] bool is_destroyed(Id id) const {
    for (const Id d : destroyed_) {
      if (d == id) return true;
    }
    return false;
  }

  // Runs one engine (or both) until it is idle at the current time, without moving the clock.
  void settle(std::optional<Side> only = std::nullopt) {
    for (int round = 0; round < 100'000; ++round) {
      std::size_t work = 0;
      for (const Side s : {Side::server, Side::client}) {
        if (!only || *only == s) work += engine(s).progress();
      }
      drain_tool();
      if (work == 0 && !delivery_due(only)) return;
    }
    violated("the engines go idle");
  }

  // The earliest pending timer or delivery, if any. The tool HCA's port counts too: an API call
  // outside settle() (a destroy's REJ in caller threading) may leave an answer queued there.
  [[nodiscard]] std::optional<std::uint64_t> next_event() {
    std::optional<std::uint64_t> best;
    const auto take = [&best](std::optional<std::uint64_t> t) {
      if (t && (!best || *t < *best)) best = t;
    };
    for (const Side s : {Side::server, Side::client}) {
      take(engine(s).next_timer_ns());
      take(fabric_.next_delivery_ns(loopback::PortRef{hca(s), 0}));
    }
    take(fabric_.next_delivery_ns(loopback::PortRef{kToolHca, 0}));
    return best;
  }

  // Moves the clock to `end`, stopping at every timer and delivery on the way.
  void run_until(std::uint64_t end) {
    for (;;) {
      settle();
      const std::optional<std::uint64_t> next = next_event();
      if (!next || *next > end) break;
      clock_.set(std::max(*next, clock_.now_ns() + 1));
    }
    clock_.set(end);
    settle();
  }

 private:
  struct Hook {
    Rig* rig = nullptr;
    Side side = Side::server;
  };

  static loopback::LoopbackConfig fabric_config() {
    loopback::LoopbackConfig c = loopback::LoopbackConfig::make(3, 1);
    c.rx_queue_depth = kRxQueueDepth;
    return c;
  }
  static std::size_t index(Side s) { return s == Side::server ? 0 : 1; }

  static void on_event(const Event& e, void* hook_ptr) {
    const auto* hook = static_cast<const Hook*>(hook_ptr);
    require(!hook->rig->is_destroyed(e.id), "no event after destroy", e.id.raw);
    hook->rig->events_.push_back(RecordedEvent{hook->side, e.type, e.id});
  }

  // Whatever the engines answer to the tool HCA is read and forgotten, so its queue never fills.
  void drain_tool() {
    MadPacket pkt;
    MadPacket* bufs[] = {&pkt};
    (void)fabric_.next_delivery_ns(loopback::PortRef{kToolHca, 0});  // releases what is queued
    while (fabric_.hca(kToolHca).recv_burst(0, bufs) != 0) {
    }
  }

  [[nodiscard]] bool delivery_due(std::optional<Side> only) {
    for (const Side s : {Side::server, Side::client}) {
      if (only && *only != s) continue;
      const auto t = fabric_.next_delivery_ns(loopback::PortRef{hca(s), 0});
      if (t && *t <= clock_.now_ns()) return true;
    }
    return false;
  }

  VirtualClock clock_;
  loopback::LoopbackConfig config_;
  loopback::LoopbackFabric fabric_;
  std::unique_ptr<Engine> engines_[2];
  Delivery delivery_[2];
  Hook hooks_[2];
  std::vector<RecordedEvent> events_;
  std::vector<Id> destroyed_;
};

}  // namespace fastcm::fuzz
