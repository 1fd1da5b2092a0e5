// Parsing a closed enum from the name its to_string() gives. One helper instead of a hand-written
// table per enum, so a value added to an enum is parsed as soon as it has a name.
#pragma once

#include <optional>
#include <string_view>

namespace lathe {

// `last` is the enum's last enumerator; values are assumed contiguous from 0 (every closed set in
// core/ is declared that way).
template <class E>
std::optional<E> parse_enum(std::string_view name, E last) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    const E e = static_cast<E>(i);
    if (std::string_view(to_string(e)) == name) return e;
  }
  return std::nullopt;
}

}  // namespace lathe
