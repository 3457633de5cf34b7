// The fastcm-mad binary run as a subprocess: arguments, standard streams and exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/roce_udp/pcap_file.h"
#include "fabric/roce_udp/rocev2_frame.h"
#include "tests/tool/run_tool.h"
#include "tools/fastcm-mad/hex_text.h"
#include "tools/fastcm-mad/mad_json.h"

namespace fastcm::tools {
namespace {

using test::ScratchDir;
using test::ToolRun;
using Mad = std::array<std::uint8_t, mad::kMadSize>;

// fastcm-mad (FASTCM_MAD_TOOL, set by CMake) run with `args` and `input` as its standard input.
ToolRun run_fastcm_mad(const std::vector<std::string>& args, const std::string& input = "") {
  return test::run_tool(FASTCM_MAD_TOOL, args, input);
}

Mad encoded_req(std::uint32_t comm_id) {
  mad::Req req;
  req.local_comm_id = comm_id;
  req.service_id = 0x00000000010604d2ULL;
  req.local_qpn = 0x123;
  req.path_packet_payload_mtu = mad::MtuCode::mtu_4096;
  req.primary.local_port_gid = Gid::from_parts(0xfe80000000000000ULL, 0x0002c90300000001ULL);
  req.private_data[0] = 0xab;
  Mad m{};
  EXPECT_TRUE(
      mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::req, 0x1234), req, m).ok());
  return m;
}

Mad encoded_rep(std::uint32_t comm_id) {
  mad::Rep rep;
  rep.local_comm_id = 99;
  rep.remote_comm_id = comm_id;
  rep.local_qpn = 0x456;
  Mad m{};
  EXPECT_TRUE(
      mad::encode(mad::cm_header(mad::Method::send, mad::AttrId::rep, 0x1234), rep, m).ok());
  return m;
}

// The object decode prints, parsed, with the given keys removed (the pcap command adds some).
Json without(Json j, const std::vector<std::string>& keys) {
  for (const std::string& k : keys) j.erase(k);
  return j;
}

std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

TEST(FastcmMadCli, DecodePrintsTheJsonMappingOnOneLine) {
  const Mad req = encoded_req(7);
  const ToolRun run = run_fastcm_mad({"decode", to_hex(req)});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, mad_to_json(req).json.dump() + "\n");
  EXPECT_EQ(run.err, "");
}

TEST(FastcmMadCli, DecodeReadsStdinInEitherCaseWithSeparators) {
  const Mad req = encoded_req(7);
  std::string text;
  for (const std::uint8_t b : req) {
    const std::string pair = to_hex(std::span(&b, 1));
    text += static_cast<char>(std::toupper(pair[0]));
    text += pair[1];
    text += ':';
  }
  const ToolRun run = run_fastcm_mad({"decode", "-"}, text + "\n");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Json::parse(run.out), mad_to_json(req).json);
}

TEST(FastcmMadCli, DecodeJoinsSeveralArgumentsAndIndentsOnRequest) {
  const Mad req = encoded_req(7);
  const std::string hex = to_hex(req);
  const ToolRun run = run_fastcm_mad({"decode", "--pretty", hex.substr(0, 100), hex.substr(100)});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, mad_to_json(req).json.dump(2) + "\n");
}

TEST(FastcmMadCli, DecodeErrorPrintsTheErrorJsonAndExitsOne) {
  Mad req = encoded_req(7);
  req[2] = 1;  // class version
  const ToolRun run = run_fastcm_mad({"decode", to_hex(req)});
  EXPECT_EQ(run.exit_code, 1);
  const Json out = Json::parse(run.out);
  EXPECT_EQ(out.at("errc"), "bad_class_version");
  EXPECT_EQ(out.at("field"), "class_version");
  EXPECT_EQ(out.at("header").at("class_version"), 1);

  const ToolRun short_run = run_fastcm_mad({"decode", "0107"});
  EXPECT_EQ(short_run.exit_code, 1);
  EXPECT_EQ(Json::parse(short_run.out).at("errc"), "short_buffer");

  const ToolRun bad_hex = run_fastcm_mad({"decode", "01x7"});
  EXPECT_EQ(bad_hex.exit_code, 1);
  EXPECT_EQ(Json::parse(bad_hex.out).at("errc"), "bad_hex");
}

