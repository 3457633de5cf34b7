// InboxItem: every kind of item survives the trip through the inbox's word unchanged, and only the
// kinds that own a MAD hand one back.
#include "shards/inbox_item.h"

#include <gtest/gtest.h>

#include "engine/cid.h"
#include "shards/shard.h"

namespace fastcm::shards {
namespace {

struct alignas(64) Mads {
  engine::MadBuf first;
  engine::MadBuf second;
};

TEST(InboxItem, AMadComesBackAsTheSameMadOfItsKind) {
  Mads mads;
  const InboxItem plain = InboxItem::from_word(InboxItem::mad(mads.first, InboxItem::Kind::mad).word());
  EXPECT_EQ(plain.kind(), InboxItem::Kind::mad);
  EXPECT_EQ(plain.mad(), &mads.first);
  const InboxItem chain = InboxItem::from_word(InboxItem::mad(mads.second, InboxItem::Kind::mad_chain).word());
  EXPECT_EQ(chain.kind(), InboxItem::Kind::mad_chain);
  EXPECT_EQ(chain.mad(), &mads.second);
  const InboxItem overflow = InboxItem::from_word(InboxItem::mad(mads.first, InboxItem::Kind::mad_overflow).word());
  EXPECT_EQ(overflow.kind(), InboxItem::Kind::mad_overflow);
  EXPECT_EQ(overflow.mad(), &mads.first);
  const InboxItem stale = InboxItem::from_word(InboxItem::stale(mads.second).word());
  EXPECT_EQ(stale.kind(), InboxItem::Kind::stale);
  EXPECT_EQ(stale.mad(), &mads.second);
}

TEST(InboxItem, ACommandAndADestroyCarryNoMad) {
  Command cmd;
  const InboxItem command = InboxItem::from_word(InboxItem::command(cmd).word());
  EXPECT_EQ(command.kind(), InboxItem::Kind::command);
  EXPECT_EQ(&command.command(), &cmd);
  EXPECT_EQ(command.mad(), nullptr);
  constexpr std::uint32_t kLastSlot = engine::CidLayout::max_slots(1) - 1;  // the most any shard has
  for (const std::uint32_t slot : {0u, 1u, 4095u, kLastSlot}) {
    const InboxItem destroy = InboxItem::from_word(InboxItem::destroy(slot).word());
    EXPECT_EQ(destroy.kind(), InboxItem::Kind::destroy);
    EXPECT_EQ(destroy.slot(), slot);
    EXPECT_EQ(destroy.mad(), nullptr);
  }
}

}  // namespace
}  // namespace fastcm::shards
