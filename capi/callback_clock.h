// A fastcm::Clock over a C caller's fastcm_clock (or CLOCK_MONOTONIC when it names no function).
#pragma once

#include <cstdint>

#include "fastcm/clock.h"
#include "fastcm/fastcm.h"

namespace fastcm::capi {

class CallbackClock final : public Clock {
 public:
  // `clock` may be null: steady time. The C caller keeps clock->ctx valid for our lifetime.
  explicit CallbackClock(const fastcm_clock* clock) noexcept
      : fn_(clock != nullptr ? clock->now_ns : nullptr), ctx_(clock != nullptr ? clock->ctx : nullptr) {}

  // Any thread (the C function promises the same).
  [[nodiscard]] std::uint64_t now_ns() const noexcept override {
    return fn_ != nullptr ? fn_(ctx_) : steady_.now_ns();
  }

 private:
  fastcm_now_fn fn_;
  void* ctx_;
  SteadyClock steady_;
};

}  // namespace fastcm::capi
