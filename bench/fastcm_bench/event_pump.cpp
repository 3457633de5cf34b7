#include "bench/fastcm_bench/event_pump.h"

#include <poll.h>

#include <array>

namespace fastcm::bench {

EventPump::~EventPump() { stop(); }

void EventPump::start(Engine& engine, EventQueue& queue, EventHandler handler, void* context) {
  thread_ = std::thread([=, this, &engine, &queue] { loop(engine, queue, handler, context); });
}

void EventPump::stop() {
  stop_.store(true, std::memory_order_release);  // pairs: loop()'s acquire
  if (thread_.joinable()) thread_.join();
}

void EventPump::loop(Engine& engine, EventQueue& queue, EventHandler handler, void* context) {
  std::array<Event, 64> events;
  for (;;) {
    const std::size_t n = engine.poll(queue, events);
    if (n == 0) {
      if (stop_.load(std::memory_order_acquire)) return;  // pairs: stop()
      pollfd fd{.fd = queue.event_fd(), .events = POLLIN, .revents = 0};
      (void)::poll(&fd, 1, 5);  // wakes when events arrive; the timeout re-checks the stop flag
      continue;
    }
    const CallBatch answers(engine);  // the handlers' calls reach their shards together
    for (std::size_t i = 0; i < n; ++i) {
      handler(events[i], context);
      engine.release(events[i]);
    }
  }
}

}  // namespace fastcm::bench
