// The states of a connection endpoint (IBTA Vol. 1 chapter 12, the CM state diagrams).
#pragma once

#include <cstdint>
#include <string_view>

#include "fastcm/cm_enums.h"

namespace fastcm::engine {

using fastcm::CepState;  // public: fastcm/cm_enums.h

// Alternate path loading runs beside `established` (chapter 12.8).
enum class LapState : std::uint8_t {
  idle,
  lap_sent,
  lap_rcvd,
  mra_lap_sent,
  mra_lap_rcvd,
};

[[nodiscard]] constexpr std::string_view to_string(LapState s) noexcept {
  switch (s) {
    case LapState::idle: return "idle";
    case LapState::lap_sent: return "lap_sent";
    case LapState::lap_rcvd: return "lap_rcvd";
    case LapState::mra_lap_sent: return "mra_lap_sent";
    case LapState::mra_lap_rcvd: return "mra_lap_rcvd";
  }
  return "unknown";
}

}  // namespace fastcm::engine
