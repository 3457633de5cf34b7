// Endpoints, a hand-built CM REQ MAD and frame building shared by the RoCEv2 tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "fabric/roce_udp/rocev2_frame.h"

namespace fastcm::roce::test {

inline RoceEndpoint ipv6_endpoint(std::uint8_t host) {
  return {{0x02, 0, 0, 0, 0, host},
          Gid::from_parts(0xFE80000000000000ULL, 0x0200'00FF'FE00'0000ULL | host)};
}

inline RoceEndpoint ipv4_endpoint(std::uint8_t host) {
  return {{0x02, 0, 0, 0, 0, host}, ipv4_mapped_gid(0x0A000000U | host)};
}

inline RoceGsiHeader sample_header() {
  RoceGsiHeader h;
  h.udp_src_port = 0xC123;
  h.pkey = 0xFFFF;
  h.dest_qp = kGsiQpn;
  h.src_qp = kGsiQpn;
  h.psn = 0x00ABCDEF;
  h.qkey = kGsiQKey;
  return h;
}

// A CM REQ as the wire carries it: common MAD header (base version 1, class 0x07, class version
// 2, method 0x03 Send, attribute 0x0010 REQ) with a transaction ID, then the Local Communication
// ID; the rest is a byte pattern so that misplaced bytes show.
inline std::array<std::uint8_t, kMadSize> cm_req_mad(std::uint32_t local_comm_id) {
  std::array<std::uint8_t, kMadSize> mad{};
  for (std::size_t i = 0; i < mad.size(); ++i) mad[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const std::array<std::uint8_t, 24> header = {0x01, 0x07, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00,
                                               0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78,
                                               0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  std::copy(header.begin(), header.end(), mad.begin());
  for (std::size_t i = 0; i < 4; ++i)
    mad[24 + i] = static_cast<std::uint8_t>(local_comm_id >> (24 - 8 * i));
  return mad;
}

inline std::vector<std::uint8_t> build_frame(const RoceEndpoint& src, const RoceEndpoint& dst,
                                             const RoceGsiHeader& header,
                                             const std::array<std::uint8_t, kMadSize>& mad) {
  std::vector<std::uint8_t> frame(kMaxRocev2FrameSize);
  frame.resize(build_rocev2_frame(src, dst, header, mad, frame));
  return frame;
}

// Names the tests of a suite parameterized by "IPv4 framing?".
inline std::string family_name(const ::testing::TestParamInfo<bool>& param) {
  return param.param ? "ipv4" : "ipv6";
}

}  // namespace fastcm::roce::test
