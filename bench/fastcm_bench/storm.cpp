#include "bench/fastcm_bench/storm.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <stdexcept>
#include <variant>

#include "bench/fastcm_bench/private_data.h"
#include "bench/fastcm_bench/process_stats.h"
#include "bench/fastcm_bench/storm_qpns.h"

namespace fastcm::bench {

namespace {

using SteadyTime = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The source port in the rdma_cm header of every REQ (an rdma_cm listener only reports it).
constexpr std::uint16_t kRdmaCmSourcePort = 0xFCB0;

constexpr auto kTick = 50ms;              // high-water sampling
constexpr auto kSampleEvery = 250ms;      // progress samples
// No connection settled for this long: the storm gave up. The teardown waits for its last DREQs
// (8 sends at most) this long. Both at least 10 retransmission waits.
constexpr auto kStallLimit = 60s;
constexpr auto kDrainDeadline = 120s;
constexpr unsigned kRetryWaits = 10;
constexpr std::uint64_t kMinTeardownWindow = 1024;
constexpr std::uint64_t kPaceEvery = 64;  // destroys between two looks at the client's counters

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyTime::now().time_since_epoch())
          .count());
}

double seconds_since(SteadyTime::time_point start) {
  return std::chrono::duration<double>(SteadyTime::now() - start).count();
}

// kRetryWaits retransmission waits of CM response timeout `exponent`, but at least `floor`.
SteadyTime::duration retry_bound(std::uint32_t exponent, SteadyTime::duration floor) {
  const std::chrono::nanoseconds wait(std::uint64_t{4096} << exponent);
  return std::max(floor, std::chrono::duration_cast<SteadyTime::duration>(kRetryWaits * wait));
}

}  // namespace

Storm::Storm(Rig& rig, const Options& options, const RigSizing& sizing, Tally& tally,
             const Acceptor* acceptor)
    : rig_(rig),
      acceptor_(acceptor),
      options_(options),
      sizing_(sizing),
      limit_(options.connection_limit()),
      tally_(tally),
      lanes_(std::make_unique<Lane[]>(options.window)),
      private_data_(counting_bytes(options.private_data)) {
  if (!options.disconnect) ids_ = std::make_unique<std::atomic<std::uint64_t>[]>(limit_);
  std::span<const std::uint8_t> req_data = private_data_;
  if (options.rdma_cm_port) {
    std::size_t used = 0;
    const rdma_cm::HeaderStatus s = rdma_cm::encode_private_data(
        rdma_cm_header(*options.source_ip, *options.target.ip, kRdmaCmSourcePort), private_data_,
        rdma_cm_data_, used);
    if (s != rdma_cm::HeaderStatus::ok) {
      throw std::runtime_error("rdma_cm header: " + std::string(rdma_cm::to_string(s)));
    }
    req_data = std::span<const std::uint8_t>(rdma_cm_data_).first(used);
  }
  const std::uint32_t ports = rig.client_ports();
  for (std::uint32_t k = 0; k < options.window; ++k) {
    lanes_[k].port = k % ports;
    lanes_[k].next.store(k, std::memory_order_relaxed);
  }
  for (std::uint32_t p = 0; p < ports; ++p) {
    ReqParams req;
    req.service_id = options.service_id;
    req.primary = rig.path(p);
    req.responder_resources = 4;
    req.initiator_depth = 4;
    req.remote_cm_response_timeout = static_cast<std::uint8_t>(options.cm_timeout);
    req.local_cm_response_timeout = static_cast<std::uint8_t>(options.cm_timeout);
    req.max_cm_retries = options.max_cm_retries;
    req.private_data = req_data;
    req_templates_.push_back(req);
  }
}

void Storm::prepare() {
  if (options_.mode == DeliveryMode::poll) {
    client_queue_ = rig_.client().create_event_queue(sizing_.event_queue_capacity);
    if (client_queue_ == nullptr) throw std::runtime_error("an event queue could not be created");
    client_delivery_ = Delivery{.queue = client_queue_};
    pump_.start(rig_.client(), *client_queue_, &on_client_callback, this);
  } else {
    client_delivery_ = Delivery{.handler = &on_client_callback, .handler_context = this};
  }
}

void Storm::on_client_callback(const Event& event, void* self) {
  static_cast<Storm*>(self)->on_client(event);
}

