#include "bench/fastcm_bench/flood.h"

#include <algorithm>
#include <array>

#include "bench/fastcm_bench/process_stats.h"
#include "bench/fastcm_bench/storm_qpns.h"
#include "engine/mad/codec.h"
#include "engine/path_convert.h"

namespace fastcm::bench {

namespace {

using SteadyTime = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::size_t kBurst = 32;
constexpr std::uint8_t kFloodCmTimeout = 20;  // 4.096 us x 2^20 = 4.3 s, rdma_cm's default
constexpr std::uint8_t kFloodCmRetries = 15;  // the REQ field's largest value
constexpr auto kSampleEvery = 1ms;            // the server's pool high-water
constexpr auto kIdleWait = 200us;             // the receive loop's sleep when nothing came

}  // namespace

Flood::Flood(Rig& rig, const Options& options) : rig_(rig), options_(options) {}

Flood::~Flood() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void Flood::start() {
  start_ = SteadyTime::now();
  thread_ = std::thread([this] { run(); });
}

void Flood::wait_for(double part) const {
  std::this_thread::sleep_until(
      start_ + std::chrono::duration_cast<SteadyTime::duration>(
                   std::chrono::duration<double>(part * options_.flood_seconds)));
}

FloodRun Flood::wait_sent() {
  sent_.acquire();
  return run_;
}

FloodAnswers Flood::answers() const noexcept {
  return {reps_.load(std::memory_order_relaxed), rejs_.load(std::memory_order_relaxed),
          mras_.load(std::memory_order_relaxed), other_.load(std::memory_order_relaxed)};
}

std::size_t Flood::send(std::uint64_t first, std::size_t count) {
  const Path& path = rig_.flood_path();
  const PortAttr& port = rig_.flood_port();
  mad::Req req;
  req.service_id = options_.service_id;
  req.local_ca_guid = port.node_guid;
  req.responder_resources = 4;
  req.initiator_depth = 4;
  req.remote_cm_response_timeout = kFloodCmTimeout;
  req.local_cm_response_timeout = kFloodCmTimeout;
  req.max_cm_retries = kFloodCmRetries;
  req.retry_count = 7;
  req.rnr_retry_count = 7;
  req.partition_key = path.pkey;
  req.path_packet_payload_mtu = static_cast<mad::MtuCode>(path.mtu);
  req.primary = engine::to_wire_path(path, port.ca.local_ca_ack_delay);
  std::array<MadPacket, kBurst> packets;
  std::array<const MadPacket*, kBurst> burst{};
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t n = first + k;
    req.local_comm_id = static_cast<std::uint32_t>(n + 1);  // 0 is no comm ID
    req.local_qpn = flood_qpn(n);
    req.starting_psn = static_cast<std::uint32_t>(n & 0xFF'FFFF);
    MadPacket& p = packets[k];
    p.addr = MadAddress{.remote_lid = path.remote_lid};
    // The template is valid, so encoding cannot fail (and a failure would be the tool's bug).
    (void)mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::req, n + 1), req,
                      mad::MadSpan(p.mad));
    burst[k] = &p;
  }
  return rig_.flood_fabric().send_burst(0, std::span(burst).first(count));
}

std::size_t Flood::receive() {
  std::array<MadPacket, kBurst> packets;
  std::array<MadPacket*, kBurst> bufs{};
  for (std::size_t k = 0; k < kBurst; ++k) bufs[k] = &packets[k];
  const std::size_t n = rig_.flood_fabric().recv_burst(0, bufs);
  for (std::size_t k = 0; k < n; ++k) {
    mad::MadHeader header;
    const bool cm = mad::decode_header(packets[k].mad, header).ok();
    const mad::AttrId attr = cm ? header.attribute_id : mad::AttrId::class_port_info;
    std::atomic<std::uint64_t>& count = attr == mad::AttrId::rep   ? reps_
                                        : attr == mad::AttrId::rej ? rejs_
                                        : attr == mad::AttrId::mra ? mras_
                                                                   : other_;
    count.fetch_add(1, std::memory_order_relaxed);
  }
  return n;
}

void Flood::run() {
  const double rate = options_.flood_rate;
  const auto length = std::chrono::duration_cast<SteadyTime::duration>(
      std::chrono::duration<double>(options_.flood_seconds));
  const double cpu_start = thread_cpu_seconds();
  const SteadyTime::time_point start = SteadyTime::now();
  auto next_sample = start;
  std::uint64_t offered = 0;  // REQs numbered so far: sent or refused
  for (SteadyTime::time_point now = start; now - start < length; now = SteadyTime::now()) {
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const auto due = static_cast<std::uint64_t>(rate * elapsed) + 1;
    if (due > offered) {
      const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(kBurst, due - offered));
      const std::size_t accepted = send(offered, count);
      run_.sent += accepted;
      run_.refused += count - accepted;
      offered += count;
    }
    while (receive() == kBurst) {
    }
    if (now >= next_sample) {
      run_.server_mads_high = std::max(run_.server_mads_high, rig_.server().mad_buffers_in_use());
      next_sample = now + kSampleEvery;
    }
    if (due < offered + kBurst) {
      // Ahead of the rate: wait for the next burst to fall due rather than spin beside the
      // server's threads.
      const auto wait = std::chrono::duration<double>(static_cast<double>(offered + kBurst - due) / rate);
      std::this_thread::sleep_for(std::min<SteadyTime::duration>(
          std::chrono::duration_cast<SteadyTime::duration>(wait), kSampleEvery));
    }
  }
  run_.ended = SteadyTime::now();
  run_.seconds = std::chrono::duration<double>(run_.ended - start).count();
  run_.cpu_s = thread_cpu_seconds() - cpu_start;
  sent_.release();
  while (!stop_.load(std::memory_order_relaxed)) {
    if (receive() == 0) std::this_thread::sleep_for(kIdleWait);
  }
}

}  // namespace fastcm::bench
