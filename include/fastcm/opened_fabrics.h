// The fabric a settings file names ([fabric], fastcm/settings.h), opened: the fabrics an
// application creates its engines on, whichever transport the file chose, so that one program runs
// unchanged over the loopback, a real HCA (umad) or RoCEv2 over UDP.
//
// What open_fabrics gives, by [fabric] type:
//   loopback  one Fabric per simulated HCA ([loopback] hcas), joined by the simulated switch, with
//             the file's fault percentages on every MAD
//   umad      one Fabric: the [umad] device's ports through rdma-core's libibumad
//   udp       one Fabric: a port per [udp] address
// With a [pcap] file, fabric 0 is a tap over the transport that records every CM MAD it sends and
// receives into that pcapng file (at most [pcap] limit bytes, then counted): on the loopback that
// is HCA 0's traffic with the other HCAs.
//
// Thread contract: open_fabrics runs on any thread and blocks while devices, sockets and the
// capture file open. The fabrics follow fastcm::Fabric's contract (fastcm/fabric.h); count(),
// fabric() and capture_counters() may be called from any thread. Lifetime: every engine created on
// a fabric must be destroyed before the OpenedFabrics (destroying it closes devices, sockets and
// the capture, which it first completes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "fastcm/capture_counters.h"
#include "fastcm/clock.h"
#include "fastcm/fabric.h"
#include "fastcm/settings.h"

namespace fastcm {

class OpenedFabrics {
 public:
  // Closes devices and sockets, first completing the capture.
  // Threads: any, once every engine on its fabrics is destroyed. Blocks: while the capture's last
  //   MADs are written. Errors: none.
  virtual ~OpenedFabrics() = default;
  // Loopback: the HCA count; umad and udp: 1. Threads: any. Blocks: no. Errors: none.
  [[nodiscard]] virtual std::size_t count() const noexcept = 0;
  // Fabric `index` (< count(); else null), valid as long as this object.
  // Threads: any. Blocks: no. Errors: none.
  [[nodiscard]] virtual Fabric* fabric(std::size_t index) noexcept = 0;
  // The capture's counters (each a snapshot); nullopt without a [pcap] file.
  // Threads: any, while MADs flow. Blocks: no. Errors: none.
  [[nodiscard]] virtual std::optional<CaptureCounters> capture_counters() const noexcept = 0;
};

// Opens what settings.fabric and settings.pcap name; `clock` (borrowed, it must outlive the
// result) times the loopback's injected delays. On failure returns null and sets `error` to one
// line naming the cause: a loopback configuration out of range, no such umad device or port, a
// port down, no permission, the kernel's ib_cm holding the CM class, an address that is not local
// or a UDP port taken, a capture file that cannot be written.
// Threads: any. Blocks: while devices, sockets and the capture file open.
// Errors: null with `error` set (the causes above); throws std::bad_alloc.
[[nodiscard]] std::unique_ptr<OpenedFabrics> open_fabrics(const Settings& settings, const Clock& clock,
                                                          std::string& error);

}  // namespace fastcm
