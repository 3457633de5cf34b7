// CounterSnapshot: a reader on another thread never sees a half-published set of counters.
#include "shards/counter_snapshot.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <thread>

namespace fastcm::shards {
namespace {

constexpr std::size_t kPorts = 3;

// Every counter of every port set to `value`: a torn read shows two different values.
std::array<PortCounters, kPorts> uniform(std::uint64_t value) {
  std::array<PortCounters, kPorts> all{};
  for (PortCounters& port : all) {
    for (MessageCounters& m : port.messages) m = {value, value, value, value};
    port.drops.fill(value);
  }
  return all;
}

bool is_uniform(const std::array<PortCounters, kPorts>& all, std::uint64_t& value) {
  value = all[0].messages[0].sent;
  for (const PortCounters& port : all) {
    for (const MessageCounters& m : port.messages) {
      if (m.sent != value || m.received != value || m.retried != value || m.duplicate != value) return false;
    }
    for (std::uint64_t d : port.drops) {
      if (d != value) return false;
    }
  }
  return true;
}

TEST(CounterSnapshot, ReadsWhatWasLastPublished) {
  CounterSnapshot snapshot(kPorts);
  std::array<PortCounters, kPorts> out = uniform(99);
  snapshot.read(out);
  std::uint64_t value = 0;
  EXPECT_TRUE(is_uniform(out, value));
  EXPECT_EQ(value, 0u);  // nothing published yet
  snapshot.publish(uniform(7));
  snapshot.read(out);
  EXPECT_TRUE(is_uniform(out, value));
  EXPECT_EQ(value, 7u);
}

TEST(CounterSnapshot, ConcurrentReaderNeverSeesATornCopy) {
  CounterSnapshot snapshot(kPorts);
  constexpr std::uint64_t kPublishes = 20'000;
  std::atomic<bool> done{false};
  std::uint64_t torn = 0;
  std::uint64_t backwards = 0;
  std::thread reader([&] {
    std::uint64_t last = 0;
    std::array<PortCounters, kPorts> out{};
    while (!done.load(std::memory_order_acquire)) {
      snapshot.read(out);
      std::uint64_t value = 0;
      if (!is_uniform(out, value)) ++torn;
      if (value < last) ++backwards;
      last = value;
    }
  });
  for (std::uint64_t v = 1; v <= kPublishes; ++v) snapshot.publish(uniform(v));
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(backwards, 0u);
}

}  // namespace
}  // namespace fastcm::shards
