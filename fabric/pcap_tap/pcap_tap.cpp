#include "fabric/pcap_tap/pcap_tap.h"

#include <rte_ring.h>
#include <time.h>

#include <array>
#include <chrono>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "fabric/pcap_tap/tap_frame.h"
#include "runtime/checked_capacity.h"

namespace fastcm::pcap_tap {

namespace {

constexpr unsigned kBurst = 64;
constexpr std::uint32_t kMaxQueuePackets = 1u << 20;
constexpr auto kIdleLook = std::chrono::milliseconds(1);

std::uint64_t unix_time_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string interface_name(const PortAttr& port) {
  char text[64];
  std::snprintf(text, sizeof text, "fastcm port %u (node 0x%016llx)", unsigned{port.port_num},
                static_cast<unsigned long long>(port.node_guid));
  return text;
}

}  // namespace

// Both rings hold every slot exactly (RING_F_EXACT_SZ).
PcapTap::PcapTap(Fabric& inner, const PcapTapConfig& config)
    : inner_(inner),
      max_bytes_(config.max_bytes),
      slots_(std::make_unique<Slot[]>(
          runtime::checked_capacity("PcapTapConfig::queue_packets", config.queue_packets, kMaxQueuePackets))),
      free_("tapfree", config.queue_packets, RING_F_EXACT_SZ | RING_F_SP_ENQ | RING_F_MC_HTS_DEQ),
      queued_("tapq", config.queue_packets, RING_F_EXACT_SZ | RING_F_MP_HTS_ENQ | RING_F_SC_DEQ),
      file_(config.path) {
  for (const PortAttr& port : inner.ports()) file_.add_interface(interface_name(port));
  if (!file_.flush()) {
    throw std::system_error(file_.last_errno(), std::generic_category(), config.path.string());
  }
  if (file_.size() > max_bytes_) {
    throw std::invalid_argument("PcapTapConfig::max_bytes is below the file's headers");
  }
  for (std::uint32_t i = 0; i < config.queue_packets; ++i) rte_ring_enqueue(free_.get(), &slots_[i]);
  writer_ = std::thread([this] { write_loop(); });
}

PcapTap::~PcapTap() {
  stop_.store(true, std::memory_order_release);
  writer_.join();
}

template <typename Packet>
void PcapTap::record(std::uint16_t port_index, std::span<Packet* const> pkts,
                     Direction direction) noexcept {
  std::size_t at = 0;
  while (at < pkts.size()) {
    const auto want = static_cast<unsigned>(std::min<std::size_t>(kBurst, pkts.size() - at));
    if (full_.load(std::memory_order_relaxed)) {
      dropped_limit_.fetch_add(pkts.size() - at, std::memory_order_relaxed);
      return;
    }
    std::array<void*, kBurst> taken;
    const unsigned got = rte_ring_dequeue_burst(free_.get(), taken.data(), want, nullptr);
    const std::uint64_t now = got > 0 ? unix_time_ns() : 0;
    for (unsigned i = 0; i < got; ++i) {
      auto* slot = static_cast<Slot*>(taken[i]);
      // Acquire partner: the writer's release when it gave the slot back, so its reads are done.
      (void)slot->queued.load(std::memory_order_acquire);
      slot->pkt = *pkts[at + i];
      slot->pkt.addr.port_index = port_index;
      slot->unix_time_ns = now;
      slot->port_index = port_index;
      slot->direction = direction;
      // Release partner: the writer's acquire load before it reads the slot.
      slot->queued.store(true, std::memory_order_release);
    }
    if (got > 0) {
      recorded_.fetch_add(got, std::memory_order_relaxed);
      rte_ring_enqueue_burst(queued_.get(), taken.data(), got, nullptr);  // room for all
    }
    if (got < want) {
      dropped_queue_full_.fetch_add(pkts.size() - at - got, std::memory_order_relaxed);
      return;
    }
    at += got;
  }
}

std::size_t PcapTap::send_burst(std::uint16_t port_index,
                                std::span<const MadPacket* const> pkts) noexcept {
  const std::size_t sent = inner_.send_burst(port_index, pkts);
  if (sent > 0) record(port_index, pkts.first(sent), Direction::outbound);
  return sent;
}

std::size_t PcapTap::recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept {
  const std::size_t received = inner_.recv_burst(port_index, bufs);
  if (received > 0) record(port_index, bufs.first(received), Direction::inbound);
  return received;
}

unsigned PcapTap::write_queued() {
  std::array<void*, kBurst> taken;
  const unsigned n = rte_ring_dequeue_burst(queued_.get(), taken.data(), kBurst, nullptr);
  const std::span<const PortAttr> ports = inner_.ports();
  std::array<std::uint8_t, kMaxTapFrameSize> frame;
  for (unsigned i = 0; i < n; ++i) {
    auto* slot = static_cast<Slot*>(taken[i]);
    // Acquire partner: the recorder's release after it filled the slot.
    (void)slot->queued.load(std::memory_order_acquire);
    const std::size_t length = build_tap_frame(ports[slot->port_index], slot->pkt, slot->direction, frame);
    if (length == 0 || full_.load(std::memory_order_relaxed) ||
        file_.size() + PcapngWriter::packet_block_size(length) > max_bytes_) {
      // A frame that cannot be built (a QPN above 24 bits from a broken inner fabric) counts
      // with the limit: it is a MAD the file does not hold.
      if (length != 0) full_.store(true, std::memory_order_relaxed);
      dropped_limit_.fetch_add(1, std::memory_order_relaxed);
    } else if (file_.write_packet(slot->port_index, slot->unix_time_ns, slot->direction,
                                  std::span<const std::uint8_t>(frame.data(), length))) {
      written_.fetch_add(1, std::memory_order_relaxed);
    } else {
      write_errors_.fetch_add(1, std::memory_order_relaxed);
    }
    // Release partner: the recorder's acquire load when it takes the slot again.
    slot->queued.store(false, std::memory_order_release);
  }
  if (n > 0) rte_ring_enqueue_burst(free_.get(), taken.data(), n, nullptr);
  processed_ += n;
  return n;
}

void PcapTap::write_loop() {
  for (;;) {
    if (write_queued() > 0) continue;
    // Acquire partner: the destructor's release. Every recorder has stopped by then (the Fabric
    // lifetime rule), so one more look finds everything they queued.
    if (stop_.load(std::memory_order_acquire)) {
      while (write_queued() > 0) {
      }
      break;
    }
    if (!file_.flush()) write_errors_.fetch_add(1, std::memory_order_relaxed);
    settled_.store(processed_, std::memory_order_relaxed);
    std::this_thread::sleep_for(kIdleLook);
  }
  if (!file_.flush()) write_errors_.fetch_add(1, std::memory_order_relaxed);
}

bool PcapTap::drain(std::chrono::milliseconds limit) const {
  const std::uint64_t target = recorded_.load(std::memory_order_relaxed);
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (settled_.load(std::memory_order_relaxed) < target) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(kIdleLook);
  }
  return true;
}

PcapTapCounters PcapTap::counters() const noexcept {
  return PcapTapCounters{.written = written_.load(std::memory_order_relaxed),
                         .dropped_queue_full = dropped_queue_full_.load(std::memory_order_relaxed),
                         .dropped_limit = dropped_limit_.load(std::memory_order_relaxed),
                         .write_errors = write_errors_.load(std::memory_order_relaxed)};
}

}  // namespace fastcm::pcap_tap
