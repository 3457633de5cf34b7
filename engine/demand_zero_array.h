// A fixed-size array whose elements start as zero bytes, in anonymous memory the kernel maps on
// first touch (arrays under kHeapBytes: zeroed heap memory). Per-slot arrays are sized for a
// shard's whole endpoint table (with slack for uneven hashing), but a storm of N connections writes
// only the slots it uses: with these arrays the engine's resident memory follows the endpoints in
// use, not the configured capacity.
//
// Only for element types whose all-zero bytes are a valid initial value: trivially copyable and
// destructible types (so implicit-lifetime: the mapping creates them), whose zero bytes read as 0,
// false and null on every platform DPDK supports. Raw storage for objects constructed later is an
// array of such a type too (see CepTable). Reading an
// untouched element maps the shared zero page and costs no memory.
// Thread contract: as for a plain array; the array itself is immutable after construction.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace fastcm::engine {

template <typename T>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>
class DemandZeroArray {
 public:
  // Below this size the array comes from the heap (calloc). calloc clears memory it recycles from
  // the heap, touching every page, which a mapping of a large table must not do; for a few pages
  // that costs less than the mapping itself, whose munmap interrupts every CPU the process ran on
  // to flush its TLB (engines with small tables, made and destroyed by the thousand in tests and
  // the fuzz harness, spent a quarter of their time there). glibc's own mmap threshold.
  static constexpr std::size_t kHeapBytes = std::size_t{128} << 10;

  // How the kernel backs a mapped array. `small`: 4 KiB pages, so that resident memory follows
  // the elements touched. `huge` (transparent huge pages, where the kernel's "madvise" mode allows
  // them): for an array touched whole and read at random, where one TLB entry then covers 2 MiB
  // instead of 4 KiB; resident memory grows 2 MiB at a time.
  enum class Pages { small, huge };

  // Throws std::bad_alloc when the memory cannot be reserved.
  explicit DemandZeroArray(std::size_t size, Pages pages = Pages::small) : size_(size), bytes_(size * sizeof(T)) {
    if (bytes_ == 0) return;
    void* p = nullptr;
    if (bytes_ < kHeapBytes) {
      p = std::calloc(bytes_, 1);
      if (p == nullptr) throw std::bad_alloc();
    } else {
      p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      // A hint: refused or unsupported, small pages serve as before.
      if (pages == Pages::huge) (void)madvise(p, bytes_, MADV_HUGEPAGE);
    }
    data_ = static_cast<T*>(p);  // calloc and mmap implicitly create the (implicit-lifetime) elements
  }
  ~DemandZeroArray() {
    if (data_ == nullptr) return;
    if (bytes_ < kHeapBytes) {
      std::free(data_);
    } else {
      munmap(data_, bytes_);
    }
  }
  DemandZeroArray(const DemandZeroArray&) = delete;
  DemandZeroArray& operator=(const DemandZeroArray&) = delete;

  // Maps the pages under elements [first, first + count) now, in one system call, instead of one
  // page fault per page as they are first written: a table that grows slot by slot calls it a
  // chunk of slots ahead. True when the kernel mapped them; false for a heap array (mapped
  // already) or where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14), and then the pages
  // fault in as before.
  bool populate(std::size_t first, std::size_t count) noexcept {
    if (bytes_ < kHeapBytes || count == 0) return false;
    // madvise wants a page-aligned start. sysconf reads the page size the kernel handed the process
    // at exec (no system call).
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(data_ + first) & ~(page - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(data_ + first + count);
    return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
  }

  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::size_t size_;
  std::size_t bytes_;
  T* data_ = nullptr;
};

// Which 4 KiB blocks of a DemandZeroArray<T> have been written, for an array read at random
// before it is written (a hash index's buckets). A read of a page never written maps the kernel's
// shared zero page; the first write then faults again to replace it and flushes the old mapping
// from every CPU the process runs on, an interprocessor interrupt each (in a 1M storm, 4 % of the
// CPU, all at the duplicate-REQ index's first write per page). An owner that asks written() first
// answers "zero" for a block never written without reading it, so a page's first touch is its
// write and costs one fault. Blocks rather than pages, so that it holds on any page size: a block
// never written holds zeros whether or not its page is mapped.
// Thread contract: the array's owner only (plain bits).
template <typename T>
class WrittenBlocks {
 public:
  // For an array of `size` elements. Throws std::bad_alloc.
  explicit WrittenBlocks(std::size_t size)
      : bits_(std::make_unique<std::uint64_t[]>(word_of(size) + 1)) {}  // up to the last element's block

  // Whether element i's block has been marked.
  [[nodiscard]] bool written(std::size_t i) const noexcept { return (bits_[word_of(i)] & bit_of(i)) != 0; }
  // Records that element i is (about to be) written.
  void mark(std::size_t i) noexcept { bits_[word_of(i)] |= bit_of(i); }

 private:
  static constexpr std::size_t kBlockBytes = 4096;
  [[nodiscard]] static std::size_t block_of(std::size_t i) noexcept { return i * sizeof(T) / kBlockBytes; }
  [[nodiscard]] static std::size_t word_of(std::size_t i) noexcept { return block_of(i) / 64; }
  [[nodiscard]] static std::uint64_t bit_of(std::size_t i) noexcept { return std::uint64_t{1} << (block_of(i) % 64); }

  std::unique_ptr<std::uint64_t[]> bits_;
};

}  // namespace fastcm::engine
