// omp_parallel.{remove,add} and simd.{remove,add} (C++): `#pragma omp parallel for` on an outer
// loop (or `#pragma omp parallel` on a block) with -fopenmp, and `#pragma omp simd` on an
// innermost loop with -fopenmp-simd when -fopenmp is absent. The forward forms take only loops in
// OpenMP's canonical form whose body the tokens show leaves the loop normally and writes no scalar
// declared outside it except through `+=` (made a reduction clause); that iterations touch
// disjoint memory is assumed, and a race shows in the gate's comparison (or hides: the gate runs
// each kernel several times, which is why it is written down).
#include <algorithm>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

bool word_prefix(std::string_view body, std::string_view w) {
  return body.starts_with(w) &&
         (body.size() == w.size() || body[w.size()] == ' ' || body[w.size()] == '(');
}

// Whether the bundle keeps any use of OpenMP besides the token `except`: a `#pragma omp`, an
// `omp_*` call or `<omp.h>`. Until none is left, -fopenmp stays (omp_get_max_threads needs it).
bool uses_openmp(const kernel_bundle& b, const std::string& file, uint32_t except,
                 std::string_view only = "omp") {
  for (const std::string& f : code_files(b)) {
    auto v = view_of(b, f);
    for (size_t i = 0; i < v->tl.tokens.size(); ++i) {
      if (f == file && i == except) continue;
      const token& t = v->tl.tokens[i];
      if (t.where == branch::inactive) continue;
      if (t.kind == token_kind::preprocessor) {
        const std::string body = directive_body(v->tok(i));
        if (directive_name(v->tok(i)) == "pragma" && word_prefix(body, only)) return true;
        if (only == "omp" && directive_name(v->tok(i)) == "include" &&
            body.find("omp.h") != std::string::npos)
          return true;
      } else if (only == "omp" && t.kind == token_kind::identifier &&
                 v->tok(i).starts_with("omp_")) {
        return true;
      }
    }
  }
  return false;
}

// The reduction clause a loop body needs, or nullopt when the body writes an outer scalar other
// than by `+=` or may leave the loop early (OpenMP forbids break/return/goto out of it).
std::optional<std::string> reduction_for(const source_view& v, const loop& l) {
  if (contains_word(v, l.body, {"return", "break", "goto", "throw", "co_return", "co_await"}))
    return std::nullopt;
  std::string names;
  for (const auto& [name, ops] : outer_assignments(v, l.body, l.induction)) {
    if (ops != std::set<std::string>{"+="}) return std::nullopt;
    names += (names.empty() ? "" : ", ") + name;
  }
  return names.empty() ? "" : " reduction(+: " + names + ")";
}

bool any_omp_pragma(const source_view& v, const loop& l) {
  return has_pragma(v, l, "omp");
}

struct omp_form {
  std::string_view name, words, feature, description, preconditions, flag;
  bool outer;  // parallel for: outermost loops; simd: innermost
  std::vector<std::string> assumed;
};

const omp_form kParallel{
    "omp_parallel",
    "omp parallel",
    "omp_parallel",
    "a `#pragma omp parallel for` before an outermost for loop (param pragma= for the exact "
    "text), -fopenmp added when missing",
    "C++; an outermost for loop of OpenMP canonical form (integer induction variable declared in "
    "the header, `<`/`<=` bound, ++/+= step), no omp pragma on it and no `omp parallel` in its "
    "function, no break/return/goto/throw in the body, outer scalars written only by += (made "
    "reduction(+: …))",
    "-fopenmp",
    true,
    {"iterations are independent: no loop-carried dependence and no two iterations write the "
     "same memory (assumed; checked by the gate)"}};

const omp_form kSimd{
    "simd",
    "omp simd",
    "simd",
    "a `#pragma omp simd` before an innermost for loop (param pragma= for the exact text), "
    "-fopenmp-simd added when neither it nor -fopenmp is there",
    "C++; an innermost for loop of OpenMP canonical form, no omp pragma on it, no intrinsics "
    "(_mm*) in the body, no break/return/goto/throw, outer scalars written only by += (made "
    "reduction(+: …))",
    "-fopenmp-simd",
    false,
    {"no loop-carried dependence through memory: consecutive iterations may run in vector lanes "
     "(assumed; checked by the gate)"}};

