#include "shards/port_poller.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <system_error>
#include <thread>

#include "shards/shard.h"

namespace fastcm::shards {

namespace {

// Fibonacci hashing of a request's origin: a retransmitted REQ and a stale REQ reusing the same
// remote QP hash alike, so duplicate and stale detection stay inside one shard.
std::uint32_t spread(std::uint64_t origin, std::uint32_t id, std::uint32_t shards) noexcept {
  const std::uint64_t mixed = (origin ^ (std::uint64_t{id} << 24 | id)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::uint32_t>(((mixed >> 32) * shards) >> 32);
}

// The sleep of a port without an rx event fd: what a MAD arriving on an idle port may wait, far
// below any CM timeout (4.096 µs · 2^t, tens of milliseconds and more in practice), for about a
// thousand wake-ups a second instead of a busy core.
constexpr int kNoRxFdSleepMs = 1;

}  // namespace

PortPoller::PortPoller(Fabric& fabric, std::uint16_t port_index, engine::MadPool& pool, ShardSet& shards,
                       engine::CidLayout layout)
    : fabric_(fabric), port_index_(port_index), pool_(pool), shards_(shards), layout_(layout),
      stop_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (stop_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

PortPoller::~PortPoller() {
  for (std::size_t i = 0; i < spares_ready_; ++i) engine::release(pool_, spares_[i]);
  ::close(stop_fd_);
}

void PortPoller::refill() noexcept {
  while (spares_ready_ < kBurst) {
    engine::MadBuf* buf = pool_.get();
    if (buf == nullptr) break;  // pool exhausted: receive fewer; the fabric queue holds the rest
    spares_[spares_ready_++] = buf;
  }
  spare_count_.store(static_cast<std::uint32_t>(spares_ready_), std::memory_order_relaxed);
}

std::uint32_t PortPoller::shard_for(const engine::RoutingKey& key) const noexcept {
  const std::uint32_t shards = shards_.shard_count();
  switch (key.kind) {
    case engine::RoutingKey::Kind::local_comm_id: {
      // A CID naming no shard of ours still needs an answer (REJ / DREP): any shard gives it.
      const std::uint32_t shard = layout_.decode(key.comm_id).shard;
      return shard < shards ? shard : shard % shards;
    }
    case engine::RoutingKey::Kind::remote_qp:
    case engine::RoutingKey::Kind::sidr_request: return spread(key.origin, key.id, shards);
    case engine::RoutingKey::Kind::any_shard: return 0;  // the chain starts at shard 0 (shard.h)
    case engine::RoutingKey::Kind::unrouted: break;
  }
  return port_index_ % shards;
}

std::size_t PortPoller::poll_once() noexcept {
  refill();
  if (spares_ready_ == 0) return 0;
  std::array<MadPacket*, kBurst> packets;
  for (std::size_t i = 0; i < spares_ready_; ++i) packets[i] = &spares_[i]->packet;
  const std::size_t n = fabric_.recv_burst(port_index_, std::span<MadPacket* const>(packets.data(), spares_ready_));
  if (n == 0) return 0;

  // Group the burst by shard (order kept within each), then one inbox burst per shard.
  const std::uint32_t shards = shards_.shard_count();
  std::array<std::array<engine::MadBuf*, kBurst>, kMaxShards> by_shard;
  std::array<std::uint8_t, kMaxShards> counts{};
  for (std::size_t i = 0; i < n; ++i) {
    engine::MadBuf* buf = spares_[i];
    buf->packet.addr.port_index = port_index_;
    const engine::RoutingKey key = engine::routing_key(mad::ConstMadSpan(buf->packet.mad), buf->packet.addr);
    const std::uint32_t shard = shard_for(key);
    if (key.kind == engine::RoutingKey::Kind::any_shard) {
      engine::MadBuf* one[] = {buf};
      if (shards_.shard(shard).post_mads(one, true) == 0) {
        inbox_full_.fetch_add(1, std::memory_order_relaxed);
        engine::release(pool_, buf);
      }
      continue;
    }
    by_shard[shard][counts[shard]++] = buf;
  }
  for (std::uint32_t s = 0; s < shards; ++s) {
    if (counts[s] == 0) continue;
    const std::span<engine::MadBuf* const> burst(by_shard[s].data(), counts[s]);
    const std::size_t posted = shards_.shard(s).post_mads(burst, false);
    for (std::size_t i = posted; i < burst.size(); ++i) engine::release(pool_, burst[i]);
    if (posted < burst.size()) inbox_full_.fetch_add(burst.size() - posted, std::memory_order_relaxed);
  }
  // The filled buffers now belong to the shards; the unfilled ones move to the front, and the
  // spares are made whole before any shard handles this burst, so the shards' own takes stay
  // within EngineConfig::mad_buffers.
  for (std::size_t i = n; i < spares_ready_; ++i) spares_[i - n] = spares_[i];
  spares_ready_ -= n;
  refill();
  return n;
}

void PortPoller::run(unsigned idle_spins) noexcept {
  unsigned idle = 0;
  while (!stop_requested_.load(std::memory_order_acquire)) {  // pairs: stop()'s store
    if (poll_once() != 0) {
      idle = 0;
      continue;
    }
    if (++idle < idle_spins) {
      std::this_thread::yield();
      continue;
    }
    idle = 0;
    if (!fabric_.arm_rx_event(port_index_)) continue;
    // A port without an rx event fd (fastcm/fabric.h) is polled again after a bounded sleep.
    // poll() ignores the negative fd and waits on the stop fd alone.
    const int rx_fd = fabric_.rx_event_fd(port_index_);
    std::array<pollfd, 2> fds{pollfd{.fd = rx_fd, .events = POLLIN, .revents = 0},
                              pollfd{.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    (void)::poll(fds.data(), fds.size(), rx_fd < 0 ? kNoRxFdSleepMs : -1);
  }
}

void PortPoller::stop() noexcept {
  stop_requested_.store(true, std::memory_order_release);  // pairs: run()'s load
  const std::uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
}

}  // namespace fastcm::shards
