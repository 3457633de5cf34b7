// Many sender threads, one receiver per port: every MAD arrives exactly once, in each sender's
// order, including when the receiver sleeps on the wake-up fd between bursts. Runs under TSan in CI.
#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <thread>
#include <vector>

#include "loopback_test_support.h"

namespace fastcm::loopback::test {
namespace {

constexpr std::uint32_t kSenders = 4;
constexpr std::uint32_t kPerSender = 2000;
constexpr PortRef kServer0{.hca = 1, .port = 0};

// Sender s sends tags s << 16 | 0 .. s << 16 | kPerSender - 1 to server port 1 (LID 17): senders
// 0 and 1 from client port 1, 2 from client port 2, 3 from server port 2.
void send_all(LoopbackFabric& fabric, std::uint32_t s) {
  Fabric& from = fabric.hca(s == 3 ? 1 : 0);
  const auto port = static_cast<std::uint16_t>(s >= 2 ? 1 : 0);
  std::array<MadPacket, 8> pkts;
  std::array<const MadPacket*, 8> ptrs;
  for (std::uint32_t i = 0; i < kPerSender; i += 8) {
    for (std::uint32_t k = 0; k < 8; ++k) {
      pkts[k] = make_mad(to_lid(17), s << 16 | (i + k));
      ptrs[k] = &pkts[k];
    }
    ASSERT_EQ(from.send_burst(port, ptrs), 8u);
  }
}

// Receives until `total` MADs arrived. Whenever none is ready it sleeps on the fd when `sleepy`,
// else yields (a poller that never yields starves the senders on a busy machine). Returns the tags
// in arrival order.
std::vector<std::uint32_t> receive_all(Fabric& server, std::size_t total, bool sleepy) {
  std::vector<std::uint32_t> got;
  std::array<MadPacket, 16> bufs;
  std::array<MadPacket*, 16> ptrs;
  for (std::size_t i = 0; i < bufs.size(); ++i) ptrs[i] = &bufs[i];
  while (got.size() < total) {
    const std::size_t n = server.recv_burst(0, ptrs);
    for (std::size_t i = 0; i < n; ++i) got.push_back(tag_of(bufs[i]));
    if (n > 0) continue;
    if (!sleepy) {
      std::this_thread::yield();
      continue;
    }
    if (!server.arm_rx_event(0)) continue;
    pollfd p{.fd = server.rx_event_fd(0), .events = POLLIN, .revents = 0};
    // A hang guard only: a lost wake-up shows up as a failure instead of a stuck test.
    const int rc = ::poll(&p, 1, 60'000);
    EXPECT_EQ(rc, 1) << "lost wake-up";
    if (rc != 1) break;
  }
  return got;
}

void check_exactly_once_in_order(const std::vector<std::uint32_t>& got) {
  ASSERT_EQ(got.size(), std::size_t{kSenders} * kPerSender);
  std::array<std::uint32_t, kSenders> next{};
  for (std::uint32_t tag : got) {
    const std::uint32_t s = tag >> 16;
    ASSERT_LT(s, kSenders);
    ASSERT_EQ(tag & 0xffff, next[s]) << "sender " << s;  // per-sender FIFO, no loss, no repeat
    ++next[s];
  }
}

void run(bool sleepy) {
  LoopbackConfig cfg = LoopbackConfig::two_hcas(2);
  cfg.rx_queue_depth = kSenders * kPerSender;  // room for all: no drop even if the receiver lags
  Harness h(cfg);
  std::vector<std::thread> senders;
  for (std::uint32_t s = 0; s < kSenders; ++s) {
    senders.emplace_back([&h, s] { send_all(h.fabric, s); });
  }
  const auto got = receive_all(h.server(), std::size_t{kSenders} * kPerSender, sleepy);
  for (std::thread& t : senders) t.join();
  check_exactly_once_in_order(got);
  const PortCounters c = h.fabric.counters(kServer0);
  EXPECT_EQ(c.delivered, std::uint64_t{kSenders} * kPerSender);
  EXPECT_EQ(c.dropped_queue_full, 0u);
  EXPECT_EQ(h.fabric.total_pending(), 0u);
}

TEST(LoopbackThreads, ManySendersOneSpinningReceiverEveryMadOnce) { run(false); }

TEST(LoopbackThreads, ManySendersOneSleepingReceiverEveryMadOnce) { run(true); }

TEST(LoopbackThreads, FaultDecisionsPerSourcePortDoNotDependOnOtherThreads) {
  // Two threads, each the only sender on its port, under one loss rule: each port's losses are the
  // same as when it sends alone.
  const auto losses = [](bool both) {
    Harness h;
    h.fabric.set_fault(FaultRule{.loss_pct = 40});
    std::thread other;
    if (both) other = std::thread([&h] { send_tagged(h.client(), 1, to_lid(18), 0, 3000); });
    send_tagged(h.client(), 0, to_lid(17), 0, 3000);
    if (other.joinable()) other.join();
    return tags(drain(h.server(), 0));
  };
  EXPECT_EQ(losses(true), losses(false));
}

}  // namespace
}  // namespace fastcm::loopback::test
