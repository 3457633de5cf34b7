// The pcap tap over the loopback fabric: what it records (every MAD each way, on its port's
// interface, with its direction, framed as tap_frame.h says), its byte limit, its full queue, and
// the configurations it refuses. The file is read back with libpcap and with tshark.
#include "fabric/pcap_tap/pcap_tap.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "fabric/pcap_tap/tap_frame.h"
#include "fabric/roce_udp/pcap_file.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "tests/loopback/loopback_test_support.h"
#include "tests/tool/run_tool.h"

namespace fastcm::pcap_tap {
namespace {

using loopback::test::Harness;
using loopback::test::drain;
using loopback::test::make_mad;
using loopback::test::send_tagged;
using loopback::test::tag_of;
using loopback::test::to_lid;

// Every MAD of the file through libpcap, parsed as RoCEv2 frames.
std::vector<roce::FrameParse> read_frames(const std::filesystem::path& path,
                                          std::vector<std::vector<std::uint8_t>>& storage) {
  roce::PcapReader reader(path);
  std::vector<roce::FrameParse> frames;
  while (const auto record = reader.next()) {
    storage.emplace_back(record->frame.begin(), record->frame.end());
  }
  for (const auto& bytes : storage) frames.push_back(roce::parse_rocev2_frame(bytes));
  return frames;
}

// tshark's view: one line per packet, "interface direction attribute".
std::vector<std::string> tshark_lines(const std::filesystem::path& path) {
  const tools::test::ToolRun run = tools::test::run_tool(
      FASTCM_TSHARK_PATH, {"-r", path.string(), "-T", "fields", "-e", "frame.interface_id", "-e",
                           "frame.packet_flags_direction", "-e", "infiniband.mad.attributeid"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> lines;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Gid lid_address(Lid lid) {
  Gid g;
  g.raw[0] = 0xFE;
  g.raw[1] = 0x80;
  g.raw[15] = static_cast<std::uint8_t>(lid);
  return g;
}

class PcapTapTest : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_.path() / "tap.pcapng"; }
  tools::test::ScratchDir dir_;
  Harness h_;  // client HCA: ports LID 1, 2; server HCA: LID 17, 18
};

TEST_F(PcapTapTest, RecordsEveryMadEachWayOnItsPortsInterfaceWithItsDirection) {
  {
    PcapTap tap(h_.client(), PcapTapConfig{.path = path()});
    MadAddress to_server = to_lid(18);
    to_server.sl = 5;
    send_tagged(tap, 1, to_server, 100, 3);                       // out of port 2
    send_tagged(h_.server(), 0, to_lid(1), 200, 2, loopback::test::kAttrRep);  // to port 1
    const std::vector<MadPacket> got = drain(tap, 0);
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(drain(h_.server(), 1).size(), 3u);
    ASSERT_TRUE(tap.drain(std::chrono::seconds(10)));
    EXPECT_EQ(tap.counters().written, 5u);
    EXPECT_EQ(tap.counters().dropped_queue_full + tap.counters().dropped_limit, 0u);
  }
  std::vector<std::vector<std::uint8_t>> storage;
  const std::vector<roce::FrameParse> frames = read_frames(path(), storage);
  ASSERT_EQ(frames.size(), 5u);
  for (std::size_t i = 0; i < 3; ++i) {
    const roce::ParsedFrame& f = frames[i].frame;
    ASSERT_TRUE(frames[i].ok()) << roce::to_string(frames[i].errc);
    // Sent from port 2 (LID 2) to LID 18: no GRH, so the LID addresses; VLAN ID = SL.
    EXPECT_EQ(f.src.gid, lid_address(2));
    EXPECT_EQ(f.dst.gid, lid_address(18));
    EXPECT_EQ(f.vlan_tci, 5);
    EXPECT_EQ(f.header.src_qp, kGsiQpn);
    const MadPacket sent = make_mad(to_lid(18), static_cast<std::uint32_t>(100 + i));
    EXPECT_TRUE(std::equal(f.mad.begin(), f.mad.end(), sent.mad.begin()));
  }
  for (std::size_t i = 3; i < 5; ++i) {
    const roce::ParsedFrame& f = frames[i].frame;
    ASSERT_TRUE(frames[i].ok()) << roce::to_string(frames[i].errc);
    EXPECT_EQ(f.src.gid, lid_address(17));
    EXPECT_EQ(f.dst.gid, lid_address(1));
  }
  EXPECT_EQ(tshark_lines(path()),
            (std::vector<std::string>{"1\t0x00000002\t0x0010", "1\t0x00000002\t0x0010",
                                      "1\t0x00000002\t0x0010", "0\t0x00000001\t0x0013",
                                      "0\t0x00000001\t0x0013"}));
}

TEST_F(PcapTapTest, AMadWithAGrhCarriesBothGids) {
  const Gid server_gid = h_.fabric.hca(1).ports()[0].gids()[0];
  {
    PcapTap tap(h_.client(), PcapTapConfig{.path = path()});
    send_tagged(tap, 0, loopback::test::to_gid(server_gid), 1, 1);
  }
  std::vector<std::vector<std::uint8_t>> storage;
  const std::vector<roce::FrameParse> frames = read_frames(path(), storage);
  ASSERT_EQ(frames.size(), 1u);
  ASSERT_TRUE(frames[0].ok());
  EXPECT_EQ(frames[0].frame.src.gid, h_.client().ports()[0].gids()[0]);
  EXPECT_EQ(frames[0].frame.dst.gid, server_gid);
}

TEST_F(PcapTapTest, StopsAtItsByteLimitAndCountsWhatItLeftOut) {
  { PcapTap empty(h_.client(), PcapTapConfig{.path = path()}); }
  const std::uint64_t headers = std::filesystem::file_size(path());
  // An InfiniBand MAD without a GRH: IPv6 (the LID addresses) and the VLAN tag.
  const std::uint64_t limit = headers + 3 * PcapngWriter::packet_block_size(kMaxTapFrameSize);
  PcapTapCounters counters;
  {
    PcapTap tap(h_.client(), PcapTapConfig{.path = path(), .max_bytes = limit});
    for (std::uint32_t t = 0; t < 10; ++t) {
      send_tagged(tap, 0, to_lid(17), t, 1);
      ASSERT_TRUE(tap.drain(std::chrono::seconds(10)));  // one at a time: the limit is exact
    }
    counters = tap.counters();
  }
  EXPECT_EQ(counters.written, 3u);
  EXPECT_EQ(counters.dropped_limit, 7u);
  EXPECT_LE(std::filesystem::file_size(path()), limit);
  EXPECT_EQ(tshark_lines(path()).size(), 3u);
}

TEST_F(PcapTapTest, ABurstLargerThanItsQueueIsRecordedInPartAndTheRestCounted) {
  PcapTapCounters counters;
  {
    PcapTap tap(h_.client(), PcapTapConfig{.path = path(), .queue_packets = 4});
    send_tagged(tap, 0, to_lid(17), 0, 10);  // bursts of 16: one burst, four slots
    ASSERT_TRUE(tap.drain(std::chrono::seconds(10)));
    counters = tap.counters();
  }
  EXPECT_EQ(counters.written, 4u);
  EXPECT_EQ(counters.dropped_queue_full, 6u);
  // What was recorded is the burst's head, in order.
  std::vector<std::vector<std::uint8_t>> storage;
  const std::vector<roce::FrameParse> frames = read_frames(path(), storage);
  ASSERT_EQ(frames.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) {
    MadPacket p;
    std::copy(frames[i].frame.mad.begin(), frames[i].frame.mad.end(), p.mad.begin());
    EXPECT_EQ(tag_of(p), i);
  }
}

TEST_F(PcapTapTest, RefusesAQueueOutsideItsRangeALimitBelowItsHeadersAndAnUnwritablePath) {
  EXPECT_THROW(PcapTap(h_.client(), PcapTapConfig{.path = path(), .queue_packets = 0}),
               std::invalid_argument);
  EXPECT_THROW(PcapTap(h_.client(), PcapTapConfig{.path = path(), .queue_packets = (1u << 20) + 1}),
               std::invalid_argument);
  EXPECT_THROW(PcapTap(h_.client(), PcapTapConfig{.path = path(), .max_bytes = 16}),
               std::invalid_argument);
  EXPECT_THROW(PcapTap(h_.client(), PcapTapConfig{.path = dir_.path() / "no" / "such.pcapng"}),
               std::system_error);
}

}  // namespace
}  // namespace fastcm::pcap_tap
