// A Fabric that records every CM MAD another Fabric sends and receives into a pcapng file
// Wireshark opens: one interface per port, each packet's direction in its flags, RoCEv2 framing
// (tap_frame.h says how InfiniBand addresses are mapped). Wrap the fabric an engine is created
// on; a fabric that is not wrapped pays nothing.
//
// Design: the tapped paths (send_burst's callers, each port's poller) never block and never
// allocate. They copy each MAD with its port, direction and time into a slot of a bounded pool
// and queue it (DPDK rte_rings in our own memory, no EAL needed); a writer thread of the tap
// frames the queued MADs and writes them out. When the pool is empty (the disk is slower than the
// MADs) a MAD is not recorded and counted dropped_queue_full; once the file reaches max_bytes,
// recording stops and later MADs are counted dropped_limit. The writer looks at its queue every
// millisecond when it has found nothing: a capture needs no low latency, and the tapped paths then
// make no system call for it.
//
// Thread contract: as Fabric's (fabric.h); counters() from any thread. Lifetime: the tap must be
// destroyed after every thread calling it has stopped (as any Fabric), and before `inner`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <thread>

#include "fabric/pcap_tap/pcapng_writer.h"
#include "fastcm/capture_counters.h"
#include "fastcm/fabric.h"
#include "runtime/owned_ring.h"

namespace fastcm::pcap_tap {

struct PcapTapConfig {
  std::filesystem::path path;
  std::uint64_t max_bytes = std::uint64_t{1} << 30;  // the file's limit, headers included
  std::uint32_t queue_packets = 8192;                 // MADs recorded, not yet written: 1..2^20
};

// Snapshots of relaxed counters: each a value it had at some instant. dropped_queue_full: every
// slot was waiting for the writer; dropped_limit: the file had reached max_bytes.
using PcapTapCounters = CaptureCounters;

class PcapTap final : public Fabric {
 public:
  // Creates (or truncates) config.path, writes the section and one interface per port of
  // `inner`, and starts the writer thread. Errors: throws std::invalid_argument for a queue size
  // outside 1..2^20 or a max_bytes below the headers, std::system_error when the file cannot be
  // written or a ring cannot be initialized, std::bad_alloc.
  PcapTap(Fabric& inner, const PcapTapConfig& config);
  // Writes every MAD recorded so far, then stops the writer and closes the file. Blocks for that.
  ~PcapTap() override;

  [[nodiscard]] std::span<const PortAttr> ports() const noexcept override { return inner_.ports(); }
  // The inner fabric's send_burst; the packets it accepted are recorded.
  std::size_t send_burst(std::uint16_t port_index,
                         std::span<const MadPacket* const> pkts) noexcept override;
  // The inner fabric's recv_burst; the packets it returned are recorded.
  std::size_t recv_burst(std::uint16_t port_index, std::span<MadPacket* const> bufs) noexcept override;
  [[nodiscard]] int rx_event_fd(std::uint16_t port_index) const noexcept override {
    return inner_.rx_event_fd(port_index);
  }
  bool arm_rx_event(std::uint16_t port_index) noexcept override {
    return inner_.arm_rx_event(port_index);
  }

  [[nodiscard]] PcapTapCounters counters() const noexcept;

  // Waits until every MAD recorded before the call is in the file (written or counted), polling
  // every millisecond, at most `limit`; true when that happened. Any thread but the tapped ones
  // (a shard that waits here would record nothing meanwhile, but still holds up its port).
  [[nodiscard]] bool drain(std::chrono::milliseconds limit) const;

 private:
  struct Slot {
    MadPacket pkt;
    std::uint64_t unix_time_ns = 0;
    std::uint16_t port_index = 0;
    Direction direction = Direction::inbound;
    // The hand-off word: true while the writer owns the slot's contents. The rings order the
    // hand-off already, outside the C++ memory model; this release/acquire pair states it in it.
    std::atomic<bool> queued{false};
  };
  template <typename Packet>
  void record(std::uint16_t port_index, std::span<Packet* const> pkts, Direction direction) noexcept;
  void write_loop();
  // Writes the queued slots; returns how many there were.
  unsigned write_queued();

  Fabric& inner_;
  std::uint64_t max_bytes_;
  std::unique_ptr<Slot[]> slots_;
  runtime::OwnedRing free_;    // slots to fill: many recorders take (HTS), the writer gives back
  runtime::OwnedRing queued_;  // filled slots: many recorders give (HTS), the writer takes
  PcapngWriter file_;
  std::uint64_t processed_ = 0;  // the writer's: slots it has taken from queued_
  // Set by the writer when the file is full; read by the recorders to stop early. Relaxed: a
  // recorder that reads it late records a MAD the writer then drops (and counts) itself.
  std::atomic<bool> full_{false};
  std::atomic<bool> stop_{false};  // release by the destructor, acquire by the writer
  // MADs queued for the writer, and of those the ones in the file or counted (as of its last
  // flush). Relaxed: drain() compares counts; the file's bytes are read by another process.
  std::atomic<std::uint64_t> recorded_{0};
  std::atomic<std::uint64_t> settled_{0};
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> dropped_queue_full_{0};
  std::atomic<std::uint64_t> dropped_limit_{0};
  std::atomic<std::uint64_t> write_errors_{0};
  std::thread writer_;  // last: started when everything else is built
};

}  // namespace fastcm::pcap_tap
