#include "py_problem.h"

#include <regex>

#include "prompt_reader.h"
#include "source.h"

namespace lathe::mock {
namespace {

using lines_t = std::vector<std::string>;

// For each line, whether it starts inside a triple-quoted string: a module's docstring, or an
// extension's C++ source in r"""…""", whose lines at column 0 are not Python's top level.
std::vector<bool> starts_in_string(const lines_t& lines) {
  std::vector<bool> out(lines.size(), false);
  std::string open;  // the triple quote we are inside, or ""
  for (size_t i = 0; i < lines.size(); ++i) {
    out[i] = !open.empty();
    const std::string& l = lines[i];
    for (size_t k = 0; k < l.size(); ++k) {
      if (!open.empty()) {
        if (l.compare(k, 3, open) == 0) {
          open.clear();
          k += 2;
        }
        continue;
      }
      const char c = l[k];
      if (c == '#') break;
      if (c != '"' && c != '\'') continue;
      if (l.compare(k, 3, std::string(3, c)) == 0) {
        open = std::string(3, c);
        k += 2;
        continue;
      }
      // A one-line string: skip to its closing quote.
      for (++k; k < l.size() && l[k] != c; ++k)
        if (l[k] == '\\') ++k;
    }
  }
  return out;
}

size_t indent_of(const std::string& l) {
  size_t n = 0;
  while (n < l.size() && (l[n] == ' ' || l[n] == '\t')) ++n;
  return n;
}

bool blank(const std::string& l) {
  return trim(l).empty();
}

bool comment(const std::string& l) {
  const std::string t = trim(l);
  return !t.empty() && t[0] == '#';
}

// One past the last line of the block opened at `at` (a `class`/`def` line): the next code line,
// outside a string, indented no deeper than the opener. Trailing blank lines are left out.
size_t block_end(const lines_t& lines, const std::vector<bool>& in_string, size_t at) {
  const size_t base = indent_of(lines[at]);
  int depth = 0;  // brackets still open from the header (a signature over several lines)
  size_t j = at;
  for (; j < lines.size(); ++j) {
    if (j > at && depth == 0 && !in_string[j] && !blank(lines[j]) && !comment(lines[j]) &&
        indent_of(lines[j]) <= base)
      break;
    if (in_string[j]) continue;
    for (char c : lines[j]) {
      if (c == '#') break;
      depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
    }
    if (depth < 0) depth = 0;
  }
  while (j > at + 1 && blank(lines[j - 1])) --j;
  return j;
}

std::string join(const lines_t& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < lines.size(); ++i) out.append(lines[i]).push_back('\n');
  return out;
}

// The line opening `head` (e.g. "class ModelNew") at indentation `indent`, outside strings,
// within [from, to); npos when none.
size_t find_opener(const lines_t& lines, const std::vector<bool>& in_string, const std::regex& head,
                   size_t from, size_t to) {
  for (size_t i = from; i < to && i < lines.size(); ++i)
    if (!in_string[i] && std::regex_search(lines[i], head)) return i;
  return std::string::npos;
}

// A line without its comment (a '#' outside the line's one-line strings).
std::string strip_comment(const std::string& l) {
  char quote = 0;
  for (size_t k = 0; k < l.size(); ++k) {
    const char c = l[k];
    if (quote) {
      if (c == '\\') ++k;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return l.substr(0, k);
    }
  }
  return l;
}

// The logical lines of a block's body (continuations joined), docstrings and comments dropped.
lines_t statements(const lines_t& lines, const std::vector<bool>& in_string, size_t from,
                   size_t to) {
  lines_t out;
  std::string current;
  int depth = 0;
  bool string_statement = false;
  auto flush = [&] {
    const std::string t = trim(current);
    if (!t.empty() && !string_statement) out.push_back(t);
    current.clear();
    string_statement = false;
  };
  for (size_t i = from; i < to; ++i) {
    if (in_string[i]) continue;  // inside a docstring (or a string statement)
    std::string l = trim(strip_comment(lines[i]));
    if (l.empty() && depth == 0) continue;
    if (current.empty() && (l.starts_with("\"") || l.starts_with("'") || l.starts_with("r\"") ||
                            l.starts_with("r'")))
      string_statement = true;
    for (char c : l) depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
    if (depth < 0) depth = 0;
    const bool backslash = l.ends_with("\\");
    if (backslash) l.pop_back();
    current += (current.empty() ? "" : " ") + l;
    if (depth == 0 && !backslash) flush();
  }
  flush();
  return out;
}

// The parameter names of a def's signature, annotations and defaults dropped.
lines_t parameters(const std::string& signature) {
  const size_t open = signature.find('('), close = signature.rfind(')');
  lines_t out;
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string cur;
  int depth = 0;
  auto flush = [&] {
    std::string p = trim(cur);
    for (char stop : {':', '='})
      if (auto at = p.find(stop); at != std::string::npos) p = trim(p.substr(0, at));
    if (!p.empty()) out.push_back(p);
    cur.clear();
  };
  for (size_t k = open + 1; k < close; ++k) {
    const char c = signature[k];
    depth += (c == '(' || c == '[') - (c == ')' || c == ']');
    if (c == ',' && depth == 0)
      flush();
    else
      cur.push_back(c);
  }
  flush();
  return out;
}

attribute_kind kind_of(const std::string& rhs) {
  static const std::regex linear(R"(^(torch\.)?nn\.Linear\s*\()");
  static const std::regex module(R"(^(torch\.|nn\.|F\.))");
  static const std::regex call(R"(^[A-Za-z_][\w.]*\s*\()");
  if (std::regex_search(rhs, linear)) return attribute_kind::linear;
  // Anything built by a call (a layer, a parameter, a helper's result) is not a plain scalar.
  if (std::regex_search(rhs, module) || std::regex_search(rhs, call)) return attribute_kind::module;
  return attribute_kind::value;
}

}  // namespace

