// The C API of settings files, the log and metrics (fastcm/settings.h, fastcm/log.h,
// fastcm/metrics.h).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "capi/boundary.h"
#include "capi/convert.h"
#include "capi/handles.h"
#include "fastcm/log.h"
#include "fastcm/metrics.h"
#include "fastcm/settings.h"

using fastcm::capi::guarded;

namespace {

const fastcm::Settings& cpp(const fastcm_settings* s) noexcept { return s->settings; }

struct CLogSink {
  fastcm_log_fn write = nullptr;
  void* ctx = nullptr;
};
// The C sink behind the C++ one; replaced only under set_log_sink's lock (below).
CLogSink g_c_sink;

void to_c_sink(void* ctx, fastcm::LogLevel level, std::string_view text) {
  const auto* sink = static_cast<const CLogSink*>(ctx);
  sink->write(sink->ctx, static_cast<fastcm_log_level>(level), text.data(), text.size());
}

}  // namespace

extern "C" {

size_t fastcm_metrics(const fastcm_engine* engine, const char* name, fastcm_metrics_format format, char* buffer,
                      size_t size) noexcept {
  try {
    const fastcm::MetricsSource source{engine->engine.get(), name != nullptr ? name : ""};
    const std::string text = fastcm::render_metrics(
        {&source, 1}, format == FASTCM_METRICS_JSON ? fastcm::MetricsFormat::json : fastcm::MetricsFormat::prometheus);
    fastcm::capi::copy_text(text, buffer, size);
    return text.size();
  } catch (...) {
    return 0;
  }
}

void fastcm_set_log_sink(fastcm_log_fn write, void* ctx) noexcept {
  // Lock: one replacement of the C sink at a time (a control path).
  static std::mutex replacing;
  const std::scoped_lock guard(replacing);
  if (write == nullptr) return fastcm::set_log_sink({});
  // First detach the old C sink (the log's lock waits for a message in its callback), then
  // replace it while nothing can call it.
  fastcm::set_log_sink({});
  g_c_sink = CLogSink{write, ctx};
  fastcm::set_log_sink({to_c_sink, &g_c_sink});
}

void fastcm_set_log_level(fastcm_log_level level) noexcept { fastcm::set_log_level(static_cast<fastcm::LogLevel>(level)); }

fastcm_log_level fastcm_get_log_level(void) noexcept { return static_cast<fastcm_log_level>(fastcm::log_level()); }

const char* fastcm_log_level_str(int level) noexcept {
  return fastcm::to_string(static_cast<fastcm::LogLevel>(level)).data();
}

fastcm_status fastcm_settings_load(const char* path, fastcm_settings** out, char* error, size_t error_size) noexcept {
  if (path == nullptr || out == nullptr) return FASTCM_ERR_INVALID_ARGUMENT;
  return guarded([&] {
    auto loaded = std::make_unique<fastcm_settings>();
    fastcm::SettingsError why;
    if (fastcm::load_settings(path, loaded->settings, &why) != fastcm::Status::ok) {
      fastcm::capi::copy_text(why.text(), error, error_size);
      return FASTCM_ERR_INVALID_ARGUMENT;
    }
    *out = loaded.release();
    return FASTCM_OK;
  });
}

void fastcm_settings_free(fastcm_settings* settings) noexcept { delete settings; }

void fastcm_settings_engine_config(const fastcm_settings* settings, fastcm_engine_config* out) noexcept {
  *out = fastcm::capi::to_c(cpp(settings).engine);
}

void fastcm_settings_listen_params(const fastcm_settings* settings, fastcm_listen_params* out) noexcept {
  out->backlog = cpp(settings).listen.backlog;
  out->backlog_policy = static_cast<fastcm_backlog_policy>(cpp(settings).listen.backlog_policy);
}

void fastcm_settings_req_params(const fastcm_settings* settings, fastcm_req_params* out) noexcept {
  out->remote_cm_response_timeout = cpp(settings).connect.cm_response_timeout;
  out->local_cm_response_timeout = cpp(settings).connect.cm_response_timeout;
  out->max_cm_retries = cpp(settings).connect.max_cm_retries;
}

fastcm_log_level fastcm_settings_log_level(const fastcm_settings* settings) noexcept {
  return static_cast<fastcm_log_level>(cpp(settings).log_level);
}

fastcm_fabric_type fastcm_settings_fabric_type(const fastcm_settings* settings) noexcept {
  return static_cast<fastcm_fabric_type>(cpp(settings).fabric.type);
}

void fastcm_settings_loopback_config(const fastcm_settings* settings, fastcm_loopback_config* out) noexcept {
  *out = fastcm::capi::to_c(cpp(settings).fabric.loopback);
}

const char* fastcm_settings_umad_device(const fastcm_settings* settings) noexcept {
  return cpp(settings).fabric.umad.device.c_str();
}

size_t fastcm_settings_umad_ports(const fastcm_settings* settings, uint8_t* ports, size_t max) noexcept {
  const std::vector<std::uint8_t>& all = cpp(settings).fabric.umad.ports;
  if (ports != nullptr) std::copy_n(all.begin(), std::min(max, all.size()), ports);
  return all.size();
}

size_t fastcm_settings_udp_address_count(const fastcm_settings* settings) noexcept {
  return cpp(settings).fabric.udp.addresses.size();
}

const char* fastcm_settings_udp_address(const fastcm_settings* settings, size_t index) noexcept {
  const std::vector<std::string>& all = cpp(settings).fabric.udp.addresses;
  return index < all.size() ? all[index].c_str() : nullptr;
}

uint16_t fastcm_settings_udp_port(const fastcm_settings* settings) noexcept { return cpp(settings).fabric.udp.udp_port; }

const char* fastcm_settings_pcap_file(const fastcm_settings* settings) noexcept {
  return cpp(settings).pcap.file.c_str();
}

uint64_t fastcm_settings_pcap_limit(const fastcm_settings* settings) noexcept { return cpp(settings).pcap.limit_bytes; }

const char* fastcm_settings_metrics_file(const fastcm_settings* settings) noexcept {
  return cpp(settings).metrics.file.c_str();
}

uint32_t fastcm_settings_metrics_interval_ms(const fastcm_settings* settings) noexcept {
  return cpp(settings).metrics.interval_ms;
}

}  // extern "C"
