// DemandZeroArray on both sides of its heap threshold: every element starts as zero bytes, and
// each element keeps what was written to it (the two storage paths are one contract).
#include "engine/demand_zero_array.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

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

// Which of the pages under `bytes` at `start` (page-aligned) are mapped.
std::vector<bool> resident_pages(const void* start, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<void*>(start), bytes, flags.data()), 0);
  std::vector<bool> resident(flags.size());
  for (std::size_t i = 0; i < flags.size(); ++i) resident[i] = (flags[i] & 1) != 0;
  return resident;
}

TEST(DemandZeroArray, PopulateMapsThePagesUnderItsElementsOnly) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  constexpr std::size_t kPages = 64;
  DemandZeroArray<std::uint64_t> array(kPages * page / sizeof(std::uint64_t));
  const std::size_t per_page = page / sizeof(std::uint64_t);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(&array[0]) % page, 0u);  // a fresh mapping
  // Elements from the middle of page 8 to the first element of page 12: pages 8 to 12.
  if (!array.populate(8 * per_page + per_page / 2, 3 * per_page + per_page / 2 + 1)) {
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  }
  const std::vector<bool> resident = resident_pages(&array[0], kPages * page);
  for (std::size_t p = 0; p < kPages; ++p) EXPECT_EQ(resident[p], p >= 8 && p <= 12) << "page " << p;
  for (std::size_t i = 8 * per_page; i < 13 * per_page; ++i) ASSERT_EQ(array[i], 0u) << i;
  array[8 * per_page] = 42;
  EXPECT_TRUE(array.populate(0, 13 * per_page));  // mapping again keeps what was written
  EXPECT_EQ(array[8 * per_page], 42u);
}

TEST(DemandZeroArray, PopulateLeavesAHeapArrayAsItIs) {
  DemandZeroArray<Slot> array(4);
  array[1].word = 7;
  EXPECT_FALSE(array.populate(0, 4));
  EXPECT_EQ(array[1].word, 7u);
  EXPECT_EQ(array[0].word, 0u);
}

TEST(DemandZeroArray, AnEmptyArrayHoldsNothing) {
  const DemandZeroArray<Slot> array(0);
  EXPECT_EQ(array.size(), 0u);
}

TEST(WrittenBlocks, MarksWholeFourKibBlocksAndNothingElse) {
  constexpr std::size_t kPerBlock = 4096 / sizeof(std::uint32_t);
  WrittenBlocks<std::uint32_t> blocks(200 * kPerBlock + 3);  // 201 blocks: four words of bits, the last partly
  for (std::size_t i = 0; i < 200 * kPerBlock + 3; i += kPerBlock / 2) ASSERT_FALSE(blocks.written(i)) << i;
  blocks.mark(5 * kPerBlock + 17);
  blocks.mark(200 * kPerBlock + 2);
  EXPECT_TRUE(blocks.written(5 * kPerBlock));
  EXPECT_TRUE(blocks.written(6 * kPerBlock - 1));
  EXPECT_FALSE(blocks.written(5 * kPerBlock - 1));
  EXPECT_FALSE(blocks.written(6 * kPerBlock));
  EXPECT_TRUE(blocks.written(200 * kPerBlock));
  EXPECT_FALSE(blocks.written(199 * kPerBlock));
  EXPECT_FALSE(blocks.written(64 * kPerBlock + 5));  // block 5's bit in the next word
}

}  // namespace
}  // namespace fastcm::engine
