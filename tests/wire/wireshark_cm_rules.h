// What Wireshark 4.0 shows for every field of the CM codec: the map from each codec field (the
// names visit_fields reports) to the tshark items that display it. Fields Wireshark shows wrongly
// or not at all are listed by name with the reason; message bodies Wireshark does not dissect at
// all (MRA, LAP, APR, SIDR_REQ, SIDR_REP, ClassPortInfo) are marked as such as a whole.
//
// The cross-check derives, per frame, what each tshark item must print from these rules, and fails
// when a codec field has no rule or when tshark prints an item no rule explains; so a new codec
// field, a Wireshark upgrade that adds items, or a fix of a listed Wireshark bug is noticed.
//
// Thread contract: the rule tables are immutable statics built on first use (thread-safe
// initialization); test code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/mad/codec.h"

namespace fastcm::wire_test {

// A codec field's value in comparable form: scalar fields (integers, enums, bools) as `number`,
// byte-string fields (GIDs, ARI, private data) as `bytes`.
struct FieldValue {
  std::uint64_t number = 0;
  std::vector<std::uint8_t> bytes;
  friend bool operator==(const FieldValue&, const FieldValue&) = default;
};

// How tshark's JSON prints an item.
enum class Text : std::uint8_t {
  number,       // "0x1a2b" for BASE_HEX fields, "6699" for BASE_DEC ones
  byte_string,  // "1a:2b:3c" (FT_BYTES)
  ipv6,         // "fe80::1" (FT_IPv6)
  ipv4,         // "10.0.0.1" (FT_IPv4)
};

// One tshark item that shows (part of) a codec field.
struct View {
  std::string item;            // tshark field name
  std::size_t occurrence = 0;  // index among the items of that name in the same subtree
  Text text = Text::number;
  // What the item shows, computed from the codec field; nullptr: the field's own value.
  FieldValue (*shows)(const FieldValue&) = nullptr;
};

enum class Verdict : std::uint8_t {
  compared,       // every view must equal the field
  wireshark_bug,  // Wireshark shows it wrongly or not at all; the views check what it does show
};

struct FieldRule {
  std::string field;  // codec name including its group prefix, e.g. "primary_flow_label"
  Verdict verdict = Verdict::compared;
  std::string_view reason;  // for wireshark_bug: what is wrong, and the spec table that shows it
  std::vector<View> views;
};

// A tshark item that covers only reserved bits or bytes, which the codec writes as zero.
struct ReservedItem {
  std::string_view item;
  std::size_t occurrence = 0;
  Text text = Text::number;
  std::size_t bytes = 0;  // length of a byte_string item (its expected value is that many zeros)
};

struct MessageRules {
  std::string_view message;     // "REQ", "MAD header"
  std::string_view spec_table;  // "IBTA Vol. 1 Table 106"
  // False: Wireshark 4.0 prints the body as "CM <name> (Dissector Not Implemented)" with no items,
  // so `fields` is empty and every body field counts as not shown for that reason.
  bool dissected = true;
  std::vector<FieldRule> fields;
  std::vector<ReservedItem> reserved;

  // The rule for codec field `field`, or nullptr.
  [[nodiscard]] const FieldRule* find(std::string_view field) const noexcept;
};

// Why MRA, LAP, APR, SIDR_REQ, SIDR_REP and ClassPortInfo bodies are not compared.
inline constexpr std::string_view kNotDissected =
    "Wireshark 4.0 does not dissect this CM attribute (it prints \"Dissector Not Implemented\"), "
    "so only the MAD header is cross-checked";

// rdma_cm's service IDs (IBTA Vol. 1 Annex A11): 0x0000000001 in the top 40 bits, then the port
// space (e.g. 0x06 TCP) and the port. For these Wireshark decodes the REQ's private data as the
// rdma_cm IP header instead of showing it as plain private data.
inline constexpr std::uint64_t kRdmaCmServiceIdMask = 0xFFFFFFFFFF000000;
inline constexpr std::uint64_t kRdmaCmServiceIdPrefix = 0x0000000001000000;
[[nodiscard]] constexpr bool is_rdma_cm_service_id(std::uint64_t sid) noexcept {
  return (sid & kRdmaCmServiceIdMask) == kRdmaCmServiceIdPrefix;
}

// The rules for the common MAD header (IBTA Vol. 1 Table 145), the same for all 12 attributes.
[[nodiscard]] const MessageRules& header_rules();

// The rules for a message body. A REQ's rules depend on its service ID, as Wireshark's decoding
// does.
[[nodiscard]] const MessageRules& body_rules(const mad::AnyMessage& message);

// Every rule table, for the consistency test (names unique, each rule naming a codec field).
[[nodiscard]] std::vector<const MessageRules*> all_dissected_rules();

}  // namespace fastcm::wire_test
