// fastcm-mad: CM MADs as JSON and back, and the CM MADs of a RoCEv2 capture, for people debugging
// CM traffic. Exit status: 0 done, 1 the input was refused (bad hex/JSON, a codec error, a
// malformed MAD in a capture, an unreadable capture), 2 usage error.
#include <array>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "fabric/roce_udp/pcap_file.h"
#include "tools/fastcm-mad/hex_text.h"
#include "tools/fastcm-mad/mad_json.h"
#include "tools/fastcm-mad/pcap_dump.h"

namespace {

using fastcm::tools::Json;
using fastcm::tools::MadJsonError;

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;

// The argument itself, or all of standard input for "-".
std::string text_or_stdin(const std::string& arg) {
  if (arg != "-") return arg;
  // Not istreambuf_iterator: g++ 12 at -O2 flags it with a false -Wnull-dereference.
  std::ostringstream text;
  text << std::cin.rdbuf();
  return std::move(text).str();
}

int run_decode(const std::vector<std::string>& hex_args, bool pretty) {
  std::string text;
  if (hex_args.size() == 1) {
    text = text_or_stdin(hex_args.front());
  } else {
    for (const std::string& arg : hex_args) text.append(arg).append(" ");
  }
  const std::optional<std::vector<std::uint8_t>> bytes = fastcm::tools::parse_hex(text);
  if (!bytes) {
    const MadJsonError error{
        "bad_hex (expected hex digits in pairs, with optional whitespace or ':')", "bad_hex", ""};
    std::cout << fastcm::tools::error_to_json(error).dump(pretty ? 2 : -1) << '\n';
    return kExitRefused;
  }
  const fastcm::tools::MadAsJson mad = fastcm::tools::mad_to_json(*bytes);
  std::cout << mad.json.dump(pretty ? 2 : -1) << '\n';
  return mad.ok ? kExitOk : kExitRefused;
}

int run_encode(const std::string& json_arg) {
  Json in;
  try {
    in = Json::parse(text_or_stdin(json_arg));
  } catch (const Json::parse_error& e) {
    const MadJsonError error{std::string("bad_json (") + e.what() + ")", "bad_json", ""};
    std::cerr << fastcm::tools::error_to_json(error).dump() << '\n';
    return kExitRefused;
  }
  std::array<std::uint8_t, fastcm::mad::kMadSize> mad{};
  if (const std::optional<MadJsonError> error = fastcm::tools::json_to_mad(in, mad)) {
    std::cerr << fastcm::tools::error_to_json(*error).dump() << '\n';
    return kExitRefused;
  }
  std::cout << fastcm::tools::to_hex(mad) << '\n';
  return kExitOk;
}

int run_pcap(const std::string& path) {
  try {
    const fastcm::tools::PcapDumpCounts counts = fastcm::tools::dump_pcap(path, std::cout);
    std::cout.flush();
    std::cerr << "fastcm-mad pcap: " << fastcm::tools::summary_line(counts) << '\n';
    return counts.bad_mads == 0 ? kExitOk : kExitRefused;
  } catch (const fastcm::roce::PcapError& e) {
    std::cout.flush();
    std::cerr << "fastcm-mad pcap: " << e.what() << '\n';
    return kExitRefused;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fastcm-mad: InfiniBand CM MADs (IBTA Vol. 1 chapter 12) as JSON and back.\n"
      "JSON shape: {\"header\": {...}, \"message\": \"req\", \"fields\": {...}} with the\n"
      "IBTA field names in snake_case (\"primary_local_port_lid\"); 64-bit values (GUIDs,\n"
      "service IDs, TIDs) as \"0x\" hex strings, other integers and enums as numbers, GIDs as\n"
      "IPv6 text, private data and ARI as hex (trailing zero bytes left out).",
      "fastcm-mad"};
  app.footer(
      "Examples:\n"
      "  fastcm-mad decode \"$(xxd -p mad.bin)\"\n"
      "  fastcm-mad encode '{\"message\": \"rtu\", \"fields\": {\"local_comm_id\": 7}}'\n"
      "  fastcm-mad decode - < mad.hex | jq .fields.service_id\n"
      "  fastcm-mad pcap capture.pcap | jq -c 'select(.message == \"rej\")'\n"
      "Exit status: 0 ok, 1 input refused (decode/encode error, malformed MAD in a capture),\n"
      "2 usage error.");
  app.require_subcommand(1);

  std::vector<std::string> hex_args;
  bool pretty = false;
  CLI::App* decode = app.add_subcommand(
      "decode",
      "Print one 256-byte MAD given as hex as one JSON object. On a decode error the object holds "
      "\"error\", \"errc\" and \"field\", plus the header and the fields that decoded.");
  decode
      ->add_option("HEX", hex_args,
                   "The MAD as hex digits; whitespace and ':' may separate them (several arguments "
                   "are joined). '-' reads the hex from standard input.")
      ->required();
  decode->add_flag("-p,--pretty", pretty, "Indent the JSON.");

  std::string json_arg;
  CLI::App* encode = app.add_subcommand(
      "encode",
      "Print the 256-byte MAD of a JSON object of the shape decode prints, as one line of hex. "
      "Missing fields keep their defaults (the header's attribute_id follows \"message\"); "
      "unknown fields are an error. Errors go to standard error as a JSON object.");
  encode->add_option("JSON", json_arg, "The JSON text; '-' reads it from standard input.")
      ->required();

  std::string pcap_path;
  CLI::App* pcap = app.add_subcommand(
      "pcap",
      "Print every GSI MAD (UD SEND_ONLY to QP1) of a capture of RoCEv2 frames (UDP 4791, IPv4 "
      "or IPv6) as one JSON object per line: what decode prints plus \"frame\", \"time_us\", "
      "\"src\" and \"dst\" (GIDs) and \"icrc_ok\". Malformed MADs are printed with their error; "
      "other frames are counted in a summary on standard error.");
  pcap->add_option("FILE", pcap_path, "A pcap or pcapng file of Ethernet frames.")
      ->required()
      ->check(CLI::ExistingFile);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError whose exit code is 0; everything else is a usage error.
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  if (*decode) return run_decode(hex_args, pretty);
  if (*encode) return run_encode(json_arg);
  return run_pcap(pcap_path);
}