tl::expected<py_problem, std::string> read_problem(std::string_view file) {
  lines_t lines = split_lines(file);
  auto in_string = starts_in_string(lines);
  py_problem p;

  // Take the ModelNew out: the eager start's `class ModelNew(Model): pass` (with the comment lathe
  // puts before it), or a previous answer's whole section from the mock's marker on.
  static const std::regex modelnew_head(R"(^class\s+ModelNew\b)");
  const size_t mn = find_opener(lines, in_string, modelnew_head, 0, lines.size());
  if (mn != std::string::npos) {
    size_t start = mn;
    for (size_t i = 0; i < mn; ++i)
      if (!in_string[i] && lines[i].starts_with(modelnew_marker)) {
        start = i;
        break;
      }
    if (start == mn) {
      size_t k = mn;
      while (k > 0 && blank(lines[k - 1])) --k;
      if (k > 0 && lines[k - 1].starts_with("# lathe:")) start = k - 1;
    }
    const size_t end = block_end(lines, in_string, mn);
    lines_t after(lines.begin() + static_cast<std::ptrdiff_t>(end), lines.end());
    while (!after.empty() && blank(after.front())) after.erase(after.begin());
    while (!after.empty() && blank(after.back())) after.pop_back();
    p.after = join(after, 0, after.size());
    lines.resize(start);
  }
  while (!lines.empty() && blank(lines.back())) lines.pop_back();
  p.code = join(lines, 0, lines.size());
  in_string = starts_in_string(lines);

  static const std::regex model_head(R"(^class\s+Model\s*[(:])");
  const size_t model = find_opener(lines, in_string, model_head, 0, lines.size());
  if (model == std::string::npos) return tl::unexpected(std::string("no `class Model` in the file"));
  const size_t model_end = block_end(lines, in_string, model);

  static const std::regex init_head(R"(^\s+def\s+__init__\s*\()");
  if (const size_t init = find_opener(lines, in_string, init_head, model + 1, model_end);
      init != std::string::npos) {
    const size_t end = block_end(lines, in_string, init);
    p.init_text = join(lines, init, end);
    static const std::regex assign(R"(^self\.([A-Za-z_]\w*)\s*=(?!=)\s*(.*)$)");
    for (const auto& s : statements(lines, in_string, init + 1, end)) {
      std::smatch m;
      if (!std::regex_match(s, m, assign)) continue;
      const attribute_kind k = kind_of(trim(m[2].str()));
      const auto [it, fresh] = p.attributes.emplace(m[1].str(), k);
      if (!fresh && it->second != k) it->second = attribute_kind::module;  // unsure: not a scalar
    }
  }

  static const std::regex forward_head(R"(^\s+def\s+forward\s*\()");
  const size_t fwd = find_opener(lines, in_string, forward_head, model + 1, model_end);
  if (fwd == std::string::npos) return tl::unexpected(std::string("the Model has no forward"));
  const size_t fwd_end = block_end(lines, in_string, fwd);
  // The signature: from `def` to the line where its brackets close.
  std::string signature;
  size_t body = fwd;
  for (int depth = 0; body < fwd_end; ++body) {
    const std::string l = strip_comment(lines[body]);
    signature += l + " ";
    for (char c : l) depth += (c == '(' || c == '[') - (c == ')' || c == ']');
    if (depth <= 0 && trim(l).ends_with(":")) break;
  }
  const auto params = parameters(signature);
  if (params.size() != 2 || params[0] != "self" || params[1].starts_with("*"))
    return tl::unexpected("forward takes " + std::to_string(params.empty() ? 0 : params.size() - 1) +
                          " argument(s) besides self; the mock fuses a forward of one tensor");
  p.input = params[1];
  p.forward_body = statements(lines, in_string, body + 1, fwd_end);
  return p;
}

}  // namespace lathe::mock
