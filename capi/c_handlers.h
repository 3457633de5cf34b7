// The C callbacks of one engine: a C++ EventHandler takes one context pointer, a C caller gives a
// function and its context, so each distinct (function, context) pair gets a record that the
// trampoline reads. Records live as long as the engine (endpoints may hold them until it dies).
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>

#include "fastcm/engine.h"
#include "fastcm/fastcm.h"

namespace fastcm::capi {

class CHandlers {
 public:
  // Distinct (function, context) pairs an engine holds at most; C callers usually have a few.
  static constexpr std::size_t kMaxHandlers = 4096;

  // The C++ delivery for a C one: a queue as it is, a callback through the trampoline. Errors:
  // FASTCM_ERR_INVALID_ARGUMENT (both or neither), FASTCM_ERR_NO_RESOURCES (kMaxHandlers distinct
  // pairs already). Any thread: a short critical section (listen and create_id calls only, never
  // the per-MAD path); may allocate a record.
  fastcm_status delivery(const fastcm_delivery& in, Delivery& out);

 private:
  struct Record {
    fastcm_event_fn fn;
    void* ctx;
  };
  static void trampoline(const Event& event, void* record) noexcept;

  std::mutex mutex_;
  std::deque<Record> records_;  // a deque: records never move while endpoints point at them
};

}  // namespace fastcm::capi
