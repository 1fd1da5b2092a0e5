// Syntactic tests the catalog's rules share: names and anchors of the front end's structure,
// OpenMP-canonical `for` headers, and the scalars a loop body assigns (a carried dependence the
// tokens can show; what they cannot show is left to the gate).
#include <algorithm>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

const std::set<std::string_view> kIntTypes = {
    "int",      "long",     "unsigned", "short",   "size_t",   "ptrdiff_t", "int32_t", "int64_t",
    "uint32_t", "uint64_t", "signed",   "int16_t", "uint16_t", "std",       "::",      "const"};

// Keywords that may precede a name without declaring it.
const std::set<std::string_view> kNotTypes = {"return", "case", "else",   "do",     "goto",
                                              "throw",  "new",  "delete", "sizeof", "co_return"};

const std::set<std::string_view> kAssignOps = {
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};

}  // namespace

std::string func_ref(const function& f) {
  return f.anchor.substr(f.anchor.find(':') + 1);
}

std::string loop_ref(const loop& l) {
  return l.anchor.substr(l.anchor.find(':') + 1);
}

bool has_qualifier(const function& f, std::string_view prefix) {
  return std::any_of(f.qualifiers.begin(), f.qualifiers.end(),
                     [&](const std::string& q) { return q.starts_with(prefix); });
}

bool device_code(const function& f) {
  return has_qualifier(f, "__global__") || has_qualifier(f, "__device__");
}

bool is_cuda(const kernel_bundle& b) {
  return b.manifest.lang == language::cuda;
}

bool has_flag(const kernel_bundle& b, std::string_view f) {
  return std::find(b.manifest.flags.begin(), b.manifest.flags.end(), f) != b.manifest.flags.end();
}

int32_t call_at(const source_view& v, uint32_t at) {
  for (size_t i = 0; i < v.st.calls.size(); ++i)
    if (v.tl.tokens[v.st.calls[i].whole.first].begin == at) return static_cast<int32_t>(i);
  return -1;
}

int32_t function_named(const source_view& v, std::string_view ref) {
  for (size_t i = 0; i < v.st.functions.size(); ++i)
    if (func_ref(v.st.functions[i]) == ref) return static_cast<int32_t>(i);
  return -1;
}

std::optional<for_parts> split_for(const source_view& v, const loop& l) {
  if (l.kind != loop_kind::for_loop || l.range_for || l.header.empty()) return std::nullopt;
  std::vector<uint32_t> semis;
  const int32_t depth = v.tl.tokens[l.header.first].depth + 1;
  for (uint32_t i = l.header.first + 1; i + 1 < l.header.last; ++i)
    if (v.tl.tokens[i].depth == depth && v.tok(i) == ";") semis.push_back(i);
  if (semis.size() != 2) return std::nullopt;
  return for_parts{
      {l.header.first + 1, semis[0]}, {semis[0] + 1, semis[1]}, {semis[1] + 1, l.header.last - 1}};
}

bool canonical_for(const source_view& v, const loop& l) {
  auto p = split_for(v, l);
  if (!p || l.induction.empty()) return false;
  auto code = [&](token_span s) {
    std::vector<std::string_view> w;
    for (uint32_t i = s.first; i < s.last; ++i)
      if (v.tl.tokens[i].kind != token_kind::comment) w.push_back(v.tok(i));
    return w;
  };
  const auto init = code(p->init), cond = code(p->cond), incr = code(p->incr);
  // init: an integer declaration of the induction variable (OpenMP privatizes it).
  auto eq = std::find(init.begin(), init.end(), "=");
  if (eq == init.begin() || eq == init.end() || *(eq - 1) != l.induction) return false;
  for (auto it = init.begin(); it != eq - 1; ++it)
    if (!kIntTypes.count(*it)) return false;
  if (std::find(init.begin(), init.end(), ",") != init.end()) return false;
  // cond: iv < BOUND or iv <= BOUND, BOUND free of && and ||.
  if (cond.size() < 3 || cond[0] != l.induction || (cond[1] != "<" && cond[1] != "<="))
    return false;
  for (auto w : cond)
    if (w == "&&" || w == "||" || w == "?") return false;
  // incr: ++iv, iv++, iv += STEP.
  if (incr.size() == 2)
    return (incr[0] == "++" && incr[1] == l.induction) ||
           (incr[0] == l.induction && incr[1] == "++");
  return incr.size() >= 3 && incr[0] == l.induction && incr[1] == "+=";
}

