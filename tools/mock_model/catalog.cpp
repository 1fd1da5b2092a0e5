#include "catalog.h"

#include <algorithm>
#include <regex>

#include "catalog_detail.h"
#include "source.h"

namespace lathe::mock {
namespace detail {

std::string apply_splices(std::string text, std::vector<splice> s) {
  std::sort(s.begin(), s.end(), [](const splice& a, const splice& b) { return a.begin > b.begin; });
  for (const auto& x : s) text.replace(x.begin, x.end - x.begin, x.with);
  return text;
}

std::string where(const std::string& path, const source_view& v, size_t offset) {
  return path + ":" + std::to_string(v.line_of(offset) + 1);
}

bool has_flag(const mock_bundle& b, std::string_view f) {
  return std::find(b.flags.begin(), b.flags.end(), f) != b.flags.end();
}

std::vector<pragma_line> pragmas(const source_view& v) {
  static const std::regex re(R"(^\s*#\s*pragma\s+(.*?)\s*$)");
  std::vector<pragma_line> out;
  for (size_t l = 0; l < v.line_count(); ++l) {
    const std::string line(v.code_line(l));
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back({l, m[1]});
  }
  return out;
}

// The whole line (and its '\n'), with any backslash-continued lines after it.
splice delete_line(const source_view& v, size_t l) {
  size_t last = l;
  while (last + 1 < v.line_count() && v.line(last).ends_with("\\")) ++last;
  const size_t end = v.line_end(last);
  return {v.line_start(l), end < v.text().size() ? end + 1 : end, ""};
}

const function_span* enclosing(const std::vector<function_span>& fns, size_t offset) {
  for (const auto& f : fns)
    if (offset > f.body_open && offset < f.body_close) return &f;
  return nullptr;
}

// The first loop starting after `offset` in `f`.
const loop_span* next_loop(const std::vector<loop_span>& ls, size_t offset) {
  const loop_span* best = nullptr;
  for (const auto& l : ls)
    if (l.at > offset && (!best || l.at < best->at)) best = &l;
  return best;
}

std::string locus_of(const function_span& f, const loop_span* l) {
  return l && !l->var.empty() ? f.name + "/" + l->var : f.name;
}

// A pragma already sits on the line before the loop.
bool pragma_before(const source_view& v, const loop_span& l) {
  size_t line = v.line_of(l.at);
  while (line > 0) {
    --line;
    const std::string t = trim(v.code_line(line));
    if (t.empty()) continue;
    return t.starts_with("#");
  }
  return false;
}

// `i < n`, `i <= n`, step `++i`, `i++` or `i += k`: a loop OpenMP accepts as is.
bool canonical(const loop_span& l) {
  if (l.var.empty() || !l.var_declared) return false;
  static const std::regex cond(R"(^\s*(\w+)\s*(<|<=)\s*[^<>=&|?]+$)");
  std::smatch m;
  if (!std::regex_match(l.cond, m, cond) || m[1] != l.var) return false;
  return l.step == "++" + l.var || l.step == l.var + "++" ||
         std::regex_match(l.step, std::regex("^" + l.var + R"(\s*\+=\s*\w+$)"));
}

// Scalars declared outside the loop that its body assigns, with the operator used. A body that
// returns, breaks or jumps is reported with the key "<control>".
std::map<std::string, std::set<std::string>> outer_writes(const source_view& v,
                                                          const loop_span& l) {
  const std::string body = v.code().substr(l.body_begin, l.body_end - l.body_begin);
  std::map<std::string, std::set<std::string>> out;
  for (const char* kw : {"return", "break", "goto", "throw"})
    if (!find_words(body, kw).empty()) out["<control>"].insert(kw);
  static const std::regex decl(
      R"(\b(?:float|double|int|int64_t|int32_t|uint32_t|uint64_t|size_t|auto|bool|unsigned|long|char|__m256|__m256i|__m128|float2|float4)\b[\s*&]*(?:__restrict__\s*)?([A-Za-z_]\w*))");
  std::set<std::string> declared{l.var};
  for (auto it = std::sregex_iterator(body.begin(), body.end(), decl); it != std::sregex_iterator();
       ++it) {
    declared.insert((*it)[1]);
    // `const int64_t hi = h + r - 1, wi = w + s - 1;` declares wi too.
    int depth = 0;
    for (size_t i = static_cast<size_t>(it->position() + it->length()); i < body.size(); ++i) {
      const char c = body[i];
      if (c == '(' || c == '[' || c == '{')
        ++depth;
      else if (c == ')' || c == ']' || c == '}')
        --depth;
      if (depth < 0 || (c == ';' && depth == 0)) break;
      if (c != ',' || depth != 0) continue;
      size_t b = i + 1;
      while (b < body.size() && (body[b] == ' ' || body[b] == '\n')) ++b;
      size_t e = b;
      while (e < body.size() && is_ident_char(body[e])) ++e;
      size_t after = e;
      while (after < body.size() && body[after] == ' ') ++after;
      if (e > b && after < body.size() && body[after] == '=')
        declared.insert(body.substr(b, e - b));
    }
  }
  static const std::regex assign(
      R"((^|[^\w.>\]\s])\s*([A-Za-z_]\w*)\s*(\+=|-=|\*=|/=|=(?!=)|\+\+|--))");
  static const std::regex pre(R"((\+\+|--)\s*([A-Za-z_]\w*))");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), assign);
       it != std::sregex_iterator(); ++it)
    if (!declared.count((*it)[2])) out[(*it)[2]].insert((*it)[3]);
  for (auto it = std::sregex_iterator(body.begin(), body.end(), pre); it != std::sregex_iterator();
       ++it)
    if (!declared.count((*it)[2])) out[(*it)[2]].insert((*it)[1]);
  return out;
}

