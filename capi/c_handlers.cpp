#include "capi/c_handlers.h"

#include <algorithm>

#include "capi/convert.h"

namespace fastcm::capi {

fastcm_status CHandlers::delivery(const fastcm_delivery& in, Delivery& out) {
  if ((in.handler == nullptr) == (in.queue == nullptr)) return FASTCM_ERR_INVALID_ARGUMENT;
  if (in.queue != nullptr) {
    out = Delivery{.queue = reinterpret_cast<EventQueue*>(in.queue)};
    return FASTCM_OK;
  }
  const std::lock_guard lock(mutex_);
  auto it = std::find_if(records_.begin(), records_.end(),
                         [&in](const Record& r) { return r.fn == in.handler && r.ctx == in.handler_context; });
  if (it == records_.end()) {
    if (records_.size() == kMaxHandlers) return FASTCM_ERR_NO_RESOURCES;
    it = records_.insert(records_.end(), Record{in.handler, in.handler_context});
  }
  out = Delivery{.handler = &CHandlers::trampoline, .handler_context = &*it};
  return FASTCM_OK;
}

void CHandlers::trampoline(const Event& event, void* record) noexcept {
  const auto& r = *static_cast<const Record*>(record);
  const fastcm_event c = to_c(event);
  r.fn(&c, r.ctx);
}

}  // namespace fastcm::capi