TEST(FastcmMadCli, EncodePrintsTheMadAsOneHexLine) {
  const Mad req = encoded_req(7);
  const std::string json = mad_to_json(req).json.dump();
  const ToolRun from_arg = run_fastcm_mad({"encode", json});
  EXPECT_EQ(from_arg.exit_code, 0) << from_arg.err;
  EXPECT_EQ(from_arg.out, to_hex(req) + "\n");
  const ToolRun from_stdin = run_fastcm_mad({"encode", "-"}, mad_to_json(req).json.dump(2));
  EXPECT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, to_hex(req) + "\n");
}

TEST(FastcmMadCli, EncodeThenDecodeGivesBackTheInput) {
  const Json in = Json::parse(R"({"header": {"transaction_id": "0x00000000000000aa"},
      "message": "dreq", "fields": {"local_comm_id": 1, "remote_comm_id": 2,
                                    "remote_qpn_eecn": 291, "private_data": "0102"}})");
  const ToolRun encoded = run_fastcm_mad({"encode", in.dump()});
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  const ToolRun decoded = run_fastcm_mad({"decode", "-"}, encoded.out);
  ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
  const Json out = Json::parse(decoded.out);
  EXPECT_EQ(out.at("fields"), in.at("fields"));
  EXPECT_EQ(out.at("header").at("transaction_id"), "0x00000000000000aa");
  EXPECT_EQ(out.at("header").at("attribute_id"), 0x15);
}

