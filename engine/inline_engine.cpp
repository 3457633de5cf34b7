// The inline engine: one Protocol driven by the caller's thread through Engine::progress(), over
// every port of the fabric. It is what tests run with a virtual clock, and what an application
// with its own poll loop (an SPDK-style reactor) embeds; the sharded engine runs the same
// Protocol on worker threads.
#include <array>
#include <deque>
#include <memory>
#include <random>

#include "engine/event_queue.h"
#include "engine/fixed_mad_pool.h"
#include "engine/listen_table.h"
#include "engine/outbox.h"
#include "engine/protocol.h"
#include "fastcm/engine.h"

namespace fastcm {

namespace {

constexpr std::size_t kRecvBurst = 32;

class InlineEngine final : public Engine, private engine::Outbox {
 public:
  InlineEngine(Fabric& fabric, const Clock& clock, const EngineConfig& config)
      : fabric_(fabric),
        pool_(config.mad_buffers),
        listens_(config.max_listens),
        protocol_(engine::ProtocolEnv{.ports = fabric.ports(),
                                      .clock = clock,
                                      .pool = pool_,
                                      .outbox = *this,
                                      .listens = listens_,
                                      .config = config,
                                      .shard = 0,
                                      .layout = engine::CidLayout(1, std::random_device{}()),
                                      .max_endpoints = config.max_endpoints}) {}

  ~InlineEngine() override {
    for (auto& queue : queues_) {
      std::array<Event, 16> events;
      while (const std::size_t n = queue->pop(events)) {
        for (std::size_t i = 0; i < n; ++i) release(events[i]);
      }
    }
  }

  std::size_t progress() override {
    std::size_t work = 0;
    const auto ports = fabric_.ports();
    for (std::uint16_t p = 0; p < ports.size(); ++p) work += receive(p);
    return work + protocol_.on_timers();
  }

  std::optional<std::uint64_t> next_timer_ns() const override { return protocol_.next_timer_ns(); }

  Status listen(const ListenParams& params, Id& out) override {
    if (params.port != 0 && !has_port(params.port)) return Status::invalid_argument;
    return listens_.add(params, out);
  }
  Status create_id(const Delivery& delivery, void* context, Id& out) override {
    return protocol_.create_id(delivery, context, out);
  }
  Status set_context(Id id, void* context) override { return protocol_.set_context(id, context); }
  Status send_req(Id id, const ReqParams& p) override { return protocol_.send_req(id, p); }
  Status send_rep(Id id, const RepParams& p) override { return protocol_.send_rep(id, p); }
  Status send_rtu(Id id, std::span<const std::uint8_t> pd) override { return protocol_.send_rtu(id, pd); }
  Status send_rej(Id id, const RejParams& p) override { return protocol_.send_rej(id, p); }
  Status send_mra(Id id, const MraParams& p) override { return protocol_.send_mra(id, p); }
  Status send_dreq(Id id, std::span<const std::uint8_t> pd) override { return protocol_.send_dreq(id, pd); }
  Status send_drep(Id id, std::span<const std::uint8_t> pd) override { return protocol_.send_drep(id, pd); }
  Status send_lap(Id id, const LapParams& p) override { return protocol_.send_lap(id, p); }
  Status send_apr(Id id, const AprParams& p) override { return protocol_.send_apr(id, p); }
  Status send_sidr_req(Id id, const SidrReqParams& p) override { return protocol_.send_sidr_req(id, p); }
  Status send_sidr_rep(Id id, const SidrRepParams& p) override { return protocol_.send_sidr_rep(id, p); }
  Status establish(Id id) override { return protocol_.establish(id); }
  Status init_qp_attr(Id id, QpState state, QpAttr& out) const override {
    return protocol_.init_qp_attr(id, state, out);
  }
  Status last_private_data(Id id, std::span<const std::uint8_t>& out) const override {
    return protocol_.last_private_data(id, out);
  }
  Status connection_info(Id id, ConnectionInfo& out) const override {
    return protocol_.connection_info(id, out);
  }

