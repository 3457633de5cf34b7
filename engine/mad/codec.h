// Encoding and decoding of whole CM MADs: the header checks, the dispatch by attribute, and
// visiting every field of a message.
//
// Thread contract: every function is pure over caller-owned buffers (no allocation, no shared
// state) and may run on any thread. Decoding treats the buffer as untrusted: every failure is a
// CodecStatus naming the rule and the field, never undefined behaviour.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <variant>

#include "engine/mad/cm_messages.h"
#include "engine/mad/codec_error.h"
#include "engine/mad/field_layout.h"
#include "engine/mad/mad_header.h"

namespace fastcm::mad {

using MadSpan = std::span<std::uint8_t, kMadSize>;
using ConstMadSpan = std::span<const std::uint8_t, kMadSize>;

template <typename M>
concept CmMessage = requires { WireLayout<M>::kAttr; };

// One decoded message of any attribute, in attribute-ID order of the variant's alternatives.
using AnyMessage =
    std::variant<ClassPortInfo, Req, Mra, Rej, Rep, Rtu, Dreq, Drep, SidrReq, SidrRep, Lap, Apr>;

struct DecodedMad {
  MadHeader header;
  AnyMessage message;
};

namespace detail {
template <CmMessage M>
constexpr CodecStatus check_message(const M& msg) noexcept {
  if constexpr (requires { WireLayout<M>::check(msg); }) {
    return WireLayout<M>::check(msg);
  } else {
    return {};
  }
}
}  // namespace detail

// Writes `header` and `msg` into `out` (all 256 bytes; reserved bits zero). The header's versions
// and class are written as given, so tools can craft MADs a receiver must refuse.
// Errors: unknown_attribute when header.attribute_id is not M's attribute; bad_method when the
// method is not allowed for it; value_too_wide / invalid_value naming the first offending field in
// table order, then the rules that span several fields. On error `out` holds a partial encoding
// and must not be sent.
template <CmMessage M>
constexpr CodecStatus encode(const MadHeader& header, const M& msg, MadSpan out) noexcept {
  if (header.attribute_id != WireLayout<M>::kAttr) {
    return CodecStatus::fail(CodecErrc::unknown_attribute, "attribute_id");
  }
  if (!method_allowed(header.attribute_id, header.method)) {
    return CodecStatus::fail(CodecErrc::bad_method, "method");
  }
  std::memset(out.data(), 0, kMadSize);
  if (CodecStatus s = MadHeaderLayout::encode(header, out.data()); !s.ok()) return s;
  if (CodecStatus s = WireLayout<M>::Fields::encode(msg, out.data() + kMadHeaderSize); !s.ok()) return s;
  return detail::check_message(msg);
}

// Reads and checks the common header: a buffer of at least 256 bytes (a longer one is read as its
// first 256), base version 1, the CM class at class version 2, a chapter-12 attribute and a method
// allowed for it. Reserved bytes are ignored.
CodecStatus decode_header(std::span<const std::uint8_t> buf, MadHeader& out) noexcept;

// Decodes the CM data of a MAD whose header decode_header accepted for attribute M.
// Errors: invalid_value naming the first field the spec makes invalid.
template <CmMessage M>
constexpr CodecStatus decode_body(ConstMadSpan mad, M& out) noexcept {
  if (CodecStatus s = WireLayout<M>::Fields::decode(mad.data() + kMadHeaderSize, out); !s.ok()) {
    return s;
  }
  return detail::check_message(out);
}

// decode_header, then decode_body for whichever attribute the header names. Fields are decoded
// in table order: on an invalid_value error, out.header and the fields before the one named hold
// what was decoded (tools show them); nothing after it is meaningful.
CodecStatus decode(std::span<const std::uint8_t> buf, DecodedMad& out) noexcept;

// The private data of a MAD whose header decode_header accepted: it always ends the CM data and
// is as long as the message allows (the wire carries no length). Empty for ClassPortInfo.
[[nodiscard]] std::span<const std::uint8_t> private_data(ConstMadSpan mad) noexcept;

// Calls v(FieldPlace, member&) for every field of `msg` in table order; FieldPlace::byte counts
// from the start of the MAD. Works on const and mutable messages.
template <typename M, typename Visitor>
  requires CmMessage<std::remove_const_t<M>>
constexpr void visit_fields(M& msg, Visitor&& v) {
  WireLayout<std::remove_const_t<M>>::Fields::visit(msg, {}, kMadHeaderSize, v);
}

template <typename H, typename Visitor>
  requires std::is_same_v<std::remove_const_t<H>, MadHeader>
constexpr void visit_header_fields(H& header, Visitor&& v) {
  MadHeaderLayout::visit(header, {}, 0, v);
}

namespace detail {
// Where a peeked member's class lives on the wire: the common header, or a message's CM data.
template <typename C>
struct PeekLayout {
  using Fields = typename WireLayout<C>::Fields;
  static constexpr std::size_t kOffset = kMadHeaderSize;
};
template <>
struct PeekLayout<MadHeader> {
  using Fields = MadHeaderLayout;
  static constexpr std::size_t kOffset = 0;
};
}  // namespace detail

// One field, of the common header or of message M's CM data, read from a MAD without validation.
template <auto Member>
[[nodiscard]] constexpr auto peek(ConstMadSpan mad) noexcept {
  using Layout = detail::PeekLayout<typename detail::MemberOf<decltype(Member)>::Class>;
  return []<typename... Fs>(FieldList<Fs...>*, const std::uint8_t* base) {
    typename detail::MemberOf<decltype(Member)>::Member value{};
    (void)((
        [&] {
          if constexpr (requires { Fs::kMember; }) {
            if constexpr (std::is_same_v<std::remove_cv_t<decltype(Fs::kMember)>, decltype(Member)>) {
              if (Fs::kMember == Member) {
                value = Fs::peek(base);
                return true;
              }
            }
          }
          return false;
        }() || ...));
    return value;
  }(static_cast<typename Layout::Fields*>(nullptr), mad.data() + Layout::kOffset);
}

}  // namespace fastcm::mad
