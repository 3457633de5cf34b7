// The attachment word of an endpoint slot (engine/cep_table.h): exactly one destroy wins, no
// callback starts once a destroy's claim is in, a callback running when it comes may finish, and
// a slot whose remote destroy is on its way is not reused.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/cep_table.h"

namespace fastcm::engine {
namespace {

class Attachment : public ::testing::Test {
 protected:
  CepTable table_{4, 0, CidLayout(1, SipKey{0x5A5A5A5A, 0})};
};

TEST_F(Attachment, OnlyOneDetachWinsAndTheIdGoesStale) {
  Cep* cep = table_.allocate();
  table_.attach(*cep);
  const Id id = CepTable::id_of(*cep);
  EXPECT_TRUE(table_.attached(id));
  EXPECT_EQ(table_.try_detach_remote(id), cep->slot);
  EXPECT_FALSE(table_.try_detach_remote(id));
  EXPECT_FALSE(table_.try_detach(id));
  EXPECT_FALSE(table_.attached(id));
  EXPECT_FALSE(table_.attached(*cep));
  EXPECT_EQ(table_.complete_remote_detach(cep->slot, id.generation()), cep);  // still live: its protocol side follows
}

TEST_F(Attachment, NoCallbackStartsAfterADetach) {
  Cep* cep = table_.allocate();
  table_.attach(*cep);
  EXPECT_TRUE(table_.try_detach_remote(CepTable::id_of(*cep)));
  EXPECT_FALSE(table_.enter_callback(*cep));
}

TEST_F(Attachment, ARunningCallbackDoesNotBlockADetachAndEndsCleanly) {
  Cep* cep = table_.allocate();
  table_.attach(*cep);
  const Id id = CepTable::id_of(*cep);
  ASSERT_TRUE(table_.enter_callback(*cep));
  EXPECT_TRUE(table_.attached(id));  // the application still holds it during its callback
  EXPECT_FALSE(table_.enter_callback(*cep));  // one at a time
  EXPECT_TRUE(table_.try_detach_remote(id));
  EXPECT_FALSE(table_.attached(id));
  table_.leave_callback(cep->slot);
  EXPECT_FALSE(table_.enter_callback(*cep));
  EXPECT_EQ(table_.complete_remote_detach(cep->slot, id.generation()), cep);
}

TEST_F(Attachment, AnOwnerDetachInsideTheCallbackEndsWithTheSlotClear) {
  Cep* cep = table_.allocate();
  table_.attach(*cep);
  const Id id = CepTable::id_of(*cep);
  ASSERT_TRUE(table_.enter_callback(*cep));
  EXPECT_TRUE(table_.try_detach(id));
  table_.free(*cep);
  table_.leave_callback(cep->slot);
  Cep* again = table_.allocate();
  ASSERT_NE(again, nullptr);
  table_.attach(*again);
  EXPECT_TRUE(table_.enter_callback(*again));  // nothing of the old callback is left in the word
}

TEST_F(Attachment, ASlotFreedWhileItsRemoteDestroyIsQueuedIsNotReused) {
  CepTable one_slot{1, 0, CidLayout(1, SipKey{})};
  Cep* cep = one_slot.allocate();
  one_slot.attach(*cep);
  const Id id = CepTable::id_of(*cep);
  const std::uint32_t slot = cep->slot;
  ASSERT_TRUE(one_slot.try_detach_remote(id));
  one_slot.free(*cep);  // e.g. its time-wait ended before the shard saw the destroy
  EXPECT_EQ(one_slot.allocate(), nullptr);
  EXPECT_EQ(one_slot.complete_remote_detach(slot, id.generation()), nullptr);  // gone, and the slot is free again
  EXPECT_NE(one_slot.allocate(), nullptr);
}

}  // namespace
}  // namespace fastcm::engine
