// Structure (structure.h): the declarations of a file — namespaces, extern "C" blocks, classes,
// functions and their parameters — and the names (loci, anchors) of what was read. Function
// bodies are read by statements.cpp.
#include "source/structure.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "source/code_view.h"
#include "source/structure_reader.h"
#include "core/text.h"

namespace lathe::agent::rules {

namespace detail {

namespace {

}  // namespace

// The keyword tables of structure_reader.h.
const std::set<std::string_view> kNotCallees = {"if",
                                                "for",
                                                "while",
                                                "switch",
                                                "catch",
                                                "return",
                                                "sizeof",
                                                "alignof",
                                                "alignas",
                                                "decltype",
                                                "noexcept",
                                                "typeid",
                                                "static_assert",
                                                "__launch_bounds__",
                                                "__attribute__",
                                                "__align__",
                                                "__declspec",
                                                "asm",
                                                "__asm__",
                                                "__asm",
                                                "volatile",
                                                "__volatile__",
                                                "defined",
                                                "_Pragma",
                                                "throw",
                                                "co_await",
                                                "requires",
                                                "operator",
                                                "static_cast",
                                                "reinterpret_cast",
                                                "const_cast",
                                                "dynamic_cast",
                                                "int",
                                                "float",
                                                "double",
                                                "char",
                                                "bool",
                                                "short",
                                                "long",
                                                "unsigned",
                                                "signed",
                                                "void",
                                                "auto",
                                                "new",
                                                "delete",
                                                "case",
                                                "do",
                                                "else",
                                                "using",
                                                "typedef",
                                                "typename",
                                                "template",
                                                "sizeof...",
                                                "__builtin_offsetof",
                                                "__restrict__"};

const std::set<std::string_view> kExprKeywords = {
    "return",   "else", "case",     "new", "delete", "throw", "co_return", "co_yield",
    "co_await", "do",   "template", "not", "and",    "or",    "goto"};

const std::set<std::string_view> kTypeWords = {
    "const",  "volatile", "__restrict__", "__restrict", "restrict",   "unsigned", "signed",  "int",
    "float",  "double",   "char",         "bool",       "short",      "long",     "void",    "auto",
    "struct", "class",    "enum",         "typename",   "__shared__", "size_t",   "register"};

const std::set<std::string_view> kFunctionQualifiers = {
    "__global__", "__device__", "__host__", "__forceinline__", "__noinline__",
    "__inline__", "static",     "inline",   "extern",          "constexpr",
    "consteval",  "constinit",  "virtual",  "explicit",        "friend"};

const std::set<std::string_view> kAfterParams = {
    "{",     "const", "volatile", "&",     "&&",       "noexcept",      "override",
    "final", "->",    ":",        "throw", "requires", "__attribute__", "mutable",
    "try",   "["};

structure analyzer::run() {
  region(0, code_.size(), false);
  name_functions();
  return std::move(st_);
}

// ---- declarations ------------------------------------------------------------------------

// Reads declarations in code positions [b, e): namespace bodies, extern "C" blocks and class
// bodies are read recursively; function bodies are searched for loops, calls and launches.
void analyzer::region(size_t b, size_t e, bool c_linkage) {
  size_t stmt = b;
  for (size_t p = b; p < e;) {
    if (is(p, ";")) {
      stmt = ++p;
    } else if (is(p, ":") && p > stmt &&
               (word(p - 1, "public") || word(p - 1, "private") || word(p - 1, "protected"))) {
      stmt = ++p;
    } else if (is(p, "(") || is(p, "[")) {
      long m = match(p);
      // An unmatched bracket (a dead `#if 0` branch, broken code) ends the statement: what
      // follows it is read afresh.
      if (m < 0) stmt = p + 1;
      p = m < 0 ? p + 1 : static_cast<size_t>(m) + 1;
    } else if (is(p, "{")) {
      long m = match(p);
      if (m < 0 || static_cast<size_t>(m) >= e) {
        stmt = ++p;
        continue;
      }
      p = brace(stmt, p, static_cast<size_t>(m), c_linkage);
      stmt = p;
    } else {
      ++p;
    }
  }
}

// A `{` at declaration level: returns where reading continues.
size_t analyzer::brace(size_t stmt, size_t open, size_t close, bool c_linkage) {
  bool ns = false, cls = false, en = false;
  for (size_t q = stmt; q < open; ++q) {
    if (word(q, "namespace")) ns = true;
    if (word(q, "class") || word(q, "struct") || word(q, "union")) cls = true;
    if (word(q, "enum")) en = true;
    if (is(q, "(") || is(q, "[")) {
      long m = match(q);
      if (m > 0) q = static_cast<size_t>(m);
    }
  }
  const bool extern_c =
      open >= 2 && kind(open - 1) == token_kind::string && word(open - 2, "extern");
  if (ns || extern_c) {
    region(open + 1, close, c_linkage || extern_c);
    return close + 1;
  }
  if (std::optional<size_t> end = try_function(stmt, open, c_linkage)) return *end;
  if (cls && !en) region(open + 1, close, false);
  return close + 1;
}

// The name before the `(` at q, as the code position of its first token; nullopt if the
// parenthesis is not preceded by a function name.
std::optional<size_t> analyzer::name_start(size_t q, size_t floor) const {
  if (q == 0 || q - 1 < floor) return std::nullopt;
  size_t s = q - 1;
  // operator(), operator[], operator+=, operator new: `operator` up to 3 tokens back.
  bool op = false;
  for (size_t k = 1; k <= 3 && k <= q - floor && !op; ++k)
    if (word(q - k, "operator")) s = q - k, op = true;
  if (!op && (!ident(s) || kNotCallees.count(text(s)) || kFunctionQualifiers.count(text(s))))
    return std::nullopt;
  if (s > floor && is(s - 1, "~")) --s;
  while (s >= floor + 2 && is(s - 1, "::") && ident(s - 2)) s -= 2;
  if (s > floor && is(s - 1, "::")) --s;  // ::f, global scope
  return s;
}

std::optional<size_t> analyzer::try_function(size_t stmt, size_t open, bool c_linkage) {
  // The parameter list: the last `( … )` at this level whose `(` follows a name and whose `)`
  // is followed by the body or by what may come between (`__launch_bounds__(…)` fails the
  // second test, `f(x)` inside `noexcept(f(x))` is not at this level).
  std::optional<size_t> lp, nm;
  for (size_t q = stmt; q < open; ++q) {
    if (!is(q, "(") && !is(q, "[")) continue;
    long m = match(q);
    if (m < 0 || static_cast<size_t>(m) >= open) return std::nullopt;
    if (is(q, "(")) {
      std::optional<size_t> s = name_start(q, stmt);
      const size_t f = static_cast<size_t>(m) + 1;
      if (s &&
          (f == open || kAfterParams.count(text(f)) || (ident(f) && text(f).starts_with("__"))))
        lp = q, nm = s;
    }
    q = static_cast<size_t>(m);
  }
  if (!lp) return std::nullopt;
  const size_t rp = static_cast<size_t>(match(*lp));
  // No `=` before the name at this level (`auto x = f(y) {…}` is no definition); a template
  // header's default arguments do not count.
  for (size_t q = stmt; q < *nm; ++q) {
    if (word(q, "template") && is(q + 1, "<"))
      if (std::optional<size_t> gt = angle_close(q + 1, *nm, false)) q = *gt;
    if (is(q, "=")) return std::nullopt;
  }
  size_t body = open;
  // A constructor's initializer list: `: a(x), b{y} {` — the `{` we were given may be `b{`.
  for (size_t q = rp + 1; q < open; ++q) {
    if (is(q, "(") || is(q, "[")) {
      q = static_cast<size_t>(std::max(match(q), static_cast<long>(q)));
      continue;
    }
    if (is(q, ":")) {
      std::optional<size_t> b = init_list_body(q);
      if (!b) return std::nullopt;
      body = *b;
      break;
    }
  }
  const long close = match(body);
  if (close < 0) return std::nullopt;

  function f;
  f.name_token = code_[*lp - 1];
  std::vector<size_t> name_ps;
  for (size_t q = *nm; q < *lp; ++q) name_ps.push_back(q);
  for (size_t q : name_ps) {
    if (!f.name.empty() && word_like(kind(q)) && ident(q - 1)) f.name += ' ';
    f.name += text(q);
  }
  std::vector<size_t> result;
  for (size_t q = stmt; q < *nm; ++q) {
    if (word(q, "template") && is(q + 1, "<")) {
      std::optional<size_t> gt = angle_close(q + 1, *nm, false);
      if (!gt) return std::nullopt;
      if (f.template_header.empty()) f.template_header = span(q, *gt);
      q = *gt;
    } else if (word(q, "extern") && q + 1 < *nm && kind(q + 1) == token_kind::string) {
      f.qualifiers.push_back(cat("extern ", text(q + 1)));
      ++q;
    } else if (kFunctionQualifiers.count(text(q)) && ident(q)) {
      f.qualifiers.emplace_back(text(q));
    } else if ((word(q, "__launch_bounds__") || word(q, "__attribute__") ||
                word(q, "__declspec")) &&
               is(q + 1, "(") && match(q + 1) > 0) {
      // Kept with its arguments: `__launch_bounds__(THREADS, MIN_BLOCKS)`.
      const size_t m = static_cast<size_t>(match(q + 1));
      f.qualifiers.emplace_back(span_text(tl_, span(q, m)));
      q = m;
    } else if (is(q, "[") && is(q + 1, "[") && match(q) > 0) {  // [[nodiscard]]
      const size_t m = static_cast<size_t>(match(q));
      f.qualifiers.emplace_back(span_text(tl_, span(q, m)));
      q = m;
    } else {
      result.push_back(q);
    }
  }
  if (c_linkage &&
      std::find(f.qualifiers.begin(), f.qualifiers.end(), "extern \"C\"") == f.qualifiers.end())
    f.qualifiers.insert(f.qualifiers.begin(), "extern \"C\"");
  f.result = join(result);
  f.params_span = span(*lp, rp);
  f.params = params(*lp, rp);
  f.body = span(body, static_cast<size_t>(close));
  f.whole = span(stmt, static_cast<size_t>(close));
  f.where = tl_.tokens[f.name_token].where;
  st_.functions.push_back(std::move(f));
  scan_body(static_cast<int32_t>(st_.functions.size() - 1), body, static_cast<size_t>(close));
  return static_cast<size_t>(close) + 1;
}

// The body `{` after a constructor's initializer list starting at the `:` at c.
std::optional<size_t> analyzer::init_list_body(size_t c) const {
  size_t q = c + 1;
  for (;;) {
    while (q < n() && !is(q, "(") && !is(q, "{")) {
      if (is(q, ";") || is(q, "}")) return std::nullopt;
      ++q;
    }
    if (q >= n()) return std::nullopt;
    if (q > c + 1 && (is(q - 1, ")") || is(q - 1, "}")) && is(q, "{")) return q;  // after b{y}
    long m = match(q);
    if (m < 0) return std::nullopt;
    q = static_cast<size_t>(m) + 1;
    if (is(q, "...")) ++q;
    if (is(q, ",")) {
      ++q;
      continue;
    }
    if (is(q, "{")) return q;
    return std::nullopt;
  }
}

std::vector<param> analyzer::params(size_t lp, size_t rp) const {
  std::vector<param> out;
  auto parts = split_commas(lp, rp, true);
  if (parts.size() == 1 && parts[0].second == parts[0].first + 1 && word(parts[0].first, "void"))
    return out;  // f(void)
  for (auto [a, b] : parts) {
    if (b <= a) continue;
    param pr;
    pr.tokens = span(a, b - 1);
    size_t end = b;  // the declarator ends at a default argument
    int angle = 0;
    for (size_t q = a; q < b; ++q) {
      if (opener(q)) {
        q = static_cast<size_t>(std::max(match(q), static_cast<long>(q)));
        continue;
      }
      if (is(q, "<")) ++angle;
      if (kind(q) == token_kind::punct && angle_len(text(q)))
        angle = std::max(0, angle - angle_len(text(q)));
      if (angle == 0 && is(q, "=")) {
        end = q;
        break;
      }
    }
    // The name: the last identifier at declarator level that is not a type word, or the one
    // inside `(&acc)` / `(*fn)`; never the first word (`float*` alone is unnamed).
    constexpr size_t none = SIZE_MAX;  // (std::optional trips g++ 12's maybe-uninitialized)
    size_t name = none, star = none, first_const = none;
    bool ref = false, array_after_name = false;
    angle = 0;
    for (size_t q = a; q < end; ++q) {
      if (is(q, "<")) ++angle;
      if (kind(q) == token_kind::punct && angle_len(text(q)))
        angle = std::max(0, angle - angle_len(text(q)));
      if (angle > 0) continue;
      if (is(q, "(") && match(q) > 0 && (is(q + 1, "*") || is(q + 1, "&") || is(q + 1, "&&"))) {
        const size_t m = static_cast<size_t>(match(q));
        for (size_t k = q + 1; k < m; ++k) {
          if (is(k, "*") && star == none) star = k;
          if (is(k, "&") || is(k, "&&")) ref = true;
          if (ident(k) && !kTypeWords.count(text(k))) name = k;
        }
        q = m;
        continue;
      }
      if (is(q, "[")) {
        if (name != none && name + 1 == q) array_after_name = true;
        q = static_cast<size_t>(std::max(match(q), static_cast<long>(q)));
        continue;
      }
      if (is(q, "*") && star == none) star = q;
      if (is(q, "&") || is(q, "&&")) ref = true;
      if (word(q, "const") && first_const == none) first_const = q;
      if (ident(q) && !kTypeWords.count(text(q)) && q > a && !is(q - 1, "::")) {
        bool type_before = false;
        for (size_t k = a; k < q; ++k)
          if (!word(k, "const") && !word(k, "volatile")) type_before = true;
        if (type_before) name = q;
      }
    }
    for (size_t q = a; q < end; ++q)
      if (word(q, "__restrict__") || word(q, "__restrict") || word(q, "restrict"))
        pr.restrict = true;
    if (name != none && !is(name + 1, "::"))
      pr.name = text(name);
    else
      name = none;
    pr.pointer = star != none || (array_after_name && !ref);
    pr.is_const = first_const != none && (star == none || first_const < star);
    std::vector<size_t> type;
    for (size_t q = a; q < end; ++q)
      if (q != name) type.push_back(q);
    pr.type = join(type);
    out.push_back(std::move(pr));
  }
  return out;
}

// ---- names -------------------------------------------------------------------------------

void analyzer::name_functions() {
  auto& fs = st_.functions;
  std::vector<std::string> prefix(fs.size());
  for (size_t i = 0; i < fs.size(); ++i) {
    int count = 0, nth = 0;
    for (size_t j = 0; j < fs.size(); ++j)
      if (fs[j].name == fs[i].name) {
        ++count;
        if (j <= i) ++nth;
      }
    prefix[i] = count > 1 ? cat(fs[i].name, "#", std::to_string(nth)) : fs[i].name;
    fs[i].anchor = cat("function:", prefix[i]);
  }
  // Loops: segment = induction variable or loop<N> (N: position among the level's loops);
  // `#k` added to the anchor when siblings share a segment.
  auto& ls = st_.loops;
  std::vector<std::string> seg(ls.size()), useg(ls.size());
  for (size_t i = 0; i < ls.size(); ++i) {
    int pos = 0;
    for (size_t j = 0; j <= i; ++j)
      if (ls[j].function == ls[i].function && ls[j].parent == ls[i].parent) ++pos;
    seg[i] = ls[i].induction.empty() ? cat("loop", std::to_string(pos)) : ls[i].induction;
  }
  for (size_t i = 0; i < ls.size(); ++i) {
    int count = 0, nth = 0;
    for (size_t j = 0; j < ls.size(); ++j)
      if (ls[j].function == ls[i].function && ls[j].parent == ls[i].parent && seg[j] == seg[i]) {
        ++count;
        if (j <= i) ++nth;
      }
    useg[i] = count > 1 ? cat(seg[i], "#", std::to_string(nth)) : seg[i];
  }
  for (size_t i = 0; i < ls.size(); ++i) {
    std::string path = seg[i], upath = useg[i];
    for (int32_t p = ls[i].parent; p >= 0; p = ls[p].parent) {
      path = cat(seg[p], "/", path);
      upath = cat(useg[p], "/", upath);
    }
    ls[i].locus = cat(fs[ls[i].function].name, "/", path);
    ls[i].anchor = cat("loop:", prefix[ls[i].function], "/", upath);
  }
  for (size_t i = 0; i < st_.calls.size(); ++i) {
    call& c = st_.calls[i];
    int nth = 0;
    for (size_t j = 0; j <= i; ++j)
      if (st_.calls[j].function == c.function && st_.calls[j].name == c.name) ++nth;
    c.anchor = cat("call:", c.name, "@", prefix[c.function], "#", std::to_string(nth));
  }
  for (size_t i = 0; i < st_.launches.size(); ++i) {
    launch& l = st_.launches[i];
    int count = 0, nth = 0;
    for (size_t j = 0; j < st_.launches.size(); ++j)
      if (st_.launches[j].kernel == l.kernel) {
        ++count;
        if (j <= i) ++nth;
      }
    l.anchor =
        count > 1 ? cat("launch:", l.kernel, "#", std::to_string(nth)) : cat("launch:", l.kernel);
  }
}

}  // namespace detail

bool function::is_kernel() const {
  return std::find(qualifiers.begin(), qualifiers.end(), "__global__") != qualifiers.end();
}

std::string_view span_text(const token_list& tl, token_span s) {
  if (s.empty() || s.last > tl.tokens.size()) return {};
  const uint32_t b = tl.tokens[s.first].begin, e = tl.tokens[s.last - 1].end;
  return tl.source.substr(b, e - b);
}

structure analyze(const token_list& tokens) {
  return detail::analyzer(tokens).run();
}

int32_t function_at(const structure& st, uint32_t i) {
  for (size_t f = 0; f < st.functions.size(); ++f)
    if (st.functions[f].whole.contains(i)) return static_cast<int32_t>(f);
  return -1;
}

int32_t loop_at(const structure& st, uint32_t i) {
  int32_t best = -1;
  for (size_t l = 0; l < st.loops.size(); ++l)
    if (st.loops[l].whole.contains(i)) best = static_cast<int32_t>(l);  // later = inner
  return best;
}

branch worst_branch(const token_list& tl, token_span s) {
  branch w = branch::active;
  for (uint32_t i = s.first; i < s.last && i < tl.tokens.size(); ++i) {
    const branch b = tl.tokens[i].where;
    if (b == branch::inactive) return b;
    if (b == branch::conditional) w = b;
  }
  return w;
}

}  // namespace lathe::agent::rules
