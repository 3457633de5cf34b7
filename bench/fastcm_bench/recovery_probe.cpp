#include "bench/fastcm_bench/recovery_probe.h"

#include <thread>

#include "bench/fastcm_bench/storm_qpns.h"

namespace fastcm::bench {

namespace {

using SteadyTime = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kAttemptEvery = 5ms;
constexpr auto kGiveUp = 30s;
constexpr std::uint64_t kMaxAttempts = kGiveUp / kAttemptEvery;

std::uint64_t steady_ns(SteadyTime::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

RecoveryProbe::RecoveryProbe(Rig& rig, const ReqParams& req)
    : rig_(rig), req_(req), ids_(std::make_unique<std::uint64_t[]>(kMaxAttempts)) {}

void RecoveryProbe::on_event(const Event& event, void* self) {
  auto& probe = *static_cast<RecoveryProbe*>(self);
  switch (event.type) {
    case EventType::rep_received: {
      std::uint64_t none = 0;
      (void)probe.first_rep_ns_.compare_exchange_strong(none, steady_ns(SteadyTime::now()),
                                                        std::memory_order_relaxed);
      break;
    }
    case EventType::rej_received:
    case EventType::req_error: break;
    default: return;
  }
  (void)probe.rig_.client().destroy(event.id);
}

Recovery RecoveryProbe::run(SteadyTime::time_point flood_end) {
  Engine& client = rig_.client();
  const Delivery delivery{.handler = &on_event, .handler_context = this};
  auto next = flood_end;
  while (attempts_ < kMaxAttempts && next < flood_end + kGiveUp) {
    std::this_thread::sleep_until(next);
    if (first_rep_ns_.load(std::memory_order_relaxed) != 0) break;
    next += kAttemptEvery;
    Id id;
    if (client.create_id(delivery, nullptr, id) != Status::ok) continue;
    ids_[attempts_] = id.raw;
    ReqParams req = req_;
    req.qpn = probe_qpn(attempts_++);
    if (client.send_req(id, req) != Status::ok) (void)client.destroy(id);
  }
  Recovery r;
  r.attempts = attempts_;
  if (const std::uint64_t rep = first_rep_ns_.load(std::memory_order_relaxed); rep != 0) {
    r.answered = true;
    r.after_s = static_cast<double>(rep - steady_ns(flood_end)) / 1e9;
  }
  return r;
}

void RecoveryProbe::tear_down() {
  for (std::uint64_t a = 0; a < attempts_; ++a) (void)rig_.destroy(rig_.client(), Id{ids_[a]});
}

}  // namespace fastcm::bench