bool forward_site(const source_view& v, size_t li, const omp_form& form) {
  const loop& l = v.st.loops[li];
  if (l.function < 0 || !canonical_for(v, l) || any_omp_pragma(v, l)) return false;
  if (form.outer) {
    if (l.parent >= 0) return false;
    const function& f = v.st.functions[l.function];
    for (uint32_t i = f.body.first; i < f.body.last; ++i)
      if (v.tl.tokens[i].kind == token_kind::preprocessor &&
          word_prefix(directive_body(v.tok(i)), "omp parallel"))
        return false;
  } else {
    if (has_child_loop(v.st, li)) return false;
    for (uint32_t i = l.body.first; i < l.body.last; ++i)
      if (v.tl.tokens[i].kind == token_kind::identifier && v.tok(i).starts_with("_mm"))
        return false;
  }
  return reduction_for(v, l).has_value();
}

class omp_remove : public basic_rule {
 public:
  explicit omp_remove(const omp_form& f)
      : basic_rule({f.name == "simd" ? "simd.remove" : "omp_parallel.remove",
                    f.feature,
                    rule_direction::backward,
                    f.name == "simd" ? "delete a `#pragma omp simd` before a loop (and "
                                       "-fopenmp-simd when no omp simd is left)"
                                     : "delete a `#pragma omp parallel …` (before a loop, or "
                                       "before a block: its worksharing pragmas then bind to a "
                                       "team of one), and -fopenmp when no OpenMP use is left",
                    f.name == "simd" ? "C++; the pragma is code directly before a loop"
                                     : "C++; the pragma is code in a function body",
                    {}}),
        form_(f) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      std::map<int32_t, int> nth;  // per function: `omp parallel` pragmas seen
      for (size_t i = 0; i < v.tl.tokens.size(); ++i) {
        if (v.tl.tokens[i].kind != token_kind::preprocessor) continue;
        const std::string body = directive_body(v.tok(i));
        if (directive_name(v.tok(i)) != "pragma" || !word_prefix(body, form_.words)) continue;
        const int32_t fn = function_at(v.st, static_cast<uint32_t>(i));
        if (fn < 0) continue;
        const int n = ++nth[fn];
        rule_site s;
        for (const loop& l : v.st.loops)
          if (std::count(l.pragmas.begin(), l.pragmas.end(), i))
            s = site(
                v,
                "pragma:" + std::string(form_.words == "omp simd" ? "omp_simd" : "omp_parallel") +
                    "@" + loop_ref(l),
                l.locus, v.tl.tokens[i].where, "#pragma " + body + " before " + l.anchor);
        if (s.anchor.empty()) {
          if (!form_.outer) continue;  // omp simd applies to loops only
          s = site(v, v.st.functions[fn].anchor, v.st.functions[fn].name, v.tl.tokens[i].where,
                   "#pragma " + body + " (a region) in " + v.st.functions[fn].name);
          s.params["directive"] = std::to_string(n);
        }
        out.push_back(std::move(s));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (is_cuda(b)) return fail(errc::invalid_argument, "OpenMP rules are for C++ kernels");
    auto tg = open_anchor(b, inv);
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const anchor_target& t = tg->t;
    uint32_t tok = UINT32_MAX;
    std::string locus;
    if (t.kind == anchor_kind::pragma) {
      tok = t.span.first;
      locus = t.locus;
    } else if (t.kind == anchor_kind::function && form_.outer) {
      const function& f = v->st.functions[t.index];
      auto d = inv.params.find("directive");
      int want = d == inv.params.end() ? 1 : std::atoi(d->second.c_str()), n = 0;
      for (uint32_t i = f.body.first; i < f.body.last && tok == UINT32_MAX; ++i)
        if (v->tl.tokens[i].kind == token_kind::preprocessor &&
            word_prefix(directive_body(v->tok(i)), form_.words) && ++n == want)
          tok = i;
      locus = f.name;
      if (tok != UINT32_MAX && v->tl.tokens[tok].where == branch::inactive)
        return fail(errc::unsupported, "that pragma lies in an inactive #if branch");
    }
    const std::string body = tok == UINT32_MAX ? "" : directive_body(v->tok(tok));
    if (tok == UINT32_MAX || !word_prefix(body, form_.words))
      return fail(errc::invalid_argument,
                  "'" + inv.anchor + "' names no #pragma " + std::string(form_.words));
    change c(b);
    auto params = c.delete_pragma(*v, tok);
    rule_result r = start(inv, locus);
    r.note = "deleted #pragma " + body;
    if (form_.outer && has_flag(b, "-fopenmp") && !uses_openmp(b, v->file, tok)) {
      c.remove_flag("-fopenmp");
      r.note += " and -fopenmp (no OpenMP use left)";
    }
    if (!form_.outer && has_flag(b, "-fopenmp-simd") && !uses_openmp(b, v->file, tok, "omp simd")) {
      c.remove_flag("-fopenmp-simd");
      r.note += " and -fopenmp-simd";
    }
    if (t.kind == anchor_kind::pragma)
      r.inverse = inverse_of(inv, std::string(form_.name) + ".add", v->st.loops[t.index].anchor,
                             std::move(params));
    return c.finish(std::move(r));
  }

