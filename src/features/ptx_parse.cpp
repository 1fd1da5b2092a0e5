// PTX text as functions of instructions (ptx_parse.h).
#include "features/ptx_parse.h"

#include <algorithm>

#include "features/detect.h"
#include "features/detect_util.h"
#include "core/lines.h"

namespace lathe::agent::rules::detail::ptx {
namespace {

// Removes // and /* */ comments; a PTX string literal never holds either in nvcc output.
std::string strip_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      if (i < text.size()) out += '\n';
    } else if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n') out += '\n';  // keep line numbers
        ++i;
      }
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

// `.entry NAME(`, `.func (.param .b32 r) NAME(`: the symbol, or empty.
std::string header_symbol(std::string_view line) {
  size_t p = line.find(".entry");
  size_t skip = 6;
  if (p == std::string_view::npos) {
    p = line.find(".func");
    skip = 5;
  }
  if (p == std::string_view::npos) return {};
  std::string_view rest = trim(line.substr(p + skip));
  if (!rest.empty() && rest.front() == '(') {  // return value list
    const size_t close = rest.find(')');
    if (close == std::string_view::npos) return {};
    rest = trim(rest.substr(close + 1));
  }
  size_t end = 0;
  while (end < rest.size() && rest[end] != '(' && rest[end] != ' ' && rest[end] != '\t' &&
         rest[end] != ';')
    ++end;
  return std::string(rest.substr(0, end));
}

}  // namespace

std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.emplace_back(trim(cur));
  return out;
}

std::vector<function> parse_ptx(std::string_view ptx) {
  const std::string clean = strip_comments(ptx);
  const auto lines = lathe::split_lines(clean, carriage_return::dropped);
  std::vector<function> out;
  function pending;
  bool have_pending = false;
  bool in_body = false;  // inside the body of out.back()
  int depth = 0;         // brace depth; 1 = a function body
  for (size_t li = 0; li < lines.size(); ++li) {
    const int32_t line_no = static_cast<int32_t>(li + 1);
    std::string_view line = trim(lines[li]);
    if (line.empty()) continue;
    if (depth == 0) {
      if (std::string sym = header_symbol(line); !sym.empty()) {
        pending = function{};
        pending.name = short_function_name(sym);
        have_pending = true;
      } else if (have_pending && line.starts_with(".")) {
        pending.directives.emplace_back(std::string(line), line_no);
      }
      if (have_pending && line.find(';') != std::string_view::npos &&
          line.find('{') == std::string_view::npos && !line.starts_with(".maxntid") &&
          !line.starts_with(".minnctapersm") && !line.starts_with(".reqntid") &&
          !line.starts_with(".maxnreg")) {
        have_pending = false;  // a prototype (`.extern .func f(…);`), no body
      }
    }
    // Statements of the line: `;` ends one; braces open and close bodies and inline asm scopes.
    std::string cur;
    auto flush = [&] {
      const std::string stmt = std::move(cur);
      cur.clear();
      std::string_view s = trim(stmt);
      if (!in_body || s.empty() || s.front() == '.' || s.back() == ':') return;  // directive, label
      if (s.front() == '@') {                                                    // guard predicate
        const size_t sp = s.find_first_of(" \t");
        if (sp == std::string_view::npos) return;
        s = trim(s.substr(sp));
      }
      const size_t sp = s.find_first_of(" \t");
      insn in;
      in.op = std::string(s.substr(0, sp));
      if (sp != std::string_view::npos) in.operands = split_operands(s.substr(sp));
      in.line = line_no;
      in.text = std::string(s);
      out.back().body.push_back(std::move(in));
    };
    for (char c : line) {
      if (c == '{' && cur.find_first_not_of(" \t") == std::string::npos) {
        if (depth == 0 && have_pending) {
          out.push_back(std::move(pending));
          have_pending = false;
          in_body = true;
        }
        ++depth;
      } else if (c == '}' && depth > 0) {
        // A closing brace of a vector operand never reaches here: operands are inside `cur`.
        if (cur.find('{') != std::string::npos &&
            std::count(cur.begin(), cur.end(), '{') > std::count(cur.begin(), cur.end(), '}')) {
          cur += c;
          continue;
        }
        flush();
        if (--depth == 0) in_body = false;
      } else if (c == ';') {
        flush();
      } else {
        cur += c;
      }
    }
    flush();
  }
  return out;
}

}  // namespace lathe::agent::rules::detail::ptx
