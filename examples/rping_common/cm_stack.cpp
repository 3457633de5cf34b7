#include "examples/rping_common/cm_stack.h"

namespace fastcm::examples {

namespace {

// Connections an example holds at once, time-wait included, and the events that may wait for its
// loop: both far above what one rping or ucmatose run needs.
constexpr std::uint32_t kEndpoints = 1024;
constexpr std::uint32_t kQueuedEvents = 4096;

}  // namespace

std::unique_ptr<CmStack> CmStack::open(const std::string& device, std::uint8_t hca_port, std::string& error,
                                       double auto_mra_fraction) {
  auto s = std::make_unique<CmStack>();
  umad::UmadConfig fabric_config;
  fabric_config.device = device;
  if (hca_port != 0) fabric_config.ports = {hca_port};
  s->fabric = umad::UmadFabric::open(fabric_config, error);
  if (s->fabric == nullptr) return nullptr;
  if (s->fabric->ports().size() != 1) {
    error = "device " + s->fabric->device() + " has " + std::to_string(s->fabric->ports().size()) +
            " active ports: name one with --hca-port";
    return nullptr;
  }
  EngineConfig config;
  config.max_endpoints = kEndpoints;
  config.auto_mra_fraction = auto_mra_fraction;
  ConfigError why;
  if (Engine::create(*s->fabric, s->clock, config, s->engine, &why) != Status::ok) {
    error = "the engine refused its configuration: " + std::string(to_string(why.field)) + " " +
            std::string(why.rule);
    return nullptr;
  }
  s->events = s->engine->create_event_queue(kQueuedEvents);
  if (s->events == nullptr) {
    error = "no event queue";
    return nullptr;
  }
  s->delivery.queue = s->events;
  return s;
}

}  // namespace fastcm::examples
