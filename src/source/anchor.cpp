// Anchors (anchor.h): parsing an anchor string and resolving it against the structure of
// structure.h.
#include "source/anchor.h"
#include "core/text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <tuple>

namespace lathe::agent::rules {

namespace {

std::optional<int> parse_index(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 1) return std::nullopt;
  return v;
}

// "name#3" -> ("name", 3); "name" -> ("name", nullopt). Only a trailing #digits counts.
std::pair<std::string_view, std::optional<int>> split_index(std::string_view s) {
  size_t h = s.rfind('#');
  if (h == std::string_view::npos) return {s, std::nullopt};
  std::optional<int> n = parse_index(s.substr(h + 1));
  if (!n) return {s, std::nullopt};
  return {s.substr(0, h), n};
}

std::string list_of(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& s : names) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool name_matches(std::string_view want, std::string_view have) {
  if (want == have) return true;
  return want.find("::") == std::string_view::npos && have.size() > want.size() + 2 &&
         have.ends_with(want) && have.substr(have.size() - want.size() - 2, 2) == "::";
}

// Picks the n-th (1-based) of the candidates, or the only one; errors name what there is.
template <class T>
result<int32_t> pick(const std::vector<T>& all, const std::vector<int32_t>& cands,
                     std::optional<int> nth, std::string_view what, std::string_view anchor,
                     const std::vector<std::string>& there) {
  if (cands.empty())
    return fail(errc::not_found,
                cat("anchor '", anchor, "': no ", what, "; there: ", list_of(there)));
  if (nth) {
    if (*nth > static_cast<int>(cands.size()))
      return fail(errc::not_found, cat("anchor '", anchor, "': only ", std::to_string(cands.size()),
                                       " ", what, "(s) match"));
    return cands[*nth - 1];
  }
  if (cands.size() > 1) {
    std::vector<std::string> names;
    for (int32_t c : cands) names.push_back(all[c].anchor);
    return fail(errc::invalid_argument,
                cat("anchor '", anchor, "' is ambiguous: ", list_of(names)));
  }
  return cands[0];
}

result<int32_t> find_function(const structure& st, std::string_view func, std::string_view anchor) {
  auto [name, nth] = split_index(func);
  std::vector<int32_t> cands;
  std::vector<std::string> there;
  for (size_t i = 0; i < st.functions.size(); ++i) {
    if (st.functions[i].name == name) cands.push_back(static_cast<int32_t>(i));
    there.push_back(st.functions[i].anchor);
  }
  return pick(st.functions, cands, nth, cat("function '", name, "'"), anchor, there);
}

// Resolves "FUNC[/PATH]": the function and the loop (-1 when there is no path).
result<std::pair<int32_t, int32_t>> find_scope(const structure& st, std::string_view scope,
                                               std::string_view anchor) {
  const size_t slash = scope.find('/');
  result<int32_t> fi = find_function(st, scope.substr(0, slash), anchor);
  if (!fi) return tl::unexpected(fi.error());
  int32_t cur = -1;
  std::string_view rest = slash == std::string_view::npos ? "" : scope.substr(slash + 1);
  if (slash != std::string_view::npos && rest.empty())
    return fail(errc::invalid_argument, cat("anchor '", anchor, "': empty loop path"));
  while (!rest.empty()) {
    const size_t s = rest.find('/');
    const std::string_view seg = rest.substr(0, s);
    rest = s == std::string_view::npos ? "" : rest.substr(s + 1);
    auto [name, nth] = split_index(seg);
    std::vector<int32_t> kids, cands;
    std::vector<std::string> there;
    for (size_t i = 0; i < st.loops.size(); ++i)
      if (st.loops[i].function == *fi && st.loops[i].parent == cur) {
        kids.push_back(static_cast<int32_t>(i));
        there.push_back(st.loops[i].anchor);
      }
    for (int32_t k : kids)
      if (st.loops[k].induction == name) cands.push_back(k);
    if (cands.empty() && name.starts_with("loop"))
      if (std::optional<int> pos = parse_index(name.substr(4)); pos && !nth) {
        if (*pos > static_cast<int>(kids.size()))
          return fail(errc::not_found,
                      cat("anchor '", anchor, "': no loop ", name, "; there: ", list_of(there)));
        cur = kids[*pos - 1];
        continue;
      }
    result<int32_t> l = pick(st.loops, cands, nth, cat("loop '", seg, "'"), anchor, there);
    if (!l) return tl::unexpected(l.error());
    cur = *l;
  }
  return std::pair{*fi, cur};
}

// A call, launch or pragma anchor's parts: NAME, the function and loop of its @SCOPE (-1 where it
// names none), and which of several matches #N picks.
struct placement {
  std::string_view name;
  int32_t fi = -1, li = -1;
  std::optional<int> nth;
};

// One anchor being resolved: a lookup per kind, each error naming the anchor.
struct resolver {
  const token_list& tl;
  const structure& st;
  std::string_view anchor;

