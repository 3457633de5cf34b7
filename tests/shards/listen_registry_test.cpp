// ListenRegistry: the add/remove/match rules of engine::ListenTable, backlog accounting that dies
// with its listen, snapshot lifetime under the epoch, the retire-queue bound, and shards matching
// while a writer adds and removes listens thousands of times.
#include "shards/listen_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fastcm/event_queue.h"

namespace fastcm {
void PrintTo(Status status, std::ostream* os) { *os << to_string(status); }
}  // namespace fastcm

namespace fastcm::shards {
namespace {

using engine::is_listen_id;
using engine::kListenGenerationTag;
using engine::Listen;

constexpr std::uint64_t kExact = ~std::uint64_t{0};

void ignore_event(const Event&, void*) {}

struct NullQueue final : EventQueue {
  [[nodiscard]] int event_fd() const noexcept override { return -1; }
  [[nodiscard]] std::size_t size() const noexcept override { return 0; }
};

ListenParams listen_on(std::uint64_t service_id, std::uint64_t mask, std::uint8_t port,
                       void* context = nullptr, std::uint32_t backlog = 4) {
  ListenParams params;
  params.service_id = service_id;
  params.service_mask = mask;
  params.port = port;
  params.backlog = backlog;
  params.delivery.handler = ignore_event;
  params.context = context;
  return params;
}

// One shard (reader 0) online for the whole test and never quiescent unless a test says so, so
// every Listen a test matched stays readable.
class ListenRegistryTest : public testing::Test {
 protected:
  ListenRegistryTest() { epoch_.online(0); }
  ~ListenRegistryTest() override { epoch_.offline(0); }

  Id add(const ListenParams& params) {
    Id id;
    EXPECT_EQ(registry_.add(params, id), Status::ok);
    return id;
  }
  const void* matched_context(std::uint64_t service_id, std::uint8_t port) {
    const Listen* listen = registry_.match(service_id, port);
    return listen == nullptr ? nullptr : listen->params.context;
  }

