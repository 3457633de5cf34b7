// CepIndex against a reference map: endpoints crowded into few buckets (a table of 16 slots has 16
// buckets, so most chains hold several), found by their keys, missed by others, and erased in
// every position of their chains (head, middle, last) in random orders. The tagged links' "last"
// flags must follow every erase, or a lookup stops early (a miss for an indexed key) or walks
// past the end.
#include "engine/cep_index.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fastcm::engine
