#include "tools/fastcm-mad/mad_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tools/fastcm-mad/gid_text.h"
#include "tools/fastcm-mad/hex_text.h"

namespace fastcm::tools {

namespace {

using mad::FieldPlace;

template <typename T>
struct IsByteArray : std::false_type {};
template <std::size_t N>
struct IsByteArray<std::array<std::uint8_t, N>> : std::true_type {};

std::string full_name(const FieldPlace& place) {
  std::string name(place.prefix);
  name.append(place.name);
  return name;
}

// The mapping's own errors read like the codec's describe(), plus why.
MadJsonError mapping_error(std::string_view errc, std::string_view field, std::string_view reason) {
  std::string text(errc);
  if (!field.empty()) text.append(": ").append(field);
  text.append(" (").append(reason).append(")");
  return MadJsonError{std::move(text), std::string(errc), std::string(field)};
}

std::string u64_text(std::uint64_t v) {
  std::array<std::uint8_t, 8> be{};
  for (std::size_t i = 0; i < be.size(); ++i) be[i] = static_cast<std::uint8_t>(v >> (56 - 8 * i));
  return "0x" + to_hex(be);
}

template <typename T>
Json value_to_json(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<std::underlying_type_t<T>>(value);
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return u64_text(value);
  } else if constexpr (std::is_integral_v<T>) {
    return value;
  } else if constexpr (std::is_same_v<T, Gid>) {
    return gid_to_text(value);
  } else {
    static_assert(IsByteArray<T>::value, "a field is an integer, enum, bool, Gid or byte array");
    const auto last_used =
        std::find_if(value.rbegin(), value.rend(), [](std::uint8_t b) { return b != 0; });
    return to_hex(std::span(value.data(), static_cast<std::size_t>(value.rend() - last_used)));
  }
}

// Every field of a header or message, in table order, up to (not including) the field a decode
// error names: fields after it were not decoded. Empty stop names never match a field.
class FieldsToJson {
 public:
  FieldsToJson(Json& out, std::string_view stop_group, std::string_view stop_field)
      : out_(out), stop_group_(stop_group), stop_field_(stop_field) {}

  template <typename T>
  void operator()(const FieldPlace& place, const T& value) {
    if (stopped_ || (place.prefix == stop_group_ && place.name == stop_field_)) {
      stopped_ = true;
      return;
    }
    out_[full_name(place)] = value_to_json(value);
  }

 private:
  Json& out_;
  std::string_view stop_group_;
  std::string_view stop_field_;
  bool stopped_ = false;
};

Json header_json(const mad::MadHeader& header) {
  Json out = Json::object();
  mad::visit_header_fields(header, FieldsToJson(out, {}, {}));
  return out;
}

Json message_fields_json(const mad::AnyMessage& message, const mad::CodecStatus& stop) {
  Json out = Json::object();
  std::visit(
      [&](const auto& msg) { mad::visit_fields(msg, FieldsToJson(out, stop.group, stop.field)); },
      message);
  return out;
}

std::string_view message_name(const mad::AnyMessage& message) {
  return std::visit(
      [](const auto& msg) {
        return mad::attr_name(mad::WireLayout<std::remove_cvref_t<decltype(msg)>>::kAttr);
      },
      message);
}

// A JSON number or a "0x..." string (1 to 16 hex digits) as an unsigned 64-bit value.
std::optional<MadJsonError> read_unsigned(const Json& j, const std::string& field,
                                          std::uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<std::uint64_t>();
    return std::nullopt;
  }
  if (j.is_number_integer()) return mapping_error("bad_value", field, "negative");
  if (!j.is_string()) {
    return mapping_error("bad_type", field, "expected a number or a \"0x...\" string");
  }
  const std::string& text = j.get_ref<const std::string&>();
  const std::string_view digits =
      std::string_view(text).substr(std::min<std::size_t>(2, text.size()));
  const bool prefixed = text.starts_with("0x") || text.starts_with("0X");
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  if (!prefixed || digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
    return mapping_error("bad_value", field, "expected \"0x\" and at most 16 hex digits");
  }
  out = value;
  return std::nullopt;
}

template <typename T>
std::optional<MadJsonError> value_from_json(const Json& j, const std::string& field, T& member) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return mapping_error("bad_type", field, "expected true or false");
    member = j.get<bool>();
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    using Raw = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                            std::type_identity<T>>::type;
    std::uint64_t raw = 0;
    if (auto e = read_unsigned(j, field, raw)) return e;
    if (raw > std::numeric_limits<Raw>::max()) {
      return mapping_error(mad::to_string(mad::CodecErrc::value_too_wide), field,
                           "too large for the field");
    }
    // Every enum of the codec has a fixed underlying type, so any Raw value is a valid T.
    member = static_cast<T>(static_cast<Raw>(raw));
  } else if constexpr (std::is_same_v<T, Gid>) {
    if (!j.is_string()) return mapping_error("bad_type", field, "expected IPv6 text");
    const std::optional<Gid> gid = gid_from_text(j.get_ref<const std::string&>());
    if (!gid) return mapping_error("bad_value", field, "not an IPv6 address");
    member = *gid;
  } else {
    static_assert(IsByteArray<T>::value, "a field is an integer, enum, bool, Gid or byte array");
    if (!j.is_string()) return mapping_error("bad_type", field, "expected a hex string");
    const std::optional<std::vector<std::uint8_t>> bytes =
        parse_hex(j.get_ref<const std::string&>());
    if (!bytes) return mapping_error("bad_value", field, "not hex digits in pairs");
    if (bytes->size() > member.size()) {
      return mapping_error(mad::to_string(mad::CodecErrc::value_too_wide), field,
                           std::to_string(bytes->size()) + " bytes, the field holds " +
                               std::to_string(member.size()));
    }
    std::fill(std::copy(bytes->begin(), bytes->end(), member.begin()), member.end(),
              std::uint8_t{0});
  }
  return std::nullopt;
}

