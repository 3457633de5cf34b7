// The `pcap` command: every GSI MAD in a capture of RoCEv2 frames as one JSON line.
//
// Thread contract: one call works on its own reader and streams; no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::tools {

// What happened to the frames of one capture.
struct PcapDumpCounts {
  std::uint64_t frames = 0;
  std::uint64_t mads = 0;      // UD SEND_ONLY frames to QP1: each printed
  std::uint64_t bad_mads = 0;  // of those, the ones the codec refused (printed with their error)
  std::uint64_t bad_icrc =
      0;  // of those, the ones whose ICRC did not match (printed, icrc_ok false)
  std::uint64_t not_gsi = 0;  // well-formed RoCEv2 UD sends to a QP other than 1: skipped
  // Skipped frames the RoCEv2 parser refused, by reason (not RoCEv2 at all, cut short, corrupted).
  std::array<std::uint64_t, static_cast<std::size_t>(roce::FrameErrc::bad_icrc) + 1> refused{};
};

// Reads the capture at `path` and writes to `out`, for every UD SEND_ONLY frame addressed to QP1
// (the GSI), in capture order, one line:
//   {"frame": <1-based index in the file>, "time_us": <capture time, µs since the epoch>,
//    "src": "<source GID>", "dst": "<destination GID>", "icrc_ok": true|false,
//    <the keys of mad_to_json(): header/message/fields, or error/errc/field plus what decoded>}
// GIDs print as IPv6 text; an IPv4 frame's addresses as their IPv4-mapped GIDs (::ffff:a.b.c.d).
// A frame whose ICRC does not match is still decoded. Every other frame is only counted.
// Errors: throws roce::PcapError when the file cannot be opened, is not an Ethernet capture or is
// damaged; lines written before a damaged record stay written.
PcapDumpCounts dump_pcap(const std::filesystem::path& path, std::ostream& out);

// One line for people, e.g. "5 frames: 3 MADs (1 malformed, 0 bad ICRC), 0 to other QPs,
// 2 skipped (not_udp_4791: 1, truncated: 1)".
[[nodiscard]] std::string summary_line(const PcapDumpCounts& counts);

}  // namespace fastcm::tools
