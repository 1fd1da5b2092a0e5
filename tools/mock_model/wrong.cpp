#include "wrong.h"

#include <regex>
#include <vector>

#include "source.h"

namespace lathe::mock {
namespace {

constexpr const char* scale = " * 1.0625f";  // the store signature
constexpr const char* shift = " + 0.0625";   // the constant signature

struct target {
  std::string path;
  function_span f;
};

// Where the computation is: the function the answer touched when it is an entry point, then the
// entry points (lathe_launch, CUDA kernels), then the other functions, last defined first
// (helpers usually precede their callers, and the final stores sit late).
std::vector<target> targets(const mock_bundle& b, std::string_view prefer, bool entry_only) {
  std::vector<target> first, entries, others;
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    for (const auto& f : functions(v)) {
      if (abi_helper(v, f)) continue;
      const bool entry = f.name == "lathe_launch" || f.global;
      if (entry && f.name == prefer)
        first.push_back({path, f});
      else if (entry)
        entries.push_back({path, f});
      else
        others.insert(others.begin(), {path, f});
    }
  }
  first.insert(first.end(), entries.begin(), entries.end());
  if (!entry_only) first.insert(first.end(), others.begin(), others.end());
  return first;
}

std::string at(const std::string& path, const source_view& v, size_t offset) {
  return path + ":" + std::to_string(v.line_of(offset) + 1);
}

wrong_edit insert(wrong_kind k, const std::string& path, const source_view& v, size_t pos,
                  std::string what, size_t replace_len = 0, std::string with = " - 1") {
  wrong_edit w;
  w.kind = k;
  w.path = path;
  w.text = v.text();
  w.text.replace(pos, replace_len, with);
  w.where = at(path, v, pos);
  w.what = std::move(what);
  return w;
}

// The end of the right-hand side of a simple comparison `a < n` / `a >= n` (n a name, number or
// member), or npos.
size_t simple_bound_end(const std::string& code, size_t begin, size_t end, bool guard) {
  const std::string term = code.substr(begin, end - begin);
  static const std::regex loop_cond(R"(^\s*\w+\s*(<|<=)\s*[A-Za-z_0-9.]+(?:->\w+)?\s*$)");
  static const std::regex guard_cond(R"(^\s*[^<>]*?\s*(>=|<)\s*[A-Za-z_0-9.]+(?:->\w+)?\s*$)");
  if (!std::regex_match(term, guard ? guard_cond : loop_cond)) return std::string::npos;
  size_t e = end;
  while (e > begin && (code[e - 1] == ' ' || code[e - 1] == '\t')) --e;
  return e;
}

std::optional<wrong_edit> bound(const target& t, const mock_bundle& b) {
  const source_view v(b.files.at(t.path));
  const std::string& code = v.code();
  if (t.f.global) {
    // The index guard: `if (i >= n) return;` or `if (i < n) …`, first comparison only.
    for (size_t kw : find_words(code, "if", t.f.body_open, t.f.body_close)) {
      size_t open = kw + 2;
      while (open < code.size() && code[open] == ' ') ++open;
      if (open >= code.size() || code[open] != '(') continue;
      const size_t close = match_close(code, open);
      if (close == std::string::npos) continue;
      size_t term_end = close;
      for (const char* op : {"||", "&&"}) {
        const size_t p = code.find(op, open);
        if (p != std::string::npos && p < term_end) term_end = p;
      }
      const size_t e = simple_bound_end(code, open + 1, term_end, true);
      if (e == std::string::npos) continue;
      return insert(wrong_kind::bound, t.path, v, e,
                    "index guard of " + t.f.name + " one short: `" +
                        trim(code.substr(open + 1, e - open - 1)) + " - 1`");
    }
  }
  for (const auto& l : loops(v, t.f)) {
    if (l.depth != 0) continue;
    // The condition is the header's second part.
    int depth = 0;
    size_t first = std::string::npos, second = std::string::npos;
    for (size_t i = l.header_open + 1; i < l.header_close; ++i) {
      if (code[i] == '(' || code[i] == '[')
        ++depth;
      else if (code[i] == ')' || code[i] == ']')
        --depth;
      else if (code[i] == ';' && depth == 0)
        (first == std::string::npos ? first : second) = i;
    }
    if (second == std::string::npos) continue;
    const size_t e = simple_bound_end(code, first + 1, second, false);
    if (e == std::string::npos) continue;
    return insert(wrong_kind::bound, t.path, v, e,
                  "outer loop of " + t.f.name + " one short: `" +
                      trim(code.substr(first + 1, e - first - 1)) + " - 1`");
  }
  return std::nullopt;
}

std::optional<wrong_edit> store(const target& t, const mock_bundle& b) {
  const source_view v(b.files.at(t.path));
  static const std::regex re(
      R"(([A-Za-z_]\w*\s*\[[^\]]*\](?:\s*\[[^\]]*\])*\s*)(\+=|-=|\*=|/=|=(?!=))\s*([^;]+?)\s*;)");
  std::optional<wrong_edit> last;
  for (size_t l = v.line_of(t.f.body_open); l <= v.line_of(t.f.body_close); ++l) {
    const std::string line(v.code_line(l));
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    const size_t rhs = v.line_start(l) + static_cast<size_t>(m.position(3));
    if (rhs <= t.f.body_open || rhs >= t.f.body_close) continue;
    const std::string expr = v.text().substr(rhs, static_cast<size_t>(m.length(3)));
    last = insert(wrong_kind::store, t.path, v, rhs,
                  "store scaled by 1.0625 in " + t.f.name + ": `" + trim(m[1].str()) + " " +
                      m[2].str() + " (" + expr + ")" + scale + "`",
                  expr.size(), "(" + expr + ")" + scale);
  }
  return last;
}

std::optional<wrong_edit> constant(const target& t, const mock_bundle& b) {
  const source_view v(b.files.at(t.path));
  const std::string& code = v.shape();  // preprocessor lines blanked
  static const std::regex lit(R"([0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?[fF]?)");
  const auto ls = loops(v, t.f);
  const std::string body = code.substr(t.f.body_open, t.f.body_close - t.f.body_open);
  for (auto it = std::sregex_iterator(body.begin(), body.end(), lit); it != std::sregex_iterator();
       ++it) {
    const size_t pos = t.f.body_open + static_cast<size_t>(it->position());
    if (pos > 0 && (is_ident_char(code[pos - 1]) || code[pos - 1] == '.')) continue;
    bool in_header = false;
    for (const auto& l : ls) in_header = in_header || (pos > l.header_open && pos < l.header_close);
    if (in_header) continue;
    const std::string value = it->str();
    const bool single = value.back() == 'f' || value.back() == 'F';
    const std::string with = "(" + value + shift + (single ? "f" : "") + ")";
    return insert(wrong_kind::constant, t.path, v, pos,
                  "constant " + value + " of " + t.f.name + " perturbed to `" + with + "`",
                  value.size(), with);
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(wrong_kind k) {
  switch (k) {
    case wrong_kind::bound:
      return "bound";
    case wrong_kind::store:
      return "store";
    case wrong_kind::constant:
      return "constant";
  }
  return "?";
}

std::optional<wrong_kind> parse_wrong_kind(std::string_view s) {
  for (auto k : {wrong_kind::bound, wrong_kind::store, wrong_kind::constant})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

std::optional<wrong_edit> make_wrong(const mock_bundle& b, std::string_view prefer,
                                     std::optional<wrong_kind> only, stream& s) {
  std::vector<wrong_edit> options;
  // A slip in the output loop of the entry point is certain to show; in a helper it may not.
  for (const auto& t : targets(b, prefer, true))
    if (auto w = bound(t, b)) {
      options.push_back(*w);
      break;
    }
  for (const auto& t : targets(b, prefer, false))
    if (auto w = store(t, b)) {
      options.push_back(*w);
      break;
    }
  for (const auto& t : targets(b, prefer, false))
    if (auto w = constant(t, b)) {
      options.push_back(*w);
      break;
    }
  if (options.empty()) return std::nullopt;
  if (only)
    for (const auto& o : options)
      if (o.kind == *only) return o;
  return options[s.below(options.size())];
}

std::optional<wrong_edit> undo_wrong(const mock_bundle& b) {
  // store: `(expr) * 1.0625f` -> expr
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    const std::string& code = v.code();
    for (size_t p = code.find(scale); p != std::string::npos; p = code.find(scale, p + 1)) {
      if (p == 0 || code[p - 1] != ')') continue;
      int depth = 0;
      size_t open = std::string::npos;
      for (size_t i = p; i-- > 0;) {
        if (code[i] == ')')
          ++depth;
        else if (code[i] == '(' && --depth == 0) {
          open = i;
          break;
        }
      }
      if (open == std::string::npos) continue;
      const std::string inner = text.substr(open + 1, p - 1 - open - 1);
      return insert(wrong_kind::store, path, v, open, "removed the scale of a store",
                    p + std::string_view(scale).size() - open, inner);
    }
  }
  // constant: `(1.0f + 0.0625f)` -> 1.0f
  static const std::regex shifted(
      R"(\(([0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?[fF]?) \+ 0\.0625[fF]?\))");
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    std::smatch m;
    if (std::regex_search(v.code(), m, shifted))
      return insert(wrong_kind::constant, path, v, static_cast<size_t>(m.position(0)),
                    "restored the constant " + m[1].str(), static_cast<size_t>(m.length(0)),
                    m[1].str());
  }
  // bound: `< n - 1` in a loop condition or a guard -> `< n`
  static const std::regex shortened(R"((<|<=|>=)\s*[A-Za-z_0-9.]+(?:->\w+)?( - 1)\b)");
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    for (size_t l = 0; l < v.line_count(); ++l) {
      const std::string line(v.code_line(l));
      if (find_words(line, "for").empty() && find_words(line, "if").empty()) continue;
      std::smatch m;
      if (!std::regex_search(line, m, shortened)) continue;
      return insert(wrong_kind::bound, path, v,
                    v.line_start(l) + static_cast<size_t>(m.position(2)),
                    "restored the bound `" + m[0].str().substr(0, m[0].length() - 4) + "`", 4, "");
    }
  }
  return std::nullopt;
}

}  // namespace lathe::mock
