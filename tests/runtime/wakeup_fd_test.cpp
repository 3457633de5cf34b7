// WakeupFd: producers write the eventfd only for an armed consumer, once per sleep, and never lose
// a wake-up against the consumer's arm-then-check.
#include "runtime/wakeup_fd.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace fastcm::runtime {
namespace {

bool readable(const WakeupFd& wake) {
  pollfd pfd{.fd = wake.fd(), .events = POLLIN, .revents = 0};
  return ::poll(&pfd, 1, 0) == 1;
}

// The eventfd's counter: how many writes reached it since the last read (0 when none).
eventfd_t writes(const WakeupFd& wake) {
  eventfd_t value = 0;
  return eventfd_read(wake.fd(), &value) == 0 ? value : 0;
}

TEST(WakeupFd, AProducerWritesNothingWhileTheConsumerIsNotArmed) {
  WakeupFd wake;
  wake.notify();
  EXPECT_FALSE(readable(wake));
  wake.arm();
  wake.disarm();
  wake.notify();
  EXPECT_FALSE(readable(wake));
}

TEST(WakeupFd, AnArmedConsumerIsWokenByOneWriteHoweverManyProducersNotify) {
  WakeupFd wake;
  wake.arm();
  EXPECT_FALSE(readable(wake));
  wake.notify();
  EXPECT_TRUE(readable(wake));
  wake.notify();
  wake.notify();
  EXPECT_EQ(writes(wake), 1u);
}

TEST(WakeupFd, ArmingAgainClearsAWakeUpTheConsumerDidNotSleepFor) {
  WakeupFd wake;
  wake.arm();
  wake.notify();  // the consumer found the item itself and did not sleep
  wake.disarm();
  wake.arm();
  EXPECT_FALSE(readable(wake));
  wake.notify();
  EXPECT_EQ(writes(wake), 1u);
}

// A producer publishes items one at a time while the consumer sleeps whenever it finds none: were
// a wake-up lost between the consumer's arm-then-check and a producer's publish-then-notify, the
// consumer's sleep would end at the guard timeout and the test fail.
TEST(WakeupFd, NoWakeUpIsLostBetweenArmAndNotify) {
  constexpr std::uint64_t kItems = 20'000;
  constexpr int kGuardMs = 10'000;
  WakeupFd wake;
  std::atomic<std::uint64_t> published{0};
  std::thread producer([&] {
    for (std::uint64_t i = 1; i <= kItems; ++i) {
      published.store(i, std::memory_order_release);  // partner: the consumer's acquire loads
      wake.notify();
    }
  });
  std::uint64_t seen = 0;
  std::uint64_t sleeps = 0;
  std::uint64_t guard_timeouts = 0;
  while (seen < kItems) {
    if (const std::uint64_t now = published.load(std::memory_order_acquire); now != seen) {
      seen = now;
      continue;
    }
    wake.arm();
    if (published.load(std::memory_order_acquire) != seen) {
      wake.disarm();
      continue;
    }
    pollfd pfd{.fd = wake.fd(), .events = POLLIN, .revents = 0};
    if (::poll(&pfd, 1, kGuardMs) == 0) ++guard_timeouts;
    ++sleeps;
    wake.disarm();
  }
  producer.join();
  EXPECT_EQ(guard_timeouts, 0u);
  EXPECT_EQ(seen, kItems);
  RecordProperty("sleeps", static_cast<int>(sleeps));
}

}  // namespace
}  // namespace fastcm::runtime
