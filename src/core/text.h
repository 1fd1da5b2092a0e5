// Small string helpers every layer wanted its own copy of.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lathe {

// The items with `sep` between them. The separator is skipped while the result is still empty,
// so leading empty items leave no separator behind.
inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out.append(sep);
    out += s;
  }
  return out;
}

// Concatenation through append, without `"literal" + std::string&&`, which trips g++ 12's
// -Wrestrict false positive.
template <class... T>
std::string cat(const T&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

}  // namespace lathe
