// Threads that destroy the endpoints they are handed, from outside the engine's threads: the
// stress suite's "destroy from another thread while a callback of the endpoint may be running".
// A callback hands its own endpoint over and may wait (bounded) until destroy returned, so the
// destroy lands while that callback still runs. One thread only destroys (destroy never waits for
// a shard); a second one then runs the checks that do wait for the endpoint's shard (the fence,
// see finish_destroy), so a shard held by a waiting callback never delays another destroy.
//
// Thread contract: hand() from any thread (callbacks included); the constructor and stop() from
// the test's thread. Lock: a mutex around each hand-over list (test code, not the engine).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "fastcm/engine.h"
#include "tests/stress/probe.h"

namespace fastcm::stress {

class Reaper {
 public:
  explicit Reaper(Engine& engine);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Queues `probe`'s endpoint for destruction (start_destroy, then finish_destroy from another
  // thread; a probe already claimed by someone else is skipped).
  void hand(Probe& probe);
  // Destroys and checks what is queued, then ends the threads. Idempotent.
  void stop();

 private:
  // A hand-over list and the thread that drains it with `step`.
  class Stage {
   public:
    template <class Step>
    explicit Stage(Step step) : thread_([this, step] { run(step); }) {}
    void push(Probe& probe);
    void stop();

   private:
    template <class Step>
    void run(Step step);

    std::mutex lock_;  // guards queue_ and stopping_
    std::condition_variable wake_;
    std::deque<Probe*> queue_;
    bool stopping_ = false;
    std::thread thread_;  // last: starts once the members above exist
  };

  Engine& engine_;
  Stage checker_;    // finish_destroy
  Stage destroyer_;  // start_destroy, then hands over to checker_
};

}  // namespace fastcm::stress
