// The C API of the fabric a settings file names (fastcm/opened_fabrics.h).
#include <string>

#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"

using fastcm::capi::guarded;

extern "C" {

fastcm_status fastcm_fabrics_open(const fastcm_settings* settings, const fastcm_clock* clock, fastcm_fabrics** out,
                                  char* error, size_t error_size) noexcept {
  if (settings == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    auto handle = std::make_unique<fastcm_fabrics>(clock);
    std::string why;
    handle->opened = fastcm::open_fabrics(settings->settings, handle->clock, why);
    if (!handle->opened) {
      fastcm::capi::copy_text(why, error, error_size);
      return FASTCM_ERR_OPEN_FAILED;
    }
    *out = handle.release();
    return FASTCM_OK;
  });
}

void fastcm_fabrics_close(fastcm_fabrics* fabrics) noexcept { delete fabrics; }

size_t fastcm_fabrics_count(const fastcm_fabrics* fabrics) noexcept { return fabrics->opened->count(); }

fastcm_fabric* fastcm_fabrics_get(fastcm_fabrics* fabrics, size_t index) noexcept {
  return reinterpret_cast<fastcm_fabric*>(fabrics->opened->fabric(index));
}

bool fastcm_fabrics_capture_counters(const fastcm_fabrics* fabrics, fastcm_capture_counters* out) noexcept {
  const std::optional<fastcm::CaptureCounters> c = fabrics->opened->capture_counters();
  if (!c) return false;
  *out = fastcm_capture_counters{.written = c->written, .dropped_queue_full = c->dropped_queue_full,
                                 .dropped_limit = c->dropped_limit, .write_errors = c->write_errors};
  return true;
}

}  // extern "C"