bool has_child_loop(const structure& st, size_t loop_index) {
  return std::any_of(st.loops.begin(), st.loops.end(),
                     [&](const loop& l) { return l.parent == static_cast<int32_t>(loop_index); });
}

bool contains_word(const source_view& v, token_span s, std::initializer_list<std::string_view> w) {
  for (uint32_t i = s.first; i < s.last; ++i)
    if (v.tl.tokens[i].kind == token_kind::identifier &&
        std::find(w.begin(), w.end(), v.tok(i)) != w.end())
      return true;
  return false;
}

std::map<std::string, std::set<std::string>> outer_assignments(const source_view& v, token_span s,
                                                               const std::string& induction) {
  const auto& tk = v.tl.tokens;
  auto ident = [&](uint32_t i) { return tk[i].kind == token_kind::identifier; };
  // Declared inside: a name right after a type name (`float M`, `float* yr`, `auto& r`); a
  // template type (`std::vector<int> v`) is missed, and its writes then count as outer ones.
  std::set<std::string_view> declared;
  for (uint32_t i = s.first + 1; i < s.last; ++i) {
    if (!ident(i)) continue;
    long p = v.tl.prev_code(i);
    while (p >= static_cast<long>(s.first) && (v.tok(p) == "*" || v.tok(p) == "&")) --p;
    if (p >= static_cast<long>(s.first) && ident(p) && !kNotTypes.count(v.tok(p)))
      declared.insert(v.tok(i));
  }
  std::map<std::string, std::set<std::string>> out;
  for (uint32_t i = s.first; i < s.last; ++i) {
    if (!ident(i) || v.tok(i) == induction || declared.count(v.tok(i))) continue;
    const long p = v.tl.prev_code(i);
    const std::string_view before = p >= 0 ? v.tok(p) : "";
    // A member, or a write through a pointer (`*p = …`): not a scalar of the loop.
    if (before == "." || before == "->" || before == "::" || before == "*") continue;
    const size_t n = v.tl.next_code(i);
    const std::string_view after = n < tk.size() ? v.tok(n) : "";
    if (kAssignOps.count(after) || after == "++" || after == "--")
      out[std::string(v.tok(i))].insert(std::string(after));
    else if (before == "++" || before == "--")
      out[std::string(v.tok(i))].insert(std::string(before));
  }
  return out;
}

bool has_pragma(const source_view& v, const loop& l, std::string_view prefix) {
  return std::any_of(l.pragmas.begin(), l.pragmas.end(),
                     [&](uint32_t p) { return directive_body(v.tok(p)).starts_with(prefix); });
}

rule_result basic_rule::start(const rule_invocation& inv, std::string locus) const {
  rule_result r;
  r.used = inv;
  r.locus = std::move(locus);
  r.assumed = info_.assumed;
  if (!info_.feature.empty())
    (info_.direction == rule_direction::backward ? r.removes : r.adds)
        .push_back(std::string(info_.feature));
  return r;
}

rule_site basic_rule::site(const source_view& v, std::string anchor, std::string locus,
                           branch where, std::string what) const {
  rule_site s;
  s.anchor = std::move(anchor);
  s.file = v.file;
  s.locus = std::move(locus);
  s.where = where;
  s.what = std::move(what);
  return s;
}

}  // namespace lathe::agent::rules::detail