  Status destroy(Id id, DestroyedFn on_destroyed, void* ctx) override {
    if (!engine::ListenTable::is_listen_id(id)) return protocol_.destroy(id, on_destroyed, ctx);
    const Status s = listens_.remove(id);
    if (s == Status::ok && on_destroyed != nullptr) on_destroyed(ctx);
    return s;
  }

  EventQueue* create_event_queue(std::uint32_t capacity) override {
    if (capacity == 0) return nullptr;
    return queues_.emplace_back(std::make_unique<engine::RingEventQueue>(capacity)).get();
  }
  std::size_t poll(EventQueue& queue, std::span<Event> events) override {
    // An event of an endpoint destroyed after it was queued is dropped here: once destroy has
    // returned nothing about the endpoint reaches the application, whose on_destroyed may have
    // freed the context the event carries.
    auto& ring = static_cast<engine::RingEventQueue&>(queue);
    std::size_t n = 0;
    while (n < events.size() && ring.pop(events.subspan(n, 1)) == 1) {
      if (protocol_.attached(events[n].id)) {
        ++n;
      } else {
        release(events[n]);
      }
    }
    return n;
  }
  void retain(const Event& event) override {
    if (event.mad != nullptr) engine::retain(*const_cast<MadRef*>(event.mad));
  }
  void release(const Event& event) override {
    engine::release(pool_, const_cast<MadRef*>(event.mad));
  }

  void counters(std::span<PortCounters> out) const override {
    const auto ports = fabric_.ports();
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].port_num < out.size()) out[ports[p].port_num] = protocol_.counters(p);
    }
  }
  std::uint32_t mad_buffers_in_use() const override { return pool_.in_use(); }

 private:
  // Outbox
  bool send(const MadRef& buf) noexcept override {
    const MadPacket* packet = &buf.packet;
    return fabric_.send_burst(buf.packet.addr.port_index, std::span<const MadPacket* const>(&packet, 1)) == 1;
  }
  bool enqueue(EventQueue& queue, const Event& event, MadRef* mad) noexcept override {
    return static_cast<engine::RingEventQueue&>(queue).push(event, mad);
  }
  bool queue_full(const EventQueue& queue) const noexcept override {
    return static_cast<const engine::RingEventQueue&>(queue).full();
  }

  std::size_t receive(std::uint16_t port_index) {
    std::array<MadRef*, kRecvBurst> bufs{};
    std::array<MadPacket*, kRecvBurst> packets{};
    std::size_t have = 0;
    for (; have < kRecvBurst; ++have) {
      bufs[have] = pool_.get();
      if (bufs[have] == nullptr) break;
      packets[have] = &bufs[have]->packet;
    }
    const std::size_t n = fabric_.recv_burst(port_index, std::span<MadPacket* const>(packets.data(), have));
    // Unfilled buffers go back before any handler runs: a callback answering a MAD needs one.
    for (std::size_t i = n; i < have; ++i) engine::release(pool_, bufs[i]);
    for (std::size_t i = 0; i < n; ++i) {
      bufs[i]->packet.addr.port_index = port_index;
      protocol_.on_mad(bufs[i]);  // takes the reference
    }
    return n;
  }

  bool has_port(std::uint8_t port_num) const noexcept {
    for (const PortAttr& p : fabric_.ports()) {
      if (p.port_num == port_num) return true;
    }
    return false;
  }

  Fabric& fabric_;
  engine::FixedMadPool pool_;
  engine::ListenTable listens_;
  engine::Protocol protocol_;
  // Queues live as long as the engine (fastcm/engine.h); created on the control path only.
  std::deque<std::unique_ptr<engine::RingEventQueue>> queues_;
};

}  // namespace

std::unique_ptr<Engine> Engine::create(Fabric& fabric, const Clock& clock, const EngineConfig& config) {
  if (config.max_endpoints == 0 || config.max_endpoints > engine::CidLayout(1, 0).max_slots() ||
      config.max_listens == 0 || config.mad_buffers < kRecvBurst || config.auto_mra_fraction < 0 ||
      config.auto_mra_fraction >= 1 || config.mra_service_timeout > 31 ||
      fabric.ports().empty()) {
    return nullptr;
  }
  return std::make_unique<InlineEngine>(fabric, clock, config);
}

}  // namespace fastcm