  result<anchor_target> finish(anchor_target t, uint32_t head) const {
    t.where = tl.tokens[head].where;
    t.contains = worst_branch(tl, t.span);
    return t;
  }

  std::string loop_locus(int32_t fi, int32_t li) const {
    return li >= 0 ? st.loops[li].locus : st.functions[fi].name;
  }

  bool in_scope(const placement& p, int32_t f, uint32_t tok) const {
    if (p.fi < 0) return true;
    return f == p.fi && (p.li < 0 || st.loops[p.li].whole.contains(tok));
  }

  // function:NAME[#N]
  result<anchor_target> function_target(std::string_view rest) const {
    result<int32_t> fi = find_function(st, rest, anchor);
    if (!fi) return tl::unexpected(fi.error());
    const function& f = st.functions[*fi];
    anchor_target t;
    t.kind = anchor_kind::function;
    t.span = f.whole;
    t.index = t.function = *fi;
    t.locus = f.name;
    return finish(std::move(t), f.name_token);
  }

  // loop:FUNC/PATH
  result<anchor_target> loop_target(std::string_view rest) const {
    if (rest.find('/') == std::string_view::npos)
      return fail(errc::invalid_argument, cat("anchor '", anchor, "': expected loop:FUNC/PATH"));
    auto sc = find_scope(st, rest, anchor);
    if (!sc) return tl::unexpected(sc.error());
    const loop& l = st.loops[sc->second];
    anchor_target t;
    t.kind = anchor_kind::loop;
    t.span = l.whole;
    t.index = sc->second;
    t.function = sc->first;
    t.locus = l.locus;
    return finish(std::move(t), l.keyword);
  }

  // param:FUNC/NAME
  result<anchor_target> param_target(std::string_view rest) const {
    const size_t slash = rest.rfind('/');
    if (slash == std::string_view::npos)
      return fail(errc::invalid_argument, cat("anchor '", anchor, "': expected param:FUNC/NAME"));
    result<int32_t> fi = find_function(st, rest.substr(0, slash), anchor);
    if (!fi) return tl::unexpected(fi.error());
    const function& f = st.functions[*fi];
    const std::string_view name = rest.substr(slash + 1);
    std::vector<std::string> there;
    for (size_t i = 0; i < f.params.size(); ++i) {
      there.push_back(f.params[i].name);
      if (f.params[i].name != name) continue;
      anchor_target t;
      t.kind = anchor_kind::param;
      t.span = f.params[i].tokens;
      t.index = static_cast<int32_t>(i);
      t.function = *fi;
      t.locus = f.name;
      return finish(std::move(t), f.params[i].tokens.first);
    }
    return fail(errc::not_found, cat("anchor '", anchor, "': no parameter '", name, "' in ", f.name,
                                     "; there: ", list_of(there)));
  }

  // call:NAME@SCOPE[#N], launch:KERNEL[@SCOPE][#N], pragma:WORDS@FUNC/PATH
  result<anchor_target> placed_target(std::string_view kind, std::string_view rest) const {
    const size_t at = rest.find('@');
    std::string_view name = rest.substr(0, at);
    std::string_view scope = at == std::string_view::npos ? "" : rest.substr(at + 1);
    std::optional<int> nth;
    if (kind == "launch" && at == std::string_view::npos)
      std::tie(name, nth) = split_index(name);
    else if (kind != "pragma")
      std::tie(scope, nth) = split_index(scope);
    if (name.empty() || (kind != "launch" && scope.empty()))
      return fail(errc::invalid_argument,
                  cat("anchor '", anchor, "': expected ", kind,
                      kind == "launch" ? ":KERNEL[@SCOPE][#N]" : ":NAME@SCOPE[#N]"));
    placement p{name, -1, -1, nth};
    if (!scope.empty()) {
      auto sc = find_scope(st, scope, anchor);
      if (!sc) return tl::unexpected(sc.error());
      std::tie(p.fi, p.li) = *sc;
    }
    if (kind == "pragma") return pragma_target(p);
    if (kind == "call") return call_target(p);
    return launch_target(p);
  }

