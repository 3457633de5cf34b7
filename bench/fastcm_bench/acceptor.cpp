#include "bench/fastcm_bench/acceptor.h"

#include <time.h>

#include <stdexcept>
#include <string>
#include <variant>

#include "bench/fastcm_bench/private_data.h"
#include "bench/fastcm_bench/process_stats.h"

namespace fastcm::bench {

namespace {

using SteadyTime = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kTick = 50ms;          // high-water sampling and signal checks
constexpr auto kSampleEvery = 250ms;  // progress samples
constexpr auto kDrainDeadline = 120s;

double seconds_since(SteadyTime::time_point start) {
  return std::chrono::duration<double>(SteadyTime::now() - start).count();
}

}  // namespace

Acceptor::Acceptor(Rig& rig, const Options& options, const RigSizing& sizing, Tally& tally)
    : rig_(rig), options_(options), sizing_(sizing), tally_(tally),
      private_data_(counting_bytes(options.private_data)) {
  rep_template_.private_data = private_data_;
  if (options.role == Role::server) {
    accepted_.emplace(2 * sizing.max_endpoints);
    spans_ = std::make_unique<Span[]>(kMaxThreadSlots);
  } else if (options.flood_rate > 0) {
    accepted_.emplace(2 * sizing.max_endpoints);
  }
  if (options.role == Role::both && options.connection_limit() <= kQpnSpan) {
    req_ledger_.emplace(options.window);
  }
}

void Acceptor::listen() {
  Engine& server = rig_.server();
  if (options_.mode == DeliveryMode::poll) {
    queue_ = server.create_event_queue(sizing_.event_queue_capacity);
    if (queue_ == nullptr) throw std::runtime_error("an event queue could not be created");
    delivery_ = Delivery{.queue = queue_};
  } else {
    delivery_ = Delivery{.handler = &on_callback, .handler_context = this};
  }
  ListenParams lp;
  lp.service_id = options_.service_id;
  lp.backlog = sizing_.backlog;
  lp.backlog_policy = options_.backlog_policy;
  lp.delivery = delivery_;
  start_ = SteadyTime::now();
  if (const Status s = server.listen(lp, listen_id_); s != Status::ok) {
    throw std::runtime_error(std::string("listen failed: ") + std::string(to_string(s)));
  }
  if (queue_ != nullptr) pump_.start(server, *queue_, &on_callback, this);
}

void Acceptor::on_callback(const Event& event, void* self) {
  static_cast<Acceptor*>(self)->on_event(event);
}

std::uint64_t Acceptor::now_ns_since_start() const noexcept {
  // +1: 0 marks "none yet" in a Span.
  return static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyTime::now() - start_)
                 .count()) +
         1;
}

void Acceptor::on_event(const Event& event) {
  switch (event.type) {
    case EventType::req_received: on_req(event); return;
    case EventType::rtu_received:
    case EventType::user_established:
      tally_.add(Count::server_established);
      if (spans_) spans_[thread_slot()].last_rtu.store(now_ns_since_start(), std::memory_order_relaxed);
      return;
    // Destroying in dreq_rcvd answers the DREP and leaves through time-wait; the other endings
    // (no RTU came, the client rejected, time-wait over) just free the endpoint.
    case EventType::call_failed:  // a posted send_rep refused: as a send_rep returning it
      tally_.add(Count::server_failed_calls);
      destroy(event.id, static_cast<AcceptedTable::Slot*>(event.context));
      return;
    case EventType::dreq_received:
    case EventType::rep_error:
    case EventType::rej_received:
    case EventType::timewait_exit:
      // Every event after the REQ carries the endpoint's accepted-table slot (on_req), if any.
      destroy(event.id, static_cast<AcceptedTable::Slot*>(event.context));
      return;
    default: return;
  }
}

