// CepTable::alternates: the paths kept beside the table start as AlternatePaths{} in each
// endpoint's life, keep what was written while the endpoint lives, and are not inherited by the
// slot's next endpoint; an endpoint that never made them reads the defaults without making them.
#include <gtest/gtest.h>

#include <utility>

#include "engine/cep_table.h"
#include "engine/cid.h"

namespace fastcm::engine {
namespace {

TEST(AlternatePaths, EachEndpointOfASlotStartsFromTheDefaults) {
  CepTable table(1, 0, CidLayout(1, SipKey{0x77, 0x99}));  // one slot: its reuse is immediate
  Cep* first = table.allocate();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(std::as_const(table).alternates(*first).alternate, Path{});
  EXPECT_FALSE(first->alternates_made);  // reading made nothing

  table.alternates(*first).alternate.remote_lid = 7;
  table.alternates(*first).pending_alternate.remote_lid = 9;
  EXPECT_TRUE(first->alternates_made);
  EXPECT_EQ(std::as_const(table).alternates(*first).alternate.remote_lid, 7);
  EXPECT_EQ(table.alternates(*first).pending_alternate.remote_lid, 9);

  table.free(*first);
  Cep* second = table.allocate();
  ASSERT_EQ(second, first);  // the same slot, another endpoint
  EXPECT_FALSE(second->alternates_made);
  EXPECT_EQ(std::as_const(table).alternates(*second).alternate, Path{});
  EXPECT_EQ(table.alternates(*second).alternate, Path{});
  EXPECT_EQ(table.alternates(*second).pending_alternate, Path{});
}

}  // namespace
}  // namespace fastcm::engine
