// Lookup in an endpoint table (engine/cep_table.h) by wire CID and by API Id, through the hints
// and past them: a hint only ever speeds a lookup up, it never changes its answer.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/cep_table.h"

namespace fastcm::engine {
namespace {

constexpr SipKey kKey{0x0123456789ABCDEFull, 0xFEDCBA9876543210ull};
// More slots than the table keeps hints (16384), so many CIDs share a hint.
constexpr std::uint32_t kCapacity = 40000;

std::vector<Cep*> fill(CepTable& table, std::uint32_t n) {
  std::vector<Cep*> ceps;
  for (std::uint32_t i = 0; i < n; ++i) ceps.push_back(table.allocate());
  return ceps;
}

TEST(CepTableLookup, EveryLiveEndpointIsFoundWhetherOrNotItsHintWasOverwritten) {
  CepTable table(kCapacity, 1, CidLayout(2, kKey));
  const std::vector<Cep*> ceps = fill(table, kCapacity);
  for (Cep* cep : ceps) {
    ASSERT_NE(cep, nullptr);
    EXPECT_EQ(table.find_by_comm_id(cep->local_comm_id), cep);
    const Id id = CepTable::id_of(*cep);
    EXPECT_EQ(table.own_slot_of(id), table.slot_of(id));
    EXPECT_EQ(table.own_slot_of(id), cep->slot);
    EXPECT_EQ(table.find(id), cep);
  }
}

TEST(CepTableLookup, AFreedEndpointsIdsFindNothingAndTheSlotsNextOwnerIsFound) {
  CepTable table(1, 0, CidLayout(1, kKey));  // one slot: its reuse is immediate
  Cep* first = table.allocate();
  ASSERT_NE(first, nullptr);
  const std::uint32_t old_cid = first->local_comm_id;
  const Id old_id = CepTable::id_of(*first);
  EXPECT_EQ(table.find_by_comm_id(old_cid), first);

  table.free(*first);  // the hint still names the slot
  EXPECT_EQ(table.find_by_comm_id(old_cid), nullptr);
  EXPECT_EQ(table.find(old_id), nullptr);

  Cep* second = table.allocate();
  ASSERT_EQ(second, first);  // the same slot, a new generation and CID
  ASSERT_NE(second->local_comm_id, old_cid);
  EXPECT_EQ(table.find_by_comm_id(old_cid), nullptr);
  EXPECT_EQ(table.find(old_id), nullptr);
  EXPECT_EQ(table.find_by_comm_id(second->local_comm_id), second);
  EXPECT_EQ(table.find(CepTable::id_of(*second)), second);
}

TEST(CepTableLookup, AnotherShardsCidSharingAHintFindsNothing) {
  CepTable table(16, 0, CidLayout(2, kKey));  // the shard is the CID's top bit
  Cep* cep = table.allocate();
  ASSERT_NE(cep, nullptr);
  EXPECT_EQ(table.find_by_comm_id(cep->local_comm_id ^ 0x80000000u), nullptr);
}

TEST(CepTableLookup, ArbitraryCidsFindNothingButTheEndpointTheyName) {
  CepTable table(kCapacity, 0, CidLayout(1, kKey));
  const std::vector<Cep*> ceps = fill(table, kCapacity / 2);
  for (std::uint32_t i = 0; i < kCapacity / 2; i += 3) table.free(*ceps[i]);  // stale hints
  std::mt19937 random(7);
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t cid = static_cast<std::uint32_t>(random());
    const Cep* found = table.find_by_comm_id(cid);
    if (found != nullptr) {
      EXPECT_TRUE(found->live);
      EXPECT_EQ(found->local_comm_id, cid);
    }
  }
  std::uint32_t found_live = 0;
  for (std::uint32_t i = 0; i < kCapacity / 2; ++i) {
    if (i % 3 == 0) continue;
    found_live += table.find_by_comm_id(ceps[i]->local_comm_id) == ceps[i] ? 1u : 0u;
  }
  EXPECT_EQ(found_live, kCapacity / 2 - (kCapacity / 2 + 2) / 3);
}

}  // namespace
}  // namespace fastcm::engine
