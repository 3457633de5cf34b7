// Shared helpers of the loopback fabric tests: a fabric on a virtual clock, MADs tagged with a
// number, and send/drain shorthands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "fabric/loopback/loopback_fabric.h"
#include "fastcm/clock.h"
#include "fastcm/fabric.h"

namespace fastcm::loopback::test {

inline constexpr std::uint16_t kAttrReq = 0x0010;
inline constexpr std::uint16_t kAttrRep = 0x0013;

// A LoopbackFabric on its own VirtualClock. Defaults: two HCAs of two ports (LIDs 1, 2 and 17, 18).
struct Harness {
  explicit Harness(const LoopbackConfig& config = LoopbackConfig::two_hcas(2))
      : fabric(config, clock) {}
  Fabric& client() { return fabric.hca(0); }
  Fabric& server() { return fabric.hca(1); }

  VirtualClock clock;
  LoopbackFabric fabric;
};

inline MadAddress to_lid(Lid lid) {
  MadAddress a;
  a.remote_lid = lid;
  return a;
}

inline MadAddress to_gid(const Gid& gid, std::uint8_t source_gid_index = 0) {
  MadAddress a;
  a.grh.present = true;
  a.grh.remote_gid = gid;
  a.grh.gid_index = source_gid_index;
  return a;
}

// A CM-class MAD with attribute `attr` and `tag` in the first four data bytes (after the header).
inline MadPacket make_mad(const MadAddress& to, std::uint32_t tag, std::uint16_t attr = kAttrReq) {
  MadPacket p;
  p.addr = to;
  p.mad[0] = 1;     // base version
  p.mad[1] = 0x07;  // CM class
  p.mad[2] = 2;     // class version
  p.mad[3] = 0x03;  // Send
  p.mad[16] = static_cast<std::uint8_t>(attr >> 8);
  p.mad[17] = static_cast<std::uint8_t>(attr);
  for (std::size_t i = 0; i < 4; ++i) p.mad[24 + i] = static_cast<std::uint8_t>(tag >> (24 - 8 * i));
  for (std::size_t i = 28; i < kMadSize; ++i) p.mad[i] = static_cast<std::uint8_t>(i ^ tag);
  return p;
}

inline std::uint32_t tag_of(const MadPacket& p) {
  std::uint32_t tag = 0;
  for (std::size_t i = 0; i < 4; ++i) tag = (tag << 8) | p.mad[24 + i];
  return tag;
}

inline std::size_t send_one(Fabric& f, std::uint16_t port, const MadPacket& p) {
  const MadPacket* one[] = {&p};
  return f.send_burst(port, one);
}

// Sends MADs tagged first .. first + count - 1 to `to`, one burst of 16 at a time.
inline void send_tagged(Fabric& f, std::uint16_t port, const MadAddress& to, std::uint32_t first,
                        std::uint32_t count, std::uint16_t attr = kAttrReq) {
  std::vector<MadPacket> pkts;
  std::vector<const MadPacket*> ptrs;
  for (std::uint32_t t = first; t < first + count; ++t) pkts.push_back(make_mad(to, t, attr));
  for (const MadPacket& p : pkts) ptrs.push_back(&p);
  const std::span<const MadPacket* const> all(ptrs);
  for (std::size_t at = 0; at < all.size(); at += 16) {
    f.send_burst(port, all.subspan(at, std::min<std::size_t>(16, all.size() - at)));
  }
}

// Everything port `port` can receive now, in order, received 8 at a time.
inline std::vector<MadPacket> drain(Fabric& f, std::uint16_t port) {
  std::vector<MadPacket> out;
  MadPacket bufs[8];
  MadPacket* ptrs[8];
  for (std::size_t i = 0; i < 8; ++i) ptrs[i] = &bufs[i];
  while (const std::size_t n = f.recv_burst(port, ptrs)) out.insert(out.end(), bufs, bufs + n);
  return out;
}

inline std::vector<std::uint32_t> tags(const std::vector<MadPacket>& pkts) {
  std::vector<std::uint32_t> out;
  for (const MadPacket& p : pkts) out.push_back(tag_of(p));
  return out;
}

}  // namespace fastcm::loopback::test
