// Citation verification for audit_features (agent/audit.h).
#include "agent/audit.h"
#include "core/lines.h"

#include <cctype>

namespace lathe::agent {

namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Whether one line holds code, carrying the state that spans lines: inside a block comment, or
// inside a raw string (`raw_end` is its closing `)delim"`).
bool line_has_code(std::string_view line, bool& in_block, std::string& raw_end) {
  bool code = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const bool next_is = i + 1 < line.size();
    if (!raw_end.empty()) {  // a raw string's text is code, whatever it looks like
      code = true;
      if (line.compare(i, raw_end.size(), raw_end) == 0) {
        i += raw_end.size() - 1;
        raw_end.clear();
      }
    } else if (in_block) {
      if (c == '*' && next_is && line[i + 1] == '/') in_block = false, ++i;
    } else if (c == '/' && next_is && line[i + 1] == '/') {
      break;  // the rest of the line is comment
    } else if (c == '/' && next_is && line[i + 1] == '*') {
      in_block = true;
      ++i;
    } else if (c == 'R' && next_is && line[i + 1] == '"' &&
               (i == 0 || !ident_char(line[i - 1]) || line[i - 1] == 'u' || line[i - 1] == 'U' ||
                line[i - 1] == 'L' || line[i - 1] == '8')) {
      code = true;
      const size_t open = line.find('(', i + 2);
      if (open == std::string_view::npos) continue;  // not a raw string after all
      raw_end = ")" + std::string(line.substr(i + 2, open - i - 2)) + "\"";
      i = open;
    } else if (c == '"' || c == '\'') {
      // An ordinary literal ends on its line. A digit separator (1'000) opens a "literal" that
      // swallows the rest of the line: that line holds code already, so no harm is done.
      code = true;
      for (++i; i < line.size() && line[i] != c; ++i)
        if (line[i] == '\\') ++i;
    } else if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v') {
      code = true;
    }
  }
  return code;
}

}  // namespace

std::vector<bool> code_lines(std::string_view src) {
  std::vector<bool> out{false};
  bool in_block = false;
  std::string raw_end;
  for (std::string_view line : split_lines(src)) out.push_back(line_has_code(line, in_block, raw_end));
  return out;
}

std::optional<std::string> citation_problem(const kernel_bundle& k, const citation& c) {
  const std::string where = c.file + ":" + std::to_string(c.first) + "-" + std::to_string(c.last);
  auto it = k.sources.find(c.file);
  if (it == k.sources.end())
    return "cites " + where + ", but '" + c.file + "' is not a file of the kernel";
  const std::vector<bool> code = code_lines(it->second);
  const int32_t count = static_cast<int32_t>(code.size()) - 1;
  if (c.first < 1 || c.last < c.first || c.last > count)
    return "cites " + where + ", outside " + c.file + "'s lines 1-" + std::to_string(count);
  if (c.last - c.first + 1 > max_citation_lines)
    return "cites " + where + ": " + std::to_string(c.last - c.first + 1) + " lines, more than " +
           std::to_string(max_citation_lines);
  for (int32_t l = c.first; l <= c.last; ++l)
    if (code[static_cast<size_t>(l)]) return std::nullopt;
  return "cites " + where +
         ", which holds only comments or blank lines (comments are not evidence)";
}

audit_result verify_audit(const kernel_bundle& k, const std::vector<std::string>& asked,
                          const std::vector<feature_verdict>& given) {
  audit_result out;
  for (const auto& name : asked) {
    const feature_verdict* v = nullptr;
    for (const auto& g : given)
      if (g.name == name) {
        v = &g;
        break;
      }
    if (!v) {
      out.verdicts.push_back({name, presence::unknown, "", {}, "no verdict was given"});
      continue;
    }
    feature_verdict checked = *v;
    std::vector<std::string> problems;
    for (const auto& c : v->citations)
      if (auto p = citation_problem(k, c)) problems.push_back(*p);
    if (problems.empty() && v->status == presence::present && v->citations.empty())
      problems.push_back("says present without citing a line of code");
    if (!problems.empty()) {
      std::string why;
      for (const auto& p : problems) why += (why.empty() ? "" : "; ") + p;
      checked.status = presence::unknown;
      checked.note =
          "demoted by lathe: " + why + (v->note.empty() ? "" : " (model: " + v->note + ")");
      out.demoted.push_back(name + ": " + why);
    }
    out.verdicts.push_back(std::move(checked));
  }
  return out;
}

}  // namespace lathe::agent
