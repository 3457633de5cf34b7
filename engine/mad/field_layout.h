// Wire field declarations for 256-byte MADs, in the form of the IBTA tables.
//
// A message is a plain struct plus a Layout that lists its fields once, each as
//   Field<"ibta_name", &Msg::member, byte, bit, width [, validity check]>
// where byte/bit/width are exactly the "byte[bit] offset" and "length" columns of the IBTA table
// (bit 0 is the most significant bit of the byte, as in the spec). That single declaration drives
// encoding, decoding, validation with a named error, and visiting (JSON, tests, wire cross-checks):
// no call site ever shifts or masks.
//
// Everything is resolved at compile time, so encode/decode unroll into straight-line big-endian
// loads and stores; nothing allocates. Thread contract: pure functions over caller buffers.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "engine/mad/codec_error.h"
#include "fastcm/types.h"

namespace fastcm::mad {

inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kMadHeaderSize = 24;  // common MAD header, IBTA Table 145
inline constexpr std::size_t kCmDataSize = kMadSize - kMadHeaderSize;

// A string literal usable as a template argument, so a field's name lives in its declaration.
template <std::size_t N>
struct FieldName {
  char text[N]{};
  constexpr FieldName(const char (&s)[N]) noexcept { std::copy_n(s, N, text); }  // NOLINT
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {text, N - 1}; }
};

// Where a field sits, for visitors that need it (wire cross-checks, golden tests).
struct FieldPlace {
  std::string_view prefix;  // group prefix, e.g. "primary_" (empty for top-level fields)
  std::string_view name;    // IBTA name in snake_case
  std::size_t byte;         // offset from the start of the 256-byte MAD
  unsigned bit;             // 0 = most significant bit of that byte
  unsigned width;           // in bits
};

// A validity check attached to a field: returns true when the raw value is allowed by the spec.
using FieldCheck = bool (*)(std::uint64_t raw) noexcept;
constexpr bool any_value(std::uint64_t) noexcept { return true; }
template <std::uint64_t Max>
constexpr bool at_most(std::uint64_t raw) noexcept { return raw <= Max; }

namespace detail {

template <unsigned Width>
using UintFor = std::conditional_t<
    (Width <= 8), std::uint8_t,
    std::conditional_t<(Width <= 16), std::uint16_t,
                       std::conditional_t<(Width <= 32), std::uint32_t, std::uint64_t>>>;

template <typename T>
struct MemberOf;
template <typename C, typename M>
struct MemberOf<M C::*> {
  using Class = C;
  using Member = M;
};

template <typename T>
constexpr std::uint64_t to_raw(T v) noexcept {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<std::uint64_t>(static_cast<std::underlying_type_t<T>>(v));
  } else {
    return static_cast<std::uint64_t>(v);
  }
}

template <typename T>
constexpr T from_raw(std::uint64_t raw) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return raw != 0;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(static_cast<std::underlying_type_t<T>>(raw));
  } else {
    return static_cast<T>(raw);
  }
}

// std::byteswap is C++23; GCC and Clang both have the builtins.
template <typename T>
[[nodiscard]] constexpr T byteswap(T v) noexcept {
  if constexpr (sizeof(T) == 2) {
    return __builtin_bswap16(v);
  } else if constexpr (sizeof(T) == 4) {
    return __builtin_bswap32(v);
  } else {
    static_assert(sizeof(T) == 8);
    return __builtin_bswap64(v);
  }
}

