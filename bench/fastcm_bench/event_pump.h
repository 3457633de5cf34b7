// --mode poll: one application thread that drains an engine's EventQueue and hands each event to
// the same handler a callback would run, then gives the event back to the engine.
#pragma once

#include <atomic>
#include <thread>

#include "fastcm/engine.h"

namespace fastcm::bench {

class EventPump {
 public:
  EventPump() = default;
  // Stops the thread (stop()).
  ~EventPump();
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  // Starts the thread: it polls `queue` of `engine` (sleeping on the queue's event fd, 5 ms at
  // most, when it is empty) and calls handler(event, context) for every event. Thread contract:
  // main thread, once; `engine` and `queue` outlive the pump.
  void start(Engine& engine, EventQueue& queue, EventHandler handler, void* context);

  // Makes the thread return once the queue is empty, and joins it (at once when not started).
  // Blocks up to one poll timeout after the last event. Main thread.
  void stop();

 private:
  void loop(Engine& engine, EventQueue& queue, EventHandler handler, void* context);

  std::atomic<bool> stop_{false};  // release in stop(), acquire in loop()
  std::thread thread_;
};

}  // namespace fastcm::bench
