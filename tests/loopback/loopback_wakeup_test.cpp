// The idle-poller wake-up: rx_event_fd becomes readable only for a consumer that armed it, for the
// first MAD after arming, and arm_rx_event refuses to arm while MADs are queued or held.
#include <gtest/gtest.h>
#include <poll.h>

#include "loopback_test_support.h"

namespace fastcm::loopback::test {
namespace {

bool readable(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(LoopbackWakeup, EachPortHasItsOwnFd) {
  Harness h;
  const int fds[] = {h.client().rx_event_fd(0), h.client().rx_event_fd(1), h.server().rx_event_fd(0),
                     h.server().rx_event_fd(1)};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GE(fds[i], 0);
    EXPECT_FALSE(readable(fds[i]));
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(fds[i], fds[j]);
  }
}

TEST(LoopbackWakeup, AnArmedPortIsWokenByTheFirstArrivalAndStaysReadableUntilRearmed) {
  Harness h;
  const int fd = h.server().rx_event_fd(0);
  ASSERT_TRUE(h.server().arm_rx_event(0));
  EXPECT_FALSE(readable(fd));
  send_one(h.server(), 1, make_mad(to_lid(17), 0));  // to server port 0 from its sibling port
  EXPECT_TRUE(readable(fd));
  send_tagged(h.client(), 0, to_lid(17), 1, 4);
  EXPECT_EQ(drain(h.server(), 0).size(), 5u);
  EXPECT_TRUE(readable(fd)) << "a waiter that did not re-arm must not sleep";
  ASSERT_TRUE(h.server().arm_rx_event(0));
  EXPECT_FALSE(readable(fd)) << "arming clears the old wake-up";
}

TEST(LoopbackWakeup, AnUnarmedPortIsNotSignalled) {
  Harness h;
  const int fd = h.server().rx_event_fd(0);
  send_one(h.client(), 0, make_mad(to_lid(17), 0));
  EXPECT_FALSE(readable(fd));
  EXPECT_EQ(drain(h.server(), 0).size(), 1u);
  ASSERT_TRUE(h.server().arm_rx_event(0));
  send_one(h.client(), 0, make_mad(to_lid(18), 1));  // another port's arrival
  EXPECT_FALSE(readable(fd));
}

TEST(LoopbackWakeup, ArmingFailsWhileAMadIsQueued) {
  Harness h;
  const int fd = h.server().rx_event_fd(0);
  send_one(h.client(), 0, make_mad(to_lid(17), 0));
  EXPECT_FALSE(h.server().arm_rx_event(0));
  EXPECT_FALSE(readable(fd));
  send_one(h.client(), 0, make_mad(to_lid(17), 1));
  EXPECT_FALSE(readable(fd)) << "a failed arm leaves the port unarmed";
  EXPECT_EQ(drain(h.server(), 0).size(), 2u);
  EXPECT_TRUE(h.server().arm_rx_event(0));
}

TEST(LoopbackWakeup, ArmingFailsWhileADelayedMadIsHeld) {
  Harness h;
  h.fabric.set_fault(FaultRule{.delay_ns = 1000});
  send_one(h.client(), 0, make_mad(to_lid(17), 0));
  EXPECT_TRUE(drain(h.server(), 0).empty());  // now held by the consumer, not queued
  EXPECT_FALSE(h.server().arm_rx_event(0)) << "sleeping would miss the MAD's time";
  h.clock.advance(1000);
  EXPECT_EQ(drain(h.server(), 0).size(), 1u);
  EXPECT_TRUE(h.server().arm_rx_event(0));
}

TEST(LoopbackWakeup, ALostMadDoesNotWake) {
  Harness h;
  h.fabric.set_fault(FaultRule{.loss_pct = 100});
  const int fd = h.server().rx_event_fd(0);
  ASSERT_TRUE(h.server().arm_rx_event(0));
  send_one(h.client(), 0, make_mad(to_lid(17), 0));
  EXPECT_FALSE(readable(fd));
}

}  // namespace
}  // namespace fastcm::loopback::test