// Reads in[key] (an object of field names; absent means all defaults) into `target`, whose fields
// `visit(target, visitor)` enumerates. Unknown keys are rejected before any value is read; `owner`
// names the target in that error.
template <typename T, typename VisitFn>
std::optional<MadJsonError> read_object(const Json& in, const char* key, std::string_view owner,
                                        T& target, VisitFn visit) {
  const auto it = in.find(key);
  if (it == in.end()) return std::nullopt;
  if (!it->is_object()) return mapping_error("not_an_object", key, "expected an object of fields");
  std::vector<std::string> known;
  visit(target, [&](const FieldPlace& place, const auto&) { known.push_back(full_name(place)); });
  for (const auto& item : it->items()) {
    if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
      return mapping_error("unknown_field", item.key(),
                           std::string("not a field of ").append(owner));
    }
  }
  std::optional<MadJsonError> error;
  visit(target, [&](const FieldPlace& place, auto& member) {
    const std::string name = full_name(place);
    const auto value = it->find(name);
    if (!error && value != it->end()) error = value_from_json(*value, name, member);
  });
  return error;
}

template <std::size_t I>
constexpr std::string_view alternative_name() {
  return mad::attr_name(mad::WireLayout<std::variant_alternative_t<I, mad::AnyMessage>>::kAttr);
}

// The default-constructed alternative of AnyMessage whose attribute is called `name`.
template <std::size_t... I>
std::optional<mad::AnyMessage> message_named(std::string_view name, std::index_sequence<I...>) {
  std::optional<mad::AnyMessage> out;
  (void)((alternative_name<I>() == name && (out.emplace(std::in_place_index<I>), true)) || ...);
  return out;
}

}  // namespace

MadJsonError MadJsonError::from_codec(const mad::CodecStatus& status) {
  std::string field(status.group);
  field.append(status.field);
  return MadJsonError{status.describe(), std::string(mad::to_string(status.errc)),
                      std::move(field)};
}

Json error_to_json(const MadJsonError& error) {
  Json out = Json::object();
  out["error"] = error.error;
  out["errc"] = error.errc;
  out["field"] = error.field.empty() ? Json(nullptr) : Json(error.field);
  return out;
}

Json mad_to_json(const mad::MadHeader& header, const mad::AnyMessage& message) {
  Json out = Json::object();
  out["header"] = header_json(header);
  out["message"] = message_name(message);
  out["fields"] = message_fields_json(message, {});
  return out;
}

MadAsJson mad_to_json(std::span<const std::uint8_t> buf) {
  mad::DecodedMad decoded;
  const mad::CodecStatus status = mad::decode(buf, decoded);
  if (status.ok()) return {mad_to_json(decoded.header, decoded.message), true};

  MadAsJson result{error_to_json(MadJsonError::from_codec(status)), false};
  if (buf.size() < mad::kMadSize) return result;
  // The header's fields carry no checks of their own, so this shows what was received even when
  // decode_header rejected a value.
  mad::MadHeader raw_header;
  if (mad::MadHeaderLayout::decode(buf.data(), raw_header).ok()) {
    result.json["header"] = header_json(raw_header);
  }
  mad::MadHeader header;
  if (mad::decode_header(buf, header).ok()) {
    // The body failed: decode() left the fields before the failing one decoded in `message`.
    result.json["message"] = message_name(decoded.message);
    result.json["fields"] = message_fields_json(decoded.message, status);
  }
  return result;
}

std::optional<MadJsonError> json_to_mad(const Json& in, mad::MadSpan out) {
  if (!in.is_object()) return mapping_error("not_an_object", "", "a MAD is a JSON object");
  for (const auto& item : in.items()) {
    if (item.key() != "header" && item.key() != "message" && item.key() != "fields") {
      return mapping_error("unknown_field", item.key(),
                           "a MAD has \"header\", \"message\" and \"fields\"");
    }
  }
  const auto name = in.find("message");
  if (name == in.end()) return mapping_error("unknown_message", "message", "missing");
  if (!name->is_string())
    return mapping_error("bad_type", "message", "expected a message name such as \"req\"");
  std::optional<mad::AnyMessage> message =
      message_named(name->get_ref<const std::string&>(),
                    std::make_index_sequence<std::variant_size_v<mad::AnyMessage>>{});
  if (!message) {
    return mapping_error("unknown_message", "message",
                         "not a CM message: " + name->get_ref<const std::string&>());
  }

  return std::visit(
      [&](auto& msg) -> std::optional<MadJsonError> {
        mad::MadHeader header;
        header.attribute_id = mad::WireLayout<std::remove_cvref_t<decltype(msg)>>::kAttr;
        auto visit_header = [](auto& h, auto&& v) { mad::visit_header_fields(h, v); };
        auto visit_message = [](auto& m, auto&& v) { mad::visit_fields(m, v); };
        if (auto e = read_object(in, "header", "the MAD header", header, visit_header)) return e;
        if (auto e =
                read_object(in, "fields", mad::attr_name(header.attribute_id), msg, visit_message))
          return e;
        if (const mad::CodecStatus s = mad::encode(header, msg, out); !s.ok())
          return MadJsonError::from_codec(s);
        return std::nullopt;
      },
      *message);
}

}  // namespace fastcm::tools