TEST(FastcmMadCli, EncodeErrorGoesToStderrAsJsonAndExitsOne) {
  const ToolRun unknown =
      run_fastcm_mad({"encode", R"({"message": "req", "fields": {"primary_lid": 1}})"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "");
  const Json error = Json::parse(unknown.err);
  EXPECT_EQ(error.at("errc"), "unknown_field");
  EXPECT_EQ(error.at("field"), "primary_lid");

  const ToolRun bad_json = run_fastcm_mad({"encode", R"({"message": )"});
  EXPECT_EQ(bad_json.exit_code, 1);
  EXPECT_EQ(Json::parse(bad_json.err).at("errc"), "bad_json");
}

TEST(FastcmMadCli, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(run_fastcm_mad({}).exit_code, 2);
  EXPECT_EQ(run_fastcm_mad({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(run_fastcm_mad({"decode"}).exit_code, 2);
  EXPECT_EQ(run_fastcm_mad({"encode", "--bogus", "{}"}).exit_code, 2);
  const ScratchDir dir;
  EXPECT_EQ(run_fastcm_mad({"pcap", (dir.path() / "missing.pcap").string()}).exit_code, 2);

  const ToolRun help = run_fastcm_mad({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* word : {"decode", "encode", "pcap", "Exit status"}) {
    EXPECT_NE(help.out.find(word), std::string::npos) << word;
  }
}

class FastcmMadPcap : public ::testing::Test {
 protected:
  static constexpr std::int64_t kEpochUs = 1'700'000'000'000'000;

  void write(const std::vector<std::vector<std::uint8_t>>& frames) {
    roce::PcapWriter writer(path_);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      writer.write(frames[i], roce::PcapTimestamp(kEpochUs + static_cast<std::int64_t>(i)));
    }
    writer.flush();
  }

  static std::vector<std::uint8_t> frame(const roce::RoceEndpoint& src,
                                         const roce::RoceEndpoint& dst, const Mad& mad,
                                         Qpn dest_qp = roce::kGsiQpn) {
    std::vector<std::uint8_t> out(roce::kMaxRocev2FrameSize);
    roce::RoceGsiHeader header;
    header.dest_qp = dest_qp;
    const std::size_t size = roce::build_rocev2_frame(src, dst, header, mad, out);
    EXPECT_NE(size, 0U);
    out.resize(size);
    return out;
  }

  const roce::RoceEndpoint v6a_{{0x02, 0, 0, 0, 0, 1}, Gid::from_parts(0xfe80000000000000ULL, 1)};
  const roce::RoceEndpoint v6b_{{0x02, 0, 0, 0, 0, 2}, Gid::from_parts(0xfe80000000000000ULL, 2)};
  const roce::RoceEndpoint v4a_{{0x02, 0, 0, 0, 0, 3}, roce::ipv4_mapped_gid(0x0a000001)};
  const roce::RoceEndpoint v4b_{{0x02, 0, 0, 0, 0, 4}, roce::ipv4_mapped_gid(0x0a000002)};
  ScratchDir dir_;
  std::filesystem::path path_ = dir_.path() / "cm.pcap";
};

TEST_F(FastcmMadPcap, PrintsEveryGsiMadIncludingMalformedOnesAndCountsTheRest) {
  const Mad req = encoded_req(7);
  const Mad rep = encoded_rep(7);
  Mad malformed = encoded_req(8);
  malformed[2] = 1;  // class version
  std::vector<std::uint8_t> arp(42, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  // Over IPv4 (no UDP checksum): over IPv6 the UDP checksum, which covers the ICRC, would refuse
  // it.
  std::vector<std::uint8_t> bad_icrc = frame(v4a_, v4b_, req);
  bad_icrc.back() ^= 0xff;
  write({frame(v6a_, v6b_, req), frame(v4b_, v4a_, rep), frame(v6a_, v6b_, malformed), arp,
         bad_icrc, frame(v6a_, v6b_, req, 0x42)});

  const ToolRun run = run_fastcm_mad({"pcap", path_.string()});
  EXPECT_EQ(run.exit_code, 1) << "a malformed MAD makes the run fail";
  EXPECT_EQ(
      run.err,
      "fastcm-mad pcap: 6 frames: 4 MADs (1 malformed, 1 bad ICRC), 1 to other QPs, 1 skipped "
      "(not_ipv4_or_ipv6: 1)\n");
  const std::vector<Json> lines = json_lines(run.out);
  ASSERT_EQ(lines.size(), 4U) << run.out;
  const std::vector<std::string> meta{"frame", "time_us", "src", "dst", "icrc_ok"};

  EXPECT_EQ(lines[0].at("frame"), 1);
  EXPECT_EQ(lines[0].at("time_us"), kEpochUs);
  EXPECT_EQ(lines[0].at("src"), "fe80::1");
  EXPECT_EQ(lines[0].at("dst"), "fe80::2");
  EXPECT_EQ(lines[0].at("icrc_ok"), true);
  EXPECT_EQ(without(lines[0], meta), mad_to_json(req).json);

  EXPECT_EQ(lines[1].at("frame"), 2);
  EXPECT_EQ(lines[1].at("src"), "::ffff:10.0.0.2");
  EXPECT_EQ(lines[1].at("dst"), "::ffff:10.0.0.1");
  EXPECT_EQ(lines[1].at("icrc_ok"), true);
  EXPECT_EQ(without(lines[1], meta), mad_to_json(rep).json);

  EXPECT_EQ(lines[2].at("frame"), 3);
  EXPECT_EQ(lines[2].at("errc"), "bad_class_version");
  EXPECT_EQ(lines[2].at("field"), "class_version");
  EXPECT_EQ(without(lines[2], meta), mad_to_json(malformed).json);

  EXPECT_EQ(lines[3].at("frame"), 5);
  EXPECT_EQ(lines[3].at("time_us"), kEpochUs + 4);
  EXPECT_EQ(lines[3].at("src"), "::ffff:10.0.0.1");
  EXPECT_EQ(lines[3].at("icrc_ok"), false);
  EXPECT_EQ(without(lines[3], meta), mad_to_json(req).json);
}

TEST_F(FastcmMadPcap, ExitsZeroWhenEveryMadDecodes) {
  write({frame(v4a_, v4b_, encoded_req(1)), frame(v4b_, v4a_, encoded_rep(1))});
  const ToolRun run = run_fastcm_mad({"pcap", path_.string()});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(json_lines(run.out).size(), 2U);
  EXPECT_EQ(
      run.err,
      "fastcm-mad pcap: 2 frames: 2 MADs (0 malformed, 0 bad ICRC), 0 to other QPs, 0 skipped\n");
}

TEST_F(FastcmMadPcap, DamagedCaptureExitsOneAfterTheFramesBeforeTheDamage) {
  write({frame(v6a_, v6b_, encoded_req(1)), frame(v6b_, v6a_, encoded_rep(1))});
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) - 10);
  const ToolRun run = run_fastcm_mad({"pcap", path_.string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(json_lines(run.out).size(), 1U);
  EXPECT_NE(run.err.find("fastcm-mad pcap: "), std::string::npos);
  EXPECT_NE(run.err.find(path_.string()), std::string::npos) << run.err;
}

TEST_F(FastcmMadPcap, NotACaptureExitsOne) {
  std::ofstream(path_) << "not a capture";
  const ToolRun run = run_fastcm_mad({"pcap", path_.string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find(path_.string()), std::string::npos) << run.err;
}

}  // namespace
}  // namespace fastcm::tools
