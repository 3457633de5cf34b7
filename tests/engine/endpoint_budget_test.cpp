// The engine-wide endpoint bound: spares a shard makes ahead of create_id count toward the limit
// but are not the application's until adopted.
#include <gtest/gtest.h>

#include "engine/endpoint_budget.h"

namespace fastcm::engine {
namespace {

TEST(EndpointBudget, SparesCountTowardTheLimitButNotTowardWhatTheApplicationHolds) {
  EndpointBudget budget(3);
  ASSERT_TRUE(budget.take(true));
  ASSERT_TRUE(budget.take(true));
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(budget.high_water(), 0u);
  ASSERT_TRUE(budget.take());
  EXPECT_EQ(budget.used(), 1u);
  EXPECT_FALSE(budget.take()) << "two spares and one endpoint fill a budget of three";
  EXPECT_FALSE(budget.take(true));

  budget.adopt();
  EXPECT_EQ(budget.used(), 2u);
  EXPECT_EQ(budget.high_water(), 2u);
  budget.give();
  budget.give();
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(budget.high_water(), 2u);
  ASSERT_TRUE(budget.take());
  ASSERT_TRUE(budget.take());
  EXPECT_FALSE(budget.take()) << "the spare not adopted still holds its place";
  budget.adopt();
  EXPECT_EQ(budget.used(), 3u);
  EXPECT_EQ(budget.high_water(), 3u);
}

// A spare taken from the budget but never made (its shard's table was full) gives both counts
// back: the application can still hold the whole limit, and the high-water mark reach it.
TEST(EndpointBudget, ASpareNeverMadeGivesBackItsPlace) {
  EndpointBudget budget(2);
  ASSERT_TRUE(budget.take(true));
  budget.give(true);
  EXPECT_EQ(budget.used(), 0u);
  ASSERT_TRUE(budget.take());
  ASSERT_TRUE(budget.take());
  EXPECT_EQ(budget.used(), 2u);
  EXPECT_EQ(budget.high_water(), 2u);
  EXPECT_FALSE(budget.take());
}

// A give or adopt without its take would borrow from the other half of the budget's word and leave
// a plausible level behind; debug builds (the sanitizer suites) stop there.
TEST(EndpointBudgetDeathTest, AGiveWithoutATakeStopsADebugBuild) {
#ifdef NDEBUG
  GTEST_SKIP() << "assertions are compiled out of this build";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EndpointBudget budget(2);
  EXPECT_DEATH(budget.give(), "give\\(\\) without a take");
  ASSERT_TRUE(budget.take());
  EXPECT_DEATH(budget.give(true), "give\\(\\) without a take");  // a spare it never took
  EXPECT_DEATH(budget.adopt(), "adopt\\(\\) without a spare taken");
  budget.give();
  EXPECT_EQ(budget.used(), 0u);
#endif
}

}  // namespace
}  // namespace fastcm::engine