  Epoch epoch_{1};
  ListenRegistry registry_{4, epoch_};
  std::array<int, 8> contexts_{};  // distinct addresses to tell listens apart
};

TEST(ListenRegistry, RejectsCapacityOutOfRange) {
  Epoch epoch(1);
  EXPECT_THROW(ListenRegistry(0, epoch), std::invalid_argument);
  EXPECT_THROW(ListenRegistry(ListenRegistry::kMaxCapacity + 1, epoch), std::invalid_argument);
  const ListenRegistry registry(1, epoch);
  EXPECT_EQ(registry.capacity(), 1U);
}

TEST_F(ListenRegistryTest, AddRejectsNoDeliveryTwoDeliveriesAndZeroBacklog) {
  const Id untouched = Id::make(7, 7);
  Id out = untouched;
  ListenParams none = listen_on(1, kExact, 0);
  none.delivery.handler = nullptr;
  EXPECT_EQ(registry_.add(none, out), Status::invalid_argument);
  NullQueue queue;
  ListenParams both = listen_on(1, kExact, 0);
  both.delivery.queue = &queue;
  EXPECT_EQ(registry_.add(both, out), Status::invalid_argument);
  EXPECT_EQ(registry_.add(listen_on(1, kExact, 0, nullptr, 0), out), Status::invalid_argument);
  EXPECT_EQ(out, untouched);
  EXPECT_EQ(registry_.match(1, 1), nullptr);

  ListenParams polled = listen_on(1, kExact, 0);
  polled.delivery.handler = nullptr;
  polled.delivery.queue = &queue;
  EXPECT_EQ(registry_.add(polled, out), Status::ok);
}

TEST_F(ListenRegistryTest, IdsCarryTheTagAndTheLowestFreeSlot) {
  for (std::uint32_t slot = 0; slot < 3; ++slot) {
    const Id id = add(listen_on(100 + slot, kExact, 0));
    EXPECT_TRUE(is_listen_id(id));
    EXPECT_EQ(id.comm_id(), slot);
    EXPECT_EQ(id.generation(), kListenGenerationTag | 1U);
    EXPECT_TRUE(registry_.live(id));
  }
  const Listen* listen = registry_.match(101, 1);
  ASSERT_NE(listen, nullptr);
  EXPECT_EQ(listen->id, Id::make(1, kListenGenerationTag | 1U));
}

TEST_F(ListenRegistryTest, SameMaskedServiceMaskAndPortIsInUse) {
  add(listen_on(0x1234'0000, 0xFFFF'0000, 1));
  Id out;
  EXPECT_EQ(registry_.add(listen_on(0x1234'0000, 0xFFFF'0000, 1), out), Status::service_in_use);
  // Differs only in bits the mask ignores: the same service.
  EXPECT_EQ(registry_.add(listen_on(0x1234'ABCD, 0xFFFF'0000, 1), out), Status::service_in_use);
  // Another port, every port, or another mask: distinct listens.
  EXPECT_EQ(registry_.add(listen_on(0x1234'0000, 0xFFFF'0000, 2), out), Status::ok);
  EXPECT_EQ(registry_.add(listen_on(0x1234'0000, 0xFFFF'0000, 0), out), Status::ok);
  EXPECT_EQ(registry_.add(listen_on(0x1234'0000, 0xFFFF'FF00, 1), out), Status::ok);
}

TEST_F(ListenRegistryTest, FullTableHasNoResourcesAndAFreedSlotIsReusedWithANewGeneration) {
  std::array<Id, 4> ids;
  for (std::uint32_t i = 0; i < ids.size(); ++i) ids[i] = add(listen_on(10 + i, kExact, 0));
  Id out;
  EXPECT_EQ(registry_.add(listen_on(99, kExact, 0), out), Status::no_resources);
  EXPECT_EQ(registry_.match(99, 1), nullptr);

  ASSERT_EQ(registry_.remove(ids[1]), Status::ok);
  EXPECT_FALSE(registry_.live(ids[1]));
  const Id reused = add(listen_on(99, kExact, 0));
  EXPECT_EQ(reused.comm_id(), 1U);
  EXPECT_EQ(reused.generation(), kListenGenerationTag | 2U);
  EXPECT_TRUE(registry_.live(reused));
  EXPECT_FALSE(registry_.live(ids[1]));
  EXPECT_EQ(registry_.remove(ids[1]), Status::stale_id);  // the old Id never reaches the new one
  EXPECT_TRUE(registry_.live(reused));
}

TEST_F(ListenRegistryTest, RemoveOfAnythingButALiveListenIsStale) {
  const Id id = add(listen_on(5, kExact, 0));
  EXPECT_EQ(registry_.remove(Id{}), Status::stale_id);
  EXPECT_EQ(registry_.remove(Id::make(0, 1)), Status::stale_id);  // an endpoint's Id (no tag)
  EXPECT_EQ(registry_.remove(Id::make(4, kListenGenerationTag | 1U)), Status::stale_id);  // slot
  EXPECT_EQ(registry_.remove(Id::make(0, kListenGenerationTag | 2U)), Status::stale_id);  // gen
  EXPECT_EQ(registry_.remove(Id::make(1, kListenGenerationTag | 1U)), Status::stale_id);  // free
  EXPECT_TRUE(registry_.live(id));
  EXPECT_EQ(registry_.remove(id), Status::ok);
  EXPECT_EQ(registry_.remove(id), Status::stale_id);
  EXPECT_FALSE(registry_.live(Id{}));
  EXPECT_FALSE(registry_.live(Id::make(0, 1)));
}

TEST_F(ListenRegistryTest, LongestMaskWins) {
  add(listen_on(0x1234'0000, 0xFFFF'0000, 0, &contexts_[0]));
  add(listen_on(0x1234'5678, kExact, 0, &contexts_[1]));
  add(listen_on(0x1200'0000, 0xFF00'0000, 0, &contexts_[2]));
  EXPECT_EQ(matched_context(0x1234'5678, 1), &contexts_[1]);
  EXPECT_EQ(matched_context(0x1234'AAAA, 1), &contexts_[0]);
  EXPECT_EQ(matched_context(0x12FF'FFFF, 1), &contexts_[2]);
  EXPECT_EQ(registry_.match(0x9900'0000, 1), nullptr);
}

TEST_F(ListenRegistryTest, PortSpecificBeatsEveryPortAtEqualMaskButNotALongerMask) {
  add(listen_on(0x77, kExact, 0, &contexts_[0]));
  add(listen_on(0x77, kExact, 1, &contexts_[1]));
  add(listen_on(0x00, 0xF0, 2, &contexts_[2]));
  EXPECT_EQ(matched_context(0x77, 1), &contexts_[1]);
  EXPECT_EQ(matched_context(0x77, 3), &contexts_[0]);  // every-port listen covers port 3
  EXPECT_EQ(matched_context(0x77, 2), &contexts_[0]);  // longer mask beats port-specific
  EXPECT_EQ(matched_context(0x05, 2), &contexts_[2]);
  EXPECT_EQ(registry_.match(0x05, 1), nullptr);  // a port-specific listen only on its port
}

TEST_F(ListenRegistryTest, EquallySpecificListensResolveToTheLowestSlot) {
  // Three 4-bit masks, all every-port, all matching 0x11: the lowest slot wins, whatever the order
  // in which the listens were added.
  const Id filler = add(listen_on(0x99, kExact, 0));                  // slot 0
  add(listen_on(0x10, 0xF0, 0, &contexts_[1]));                       // slot 1
  add(listen_on(0x01, 0x0F, 0, &contexts_[0]));                       // slot 2
  EXPECT_EQ(matched_context(0x11, 1), &contexts_[1]);
  ASSERT_EQ(registry_.remove(filler), Status::ok);
  EXPECT_EQ(add(listen_on(0x10, 0x3C, 0, &contexts_[2])).comm_id(), 0U);  // added last, slot 0
  EXPECT_EQ(matched_context(0x11, 1), &contexts_[2]);
  EXPECT_EQ(matched_context(0x21, 1), &contexts_[0]);  // only the 0x0F listen matches
}

TEST_F(ListenRegistryTest, RemovedListenIsNotMatchedAndAMatchedOneStaysReadableUntilQuiescent) {
  const Id id = add(listen_on(0x42, kExact, 0, &contexts_[0]));
  const Listen* held = registry_.match(0x42, 1);
  ASSERT_NE(held, nullptr);
  ASSERT_EQ(registry_.remove(id), Status::ok);
  EXPECT_EQ(registry_.match(0x42, 1), nullptr);
  // This shard has not passed a quiescent point: its snapshot is retired, not freed.
  EXPECT_EQ(held->params.context, &contexts_[0]);
  EXPECT_EQ(held->id, id);
  EXPECT_EQ(registry_.snapshots_published(), 3U);  // initial, after add, after remove
  EXPECT_EQ(registry_.reclaim(), 0U);
  EXPECT_EQ(registry_.snapshots_freed(), 0U);
  epoch_.quiescent(0);
  EXPECT_EQ(registry_.reclaim(), 2U);
  EXPECT_EQ(registry_.snapshots_freed(), 2U);
}

TEST_F(ListenRegistryTest, BacklogCountsUpToItsLimitAndReleaseGivesBack) {
  const Id id = add(listen_on(0x42, kExact, 0, nullptr, 3));
  const Listen* listen = registry_.match(0x42, 1);
  ASSERT_NE(listen, nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(registry_.take_backlog(*listen)) << i;
  EXPECT_FALSE(registry_.take_backlog(*listen));
  registry_.release_backlog(id);
  EXPECT_TRUE(registry_.take_backlog(*listen));
  EXPECT_FALSE(registry_.take_backlog(*listen));
  registry_.release_backlog(Id{});  // no listen: ignored
  EXPECT_FALSE(registry_.take_backlog(*listen));
  for (int i = 0; i < 5; ++i) registry_.release_backlog(id);  // two more than taken: ignored
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(registry_.take_backlog(*listen)) << i;
  EXPECT_FALSE(registry_.take_backlog(*listen));
}

TEST_F(ListenRegistryTest, TakeFailsAndReleaseIsIgnoredOnceTheListenIsRemoved) {
  const Id id = add(listen_on(0x42, kExact, 0, nullptr, 2));
  const Listen* listen = registry_.match(0x42, 1);
  ASSERT_NE(listen, nullptr);
  EXPECT_TRUE(registry_.take_backlog(*listen));
  ASSERT_EQ(registry_.remove(id), Status::ok);
  EXPECT_FALSE(registry_.take_backlog(*listen));  // matched before the remove, still readable
  registry_.release_backlog(id);                   // its count went with it
  EXPECT_FALSE(registry_.take_backlog(*listen));
}

TEST_F(ListenRegistryTest, ReleaseForARemovedListenIsIgnoredAfterItsSlotIsReused) {
  const Id old_id = add(listen_on(0x42, kExact, 0, nullptr, 2));
  const Listen* old_listen = registry_.match(0x42, 1);
  ASSERT_NE(old_listen, nullptr);
  EXPECT_TRUE(registry_.take_backlog(*old_listen));
  EXPECT_TRUE(registry_.take_backlog(*old_listen));
  ASSERT_EQ(registry_.remove(old_id), Status::ok);

  const Id new_id = add(listen_on(0x43, kExact, 0, nullptr, 2));
  ASSERT_EQ(new_id.comm_id(), old_id.comm_id());
  const Listen* new_listen = registry_.match(0x43, 1);
  ASSERT_NE(new_listen, nullptr);
  EXPECT_TRUE(registry_.take_backlog(*new_listen));
  EXPECT_TRUE(registry_.take_backlog(*new_listen));
  EXPECT_FALSE(registry_.take_backlog(*new_listen));
  registry_.release_backlog(old_id);  // the old listen's REQs are answered late: ignored
  registry_.release_backlog(old_id);
  EXPECT_FALSE(registry_.take_backlog(*new_listen));
  EXPECT_FALSE(registry_.take_backlog(*old_listen));
  registry_.release_backlog(new_id);
  EXPECT_TRUE(registry_.take_backlog(*new_listen));
}

// A shard stuck online keeps every retired snapshot alive: adds then fail (a new listen needs a
// snapshot) but removes still take effect at once, skipped by match() in the stale snapshot.
TEST_F(ListenRegistryTest, AShardStuckOnlineMakesAddsFailButRemovesStillTakeEffect) {
  const Id kept = add(listen_on(0x1, kExact, 0));  // each change retires one snapshot
  Id churned;
  for (std::uint32_t change = 1; change < ListenRegistry::kRetireCapacity; ++change) {
    if (change % 2 == 1) {
      churned = add(listen_on(0x2, kExact, 0));
    } else {
      ASSERT_EQ(registry_.remove(churned), Status::ok);
    }
  }
  Id out;
  EXPECT_EQ(registry_.add(listen_on(0x3, kExact, 0), out), Status::no_resources);
  EXPECT_EQ(registry_.match(0x3, 1), nullptr);
  const Listen* held = registry_.match(0x1, 1);  // what a shard may still hold
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(registry_.remove(kept), Status::ok);
  EXPECT_FALSE(registry_.live(kept));
  EXPECT_EQ(registry_.match(0x1, 1), nullptr);
  EXPECT_FALSE(registry_.take_backlog(*held));
  EXPECT_EQ(registry_.snapshots_freed(), 0U);

  epoch_.quiescent(0);
  EXPECT_EQ(registry_.add(listen_on(0x3, kExact, 0), out), Status::ok);
  EXPECT_EQ(registry_.snapshots_freed(), ListenRegistry::kRetireCapacity);
  EXPECT_EQ(registry_.match(0x1, 1), nullptr);
  EXPECT_NE(registry_.match(0x3, 1), nullptr);
}

// Three shards match continuously, taking and releasing backlog, while a writer adds and removes
// listens thousands of times. A freed snapshot read by a shard is a use-after-free that ASan
// (freed memory is poisoned and quarantined) and TSan report; every build checks that each match
// is one of the listens added for that service, and that every snapshot is freed exactly once.
TEST(ListenRegistryThreads, ShardsMatchWhileAWriterChurnsEverySnapshotFreedOnce) {
  constexpr std::uint32_t kShards = 3;
  constexpr std::uint32_t kChurned = 6;
  constexpr int kRounds = 700;  // each round adds and removes every churned service
  constexpr std::uint64_t kPermanent = 0x1000;
  constexpr std::uint64_t kChurnBase = 0x2000;
  constexpr std::uint32_t kBacklog = 2;
  Epoch epoch(kShards + 1);  // the shards, and the main thread for the final checks
  std::optional<ListenRegistry> registry;
  registry.emplace(16, epoch);
  int permanent_context = 0;
  std::array<int, kChurned> churn_contexts{};
  Id permanent;
  ASSERT_EQ(
      registry->add(listen_on(kPermanent, kExact, 0, &permanent_context, kBacklog), permanent),
      Status::ok);

  std::atomic<bool> writing{true};
  std::atomic<std::uint32_t> online{0};
  std::array<std::uint64_t, kShards> bad{};
  std::array<std::atomic<std::uint64_t>, kShards> churn_hits{};  // relaxed: progress counts
  std::vector<std::thread> shards;
  for (std::uint32_t s = 0; s < kShards; ++s) {
    shards.emplace_back([&, s] {
      std::vector<Id> taken;  // backlog refs kept across quiescent points, as endpoints do
      epoch.online(s);
      online.fetch_add(1, std::memory_order_relaxed);
      for (std::uint64_t batch = 0; writing.load(std::memory_order_acquire); ++batch) {
        for (std::uint32_t k = 0; k < kChurned; ++k) {
          const auto port = static_cast<std::uint8_t>(1 + (batch + k) % 2);
          const Listen* p = registry->match(kPermanent, port);
          if (p == nullptr || p->params.context != &permanent_context || p->id != permanent) {
            ++bad[s];
          } else if (registry->take_backlog(*p)) {
            taken.push_back(p->id);
          }
          const Listen* c = registry->match(kChurnBase + k, port);
          if (c == nullptr) continue;
          churn_hits[s].fetch_add(1, std::memory_order_relaxed);
          if (c->params.context != &churn_contexts[k] || c->params.service_id != kChurnBase + k ||
              !is_listen_id(c->id)) {
            ++bad[s];
          } else if (registry->take_backlog(*c)) {
            taken.push_back(c->id);
          }
        }
        epoch.quiescent(s);
        // Answer the REQs of the batch before last: some of their listens are gone by now.
        for (const Id id : taken) registry->release_backlog(id);
        taken.clear();
        if (batch % 32 == s) {  // now and then asleep, as an idle shard
          epoch.offline(s);
          std::this_thread::yield();
          epoch.online(s);
        }
      }
      epoch.offline(s);
    });
  }

  int changes = 0;
  auto retry = [&](auto change) {
    Status status;
    while ((status = change()) == Status::no_resources) std::this_thread::yield();
    EXPECT_EQ(status, Status::ok);
    ++changes;
  };
  std::array<Id, kChurned> ids{};
  // The writer starts once every shard is online and goes on past kRounds until every shard has
  // met a churned listen, so the churn overlaps the shards' reads however threads are scheduled.
  while (online.load(std::memory_order_relaxed) != kShards) std::this_thread::yield();
  auto every_shard_hit = [&] {
    return std::all_of(churn_hits.begin(), churn_hits.end(),
                       [](const auto& hits) { return hits.load(std::memory_order_relaxed) != 0; });
  };
  for (int round = 0; round < kRounds || !every_shard_hit(); ++round) {
    for (std::uint32_t k = 0; k < kChurned; ++k) {
      retry([&] {
        return registry->add(listen_on(kChurnBase + k, kExact, static_cast<std::uint8_t>(k % 3),
                                       &churn_contexts[k], kBacklog),
                             ids[k]);
      });
    }
    for (std::uint32_t k = 0; k < kChurned; ++k) retry([&] { return registry->remove(ids[k]); });
  }
  writing.store(false, std::memory_order_release);
  for (std::thread& t : shards) t.join();

  for (std::uint32_t s = 0; s < kShards; ++s) EXPECT_EQ(bad[s], 0U) << "shard " << s;
  // Every shard is offline: every retired snapshot is due, and only the current one remains.
  registry->reclaim();
  // One snapshot per change, except removes made while the retire queue was full (they take
  // effect without one).
  EXPECT_LE(registry->snapshots_published(), 2U + static_cast<std::uint64_t>(changes));
  EXPECT_EQ(registry->snapshots_freed(), registry->snapshots_published() - 1);
  // The permanent listen's backlog is back to zero: exactly kBacklog can be taken.
  epoch.online(kShards);
  const Listen* p = registry->match(kPermanent, 1);
  ASSERT_NE(p, nullptr);
  for (std::uint32_t i = 0; i < kBacklog; ++i) EXPECT_TRUE(registry->take_backlog(*p));
  EXPECT_FALSE(registry->take_backlog(*p));
  epoch.offline(kShards);
  for (const Id id : ids) EXPECT_FALSE(registry->live(id));
  registry.reset();
}

}  // namespace
}  // namespace fastcm::shards
