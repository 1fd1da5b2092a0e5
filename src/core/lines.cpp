#include "core/lines.h"

namespace lathe {

std::vector<std::string_view> split_lines(std::string_view text, carriage_return cr) {
  std::vector<std::string_view> out;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (cr == carriage_return::dropped && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = end + 1;
  }
  return out;
}

}  // namespace lathe
