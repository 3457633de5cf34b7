// The C API of an engine as a whole: creation, the reactor calls, event queues and counters.
#include <array>
#include <vector>

#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"

using fastcm::capi::cpp;
using fastcm::capi::guarded;

namespace {
// retain and release read only the event's MAD.
fastcm::Event mad_of(const fastcm_event* event) noexcept {
  fastcm::Event e;
  e.mad = reinterpret_cast<const fastcm::MadRef*>(event->mad);
  return e;
}

// Reads C++ counters into a vector (one allocation, an observability call) and converts them.
template <class Read>
fastcm_status read_counters(fastcm_port_counters* out, size_t count, Read&& read) {
  if (out == nullptr && count > 0) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    std::vector<fastcm::PortCounters> all(count);
    read(std::span<fastcm::PortCounters>(all));
    for (size_t i = 0; i < count; ++i) out[i] = fastcm::capi::to_c(all[i]);
    return FASTCM_OK;
  });
}
}  // namespace

extern "C" {

void fastcm_engine_config_init(fastcm_engine_config* config) noexcept {
  if (config != nullptr) *config = fastcm::capi::to_c(fastcm::EngineConfig{});
}

fastcm_status fastcm_engine_create(fastcm_fabric* fabric, const fastcm_clock* clock,
                                   const fastcm_engine_config* config, fastcm_engine** out) noexcept {
  if (fabric == nullptr || config == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    auto handle = std::make_unique<fastcm_engine>(clock);
    handle->engine = fastcm::Engine::create(cpp(fabric), handle->clock, fastcm::capi::from_c(*config));
    if (handle->engine == nullptr) return FASTCM_ERR_CREATE_FAILED;
    *out = handle.release();
    return FASTCM_OK;
  });
}

void fastcm_engine_destroy(fastcm_engine* engine) noexcept { delete engine; }

size_t fastcm_progress(fastcm_engine* engine) noexcept { return engine->engine->progress(); }

bool fastcm_next_timer_ns(const fastcm_engine* engine, uint64_t* out) noexcept {
  const std::optional<std::uint64_t> next = engine->engine->next_timer_ns();
  if (next && out != nullptr) *out = *next;
  return next.has_value();
}

fastcm_status fastcm_create_event_queue(fastcm_engine* engine, uint32_t capacity,
                                        fastcm_event_queue** out) noexcept {
  if (engine == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    fastcm::EventQueue* queue = engine->engine->create_event_queue(capacity);
    if (queue == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
    *out = reinterpret_cast<fastcm_event_queue*>(queue);
    return FASTCM_OK;
  });
}

int fastcm_event_queue_fd(const fastcm_event_queue* queue) noexcept { return cpp(queue).event_fd(); }

size_t fastcm_event_queue_size(const fastcm_event_queue* queue) noexcept { return cpp(queue).size(); }

size_t fastcm_poll(fastcm_engine* engine, fastcm_event_queue* queue, fastcm_event* events, size_t max) noexcept {
  // Polled in chunks through C++ events on the stack: nothing allocates.
  std::array<fastcm::Event, 32> chunk;
  size_t taken = 0;
  while (taken < max) {
    const size_t want = std::min(chunk.size(), max - taken);
    const size_t got = engine->engine->poll(cpp(queue), std::span(chunk.data(), want));
    for (size_t i = 0; i < got; ++i) events[taken + i] = fastcm::capi::to_c(chunk[i]);
    taken += got;
    if (got < want) break;
  }
  return taken;
}

void fastcm_retain(fastcm_engine* engine, const fastcm_event* event) noexcept {
  if (event->mad != nullptr) engine->engine->retain(mad_of(event));
}

void fastcm_release(fastcm_engine* engine, const fastcm_event* event) noexcept {
  if (event->mad != nullptr) engine->engine->release(mad_of(event));
}

void fastcm_begin_call_batch(fastcm_engine* engine) noexcept { engine->engine->begin_call_batch(); }

void fastcm_end_call_batch(fastcm_engine* engine) noexcept { engine->engine->end_call_batch(); }

fastcm_status fastcm_counters(const fastcm_engine* engine, fastcm_port_counters* out, size_t count) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return read_counters(out, count, [engine](std::span<fastcm::PortCounters> all) { engine->engine->counters(all); });
}

fastcm_status fastcm_shard_counters(const fastcm_engine* engine, uint32_t shard, fastcm_port_counters* out,
                                    size_t count) noexcept {
  if (engine == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return read_counters(out, count, [engine, shard](std::span<fastcm::PortCounters> all) {
    engine->engine->shard_counters(shard, all);
  });
}

uint32_t fastcm_mad_buffers_in_use(const fastcm_engine* engine) noexcept { return engine->engine->mad_buffers_in_use(); }

}  // extern "C"
