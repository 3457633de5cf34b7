// CepIndex against a reference map: endpoints crowded into few buckets (a table of 16 slots has 16
// buckets, so most chains hold several), found by their keys, missed by others, and erased in
// every position of their chains (head, middle, last) in random orders. The tagged links' "last"
// flags must follow every erase, or a lookup stops early (a miss for an indexed key) or walks
// past the end.
#include "engine/cep_index.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "engine/cep_table.h"
#include "engine/cid.h"

namespace fastcm::engine {
namespace {

constexpr std::uint32_t kCapacity = 16;

class CepIndexTest : public ::testing::Test {
 protected:
  CepTable table_{kCapacity, 0, CidLayout(1, SipKey{0x1234, 0x5678})};
  DuplicateReqIndex index_{table_};
  std::vector<Cep*> ceps_;
  std::map<std::pair<std::uint32_t, Guid>, Cep*> reference_;

  void SetUp() override {
    for (std::uint32_t i = 0; i < kCapacity; ++i) ceps_.push_back(table_.allocate());
  }

  void index(Cep& cep, RemoteKey key) {
    cep.remote_comm_id = key.id;
    cep.remote_ca_guid = key.ca_guid;
    index_.insert(cep);
    reference_[{key.id, key.ca_guid}] = &cep;
  }
  void unindex(Cep& cep) {
    index_.erase(cep);
    reference_.erase({cep.remote_comm_id, cep.remote_ca_guid});
  }
  // Every indexed key finds its endpoint; `misses` keys that are not indexed find nothing.
  void expect_agrees(std::mt19937_64& rng, int misses) {
    for (const auto& [key, cep] : reference_) {
      ASSERT_EQ(index_.find({key.first, key.second}), cep) << key.first;
    }
    for (int i = 0; i < misses; ++i) {
      const RemoteKey key{static_cast<std::uint32_t>(rng()), rng() % 4};
      if (!reference_.contains({key.id, key.ca_guid})) {
        ASSERT_EQ(index_.find(key), nullptr) << key.id;
      }
    }
  }
};

TEST_F(CepIndexTest, FindsWhatItHoldsThroughEveryEraseOrder) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    // Four CA GUIDs and small IDs: many endpoints per bucket, and keys that differ in one field.
    // Distinct keys, as the protocol indexes them (a duplicate REQ finds its endpoint instead).
    for (Cep* cep : ceps_) {
      RemoteKey key;
      do {
        key = RemoteKey{static_cast<std::uint32_t>(rng() % 64), rng() % 4};
      } while (reference_.contains({key.id, key.ca_guid}));
      index(*cep, key);
    }
    expect_agrees(rng, 64);
    std::vector<Cep*> order = ceps_;
    std::shuffle(order.begin(), order.end(), rng);
    for (Cep* cep : order) {
      unindex(*cep);
      ASSERT_EQ(index_.find({cep->remote_comm_id, cep->remote_ca_guid}), nullptr);
      expect_agrees(rng, 8);
    }
  }
}

TEST_F(CepIndexTest, InsertAndEraseAreIdempotent) {
  index(*ceps_[0], RemoteKey{1, 2});
  index_.insert(*ceps_[0]);  // already indexed: no second link to itself
  EXPECT_EQ(index_.find({1, 2}), ceps_[0]);
  unindex(*ceps_[0]);
  index_.erase(*ceps_[0]);
  EXPECT_EQ(index_.find({1, 2}), nullptr);
}

// The minor page faults this process has taken so far.
long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// A REQ looks for a duplicate before its endpoint is indexed. In a table whose buckets are mapped
// memory, lookups in blocks no insert has written must not read them: that would map the zero
// page under each, and each first insert there would fault again to replace it.
TEST(CepIndex, LookupsWhereNothingWasWrittenTouchNoPages) {
  constexpr std::uint32_t kSlots = std::uint32_t{1} << 20;  // 4 MiB of buckets: 1,024 pages
  CepTable table(kSlots, 0, CidLayout(1, SipKey{0x1234, 0x5678}));
  DuplicateReqIndex index(table);
  std::mt19937_64 rng(11);
  const long before = minor_faults();
  for (int i = 0; i < 8192; ++i) {
    const RemoteKey key{static_cast<std::uint32_t>(rng()), rng()};
    index.prefetch(key);
    index.prefetch_chain(key);
    ASSERT_EQ(index.find(key), nullptr);
  }
  // Reading the buckets would fault about 1,000 times (once per page, 8,192 lookups reach nearly
  // all); a sanitizer's own bookkeeping takes a few dozen.
  EXPECT_LT(minor_faults() - before, 256);

  // Indexed endpoints, spread over the blocks, are found; lookups beside them still miss.
  std::map<std::pair<std::uint32_t, Guid>, Cep*> indexed;
  for (int i = 0; i < 256; ++i) {
    Cep* cep = table.allocate();
    ASSERT_NE(cep, nullptr);
    cep->remote_comm_id = static_cast<std::uint32_t>(rng());
    cep->remote_ca_guid = rng();
    index.insert(*cep);
    indexed[{cep->remote_comm_id, cep->remote_ca_guid}] = cep;
  }
  for (const auto& [key, cep] : indexed) ASSERT_EQ(index.find({key.first, key.second}), cep);
  for (int i = 0; i < 4096; ++i) {
    const RemoteKey key{static_cast<std::uint32_t>(rng()), rng()};
    if (!indexed.contains({key.id, key.ca_guid})) {
      ASSERT_EQ(index.find(key), nullptr);
    }
  }
}

}  // namespace
}  // namespace fastcm::engine
