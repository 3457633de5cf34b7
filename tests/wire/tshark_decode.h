// Decoding a pcap of RoCEv2 CM MADs with tshark (Wireshark's command-line dissector, software
// independent of ours) and reading back, per frame, every item it shows for the MAD.
//
// Thread contract: test code; each call is independent and blocks until tshark has exited.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fastcm::wire_test {

// The items of one subtree of tshark's JSON: field name -> the values of its items, in display
// order (an item name appears several times, e.g. "infiniband.reserved"). Nested subtrees
// ("..._tree") are merged into their parent.
using ItemMap = std::map<std::string, std::vector<std::string>, std::less<>>;

struct TsharkFrame {
  std::size_t number = 0;          // frame.number, from 1
  ItemMap mad_header;              // infiniband.mad_tree: the common MAD header items
  std::optional<ItemMap> cm_body;  // infiniband.smplid.smpdata_tree; nullopt when not dissected
  std::string mad_bytes;           // "infiniband.mad": all 256 MAD bytes as a byte string
  std::string cm_data_bytes;       // "infiniband.smplid.smpdata": the 232 CM data bytes
};

// The tshark options of the cross-check: JSON with repeated item names merged into arrays, and
// the heuristic dissectors that would claim CM private data (SDP, iSER, NVMe-oF, LNet) disabled.
[[nodiscard]] std::vector<std::string> tshark_arguments(const std::filesystem::path& pcap);

// Runs `tshark` (an executable path) on `pcap`, keeps its JSON in `json_out` for inspection, and
// parses it. Errors: throws std::runtime_error naming the cause (tshark missing or not runnable,
// a non-zero exit with its stderr, or JSON of an unexpected shape).
[[nodiscard]] std::vector<TsharkFrame> decode_with_tshark(const std::string& tshark,
                                                          const std::filesystem::path& pcap,
                                                          const std::filesystem::path& json_out);

// Parses tshark's `-T json --no-duplicate-keys` output. Errors: throws std::runtime_error when a
// packet lacks the InfiniBand layer or an item has a shape other than string / array / subtree.
[[nodiscard]] std::vector<TsharkFrame> parse_tshark_json(std::string_view json);

}  // namespace fastcm::wire_test