void Storm::on_client(const Event& event) {
  auto* lane = static_cast<Lane*>(event.context);
  if (lane == nullptr) return;  // every client endpoint is created with its lane as context
  Engine& client = rig_.client();
  if (event.id.raw != lane->current.load(std::memory_order_relaxed)) {
    // An established connection its lane has left behind (without --disconnect): the server gave
    // up on it (its RTUs were lost) or disconnects it. Anything else is for an endpoint the lane
    // destroyed, or a second ending of one it left open.
    if (!options_.disconnect &&
        (event.type == EventType::rej_received || event.type == EventType::dreq_received)) {
      tally_.add(Count::lost_after_established);
      (void)client.destroy(event.id);
    } else {
      tally_.add(Count::duplicate_events);
    }
    return;
  }
  if (event.type != EventType::mra_received) {  // a slow peer may ask for more time repeatedly
    const std::uint32_t kind = 1u << static_cast<unsigned>(event.type);
    const std::uint32_t seen = lane->seen.load(std::memory_order_relaxed);
    if ((seen & kind) != 0) {
      tally_.add(Count::duplicate_events);
      return;
    }
    lane->seen.store(seen | kind, std::memory_order_relaxed);
  }
  switch (event.type) {
    case EventType::rep_received:
      latency_.record(now_ns() - lane->req_sent_ns.load(std::memory_order_relaxed));
      if (client.send_rtu(event.id, {}) != Status::ok) {
        tally_.add(Count::failed_calls);
        (void)client.destroy(event.id);
        break;
      }
      tally_.add(Count::established);
      if (!options_.disconnect) break;
      lane->disconnecting.store(true, std::memory_order_relaxed);
      if (client.send_dreq(event.id, {}) == Status::ok) return;  // the DREP and time-wait follow
      tally_.add(Count::failed_disconnects);
      (void)client.destroy(event.id);
      break;
    case EventType::rej_received: {
      // While disconnecting, a stale-connection REJ is the server's time-wait answering a late
      // copy of our REQ after our DREQ's DREP was lost: the disconnect completed on its side.
      const bool stale = std::get<RejReceived>(event.params).reason ==
                         static_cast<std::uint16_t>(RejReason::stale_conn);
      if (lane->disconnecting.load(std::memory_order_relaxed)) {
        tally_.add(stale ? Count::disconnected : Count::lost_after_established);
      } else {
        tally_.add(Count::rejected);
      }
      (void)client.destroy(event.id);
      break;
    }
    case EventType::req_error:
      tally_.add(Count::timed_out);
      (void)client.destroy(event.id);
      break;
    case EventType::call_failed:  // a posted call refused: as a refused call returning its status
      tally_.add(std::get<CallFailed>(event.params).call == ApiCall::send_dreq ? Count::failed_disconnects
                                                                              : Count::failed_calls);
      (void)client.destroy(event.id);
      break;
    case EventType::timewait_exit:
      tally_.add(Count::disconnected);
      (void)client.destroy(event.id);
      break;
    case EventType::dreq_received:  // the server disconnected first (a --role server teardown)
      tally_.add(Count::lost_after_established);
      (void)client.destroy(event.id);
      break;
    case EventType::dreq_error:  // the DREQ went unanswered: time-wait follows all the same
      tally_.add(Count::disconnect_timeouts);
      return;
    default: return;  // mra_received; drep_received (time-wait follows)
  }
  connect_next(*lane);
}

