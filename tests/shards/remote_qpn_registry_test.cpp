// RemoteQpnRegistry against the RemoteQpns contract (engine/remote_qpns.h): claim / find /
// release outcomes, the capacity bound, a random sequence checked against a std::map model on a
// table small enough that probe walks cross chunks, threads racing on shared keys, and lookups
// racing with churn on the same chunks.
#include "shards/remote_qpn_registry.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace fastcm::shards {
namespace {

using engine::RemoteQpnKey;

RemoteQpnKey key(std::uint32_t n) { return {0x100 + n, 0x0002C90300A0B000ULL + (n % 3)}; }
Id id(std::uint32_t n) { return Id::make(0x1000 + n, 7); }

TEST(RemoteQpnRegistry, RejectsCapacityOutOfRange) {
  EXPECT_THROW(RemoteQpnRegistry(0), std::invalid_argument);
  EXPECT_THROW(RemoteQpnRegistry(RemoteQpnRegistry::kMaxCapacity + 1), std::invalid_argument);
  EXPECT_EQ(RemoteQpnRegistry(1).capacity(), 1U);
}

TEST(RemoteQpnRegistry, ClaimRecordsTheOwnerAndFindReturnsIt) {
  RemoteQpnRegistry r(8);
  EXPECT_EQ(r.find(key(1)), std::nullopt);
  EXPECT_EQ(r.claim(key(1), id(1)), std::nullopt);
  EXPECT_EQ(r.find(key(1)), id(1));
  EXPECT_EQ(r.find(key(2)), std::nullopt);
}

TEST(RemoteQpnRegistry, KeysDifferingInQpnOrGuidAreDistinct) {
  RemoteQpnRegistry r(8);
  const RemoteQpnKey base{0x42, 0xAA};
  EXPECT_EQ(r.claim(base, id(1)), std::nullopt);
  EXPECT_EQ(r.claim({0x43, 0xAA}, id(2)), std::nullopt);
  EXPECT_EQ(r.claim({0x42, 0xAB}, id(3)), std::nullopt);
  EXPECT_EQ(r.find(base), id(1));
  EXPECT_EQ(r.find({0x43, 0xAA}), id(2));
  EXPECT_EQ(r.find({0x42, 0xAB}), id(3));
}

TEST(RemoteQpnRegistry, ExtremeQpnsAndGuidsAreKeysLikeAnyOther) {
  RemoteQpnRegistry r(8);
  const std::array<RemoteQpnKey, 4> keys{RemoteQpnKey{0, 0}, RemoteQpnKey{0xFFFF'FFFF, 0},
                                         RemoteQpnKey{0, ~std::uint64_t{0}},
                                         RemoteQpnKey{0xFFFF'FFFF, ~std::uint64_t{0}}};
  for (std::uint32_t n = 0; n < keys.size(); ++n) {
    EXPECT_EQ(r.claim(keys[n], id(n)), std::nullopt);
  }
  for (std::uint32_t n = 0; n < keys.size(); ++n) EXPECT_EQ(r.find(keys[n]), id(n));
  r.release(keys[1], id(1));
  EXPECT_EQ(r.find(keys[1]), std::nullopt);
  EXPECT_EQ(r.find(keys[0]), id(0));
  EXPECT_EQ(r.find(keys[3]), id(3));
}

TEST(RemoteQpnRegistry, SecondClaimBySameOwnerIsOkAndRecordsOnce) {
  RemoteQpnRegistry r(8);
  EXPECT_EQ(r.claim(key(1), id(1)), std::nullopt);
  EXPECT_EQ(r.claim(key(1), id(1)), std::nullopt);
  r.release(key(1), id(1));
  EXPECT_EQ(r.find(key(1)), std::nullopt);  // one release forgets it: there was one entry
}

TEST(RemoteQpnRegistry, ClaimByAnotherReturnsTheFirstAndChangesNothing) {
  RemoteQpnRegistry r(8);
  EXPECT_EQ(r.claim(key(1), id(1)), std::nullopt);
  EXPECT_EQ(r.claim(key(1), id(2)), id(1));
  EXPECT_EQ(r.find(key(1)), id(1));
  r.release(key(1), id(2));  // the refused claimant's release changes nothing either
  EXPECT_EQ(r.find(key(1)), id(1));
}

TEST(RemoteQpnRegistry, ReleaseByNonOwnerDoesNothing) {
  RemoteQpnRegistry r(8);
  EXPECT_EQ(r.claim(key(1), id(1)), std::nullopt);
  r.release(key(1), id(2));
  r.release(key(1), Id::make(0x1001, 8));  // same comm ID, other generation: another endpoint
  r.release(key(2), id(1));                // the owner, but of another key
  EXPECT_EQ(r.find(key(1)), id(1));
  r.release(key(1), id(1));
  EXPECT_EQ(r.find(key(1)), std::nullopt);
  EXPECT_EQ(r.claim(key(1), id(2)), std::nullopt);  // free for a new owner
  EXPECT_EQ(r.find(key(1)), id(2));
}

TEST(RemoteQpnRegistry, FullTableRecordsNothingNewButStillAnswersWhatItHolds) {
  RemoteQpnRegistry r(10);
  const std::uint32_t full = r.slots();
  EXPECT_EQ(full, 20U);  // 4 chunks of 5: two thirds more than the capacity, in whole chunks
  for (std::uint32_t n = 0; n < full; ++n) ASSERT_EQ(r.claim(key(n), id(n)), std::nullopt);
  EXPECT_EQ(r.full_claims(), 0U);

  EXPECT_EQ(r.claim(key(full), id(full)), std::nullopt);
  EXPECT_EQ(r.find(key(full)), std::nullopt);
  EXPECT_EQ(r.full_claims(), 1U);
  EXPECT_EQ(r.claim(key(3), id(99)), id(3));         // an existing entry is still answered
  EXPECT_EQ(r.claim(key(3), id(3)), std::nullopt);   // and its owner's claim is still ok
  EXPECT_EQ(r.full_claims(), 1U);
  for (std::uint32_t n = 0; n < full; ++n) EXPECT_EQ(r.find(key(n)), id(n));

  r.release(key(4), id(4));
  EXPECT_EQ(r.claim(key(full), id(full)), std::nullopt);
  EXPECT_EQ(r.find(key(full)), id(full));
  EXPECT_EQ(r.find(key(4)), std::nullopt);
}

TEST(RemoteQpnRegistry, CapacityOneHoldsOneChunk) {
  RemoteQpnRegistry r(1);
  ASSERT_EQ(r.slots(), 5U);
  for (std::uint32_t n = 0; n < 5; ++n) EXPECT_EQ(r.claim(key(n), id(n)), std::nullopt);
  EXPECT_EQ(r.claim(key(5), id(5)), std::nullopt);
  EXPECT_EQ(r.find(key(5)), std::nullopt);
  EXPECT_EQ(r.full_claims(), 1U);
  r.release(key(1), id(1));
  EXPECT_EQ(r.claim(key(5), id(5)), std::nullopt);
  EXPECT_EQ(r.find(key(5)), id(5));
  for (std::uint32_t n : {0U, 2U, 3U, 4U}) EXPECT_EQ(r.find(key(n)), id(n));
}

// Random claims and releases on 48 keys in a table of 4 chunks of 5 slots: entries overflow
// into other chunks and are erased from the middle of probe walks, and the table fills up.
// Every outcome and, periodically, every key's lookup must match the model.
TEST(RemoteQpnRegistry, RandomSequenceMatchesAModel) {
  constexpr std::uint32_t kKeys = 48;
  constexpr std::uint32_t kOwners = 3;
  RemoteQpnRegistry r(12);
  const std::uint32_t full = r.slots();
  std::map<std::uint32_t, Id> model;
  std::uint64_t refused = 0;
  std::mt19937 rng(20240611);
  auto below = [&rng](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
  for (int step = 0; step < 200'000; ++step) {
    const std::uint32_t k = below(kKeys);
    const Id owner = id(below(kOwners));
    const auto held = model.find(k);
    if (below(2) == 0) {
      const std::optional<Id> got = r.claim(key(k), owner);
      if (held != model.end()) {
        ASSERT_EQ(got, held->second == owner ? std::nullopt : std::optional<Id>(held->second));
      } else {
        ASSERT_EQ(got, std::nullopt);
        if (model.size() < full) {
          model.emplace(k, owner);
        } else {
          ++refused;
        }
      }
    } else {
      r.release(key(k), owner);
      if (held != model.end() && held->second == owner) model.erase(held);
    }
    if (step % 64 == 0) {
      for (std::uint32_t q = 0; q < kKeys; ++q) {
        const auto m = model.find(q);
        ASSERT_EQ(r.find(key(q)), m == model.end() ? std::nullopt : std::optional<Id>(m->second))
            << "key " << q << " step " << step;
      }
    }
  }
  EXPECT_EQ(r.full_claims(), refused);
  EXPECT_GT(refused, 0U);  // the sequence did reach the bound

  // Emptied after all that churn, the table takes a full load again: nothing leaked.
  for (const auto& [k, owner] : model) r.release(key(k), owner);
  for (std::uint32_t q = 0; q < kKeys; ++q) ASSERT_EQ(r.find(key(q)), std::nullopt);
  for (std::uint32_t q = 0; q < full; ++q) {
    ASSERT_EQ(r.claim(key(q + 100), id(q)), std::nullopt);
  }
  for (std::uint32_t q = 0; q < full; ++q) EXPECT_EQ(r.find(key(q + 100)), id(q));
  EXPECT_EQ(r.full_claims(), refused);
}

// Four threads claim and release eight shared keys. A claim that returns nullopt makes the
// thread the owner until its release; while it owns, it marks the key, and no other thread may
// hold the mark, find() must name it, and another thread's release must not remove it. A claim
// that returns an Id must name some thread's live claim, never the caller's own.
TEST(RemoteQpnRegistryThreads, FourThreadsOnSharedKeysAtMostOneOwnerEach) {
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint32_t kKeys = 8;
  constexpr std::uint32_t kRounds = 20'000;
  RemoteQpnRegistry r(kKeys);  // exactly one entry per key fits: never full
  std::array<std::atomic<std::uint32_t>, kKeys> marks{};  // 1 + owning thread, 0 when none
  std::array<std::uint64_t, kThreads> owned{};
  std::array<std::uint64_t, kThreads> lost{};
  std::atomic<std::uint32_t> failures{0};

  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::minstd_rand rng(t + 1);
      auto fail = [&] { failures.fetch_add(1, std::memory_order_relaxed); };
      for (std::uint32_t round = 0; round < kRounds; ++round) {
        const std::uint32_t k = static_cast<std::uint32_t>(rng() % kKeys);
        const Id mine = Id::make(t + 1, round + 1);
        const std::optional<Id> other = r.claim(key(k), mine);
        if (other) {
          ++lost[t];
          if (*other == mine || other->comm_id() == 0 || other->comm_id() > kThreads ||
              other->comm_id() == t + 1) {
            fail();
          }
          r.release(key(k), mine);  // not ours: must leave the owner's entry alone
          continue;
        }
        ++owned[t];
        if (marks[k].exchange(t + 1, std::memory_order_acq_rel) != 0) fail();
        if (r.find(key(k)) != mine) fail();
        if (r.claim(key(k), mine).has_value()) fail();  // same owner again: ok
        if (r.find(key(k)) != mine) fail();
        if (marks[k].exchange(0, std::memory_order_acq_rel) != t + 1) fail();
        r.release(key(k), mine);
      }
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(failures.load(), 0U);
  std::uint64_t total_owned = 0;
  std::uint64_t total_lost = 0;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    total_owned += owned[t];
    total_lost += lost[t];
  }
  EXPECT_EQ(total_owned + total_lost, std::uint64_t{kThreads} * kRounds);
  EXPECT_GT(total_owned, 0U);
  EXPECT_EQ(r.full_claims(), 0U);
  for (std::uint32_t k = 0; k < kKeys; ++k) EXPECT_EQ(r.find(key(k)), std::nullopt);
}

// Four threads fill a small table to its capacity with distinct keys at once (racing for the
// same free slots and chunk locks across chunks), then empty it at once.
TEST(RemoteQpnRegistryThreads, FourThreadsFillToCapacityThenEmpty) {
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint32_t kPerThread = 64;
  constexpr std::uint32_t kCapacity = kThreads * kPerThread;
  RemoteQpnRegistry r(kCapacity);
  auto run = [&](auto body) {
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint32_t i = 0; i < kPerThread; ++i) body(t * kPerThread + i);
      });
    }
    for (auto& th : threads) th.join();
  };
  for (int cycle = 0; cycle < 20; ++cycle) {
    std::atomic<std::uint32_t> answered_other{0};
    run([&](std::uint32_t n) {
      if (r.claim(key(n), id(n)).has_value()) {
        answered_other.fetch_add(1, std::memory_order_relaxed);
      }
    });
    ASSERT_EQ(answered_other.load(), 0U);
    for (std::uint32_t n = 0; n < kCapacity; ++n) ASSERT_EQ(r.find(key(n)), id(n));
    run([&](std::uint32_t n) { r.release(key(n), id(n)); });
    for (std::uint32_t n = 0; n < kCapacity; ++n) ASSERT_EQ(r.find(key(n)), std::nullopt);
  }
  EXPECT_EQ(r.full_claims(), 0U);
}