// Big-endian loads and stores of N bytes (1..8) as at most two unaligned accesses. The byte loop
// they replace (shift in a byte, N times) was left as N loads and N shifts by GCC: about 670
// instructions per connection's life, a twentieth of the engine's per-MAD work (callgrind,
// fastcm_bench_per_mad). Constant evaluation keeps the loop (memcpy is not constexpr).
template <std::size_t N>
[[nodiscard]] constexpr std::uint64_t load_be(const std::uint8_t* p) noexcept {
  static_assert(N >= 1 && N <= 8);
  if (std::is_constant_evaluated()) {
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < N; ++i) word = (word << 8) | p[i];
    return word;
  }
  if constexpr (N == 1) {
    return p[0];
  } else if constexpr (N == 2 || N == 4 || N == 8) {
    UintFor<N * 8> v;
    std::memcpy(&v, p, N);
    if constexpr (std::endian::native == std::endian::little) v = byteswap(v);
    return v;
  } else if constexpr (N == 3) {
    return load_be<2>(p) << 8 | p[2];
  } else {  // 5..7: the first four bytes, then the rest
    return load_be<4>(p) << (8 * (N - 4)) | load_be<N - 4>(p + 4);
  }
}
template <std::size_t N>
constexpr void store_be(std::uint8_t* p, std::uint64_t word) noexcept {
  static_assert(N >= 1 && N <= 8);
  if (std::is_constant_evaluated()) {
    for (std::size_t i = N; i-- > 0; word >>= 8) p[i] = static_cast<std::uint8_t>(word);
    return;
  }
  if constexpr (N == 1) {
    p[0] = static_cast<std::uint8_t>(word);
  } else if constexpr (N == 2 || N == 4 || N == 8) {
    auto v = static_cast<UintFor<N * 8>>(word);
    if constexpr (std::endian::native == std::endian::little) v = byteswap(v);
    std::memcpy(p, &v, N);
  } else if constexpr (N == 3) {
    store_be<2>(p, word >> 8);
    p[2] = static_cast<std::uint8_t>(word);
  } else {
    store_be<4>(p, word >> (8 * (N - 4)));
    store_be<N - 4>(p + 4, word);
  }
}

}  // namespace detail

// Width bits starting Bit bits below the most significant bit of byte Byte, big-endian.
// Byte is relative to the base the caller passes (the MAD, or a group's first byte).
template <std::size_t Byte, unsigned Bit, unsigned Width>
struct BitSpan {
  static_assert(Bit < 8, "bit offset is within one byte");
  static_assert(Width >= 1 && Width <= 64, "field width is 1..64 bits");
  static constexpr std::size_t kBytes = (Bit + Width + 7) / 8;
  static_assert(kBytes <= 8, "a bit field spans at most 8 bytes");
  static constexpr unsigned kShift = static_cast<unsigned>(kBytes * 8) - Bit - Width;
  static constexpr std::uint64_t kMask = Width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << Width) - 1;
  static constexpr std::size_t kEnd = Byte + kBytes;
  // The field fills its bytes: writing it needs no read of the bits around it.
  static constexpr bool kWholeBytes = Bit == 0 && kShift == 0;

  [[nodiscard]] static constexpr std::uint64_t read(const std::uint8_t* base) noexcept {
    return (detail::load_be<kBytes>(base + Byte) >> kShift) & kMask;
  }
  static constexpr void write(std::uint8_t* base, std::uint64_t raw) noexcept {
    std::uint64_t word = (raw & kMask) << kShift;
    if constexpr (!kWholeBytes) word |= detail::load_be<kBytes>(base + Byte) & ~(kMask << kShift);
    detail::store_be<kBytes>(base + Byte, word);
  }
  [[nodiscard]] static constexpr bool fits(std::uint64_t raw) noexcept { return (raw & ~kMask) == 0; }
};

// An integer, enum or bool field.
template <FieldName Name, auto Member, std::size_t Byte, unsigned Bit, unsigned Width,
          FieldCheck Check = any_value>
struct Field {
  using Bits = BitSpan<Byte, Bit, Width>;
  using Class = typename detail::MemberOf<decltype(Member)>::Class;
  using Value = typename detail::MemberOf<decltype(Member)>::Member;
  static constexpr auto kMember = Member;
  static constexpr std::size_t kEnd = Bits::kEnd;

  // The field's value straight from the wire, unchecked (see mad::peek).
  [[nodiscard]] static constexpr Value peek(const std::uint8_t* base) noexcept {
    return detail::from_raw<Value>(Bits::read(base));
  }

  static constexpr CodecStatus encode(const Class& msg, std::uint8_t* base) noexcept {
    const std::uint64_t raw = detail::to_raw(msg.*Member);
    if (!Bits::fits(raw)) return CodecStatus::fail(CodecErrc::value_too_wide, Name.view());
    if (!Check(raw)) return CodecStatus::fail(CodecErrc::invalid_value, Name.view());
    Bits::write(base, raw);
    return {};
  }
  static constexpr CodecStatus decode(const std::uint8_t* base, Class& msg) noexcept {
    const std::uint64_t raw = Bits::read(base);
    if (!Check(raw)) return CodecStatus::fail(CodecErrc::invalid_value, Name.view());
    msg.*Member = detail::from_raw<Value>(raw);
    return {};
  }
  template <typename C, typename Visitor>
  static constexpr void visit(C& msg, std::string_view prefix, std::size_t base_byte, Visitor& v) {
    v(FieldPlace{prefix, Name.view(), base_byte + Byte, Bit, Width}, msg.*Member);
  }
};

