// From a message and its rules to what every tshark item must show, and the comparison of that
// against what tshark did show, in both directions: each expected item must be shown with the
// expected value, and each shown item must be expected.
//
// Thread contract: test code; pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/mad/codec.h"
#include "tests/mad/mad_test_support.h"
#include "tests/wire/tshark_decode.h"
#include "tests/wire/wireshark_cm_rules.h"

namespace fastcm::wire_test {

// What one tshark item must show, and where that comes from.
struct Expectation {
  std::string item;
  std::size_t occurrence = 0;
  Text text = Text::number;
  FieldValue value;
  std::string origin;  // "REQ primary_sl", "REQ reserved bits", with the bug note if any
};

struct Expectations {
  std::vector<Expectation> items;
  // Codec fields with no rule, and rules naming no codec field: each one fails the test.
  std::vector<std::string> unmapped;
};

template <typename T>
[[nodiscard]] FieldValue field_value(const T& member) {
  if constexpr (mad::test::ScalarMember<T>) {
    return FieldValue{mad::test::raw_of(member), {}};
  } else {
    const auto bytes = mad::test::bytes_of(member);
    return FieldValue{0, {bytes.begin(), bytes.end()}};
  }
}

// Adds the expectations of one visited field.
void expect_field(const MessageRules& rules, std::string field, const FieldValue& value,
                  Expectations& out);
// Adds the reserved items of `rules`, and the "unmapped" entries for rules `seen` did not use.
void finish_expectations(const MessageRules& rules, const std::vector<std::string>& seen,
                         Expectations& out);

// The expectations of a message body (visit_fields) or of the MAD header (visit_header_fields).
template <typename Visitable>
[[nodiscard]] Expectations expectations_for(const MessageRules& rules, const Visitable& fields) {
  Expectations out;
  std::vector<std::string> seen;
  auto visit = [&](const mad::FieldPlace& place, const auto& member) {
    std::string name = std::string(place.prefix) + std::string(place.name);
    seen.push_back(name);
    expect_field(rules, std::move(name), field_value(member), out);
  };
  if constexpr (std::is_same_v<Visitable, mad::MadHeader>) {
    mad::visit_header_fields(fields, visit);
  } else {
    mad::visit_fields(fields, visit);
  }
  finish_expectations(rules, seen, out);
  return out;
}

// Every difference between `expected` and `shown`, one line each: an expected item missing or
// showing another value, or a shown item no expectation covers. Empty when they agree.
[[nodiscard]] std::vector<std::string> compare_items(const std::vector<Expectation>& expected,
                                                     const ItemMap& shown);

// Reads an item's text as tshark prints it; nullopt when it is not of that form.
[[nodiscard]] std::optional<FieldValue> parse_shown(std::string_view text, Text how);

// A value in tshark's notation, for messages.
[[nodiscard]] std::string format_value(const FieldValue& value, Text how);

}  // namespace fastcm::wire_test
