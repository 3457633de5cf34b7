// The CM side of the rping examples: fastcm's engine over the umad fabric of one port of an RDMA
// device (the kernel's ib_cm must not be loaded there), its worker threads handling the MADs and
// every event going to one EventQueue that the program's event loop drains with Engine::poll.
//
// Thread contract: open() on the main thread before any other thread exists that should not
// inherit the engine's signal mask; then the engine's calls from any thread (fastcm/engine.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fabric/umad/umad_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/engine.h"

namespace fastcm::examples {

struct CmStack {
  // Opens port `hca_port` of `device` (0: the device's first active port; an empty device: the
  // first umad CA) and starts an engine with one shard over it, sending automatic MRAs at
  // `auto_mra_fraction` of a peer's CM response timeout (EngineConfig; 0: none). Returns null with
  // `error` set to the fabric's or the engine's one-line reason.
  [[nodiscard]] static std::unique_ptr<CmStack> open(const std::string& device, std::uint8_t hca_port,
                                                     std::string& error,
                                                     double auto_mra_fraction = EngineConfig{}.auto_mra_fraction);

  [[nodiscard]] const PortAttr& port() const noexcept { return fabric->ports().front(); }

  // Hands every event queued now to `on_event(const Event&)`, then releases it (its MAD and
  // private data go back to the engine). The thread that owns the event loop; never blocks.
  template <class OnEvent>
  void drain_events(OnEvent&& on_event) {
    std::array<Event, 16> batch;
    std::size_t n;
    while ((n = engine->poll(*events, batch)) > 0) {
      for (std::size_t i = 0; i < n; ++i) {
        on_event(static_cast<const Event&>(batch[i]));
        engine->release(batch[i]);
      }
    }
  }

  // Declared in the order they must be destroyed in reverse: the engine before its fabric and clock.
  std::unique_ptr<umad::UmadFabric> fabric;
  SteadyClock clock;
  std::unique_ptr<Engine> engine;
  EventQueue* events = nullptr;  // owned by the engine
  Delivery delivery;             // to `events`
};

}  // namespace fastcm::examples
