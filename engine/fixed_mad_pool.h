// A MadPool of a fixed number of buffers allocated once at construction, for one thread.
// The sharded engine uses DPDK rte_mempool instead (mempool/); this one serves the inline engine
// and tests, where a lock-free multi-thread pool would only cost.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/mad_buf.h"

namespace fastcm::engine {

class FixedMadPool final : public MadPool {
 public:
  explicit FixedMadPool(std::uint32_t capacity)
      : buffers_(std::make_unique<MadBuf[]>(capacity)), free_(capacity) {
    for (std::uint32_t i = 0; i < capacity; ++i) free_[i] = &buffers_[capacity - 1 - i];
  }

  [[nodiscard]] MadBuf* get() noexcept override {
    if (free_.empty()) return nullptr;
    MadBuf* buf = free_.back();
    free_.pop_back();  // never reallocates: capacity was reserved by the constructor
    buf->refs.store(1, std::memory_order_relaxed);
    return buf;
  }
  [[nodiscard]] std::uint32_t in_use() const noexcept override {
    return static_cast<std::uint32_t>(free_.capacity() - free_.size());
  }

 private:
  void put(MadBuf* buf) noexcept override { free_.push_back(buf); }

  std::unique_ptr<MadBuf[]> buffers_;
  std::vector<MadBuf*> free_;
};

}  // namespace fastcm::engine