void Acceptor::on_req(const Event& event) {
  Engine& server = rig_.server();
  const auto& req = std::get<ReqReceived>(event.params);
  const bool server_role = options_.role == Role::server;
  AcceptedTable::Slot* slot = nullptr;
  if (server_role) {
    tally_.add(Count::server_reqs);
    std::atomic<std::uint64_t>& first = spans_[thread_slot()].first_req;
    if (first.load(std::memory_order_relaxed) == 0) {
      first.store(now_ns_since_start(), std::memory_order_relaxed);
    }
  }
  if (server_role || (accepted_ && outside_storm(req.remote_qpn))) {
    if (!server_role) tally_.add(Count::server_outside_storm);
    slot = accepted_->claim(event.id);
    if (slot == nullptr) {
      tally_.add(Count::server_untracked);
    } else if (server.set_context(event.id, slot) != Status::ok) {
      AcceptedTable::release(*slot);
      slot = nullptr;
    }
  }
  if (req_ledger_ && !outside_storm(req.remote_qpn)) {
    const std::optional<std::uint64_t> connection = connection_of(req.remote_qpn);
    if (!connection || !req_ledger_->first(*connection)) {
      tally_.add(Count::server_duplicate_events);
      destroy(event.id, slot);  // rejects it
      return;
    }
  }
  RepParams rep = rep_template_;
  rep.qpn = req.remote_qpn | kServerQpnBit;
  rep.starting_psn = req.starting_psn;
  rep.responder_resources = req.initiator_depth;
  rep.initiator_depth = req.responder_resources;
  if (server.send_rep(event.id, rep) != Status::ok) {
    tally_.add(Count::server_failed_calls);
    destroy(event.id, slot);
  }
}

void Acceptor::destroy(Id id, AcceptedTable::Slot* slot) {
  if (slot != nullptr) AcceptedTable::release(*slot);
  if (rig_.server().destroy(id) != Status::ok && req_ledger_) tally_.add(Count::server_duplicate_events);
}

ServeRun Acceptor::serve(Progress& progress, const sigset_t& stop_signals) {
  ServeRun r;
  const double cpu_start = process_cpu_seconds();
  const bool timed = options_.duration_s > 0;
  const auto deadline = start_ + std::chrono::duration_cast<SteadyTime::duration>(
                                     std::chrono::duration<double>(options_.duration_s));
  auto next_sample = start_ + kSampleEvery;
  const auto sample = [&] {
    return ProgressSample{seconds_since(start_), tally_.sum(Count::server_established),
                          process_cpu_seconds() - cpu_start};
  };
  const timespec tick{.tv_sec = 0, .tv_nsec = std::chrono::nanoseconds(kTick).count()};
  for (;;) {
    const int sig = ::sigtimedwait(&stop_signals, nullptr, &tick);
    r.mads_high = std::max(r.mads_high, rig_.server().mad_buffers_in_use());
    if (queue_ != nullptr) r.queue_high = std::max(r.queue_high, queue_->size());
    if (sig > 0) {
      r.stop_signal = sig;
      break;
    }
    const auto now = SteadyTime::now();
    if (timed && now >= deadline) break;
    if (now >= next_sample) {
      progress.update(sample(), tally_.sum(Count::server_reqs));
      next_sample = now + kSampleEvery;
    }
  }
  r.wall_s = seconds_since(start_);
  r.cpu_s = process_cpu_seconds() - cpu_start;
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  for (std::uint32_t t = 0; t < kMaxThreadSlots; ++t) {
    const std::uint64_t f = spans_[t].first_req.load(std::memory_order_relaxed);
    if (f != 0 && (first == 0 || f < first)) first = f;
    last = std::max(last, spans_[t].last_rtu.load(std::memory_order_relaxed));
  }
  if (first != 0 && last > first && tally_.sum(Count::server_established) > 1) {
    r.accept_span_s = static_cast<double>(last - first) / 1e9;
  }
  progress.update(sample(), tally_.sum(Count::server_reqs));
  progress.finish();
  return r;
}

std::uint64_t Acceptor::destroy_outside_storm() {
  std::uint64_t destroyed = 0;
  Engine& server = rig_.server();
  accepted_->for_each([&](Id id) {
    if (rig_.destroy(server, id) == Status::ok) ++destroyed;
  });
  return destroyed;
}

Teardown Acceptor::tear_down() {
  Teardown t;
  const auto start = SteadyTime::now();
  Engine& server = rig_.server();
  (void)server.destroy_sync(listen_id_);
  accepted_->for_each([&](Id id) {
    if (rig_.destroy(server, id) == Status::ok) ++t.destroyed;
  });
  t.drained = rig_.wait_drained(kDrainDeadline);
  t.wall_s = seconds_since(start);
  return t;
}

}  // namespace fastcm::bench
