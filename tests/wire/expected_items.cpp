#include "tests/wire/expected_items.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>
#include <utility>

namespace fastcm::wire_test {

namespace {

std::string describe_origin(const MessageRules& rules, const FieldRule& rule) {
  std::string origin = std::string(rules.message) + " " + rule.field;
  if (rule.verdict == Verdict::wireshark_bug) {
    origin +=
        " [listed as a Wireshark defect, so a mismatch means Wireshark changed (fixed?) or "
        "the codec regressed: ";
    origin += rule.reason;
    origin += "]";
  } else {
    origin += " (" + std::string(rules.spec_table) + ")";
  }
  return origin;
}

std::optional<std::uint64_t> parse_unsigned(std::string_view text, int base) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v, base);
  if (text.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return v;
}

std::string item_label(const std::string& item, std::size_t occurrence) {
  return occurrence == 0 ? item : item + " #" + std::to_string(occurrence + 1);
}

}  // namespace

void expect_field(const MessageRules& rules, std::string field, const FieldValue& value,
                  Expectations& out) {
  const FieldRule* rule = rules.find(field);
  if (rule == nullptr) {
    out.unmapped.push_back(std::string(rules.message) + " field " + field +
                           " has no Wireshark rule: compare it, or list it as a Wireshark bug "
                           "with the reason (" +
                           std::string(rules.spec_table) + ")");
    return;
  }
  for (const View& view : rule->views) {
    out.items.push_back(Expectation{view.item, view.occurrence, view.text,
                                    view.shows != nullptr ? view.shows(value) : value,
                                    describe_origin(rules, *rule)});
  }
}

void finish_expectations(const MessageRules& rules, const std::vector<std::string>& seen,
                         Expectations& out) {
  for (const FieldRule& rule : rules.fields) {
    if (std::find(seen.begin(), seen.end(), rule.field) == seen.end()) {
      out.unmapped.push_back(std::string(rules.message) + " rule for " + rule.field +
                             " names no codec field");
    }
    if (rule.verdict == Verdict::compared && rule.views.empty()) {
      out.unmapped.push_back(std::string(rules.message) + " " + rule.field +
                             " is marked compared but has no tshark item");
    }
    if (rule.verdict == Verdict::wireshark_bug && rule.reason.empty()) {
      out.unmapped.push_back(std::string(rules.message) + " " + rule.field +
                             " is listed as a Wireshark bug without a reason");
    }
  }
  for (const ReservedItem& r : rules.reserved) {
    FieldValue zero{0, std::vector<std::uint8_t>(r.bytes, 0)};
    out.items.push_back(
        Expectation{std::string(r.item), r.occurrence, r.text, std::move(zero),
                    std::string(rules.message) + " reserved bits (written as zero)"});
  }
}

std::optional<FieldValue> parse_shown(std::string_view text, Text how) {
  switch (how) {
    case Text::number: {
      const bool hex = text.starts_with("0x");
      const auto n = parse_unsigned(hex ? text.substr(2) : text, hex ? 16 : 10);
      if (!n) return std::nullopt;
      return FieldValue{*n, {}};
    }
    case Text::byte_string: {
      FieldValue v;
      for (std::size_t at = 0; at < text.size(); at += 3) {
        if (at + 2 > text.size() || (at + 2 < text.size() && text[at + 2] != ':')) {
          return std::nullopt;
        }
        const auto b = parse_unsigned(text.substr(at, 2), 16);
        if (!b) return std::nullopt;
        v.bytes.push_back(static_cast<std::uint8_t>(*b));
      }
      if (v.bytes.empty()) return std::nullopt;
      return v;
    }
    case Text::ipv6:
    case Text::ipv4: {
      const bool v6 = how == Text::ipv6;
      std::vector<std::uint8_t> addr(v6 ? 16 : 4);
      const std::string s(text);
      if (inet_pton(v6 ? AF_INET6 : AF_INET, s.c_str(), addr.data()) != 1) return std::nullopt;
      return FieldValue{0, std::move(addr)};
    }
  }
  return std::nullopt;
}

std::string format_value(const FieldValue& value, Text how) {
  if (how == Text::number) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value.number));
    return buf;
  }
  std::string s;
  for (std::size_t i = 0; i < value.bytes.size(); ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, i == 0 ? "%02x" : ":%02x", value.bytes[i]);
    s += buf;
  }
  return s;
}

std::vector<std::string> compare_items(const std::vector<Expectation>& expected,
                                       const ItemMap& shown) {
  std::vector<std::string> problems;
  std::set<std::pair<std::string, std::size_t>> covered;
  for (const Expectation& e : expected) {
    const std::string label = item_label(e.item, e.occurrence);
    if (!covered.emplace(e.item, e.occurrence).second) {
      problems.push_back(e.origin + ": tshark item " + label + " is expected twice");
      continue;
    }
    const auto it = shown.find(e.item);
    if (it == shown.end() || e.occurrence >= it->second.size()) {
      problems.push_back(e.origin + ": tshark shows no item " + label + " (expected " +
                         format_value(e.value, e.text) + ")");
      continue;
    }
    const std::string& text = it->second[e.occurrence];
    const std::optional<FieldValue> got = parse_shown(text, e.text);
    if (!got) {
      problems.push_back(e.origin + ": tshark item " + label + " shows \"" + text +
                         "\", not in the expected notation");
    } else if (*got != e.value) {
      problems.push_back(e.origin + ": tshark item " + label + " shows " + text + ", encoded " +
                         format_value(e.value, e.text));
    }
  }
  for (const auto& [item, texts] : shown) {
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (!covered.contains({item, i})) {
        problems.push_back("tshark shows " + item_label(item, i) + " = " + texts[i] +
                           ", which no rule explains: map it to a codec field or list it as "
                           "reserved in tests/wire/wireshark_cm_rules.cpp");
      }
    }
  }
  return problems;
}

}  // namespace fastcm::wire_test
