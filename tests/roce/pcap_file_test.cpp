// Pcap files written and read back through libpcap, and every documented failure as PcapError.
#include "fabric/roce_udp/pcap_file.h"

#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fabric/roce_udp/rocev2_frame.h"
#include "sample_frames.h"
#include "temp_dir.h"

namespace fastcm::roce {
namespace {

using Bytes = std::vector<std::uint8_t>;
using test::TempDir;

std::vector<Bytes> sample_frames() {
  return {test::build_frame(test::ipv4_endpoint(1), test::ipv4_endpoint(2), test::sample_header(),
                            test::cm_req_mad(1)),
          test::build_frame(test::ipv6_endpoint(3), test::ipv6_endpoint(4), test::sample_header(),
                            test::cm_req_mad(2)),
          Bytes{0xDE, 0xAD}};  // not a RoCE frame: the file layer carries any bytes
}

// Expects `fn` to throw PcapError whose message contains `needle`.
template <typename Fn>
void expect_pcap_error(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no PcapError, expected one mentioning '" << needle << "'";
  } catch (const PcapError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(PcapFile, FramesAndTimestampsRoundTrip) {
  const TempDir dir;
  const auto path = dir.path() / "frames.pcap";
  const auto frames = sample_frames();
  const std::vector<PcapTimestamp> stamps = {PcapTimestamp{0}, PcapTimestamp{1'700'000'000'123'456},
                                             PcapTimestamp{1'700'000'001'000'000}};
  {
    PcapWriter writer(path);
    for (std::size_t i = 0; i < frames.size(); ++i) writer.write(frames[i], stamps[i]);
    writer.flush();
  }

  PcapReader reader(path);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto rec = reader.next();
    ASSERT_TRUE(rec.has_value()) << i;
    EXPECT_EQ(rec->timestamp, stamps[i]);
    EXPECT_EQ(Bytes(rec->frame.begin(), rec->frame.end()), frames[i]);
    EXPECT_EQ(rec->original_length, frames[i].size());
  }
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_FALSE(reader.next().has_value());  // end of file stays the end
}

TEST(PcapFile, ReadFramesParseAsRocev2) {
  const TempDir dir;
  const auto path = dir.path() / "roce.pcap";
  const auto frames = sample_frames();
  {
    PcapWriter writer(path);
    writer.write(frames[1], PcapTimestamp{42});
  }
  PcapReader reader(path);
  const auto rec = reader.next();
  ASSERT_TRUE(rec.has_value());
  const FrameParse p = parse_rocev2_frame(rec->frame);
  EXPECT_EQ(p.errc, FrameErrc::ok);
  EXPECT_EQ(p.frame.src, test::ipv6_endpoint(3));
}

TEST(PcapFile, AnEmptyCaptureHasNoRecords) {
  const TempDir dir;
  const auto path = dir.path() / "empty.pcap";
  { PcapWriter writer(path); }
  PcapReader reader(path);
  EXPECT_FALSE(reader.next().has_value());
}

TEST(PcapFile, WriterRefusesWhatThePcapFormatCannotHold) {
  const TempDir dir;
  PcapWriter writer(dir.path() / "w.pcap");
  const Bytes frame(64, 0xAA);
  expect_pcap_error([&] { writer.write(frame, PcapTimestamp{-1}); }, "negative timestamp");
  const Bytes huge(65536, 0);
  expect_pcap_error([&] { writer.write(huge, PcapTimestamp{0}); }, "exceeds the snap length");
}

TEST(PcapFile, OpenFailuresNameThePath) {
  const TempDir dir;
  const auto missing_dir = dir.path() / "no-such-dir" / "x.pcap";
  expect_pcap_error([&] { PcapWriter w(missing_dir); }, missing_dir.string());
  const auto missing_file = dir.path() / "missing.pcap";
  expect_pcap_error([&] { PcapReader r(missing_file); }, missing_file.string());
}

TEST(PcapFile, ReaderRefusesANonEthernetCapture) {
  const TempDir dir;
  const auto path = dir.path() / "raw-ip.pcap";
  pcap_t* dead = pcap_open_dead(DLT_RAW, 65535);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* dumper = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(dumper, nullptr);
  pcap_dump_close(dumper);
  pcap_close(dead);
  expect_pcap_error([&] { PcapReader r(path); }, "not Ethernet");
}

TEST(PcapFile, ARecordCutByTheEndOfTheFileIsAnError) {
  const TempDir dir;
  const auto path = dir.path() / "cut.pcap";
  const auto frames = sample_frames();
  {
    PcapWriter writer(path);
    writer.write(frames[0], PcapTimestamp{1});
    writer.write(frames[1], PcapTimestamp{2});
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  PcapReader reader(path);
  ASSERT_TRUE(reader.next().has_value());
  expect_pcap_error([&] { (void)reader.next(); }, "truncated");
}

}  // namespace
}  // namespace fastcm::roce
