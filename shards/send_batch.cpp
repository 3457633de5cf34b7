#include "shards/send_batch.h"

#include <span>

namespace fastcm::shards {

void SendBatch::add(engine::MadBuf& buf, engine::SendTally tally) noexcept {
  if (queued_ == kCapacity) flush();
  engine::retain(buf);
  queue_[queued_++] = Queued{&buf, tally};
}

void SendBatch::flush() noexcept {
  if (queued_ == 0) return;  // the common case: every burst and every idle batch ends in a flush
  // Ports in the order their first MAD was queued; a batch usually holds one or two.
  std::array<bool, kCapacity> taken{};
  std::array<const MadPacket*, kCapacity> packets;
  std::array<std::uint8_t, kCapacity> which;
  for (std::size_t first = 0; first < queued_; ++first) {
    if (taken[first]) continue;
    const std::uint16_t port = queue_[first].buf->packet.addr.port_index;
    std::size_t n = 0;
    for (std::size_t i = first; i < queued_; ++i) {
      if (taken[i] || queue_[i].buf->packet.addr.port_index != port) continue;
      taken[i] = true;
      packets[n] = &queue_[i].buf->packet;
      which[n++] = static_cast<std::uint8_t>(i);
    }
    const std::size_t accepted = fabric_.send_burst(port, std::span<const MadPacket* const>(packets.data(), n));
    for (std::size_t k = 0; k < accepted; ++k) on_accepted_(context_, port, queue_[which[k]].tally);
  }
  for (std::size_t i = 0; i < queued_; ++i) engine::release(pool_, queue_[i].buf);
  queued_ = 0;
}

}  // namespace fastcm::shards
