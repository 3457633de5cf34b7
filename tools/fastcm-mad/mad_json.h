// The JSON form of a CM MAD, for people debugging CM traffic and for tests:
//
//   {"header": {"base_version": 1, ..., "transaction_id": "0x0000000000001234", ...},
//    "message": "req",
//    "fields": {"local_comm_id": 1, ..., "primary_local_port_gid": "fe80::2:c903:0:1", ...}}
//
// Keys are the codec's field names (group prefix + IBTA name, as visit_fields gives them), in table
// order. Values by member type:
//   std::uint64_t (GUIDs, service IDs, TIDs)  "0x" + 16 lowercase hex digits
//   other integers and enums                  JSON numbers
//   bool                                      true / false
//   Gid                                       IPv6 text (inet_ntop), e.g. "fe80::2:c903:0:1"
//   byte arrays (private data, ARI)           lowercase hex, no trailing zero bytes ("" if none)
// Reading accepts all of that, and more: any integer as a number or as a "0x..." string, byte
// arrays shorter than the field (zero padded) and with ':' or whitespace between digits. Missing
// keys keep the defaults of the codec's structs (the header's attribute_id follows the message).
//
// Thread contract: pure functions over caller-owned buffers; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/mad/codec.h"

namespace fastcm::tools {

// Insertion-ordered, so output follows the IBTA tables.
using Json = nlohmann::ordered_json;

// Why bytes could not become JSON or JSON could not become bytes.
struct MadJsonError {
  // For codec failures `error` is CodecStatus::describe() and `errc` the CodecErrc name. The JSON
  // mapping's own rules add: "not_an_object" (the input or its "header"/"fields" is no object),
  // "unknown_field" (a key the message does not have), "unknown_message", "bad_type" (e.g. a string
  // for a bool) and "bad_value" (text that is no number, GID or hex). A number too large for its
  // member, or bytes longer than their field, is "value_too_wide" as in the codec.
  std::string error;  // for people: "<errc>: <field>", and for the mapping's rules a reason
  std::string errc;
  std::string field;  // with its group prefix ("alternate_sl"); empty when the error names none

  [[nodiscard]] static MadJsonError from_codec(const mad::CodecStatus& status);
  friend bool operator==(const MadJsonError&, const MadJsonError&) = default;
};

// {"error": ..., "errc": ..., "field": ...}; "field" is null when the error names none.
[[nodiscard]] Json error_to_json(const MadJsonError& error);

// The MAD in `buf` (at least 256 bytes; a longer buffer is read as its first 256, as the codec
// does). On success `json` is {"header", "message", "fields"} and `ok` is true. On a codec error
// `json` is error_to_json() plus what could be read: "header" whenever the buffer holds 256 bytes
// (with the values as received, also the one that was rejected), and when the header was accepted
// "message" and the "fields" that decoded before the field the error names.
struct MadAsJson {
  Json json;
  bool ok = false;
};
[[nodiscard]] MadAsJson mad_to_json(std::span<const std::uint8_t> buf);

// The header and one decoded message, without the error checks of mad_to_json.
[[nodiscard]] Json mad_to_json(const mad::MadHeader& header, const mad::AnyMessage& message);

// Encodes a JSON object of the shape above into all 256 bytes of `out`. Returns nullopt on success;
// otherwise the first error found, checked in this order: the shape and key names of the whole
// object, then each value in table order, then the codec's encode(). On error `out` must not be
// sent.
[[nodiscard]] std::optional<MadJsonError> json_to_mad(const Json& in, mad::MadSpan out);

}  // namespace fastcm::tools
