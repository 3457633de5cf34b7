// What rping_server and rping_client run on: fastcm over the umad fabric of one device port
// (CmStack), libibverbs on the same device (VerbsContext), and the epoll loop that wakes on either
// (EventLoop), driven until the program is done or a SIGINT/SIGTERM asks it to stop.
//
// Thread contract: main thread. EventLoop::block_stop_signals() must have run before open(), which
// starts the engine's threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "examples/rping_common/cm_stack.h"
#include "examples/rping_common/event_loop.h"
#include "examples/rping_common/verbs_context.h"

namespace fastcm::examples {

struct RdmaProgram {
  // Opens port `hca_port` of `device` (0 / empty: as CmStack::open) for the CM and the same device
  // for verbs with a CQ of `cq_entries`, and watches both. Returns null with `error` set.
  [[nodiscard]] static std::unique_ptr<RdmaProgram> open(const std::string& device, std::uint8_t hca_port,
                                                         int cq_entries, std::string& error);

  // Runs until app.done() or a stop signal, handing the app its CM events
  // (app.drain_cm_events()) and completions (app.drain_completions()) as they come. Returns
  // false with `error` set when the CQ cannot be re-armed.
  template <class App>
  bool run(App& app, std::string& error) {
    while (!app.done() && !loop.stop_requested()) {
      std::array<std::uint32_t, 4> ready{};
      const std::size_t n = loop.wait(-1, ready);
      for (std::size_t i = 0; i < n; ++i) {
        if (ready[i] == kCompletionsTag && !verbs->take_cq_event(error)) return false;
      }
      app.drain_cm_events();
      app.drain_completions();
    }
    return true;
  }

  static constexpr std::uint32_t kCmEventsTag = 0;
  static constexpr std::uint32_t kCompletionsTag = 1;

  std::unique_ptr<CmStack> cm;
  std::unique_ptr<VerbsContext> verbs;
  EventLoop loop;
};

}  // namespace fastcm::examples
