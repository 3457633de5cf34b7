// What the C API's opaque handles are. fastcm_fabric, fastcm_event_queue and fastcm_mad are the
// C++ objects themselves (fastcm::Fabric, fastcm::EventQueue, fastcm::MadRef), cast at the
// boundary; fastcm_engine, fastcm_loopback and fastcm_fabrics own the C++ objects and what the C
// side lent them.
#pragma once

#include <memory>

#include "capi/c_handlers.h"
#include "capi/callback_clock.h"
#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/engine.h"
#include "fastcm/fastcm.h"
#include "fastcm/opened_fabrics.h"
#include "fastcm/settings.h"

struct fastcm_engine {
  // Declared before `engine`, so both outlive it: the engine reads the clock and hands events to
  // the handler records until its destructor returns.
  fastcm::capi::CallbackClock clock;
  fastcm::capi::CHandlers handlers;
  std::unique_ptr<fastcm::Engine> engine;

  explicit fastcm_engine(const fastcm_clock* c) : clock(c) {}
};

struct fastcm_loopback {
  fastcm::capi::CallbackClock clock;  // before `fabric`, which reads it
  std::unique_ptr<fastcm::loopback::LoopbackFabric> fabric;

  explicit fastcm_loopback(const fastcm_clock* c) : clock(c) {}
};

struct fastcm_settings {
  fastcm::Settings settings;
};

struct fastcm_fabrics {
  fastcm::capi::CallbackClock clock;  // before `opened`, which reads it
  std::unique_ptr<fastcm::OpenedFabrics> opened;

  explicit fastcm_fabrics(const fastcm_clock* c) : clock(c) {}
};

namespace fastcm::capi {

[[nodiscard]] inline Fabric& cpp(fastcm_fabric* f) noexcept { return *reinterpret_cast<Fabric*>(f); }
[[nodiscard]] inline const Fabric& cpp(const fastcm_fabric* f) noexcept {
  return *reinterpret_cast<const Fabric*>(f);
}
[[nodiscard]] inline EventQueue& cpp(fastcm_event_queue* q) noexcept { return *reinterpret_cast<EventQueue*>(q); }
[[nodiscard]] inline const EventQueue& cpp(const fastcm_event_queue* q) noexcept {
  return *reinterpret_cast<const EventQueue*>(q);
}

}  // namespace fastcm::capi
