// HalfOpenTable against the HalfOpenBudget contract (engine/half_open_budget.h): admissions up to
// each source's and each listen's bound, settle() giving them back, a listen's count dying with it,
// the source's standing (unanswered handshakes in a row) and its reset, sources told apart by LID,
// GID and port, and threads admitting and settling at once keeping the counts exact.
#include "shards/half_open_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/listens.h"

namespace fastcm::shards {
namespace {

using Refusal = engine::HalfOpenBudget::Refusal;
using Settled = engine::HalfOpenBudget::Settled;

constexpr engine::SipKey kKey{0x1234, 0x5678};
constexpr std::uint32_t kSlots = 1u << 12;

Id listen_id(std::uint32_t slot, std::uint32_t generation = 1) {
  return Id::make(slot, engine::kListenGenerationTag | generation);
}

MadAddress from_lid(Lid lid, std::uint16_t port_index = 0) {
  MadAddress a;
  a.port_index = port_index;
  a.remote_lid = lid;
  return a;
}

MadAddress from_gid(std::uint64_t iid) {
  MadAddress a;
  a.grh.present = true;
  a.grh.remote_gid = Gid::from_parts(0xfe80'0000'0000'0000, iid);
  return a;
}

HalfOpenTable table(std::uint32_t per_source, std::uint32_t per_listen = 1000) {
  return HalfOpenTable({.per_source = per_source, .per_listen = per_listen, .listens = 4, .source_slots = kSlots}, kKey);
}

TEST(HalfOpenTable, RejectsLimitsOutOfRange) {
  const auto make = [](HalfOpenTable::Limits l) { HalfOpenTable t(l, kKey); };
  const HalfOpenTable::Limits ok{.per_source = 1, .per_listen = 1, .listens = 1, .source_slots = 1};
  EXPECT_NO_THROW(make(ok));
  auto l = ok;
  l.per_source = 0;
  EXPECT_THROW(make(l), std::invalid_argument);
  l = ok;
  l.per_source = HalfOpenTable::kMaxPerSource + 1;
  EXPECT_THROW(make(l), std::invalid_argument);
  l = ok;
  l.per_listen = 0;
  EXPECT_THROW(make(l), std::invalid_argument);
  l = ok;
  l.source_slots = 3;
  EXPECT_THROW(make(l), std::invalid_argument);
}

TEST(HalfOpenTable, ASourceIsAdmittedUpToItsBoundAndSettlingMakesRoom) {
  HalfOpenTable t = table(3);
  std::vector<engine::HalfOpenBudget::Admission> taken;
  for (int i = 0; i < 3; ++i) {
    taken.push_back(t.admit(from_lid(7), listen_id(0)));
    EXPECT_EQ(taken.back().refused, Refusal::none);
  }
  EXPECT_EQ(t.admit(from_lid(7), listen_id(0)).refused, Refusal::source);
  EXPECT_EQ(t.source_handshakes(from_lid(7)), 3u);
  EXPECT_EQ(t.admit(from_lid(8), listen_id(0)).refused, Refusal::none) << "another source";
  t.settle(taken[0].source, listen_id(0), Settled::answered);
  EXPECT_EQ(t.admit(from_lid(7), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(7), listen_id(0)).refused, Refusal::source);
}

TEST(HalfOpenTable, PortLidAndGidTellSourcesApart) {
  HalfOpenTable t = table(1);
  EXPECT_EQ(t.admit(from_lid(7, 0), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(7, 1), listen_id(0)).refused, Refusal::none) << "same LID, another port";
  EXPECT_EQ(t.admit(from_gid(7), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_gid(8), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_gid(7), listen_id(0)).refused, Refusal::source);
  MadAddress gid_with_other_lid = from_gid(8);
  gid_with_other_lid.remote_lid = 99;  // with a GRH the GID is the source, whatever the LID
  EXPECT_EQ(t.admit(gid_with_other_lid, listen_id(0)).refused, Refusal::source);
}

TEST(HalfOpenTable, AListenIsAdmittedUpToItsBoundAndARefusalTakesNoSourceRoom) {
  HalfOpenTable t = table(10, 2);
  EXPECT_EQ(t.admit(from_lid(1), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(2), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(3), listen_id(0)).refused, Refusal::listen);
  EXPECT_EQ(t.source_handshakes(from_lid(3)), 0u);
  EXPECT_EQ(t.admit(from_lid(3), listen_id(1)).refused, Refusal::none) << "another listen";
}

TEST(HalfOpenTable, ANewListenInTheSlotStartsAFreshCountAndTheOldOnesSettlesAreIgnored) {
  HalfOpenTable t = table(10, 2);
  const auto a = t.admit(from_lid(1), listen_id(0, 1));
  (void)t.admit(from_lid(2), listen_id(0, 1));
  EXPECT_EQ(t.admit(from_lid(3), listen_id(0, 1)).refused, Refusal::listen);
  EXPECT_EQ(t.admit(from_lid(3), listen_id(0, 2)).refused, Refusal::none);
  t.settle(a.source, listen_id(0, 1), Settled::abandoned);  // the old listen's: not the new one's
  EXPECT_EQ(t.admit(from_lid(4), listen_id(0, 2)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(5), listen_id(0, 2)).refused, Refusal::listen);
  EXPECT_EQ(t.source_handshakes(from_lid(1)), 0u) << "the source's count came back all the same";
}

TEST(HalfOpenTable, TwoUnansweredHandshakesInARowMakeASourceUnansweringUntilItAnswers) {
  HalfOpenTable t = table(10);
  const MadAddress src = from_lid(9);
  const auto round = [&](Settled how) {
    const auto a = t.admit(src, listen_id(0));
    t.settle(a.source, listen_id(0), how);
    return a.unanswering;
  };
  EXPECT_FALSE(round(Settled::unanswered));
  EXPECT_FALSE(round(Settled::abandoned)) << "abandoned by us: the standing stays";
  EXPECT_FALSE(round(Settled::unanswered));
  EXPECT_EQ(t.source_unanswered(src), 2u);
  EXPECT_TRUE(round(Settled::unanswered));
  EXPECT_TRUE(round(Settled::answered));
  EXPECT_EQ(t.source_unanswered(src), 0u);
  EXPECT_FALSE(round(Settled::answered));
  EXPECT_FALSE(t.admit(from_lid(10), listen_id(0)).unanswering) << "another source";
}

TEST(HalfOpenTable, ASettleWithoutAnAdmissionChangesNothing) {
  HalfOpenTable t = table(1);
  const auto a = t.admit(from_lid(5), listen_id(0));
  t.settle(a.source, listen_id(0), Settled::answered);
  t.settle(a.source, listen_id(0), Settled::unanswered);  // once too often
  EXPECT_EQ(t.source_unanswered(from_lid(5)), 0u);
  EXPECT_EQ(t.admit(from_lid(5), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(5), listen_id(0)).refused, Refusal::source);
}

TEST(HalfOpenTable, ThreadsAdmittingAndSettlingAtOnceKeepTheCountsExact) {
  constexpr std::uint32_t kBound = 64;
  constexpr int kRounds = 20'000;
  HalfOpenTable t = table(kBound, 1'000'000);
  std::atomic<std::uint32_t> held{0};
  std::atomic<bool> over{false};
  const auto worker = [&] {
    std::vector<std::uint32_t> mine;
    for (int i = 0; i < kRounds; ++i) {
      const auto a = t.admit(from_lid(3), listen_id(0));
      if (a.refused == Refusal::none) {
        if (held.fetch_add(1) + 1 > kBound) over = true;
        mine.push_back(a.source);
      }
      if (!mine.empty() && (i % 3 != 0 || a.refused != Refusal::none)) {
        held.fetch_sub(1);
        t.settle(mine.back(), listen_id(0), Settled::answered);
        mine.pop_back();
      }
    }
    for (const std::uint32_t s : mine) {
      held.fetch_sub(1);
      t.settle(s, listen_id(0), Settled::answered);
    }
  };
  std::thread a(worker);
  std::thread b(worker);
  a.join();
  b.join();
  EXPECT_FALSE(over) << "more than the bound admitted at once";
  EXPECT_EQ(t.source_handshakes(from_lid(3)), 0u);
  for (std::uint32_t i = 0; i < kBound; ++i) EXPECT_EQ(t.admit(from_lid(3), listen_id(0)).refused, Refusal::none);
  EXPECT_EQ(t.admit(from_lid(3), listen_id(0)).refused, Refusal::source);
}

}  // namespace
}  // namespace fastcm::shards