change make(const char* feature, const char* verb, const std::string& path, const function_span& f,
            const loop_span* l, std::string what, std::string text) {
  change c;
  c.feature = feature;
  c.action = std::string(verb) + "_" + feature;
  c.function = f.name;
  c.locus = locus_of(f, l);
  c.what = std::move(what);
  c.path = path;
  c.text = std::move(text);
  return c;
}

std::string loop_words(const loop_span* l) {
  return l && !l->var.empty() ? "the loop over " + l->var : "the next loop";
}

}  // namespace detail

namespace {

using namespace detail;

struct entry {
  const char* feature;
  handler remove, add;
};

const entry catalog[] = {
    {"fast_math", remove_fast, add_fast},
    {"launch_bounds", remove_bounds, add_bounds},
    {"loop_unroll", remove_unroll, add_unroll},
    {"omp_parallel", remove_parallel, add_parallel},
    {"read_only_load", remove_ldg, add_ldg},
    {"restrict", remove_restrict, add_restrict},
    {"simd", remove_simd, add_simd},
};

}  // namespace

std::vector<change> catalog_changes(const mock_bundle& b, std::string_view feature, direction d) {
  std::vector<change> out;
  for (const auto& e : catalog) {
    if (feature != e.feature) continue;
    for (const auto& [path, text] : b.files) {
      const source_view v(text);
      const auto fns = functions(v);
      (d == direction::remove ? e.remove : e.add)(b, path, v, fns, out);
    }
  }
  return out;
}

std::vector<change> all_changes(const mock_bundle& b, direction d) {
  std::vector<change> out;
  for (const auto& e : catalog) {
    auto c = catalog_changes(b, e.feature, d);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

namespace {

// Every code line of `b` that `re` matches whole, inside a function: `visit(path, text, view,
// function, line, match)`.
template <class Visit>
void matching_lines(const mock_bundle& b, const std::regex& re, Visit visit) {
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    const auto fns = functions(v);
    for (size_t l = 0; l < v.line_count(); ++l) {
      const std::string line(v.code_line(l));
      std::smatch m;
      if (!std::regex_match(line, m, re)) continue;
      if (const auto* f = enclosing(fns, v.line_start(l))) visit(path, text, v, *f, l, m);
    }
  }
}

}  // namespace

std::vector<change> tuning_changes(const mock_bundle& b) {
  static const std::regex factor(R"(^(\s*#\s*pragma\s+(?:GCC\s+)?unroll)(?:\s+([0-9]+))?\s*$)");
  std::vector<change> out;
  matching_lines(b, factor, [&](const std::string& path, const std::string& text, const source_view& v,
                                const auto& f, size_t l, const std::smatch& m) {
    const auto ls = loops(v, f);
    const auto* lp = next_loop(ls, v.line_start(l));
    const std::string now = m[2].matched ? m[2].str() : "";
    for (const char* k : {"2", "4", "8", "16"}) {
      if (now == k) continue;
      out.push_back(make("loop_unroll", "tune", path, f, lp,
                         "changed the unroll factor before " + loop_words(lp) + " in " + f.name +
                             " from " + (now.empty() ? "full" : now) + " to " + k + " (" + path + ":" +
                             std::to_string(l + 1) + ")",
                         apply_splices(text, {{v.line_start(l), v.line_end(l), m[1].str() + " " + k}})));
    }
  });
  // The block size a launch names through a constant (`const int threads = 128;`), retuned to
  // another power of two: a mechanism the kernel has, retuned (adds none). A kernel whose shared
  // arrays or indexing assume the old size computes a wrong result, which the gate reports.
  static const std::regex block(
      R"(^(\s*(?:static\s+)?(?:const|constexpr)\s+(?:int|unsigned|int32_t)\s+(?:threads|THREADS|kThreads|block|BLOCK|block_size|BLOCK_SIZE)\s*=\s*)([0-9]+)(\s*;.*)$)");
  matching_lines(b, block, [&](const std::string& path, const std::string& text, const source_view& v,
                               const auto& f, size_t l, const std::smatch& m) {
    for (const char* k : {"64", "128", "256", "512"}) {
      if (m[2].str() == k) continue;
      change c = make("launch_bounds", "tune", path, f, nullptr,
                      "changed the block size in " + f.name + " from " + m[2].str() + " to " + k +
                          " threads (" + path + ":" + std::to_string(l + 1) + ")",
                      apply_splices(text, {{v.line_start(l) + static_cast<size_t>(m.position(2)),
                                            v.line_start(l) + static_cast<size_t>(m.position(2) + m.length(2)), k}}));
      c.action = "tune_block_size";
      out.push_back(std::move(c));
    }
  });
  return out;
}

mock_bundle apply_change(const mock_bundle& b, const change& c) {
  mock_bundle out = b;
  if (!c.path.empty()) out.files[c.path] = c.text;
  for (const auto& f : c.flags) {
    auto it = std::find(out.flags.begin(), out.flags.end(), f.flag);
    if (f.add && it == out.flags.end()) out.flags.push_back(f.flag);
    if (!f.add && it != out.flags.end()) out.flags.erase(it);
  }
  return out;
}

std::vector<std::string> catalog_features(direction d) {
  std::vector<std::string> out;
  for (const auto& e : catalog) {
    (void)d;
    out.push_back(e.feature);
  }
  return out;
}

}  // namespace lathe::mock
