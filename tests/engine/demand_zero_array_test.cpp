// DemandZeroArray on both sides of its heap threshold: every element starts as zero bytes, and
// each element keeps what was written to it (the two storage paths are one contract).
#include "engine/demand_zero_array.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace fastcm::engine {
namespace {

struct Slot {
  std::uint64_t word;
  void* pointer;
  bool flag;
};

template <typename T>
void expect_zeroed_then_kept(std::size_t size) {
  DemandZeroArray<T> array(size);
  ASSERT_EQ(array.size(), size);
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_EQ(array[i].word, 0u) << i;
    ASSERT_EQ(array[i].pointer, nullptr) << i;
    ASSERT_FALSE(array[i].flag) << i;
  }
  for (std::size_t i = 0; i < size; i += 7) array[i] = T{i + 1, &array[i], true};
  for (std::size_t i = 0; i < size; ++i) {
    const bool written = i % 7 == 0;
    ASSERT_EQ(array[i].word, written ? i + 1 : 0) << i;
    ASSERT_EQ(array[i].pointer, written ? &array[i] : nullptr) << i;
  }
}

TEST(DemandZeroArray, HeapSizedArraysStartZeroedAndKeepWrites) {
  expect_zeroed_then_kept<Slot>(1);
  expect_zeroed_then_kept<Slot>(DemandZeroArray<Slot>::kHeapBytes / sizeof(Slot) - 1);
}

TEST(DemandZeroArray, MappedArraysStartZeroedAndKeepWrites) {
  expect_zeroed_then_kept<Slot>(DemandZeroArray<Slot>::kHeapBytes / sizeof(Slot) + 1);
  expect_zeroed_then_kept<Slot>(std::size_t{1} << 16);
}

TEST(DemandZeroArray, AnEmptyArrayHoldsNothing) {
  const DemandZeroArray<Slot> array(0);
  EXPECT_EQ(array.size(), 0u);
}

}  // namespace
}  // namespace fastcm::engine