  result<anchor_target> pragma_target(const placement& p) const {
    if (p.li < 0)
      return fail(errc::invalid_argument,
                  cat("anchor '", anchor, "': expected pragma:WORDS@FUNC/PATH"));
    const loop& l = st.loops[p.li];
    std::vector<uint32_t> cands;
    std::vector<std::string> there;
    for (uint32_t tok : l.pragmas) {
      std::string words = directive_body(tl.text(tok));
      std::replace(words.begin(), words.end(), ' ', '_');
      there.push_back(words);
      if (words.starts_with(p.name) && (words.size() == p.name.size() ||
                                        words[p.name.size()] == '_' || words[p.name.size()] == '('))
        cands.push_back(tok);
    }
    if (cands.size() != 1)
      return fail(cands.empty() ? errc::not_found : errc::invalid_argument,
                  cat("anchor '", anchor, "': ", cands.empty() ? "no" : "more than one",
                      " matching #pragma before ", l.anchor, "; there: ", list_of(there)));
    anchor_target t;
    t.kind = anchor_kind::pragma;
    t.span = {cands[0], cands[0] + 1};
    t.index = p.li;
    t.function = p.fi;
    t.locus = l.locus;
    return finish(std::move(t), cands[0]);
  }

  result<anchor_target> call_target(const placement& p) const {
    std::vector<int32_t> cands;
    std::vector<std::string> there;
    for (size_t i = 0; i < st.calls.size(); ++i) {
      const call& c = st.calls[i];
      if (!in_scope(p, c.function, c.name_token)) continue;
      if (name_matches(p.name, c.name))
        cands.push_back(static_cast<int32_t>(i));
      else if (there.size() < 12)
        there.push_back(c.anchor);
    }
    result<int32_t> ci = pick(st.calls, cands, p.nth, cat("call of '", p.name, "'"), anchor, there);
    if (!ci) return tl::unexpected(ci.error());
    const call& c = st.calls[*ci];
    anchor_target t;
    t.kind = anchor_kind::call;
    t.span = c.whole;
    t.index = *ci;
    t.function = c.function;
    t.locus = loop_locus(c.function, c.loop);
    return finish(std::move(t), c.whole.first);
  }

  result<anchor_target> launch_target(const placement& p) const {
    std::vector<int32_t> cands;
    std::vector<std::string> there;
    for (size_t i = 0; i < st.launches.size(); ++i) {
      const launch& l = st.launches[i];
      if (!in_scope(p, l.function, l.whole.first)) continue;
      if (name_matches(p.name, l.kernel))
        cands.push_back(static_cast<int32_t>(i));
      else
        there.push_back(l.anchor);
    }
    result<int32_t> i =
        pick(st.launches, cands, p.nth, cat("launch of '", p.name, "'"), anchor, there);
    if (!i) return tl::unexpected(i.error());
    const launch& l = st.launches[*i];
    anchor_target t;
    t.kind = anchor_kind::launch;
    t.span = l.whole;
    t.index = *i;
    t.function = l.function;
    t.locus = loop_locus(l.function, l.loop);
    return finish(std::move(t), l.whole.first);
  }
};

}  // namespace

const char* to_string(branch b) {
  switch (b) {
    case branch::active:
      return "active";
    case branch::conditional:
      return "conditional";
    case branch::inactive:
      return "inactive";
  }
  return "?";
}

const char* to_string(anchor_kind k) {
  switch (k) {
    case anchor_kind::function:
      return "function";
    case anchor_kind::loop:
      return "loop";
    case anchor_kind::param:
      return "param";
    case anchor_kind::call:
      return "call";
    case anchor_kind::launch:
      return "launch";
    case anchor_kind::pragma:
      return "pragma";
  }
  return "?";
}

result<anchor_target> resolve(const token_list& tl, const structure& st, std::string_view anchor) {
  const size_t colon = anchor.find(':');
  if (colon == std::string_view::npos || colon + 1 == anchor.size())
    return fail(errc::invalid_argument, cat("anchor '", anchor,
                                            "': expected KIND:TARGET (function, loop, param, call, "
                                            "launch, pragma)"));
  const std::string_view kind = anchor.substr(0, colon), rest = anchor.substr(colon + 1);
  const resolver r{tl, st, anchor};
  if (kind == "function") return r.function_target(rest);
  if (kind == "loop") return r.loop_target(rest);
  if (kind == "param") return r.param_target(rest);
  if (kind == "call" || kind == "launch" || kind == "pragma") return r.placed_target(kind, rest);
  return fail(errc::invalid_argument, cat("anchor '", anchor, "': unknown kind '", kind,
                                          "' (function, loop, param, call, launch, pragma)"));
}

}  // namespace lathe::agent::rules
