// The storm's server: answers REQs per ServerPlan (REP, REJ, destroy in the callback, destroy
// by the reaper while the callback waits) and destroys every endpoint once its connection ended.
// Events come as callbacks on the engine's shard threads, or through an EventQueue that a
// polling thread of this class drains (the same reactions, made from outside the engine).
//
// Thread contract: the constructor, start_polling and stop_polling from the test's thread; the
// handlers run on the engine's threads (callbacks) or the polling thread, as the engine delivers.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <unordered_map>

#include "fastcm/engine.h"
#include "tests/stress/probe.h"
#include "tests/stress/reaper.h"

namespace fastcm::stress {

class ServerSide {
 public:
  ServerSide(Engine& engine, ProbeArena& arena, Ledger& ledger);
  ~ServerSide();
  ServerSide(const ServerSide&) = delete;
  ServerSide& operator=(const ServerSide&) = delete;

  // Callback delivery into this server.
  [[nodiscard]] Delivery callbacks() {
    return Delivery{.handler = &ServerSide::on_callback, .handler_context = this};
  }

  // Starts the thread that drains `queue` (waiting on its eventfd when it is empty).
  void start_polling(EventQueue& queue);
  // Once the rest is quiet: drains what is left, then ends the polling thread and the reaper.
  void stop();

  [[nodiscard]] std::uint64_t reqs() const noexcept {
    return reqs_.load(std::memory_order_relaxed);
  }
  // REQ callbacks that saw their reaper's destroy return while they still ran.
  [[nodiscard]] std::uint64_t destroyed_during_callback() const noexcept {
    return destroyed_during_.load(std::memory_order_relaxed);
  }

 private:
  static void on_callback(const Event& event, void* self);
  void poll_loop(EventQueue& queue);

  // `polled_from`: as CallbackScope's (nullopt: a callback, whose calls run inline; otherwise the
  // polling thread, whose calls are shard commands).
  void on_request(const Event& event, std::optional<std::uint64_t> polled_from);
  void on_endpoint_event(const Event& event, Probe& probe,
                         std::optional<std::uint64_t> polled_from);
  // Destroys the endpoint now (from `caller`) or through the reaper, by the connection's parity.
  void retire(Probe& probe, Caller caller);
  // Hands `probe` to the reaper and waits (bounded) until its destroy returned; whether it did.
  bool reap_while_waiting(Probe& probe);

  Engine& engine_;
  ProbeArena& arena_;
  Ledger& ledger_;
  Reaper reaper_;
  std::atomic<std::uint64_t> reqs_{0};
  std::atomic<std::uint64_t> destroyed_during_{0};
  // Polling: the thread, its stop flag (release by stop(), acquire by the loop) and the probes
  // of polled endpoints by Id (events queued before set_context ran carry no context). The map
  // is the polling thread's alone.
  std::thread poller_;
  std::atomic<bool> stop_polling_{false};
  std::unordered_map<std::uint64_t, Probe*> polled_;
};

}  // namespace fastcm::stress