 private:
  const omp_form& form_;
};

class omp_add : public basic_rule {
 public:
  explicit omp_add(const omp_form& f)
      : basic_rule({f.name == "simd" ? "simd.add" : "omp_parallel.add", f.feature,
                    rule_direction::forward, f.description, f.preconditions, f.assumed}),
        form_(f) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (is_cuda(b)) return {};
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (size_t i = 0; i < v.st.loops.size(); ++i) {
        if (!forward_site(v, i, form_)) continue;
        const loop& l = v.st.loops[i];
        out.push_back(site(v, l.anchor, l.locus, l.where, "canonical loop " + l.anchor));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (is_cuda(b)) return fail(errc::invalid_argument, "OpenMP rules are for C++ kernels");
    auto tg = open_target(b, inv, anchor_kind::loop,
                          "does not meet the preconditions: " + std::string(form_.preconditions),
                          [&](const source_view& v, const anchor_target& t) {
                            return forward_site(v, t.index, form_);
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const loop& l = v->st.loops[tg->t.index];
    std::string body;
    if (auto p = inv.params.find("pragma"); p != inv.params.end()) {
      body = p->second;
      if (!word_prefix(body, form_.words))
        return fail(errc::invalid_argument,
                    "pragma='" + body + "' is not #pragma " + std::string(form_.words) + " …");
    } else {
      body = std::string(form_.words) + (form_.outer ? " for" : "") + *reduction_for(*v, l);
    }
    change c(b);
    c.insert_pragma(*v, l, inv, body);
    rule_result r = start(inv, l.locus);
    r.note = "inserted #pragma " + body + " before " + l.anchor;
    const bool flagged = has_flag(b, "-fopenmp") || (!form_.outer && has_flag(b, "-fopenmp-simd"));
    if (!flagged) {
      c.add_flag(std::string(form_.flag));
      r.note += " and " + std::string(form_.flag);
    }
    r.inverse = inverse_of(
        inv, std::string(form_.name) + ".remove",
        "pragma:" + std::string(form_.outer ? "omp_parallel" : "omp_simd") + "@" + loop_ref(l));
    return c.finish(std::move(r));
  }

 private:
  const omp_form& form_;
};

}  // namespace

std::vector<const rule*> openmp_rules() {
  static const omp_remove parallel_remove(kParallel), simd_remove(kSimd);
  static const omp_add parallel_add(kParallel), simd_add(kSimd);
  return {&parallel_remove, &parallel_add, &simd_remove, &simd_add};
}

}  // namespace lathe::agent::rules::detail
