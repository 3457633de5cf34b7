// The states of a connection endpoint (IBTA Vol. 1 chapter 12, the CM state diagrams).
#pragma once

#include <cstdint>
#include <string_view>

namespace fastcm::engine {

enum class CepState : std::uint8_t {
  idle,            // created, nothing sent; or back from time-wait
  req_sent,
  req_rcvd,
  mra_req_sent,    // passive: we MRA'd the REQ
  mra_req_rcvd,    // active: the peer MRA'd our REQ
  rep_sent,
  rep_rcvd,
  mra_rep_sent,    // active: we MRA'd the REP
  mra_rep_rcvd,    // passive: the peer MRA'd our REP
  established,
  dreq_sent,
  dreq_rcvd,
  timewait,
  sidr_req_sent,
  sidr_req_rcvd,
};

// Alternate path loading runs beside `established` (chapter 12.8).
enum class LapState : std::uint8_t {
  idle,
  lap_sent,
  lap_rcvd,
  mra_lap_sent,
  mra_lap_rcvd,
};

[[nodiscard]] constexpr std::string_view to_string(CepState s) noexcept {
  switch (s) {
    case CepState::idle: return "idle";
    case CepState::req_sent: return "req_sent";
    case CepState::req_rcvd: return "req_rcvd";
    case CepState::mra_req_sent: return "mra_req_sent";
    case CepState::mra_req_rcvd: return "mra_req_rcvd";
    case CepState::rep_sent: return "rep_sent";
    case CepState::rep_rcvd: return "rep_rcvd";
    case CepState::mra_rep_sent: return "mra_rep_sent";
    case CepState::mra_rep_rcvd: return "mra_rep_rcvd";
    case CepState::established: return "established";
    case CepState::dreq_sent: return "dreq_sent";
    case CepState::dreq_rcvd: return "dreq_rcvd";
    case CepState::timewait: return "timewait";
    case CepState::sidr_req_sent: return "sidr_req_sent";
    case CepState::sidr_req_rcvd: return "sidr_req_rcvd";
  }
  return "unknown";
}

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
