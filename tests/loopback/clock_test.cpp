// fastcm::Clock implementations: the virtual clock moves only when told, and never backwards.
#include <gtest/gtest.h>

#include <thread>

#include "fastcm/clock.h"

namespace fastcm {
namespace {

TEST(VirtualClock, MovesOnlyWhenTold) {
  VirtualClock clock(500);
  EXPECT_EQ(clock.now_ns(), 500u);
  EXPECT_EQ(clock.advance(250), 750u);
  EXPECT_EQ(clock.now_ns(), 750u);
  EXPECT_TRUE(clock.set(750));
  EXPECT_TRUE(clock.set(2'000));
  EXPECT_EQ(clock.now_ns(), 2'000u);
}

TEST(VirtualClock, RefusesToGoBack) {
  VirtualClock clock;
  EXPECT_EQ(clock.now_ns(), 0u);
  clock.advance(10);
  EXPECT_FALSE(clock.set(9));
  EXPECT_EQ(clock.now_ns(), 10u);
}

TEST(VirtualClock, ReadersOnOtherThreadsSeeWhatWasWrittenBeforeTheMove) {
  VirtualClock clock;
  int payload = 0;
  std::thread reader([&] {
    while (clock.now_ns() < 1) {
    }
    EXPECT_EQ(payload, 42);  // published by advance()'s release
  });
  payload = 42;
  clock.advance(1);
  reader.join();
}

TEST(SteadyClock, NeverGoesBack) {
  SteadyClock clock;
  const Clock& c = clock;
  std::uint64_t last = c.now_ns();
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t t = c.now_ns();
    EXPECT_GE(t, last);
    last = t;
  }
}

}  // namespace
}  // namespace fastcm
