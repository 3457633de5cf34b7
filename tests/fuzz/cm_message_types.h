// Every CM message type of the codec, for fuzz code that must cover each of them. The list is the
// codec's own (the alternatives of mad::AnyMessage), so a new message is covered without edits.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>

#include "engine/mad/codec.h"

namespace fastcm::fuzz {

// Calls f(std::type_identity<M>{}) for each message type M of mad::AnyMessage, in variant order.
template <typename F>
constexpr void for_each_message_type(F&& f) {
  [&f]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::type_identity<std::variant_alternative_t<I, mad::AnyMessage>>{}), ...);
  }(std::make_index_sequence<std::variant_size_v<mad::AnyMessage>>{});
}

// The CM class's methods, so callers can pick the ones mad::method_allowed accepts.
inline constexpr std::array<mad::Method, 4> kMethods = {mad::Method::get, mad::Method::set,
                                                        mad::Method::send, mad::Method::get_resp};

// The first method of kMethods that mad::method_allowed accepts for `attr` (every chapter-12
// attribute has one).
[[nodiscard]] constexpr mad::Method first_allowed_method(mad::AttrId attr) noexcept {
  for (const mad::Method m : kMethods) {
    if (mad::method_allowed(attr, m)) return m;
  }
  return mad::Method::send;
}

}  // namespace fastcm::fuzz