void Storm::connect_next(Lane& lane) {
  Engine& client = rig_.client();
  while (!stop_.load(std::memory_order_relaxed)) {
    const std::uint64_t conn = lane.next.load(std::memory_order_relaxed);
    if (conn >= limit_) break;
    lane.next.store(conn + options_.window, std::memory_order_relaxed);
    tally_.add(Count::attempted);
    Id id;
    // On the shard of the lane's port, so the server's answers stay on the thread receiving them.
    if (client.create_id_for_port(client_delivery_, &lane, req_templates_[lane.port].primary.port, id) != Status::ok) {
      tally_.add(Count::failed_calls);
      continue;
    }
    lane.current.store(id.raw, std::memory_order_relaxed);
    lane.disconnecting.store(false, std::memory_order_relaxed);
    lane.seen.store(0, std::memory_order_relaxed);
    if (ids_) ids_[conn].store(id.raw, std::memory_order_relaxed);
    ReqParams req = req_templates_[lane.port];
    req.qpn = client_qpn(conn);
    req.starting_psn = static_cast<std::uint32_t>(conn & 0xFF'FFFF);
    lane.req_sent_ns.store(now_ns(), std::memory_order_relaxed);
    if (client.send_req(id, req) == Status::ok) return;
    tally_.add(Count::failed_calls);
    (void)client.destroy(id);
  }
  end_lane();
}

void Storm::end_lane() {
  if (lanes_active_.fetch_sub(1, std::memory_order_acq_rel) == 1) finished_.release();
}

StormRun Storm::run(Progress& progress) {
  StormRun r;
  const auto start = SteadyTime::now();
  const double cpu_start = process_cpu_seconds();
  const ContextSwitches switches_start = process_context_switches();
  const auto deadline = start + std::chrono::duration_cast<SteadyTime::duration>(
                                    std::chrono::duration<double>(options_.duration_s));
  lanes_active_.store(options_.window, std::memory_order_relaxed);
  for (std::uint32_t k = 0; k < options_.window; ++k) connect_next(lanes_[k]);

  const auto settled = [this] {
    return tally_.sum(Count::established) + tally_.sum(Count::rejected) +
           tally_.sum(Count::timed_out) + tally_.sum(Count::failed_calls);
  };
  const auto sample = [&] {
    return ProgressSample{seconds_since(start), tally_.sum(Count::established),
                          process_cpu_seconds() - cpu_start};
  };
  std::uint64_t last_settled = 0;
  auto last_change = start;
  auto next_sample = start + kSampleEvery;
  for (;;) {
    const bool done = finished_.try_acquire_for(kTick);
    if (rig_.has_server()) {
      r.server_mads_high = std::max(r.server_mads_high, rig_.server().mad_buffers_in_use());
    }
    r.client_mads_high = std::max(r.client_mads_high, rig_.client().mad_buffers_in_use());
    if (client_queue_ != nullptr) {
      if (acceptor_ != nullptr && acceptor_->queue() != nullptr) {
        r.server_queue_high = std::max(r.server_queue_high, acceptor_->queue()->size());
      }
      r.client_queue_high = std::max(r.client_queue_high, client_queue_->size());
    }
    if (done) break;
    const auto now = SteadyTime::now();
    if (options_.duration_s > 0 && now >= deadline) stop_.store(true, std::memory_order_relaxed);
    if (now >= next_sample) {
      progress.update(sample(), tally_.sum(Count::attempted));
      next_sample = now + kSampleEvery;
    }
    if (const std::uint64_t s = settled(); s != last_settled) {
      last_settled = s;
      last_change = now;
    } else if (now - last_change > retry_bound(options_.cm_timeout, kStallLimit)) {
      r.stalled = true;
      stop_.store(true, std::memory_order_relaxed);
      break;
    }
  }
  r.wall_s = seconds_since(start);
  r.cpu_s = process_cpu_seconds() - cpu_start;
  r.switches = process_context_switches().since(switches_start);
  progress.update(sample(), tally_.sum(Count::attempted));
  progress.finish();
  return r;
}

void Storm::pace_teardown(std::uint64_t destroyed, std::uint64_t window) const {
  // A DREQ or DREP the fabric dropped is answered only by the DREQ's retransmission, seconds
  // later: it leaves the window at once. Whatever else goes missing is waited for a second at
  // most.
  const auto give_up = SteadyTime::now() + 1s;
  while (destroyed > rig_.client_dreps_received() + rig_.fabric_drops() + window &&
         SteadyTime::now() < give_up) {
    std::this_thread::sleep_for(20us);
  }
}

Teardown Storm::tear_down() {
  Teardown t;
  const auto start = SteadyTime::now();
  if (ids_) {
    Engine& client = rig_.client();
    const std::uint64_t window = std::max<std::uint64_t>(options_.window, kMinTeardownWindow);
    // What the pacing counts, as the teardown found it.
    const std::uint64_t before = rig_.client_dreps_received() + rig_.fabric_drops();
    for (std::uint64_t conn = 0; conn < limit_; ++conn) {
      const std::uint64_t raw = ids_[conn].load(std::memory_order_relaxed);
      if (raw == 0 || rig_.destroy(client, Id{raw}) != Status::ok) continue;  // failed, or gone
      if (++t.destroyed % kPaceEvery == 0) pace_teardown(before + t.destroyed, window);
    }
  }
  t.drained = rig_.wait_drained(retry_bound(options_.cm_timeout, kDrainDeadline));
  t.wall_s = seconds_since(start);
  return t;
}

}  // namespace fastcm::bench
