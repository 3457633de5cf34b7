// Looking at a wake-up eventfd from a test without changing it: readable() with a zero-timeout
// poll (never a sleep), writes_waiting() by reading the counter and writing it back.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

namespace fastcm::shards::test {

inline bool readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN) != 0;
}

// The eventfd's counter: the writes no read has taken yet (a test may look; an application of
// an event queue may not read it).
inline eventfd_t writes_waiting(int fd) {
  eventfd_t writes = 0;
  if (eventfd_read(fd, &writes) != 0) return 0;
  EXPECT_EQ(eventfd_write(fd, writes), 0);
  return writes;
}

}  // namespace fastcm::shards::test
