// Field-by-field conversions between the C API's structs and the C++ API's, in both directions.
// Spans become (pointer, length) pairs that borrow the same bytes. Pure; nothing allocates.
#pragma once

#include <string_view>

#include "fastcm/connection_info.h"
#include "fastcm/counters.h"
#include "fastcm/engine.h"
#include "fastcm/event.h"
#include "fastcm/fastcm.h"
#include "fastcm/params.h"
#include "fastcm/qp_attr.h"
#include "fastcm/settings.h"

namespace fastcm::capi {

[[nodiscard]] Path from_c(const fastcm_path& in) noexcept;
[[nodiscard]] fastcm_path to_c(const Path& in) noexcept;
[[nodiscard]] PortAttr from_c(const fastcm_port_attr& in) noexcept;
[[nodiscard]] fastcm_port_attr to_c(const PortAttr& in) noexcept;

[[nodiscard]] ReqParams from_c(const fastcm_req_params& in) noexcept;
[[nodiscard]] RepParams from_c(const fastcm_rep_params& in) noexcept;
[[nodiscard]] RejParams from_c(const fastcm_rej_params& in) noexcept;
[[nodiscard]] MraParams from_c(const fastcm_mra_params& in) noexcept;
[[nodiscard]] LapParams from_c(const fastcm_lap_params& in) noexcept;
[[nodiscard]] AprParams from_c(const fastcm_apr_params& in) noexcept;
[[nodiscard]] SidrReqParams from_c(const fastcm_sidr_req_params& in) noexcept;
[[nodiscard]] SidrRepParams from_c(const fastcm_sidr_rep_params& in) noexcept;
[[nodiscard]] fastcm_req_params to_c(const ReqParams& in) noexcept;
[[nodiscard]] fastcm_rep_params to_c(const RepParams& in) noexcept;
[[nodiscard]] fastcm_rej_params to_c(const RejParams& in) noexcept;
[[nodiscard]] fastcm_mra_params to_c(const MraParams& in) noexcept;
[[nodiscard]] fastcm_lap_params to_c(const LapParams& in) noexcept;
[[nodiscard]] fastcm_apr_params to_c(const AprParams& in) noexcept;
[[nodiscard]] fastcm_sidr_req_params to_c(const SidrReqParams& in) noexcept;
[[nodiscard]] fastcm_sidr_rep_params to_c(const SidrRepParams& in) noexcept;

[[nodiscard]] EngineConfig from_c(const fastcm_engine_config& in) noexcept;
[[nodiscard]] fastcm_engine_config to_c(const EngineConfig& in) noexcept;
[[nodiscard]] LoopbackSettings from_c(const fastcm_loopback_config& in) noexcept;
[[nodiscard]] fastcm_loopback_config to_c(const LoopbackSettings& in) noexcept;

[[nodiscard]] fastcm_event to_c(const Event& in) noexcept;
[[nodiscard]] fastcm_connection_info to_c(const ConnectionInfo& in) noexcept;
[[nodiscard]] fastcm_qp_attr to_c(const QpAttr& in) noexcept;
[[nodiscard]] fastcm_port_counters to_c(const PortCounters& in) noexcept;

// A span as the C API's (pointer, length), and back.
[[nodiscard]] inline std::span<const std::uint8_t> bytes(const std::uint8_t* data, std::size_t len) noexcept {
  return data == nullptr ? std::span<const std::uint8_t>{} : std::span<const std::uint8_t>{data, len};
}

// Writes `text` into out[0..size), NUL-terminated and cut to fit, as snprintf does; nothing when
// out is null or size is 0.
void copy_text(std::string_view text, char* out, std::size_t size) noexcept;

}  // namespace fastcm::capi