// Two threads churn 24 keys through a 16-entry table (4 chunks: entries overflow and slots are
// reused under the readers' eyes) while two threads look up both the churned keys and 4 keys
// claimed before they started. All keys share one QPN, so only the GUID and the head's
// validation tell the entries in a slot apart, and every owner's comm ID names its key (its
// generation changes per claim): a lookup that mixed two entries, or read a slot as it changed
// hands, would name another key's owner. A lookup of a key claimed before it started must always
// find it.
TEST(RemoteQpnRegistryThreads, LookupsDuringChurnNeverMissOldEntriesNorNameAWrongOwner) {
  constexpr std::uint32_t kStable = 4;
  constexpr std::uint32_t kChurned = 24;
  constexpr std::uint32_t kRounds = 20'000;
  auto shared_qpn_key = [](std::uint32_t n) {
    return RemoteQpnKey{0x77, 0x0002C90300A0B000ULL + n};
  };
  RemoteQpnRegistry r(16);
  for (std::uint32_t n = 0; n < kStable; ++n) {
    ASSERT_EQ(r.claim(shared_qpn_key(n), Id::make(n, 1)), std::nullopt);
  }
  std::atomic<std::uint32_t> failures{0};
  std::atomic<std::uint64_t> churned_seen{0};
  auto fail = [&] { failures.fetch_add(1, std::memory_order_relaxed); };

  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {  // churn: keys kStable + 12t .. kStable + 12t + 11
      std::minstd_rand rng(t + 11);
      for (std::uint32_t round = 0; round < kRounds; ++round) {
        const std::uint32_t n =
            kStable + t * (kChurned / 2) + static_cast<std::uint32_t>(rng() % (kChurned / 2));
        const Id owner = Id::make(n, round + 1);
        if (r.claim(shared_qpn_key(n), owner).has_value()) fail();  // this thread's key alone
        r.release(shared_qpn_key(n), owner);
      }
    });
    threads.emplace_back([&, t] {  // lookups
      std::uint64_t seen = 0;
      for (std::uint32_t round = 0; round < kRounds; ++round) {
        const std::uint32_t n = (round + t) % (kStable + kChurned);
        const std::optional<Id> got = r.find(shared_qpn_key(n));
        if (n < kStable ? got != Id::make(n, 1) : got.has_value() && got->comm_id() != n) fail();
        seen += static_cast<std::uint64_t>(n >= kStable && got.has_value());
      }
      churned_seen.fetch_add(seen, std::memory_order_relaxed);
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(failures.load(), 0U);
  EXPECT_EQ(r.full_claims(), 0U);  // at most 6 entries in 20 slots: never refused, nothing leaked
  for (std::uint32_t n = 0; n < kStable + kChurned; ++n) {
    EXPECT_EQ(r.find(shared_qpn_key(n)),
              n < kStable ? std::optional<Id>(Id::make(n, 1)) : std::nullopt);
  }
  // Not asserted: whether a lookup ever caught a churned key recorded depends on scheduling.
  RecordProperty("churned_keys_seen", static_cast<int>(churned_seen.load()));
}

}  // namespace
}  // namespace fastcm::shards
