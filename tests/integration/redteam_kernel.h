// The header of a red-team kernel (tests/integration/hostile, tests/gpu/redteam): what it is
// evaluated on and what it must get, from its leading `// key: value` lines.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lathe::testing {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The value of `// <key>: value` in the kernel's leading comment, or "".
inline std::string header(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  const std::string tag = "// " + key + ": ";
  for (std::string line; std::getline(in, line) && line.rfind("//", 0) == 0;)
    if (line.rfind(tag, 0) == 0) return line.substr(tag.size());
  return "";
}

inline bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// `// expect: a|b [no-speedup]`: the outcomes allowed, and whether a decided speedup is refused.
struct expectation {
  std::vector<std::string> outcomes;
  bool no_speedup = false;
};
inline expectation expected(const std::string& text) {
  const std::vector<std::string> parts = split(header(text, "expect"), ' ');
  return {split(parts.front(), '|'), parts.size() > 1 && parts[1] == "no-speedup"};
}

}  // namespace lathe::testing