// A byte string copied verbatim: GIDs, ARI, private data. Member is a Gid or std::array<uint8_t, N>.
template <FieldName Name, auto Member, std::size_t Byte, std::size_t Length>
struct Bytes {
  using Class = typename detail::MemberOf<decltype(Member)>::Class;
  static constexpr std::size_t kEnd = Byte + Length;

  static constexpr const std::uint8_t* data(const Class& msg) noexcept {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(msg.*Member)>, Gid>) {
      return (msg.*Member).raw.data();
    } else {
      return (msg.*Member).data();
    }
  }
  static constexpr std::uint8_t* data(Class& msg) noexcept {
    return const_cast<std::uint8_t*>(data(static_cast<const Class&>(msg)));  // NOLINT
  }
  static_assert(sizeof(typename detail::MemberOf<decltype(Member)>::Member) == Length,
                "the member holds exactly the field's bytes");

  static constexpr CodecStatus encode(const Class& msg, std::uint8_t* base) noexcept {
    std::copy_n(data(msg), Length, base + Byte);
    return {};
  }
  static constexpr CodecStatus decode(const std::uint8_t* base, Class& msg) noexcept {
    std::copy_n(base + Byte, Length, data(msg));
    return {};
  }
  template <typename C, typename Visitor>
  static constexpr void visit(C& msg, std::string_view prefix, std::size_t base_byte, Visitor& v) {
    v(FieldPlace{prefix, Name.view(), base_byte + Byte, 0, static_cast<unsigned>(Length * 8)},
      msg.*Member);
  }
};

// The fields of one struct, placed relative to a base byte. Used for whole messages (base = the CM
// data after the MAD header) and for groups repeated inside a message (REQ's primary and alternate
// paths share one GroupLayout at two bases).
template <typename... Fields>
struct FieldList {
  static constexpr std::size_t kEnd = std::max({std::size_t{0}, Fields::kEnd...});

  template <typename Msg>
  static constexpr CodecStatus encode(const Msg& msg, std::uint8_t* base) noexcept {
    CodecStatus status;
    // Short-circuits on the first failing field so the error names it.
    (void)((status = Fields::encode(msg, base), status.ok()) && ...);
    return status;
  }
  template <typename Msg>
  static constexpr CodecStatus decode(const std::uint8_t* base, Msg& msg) noexcept {
    CodecStatus status;
    (void)((status = Fields::decode(base, msg), status.ok()) && ...);
    return status;
  }
  template <typename Msg, typename Visitor>
  static constexpr void visit(Msg& msg, std::string_view prefix, std::size_t base_byte, Visitor& v) {
    (Fields::visit(msg, prefix, base_byte, v), ...);
  }
};

// A nested struct member whose fields (List) start at byte Byte of the enclosing layout.
template <FieldName Prefix, auto Member, std::size_t Byte, typename List>
struct Group {
  using Class = typename detail::MemberOf<decltype(Member)>::Class;
  static constexpr std::size_t kEnd = Byte + List::kEnd;

  static constexpr CodecStatus encode(const Class& msg, std::uint8_t* base) noexcept {
    return with_prefix(List::encode(msg.*Member, base + Byte));
  }
  static constexpr CodecStatus decode(const std::uint8_t* base, Class& msg) noexcept {
    return with_prefix(List::decode(base + Byte, msg.*Member));
  }
  template <typename C, typename Visitor>
  static constexpr void visit(C& msg, std::string_view, std::size_t base_byte, Visitor& v) {
    List::visit(msg.*Member, Prefix.view(), base_byte + Byte, v);
  }

 private:
  static constexpr CodecStatus with_prefix(CodecStatus s) noexcept {
    if (!s.ok()) s.group = Prefix.view();
    return s;
  }
};

}  // namespace fastcm::mad
