// loop_unroll.remove / loop_unroll.add: `#pragma unroll [N]` (CUDA), `#pragma GCC unroll N` (GCC),
// `#pragma clang loop unroll…` before a loop. Unrolling changes no result, so the only thing
// assumed is that the compiler honours the pragma; the forward form asks for a loop whose trip
// count the tokens show is a compile-time constant, as a pragma on a runtime-bounded loop mostly
// produces a remainder loop and code size, not speed.
#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

// "unroll", "unroll 4", "GCC unroll 8", "clang loop unroll(full)"; not "unroll 1" (asks for no
// unrolling, the detector's reading too).
std::string unroll_words(std::string_view body) {
  auto word = [&](std::string_view w) {
    return body.starts_with(w) && (body.size() == w.size() || body[w.size()] == ' ' ||
                                   body[w.size()] == '(' || body[w.size()] == '_');
  };
  if (body == "unroll 1" || body == "GCC unroll 1" || body == "unroll (1)") return "";
  if (word("unroll")) return "unroll";
  if (word("GCC unroll")) return "GCC_unroll";
  if (word("clang loop unroll")) return "clang_loop_unroll";
  return "";
}

}  // namespace

std::set<std::string> constants(const source_view& v, int32_t fn) {
  std::set<std::string> out;
  const auto& tk = v.tl.tokens;
  for (size_t i = 0; i < tk.size(); ++i) {
    if (tk[i].kind == token_kind::preprocessor && directive_name(v.tok(i)) == "define") {
      std::string body = directive_body(v.tok(i));
      body = body.substr(body.find(' ') + 1);
      out.insert(body.substr(0, body.find_first_of(" ()")));
    }
    if (tk[i].kind != token_kind::identifier || v.tok(i) != "constexpr") continue;
    for (size_t k = i + 1; k < tk.size() && tk[k].depth >= tk[i].depth; ++k) {
      if (tk[k].depth == tk[i].depth && v.tok(k) == ";") break;
      const size_t n = v.tl.next_code(k);
      if (tk[k].kind == token_kind::identifier && n < tk.size() && tk[n].depth == tk[i].depth &&
          (v.tok(n) == "=" || v.tok(n) == "{"))
        out.insert(std::string(v.tok(k)));
    }
  }
  if (fn >= 0) {
    const token_span th = v.st.functions[fn].template_header;
    for (uint32_t i = th.first; i + 1 < th.last; ++i) {
      const std::string_view n = v.tok(v.tl.next_code(i));
      if (tk[i].kind == token_kind::identifier && (n == "," || n == ">" || n == "=") && i > 0 &&
          v.tok(i - 1) != "class" && v.tok(i - 1) != "typename")
        out.insert(std::string(v.tok(i)));
    }
  }
  return out;
}

namespace {

bool constant_expr(const source_view& v, token_span s, const std::set<std::string>& names) {
  if (s.empty()) return false;
  for (uint32_t i = s.first; i < s.last; ++i) {
    const token& t = v.tl.tokens[i];
    if (t.kind == token_kind::comment || t.kind == token_kind::number) continue;
    if (t.kind == token_kind::identifier &&
        (names.count(std::string(v.tok(i))) || v.tok(i) == "sizeof"))
      continue;
    if (t.kind == token_kind::punct &&
        std::string_view("+-*/%()<<>>").find(v.tok(i)) != std::string_view::npos)
      continue;
    return false;
  }
  return true;
}

// `for (T i = CONST; i REL CONST; i STEP CONST)`.
bool constant_trip(const source_view& v, const loop& l) {
  auto p = split_for(v, l);
  if (!p || l.induction.empty()) return false;
  const auto names = constants(v, l.function);
  uint32_t eq = p->init.first;
  while (eq < p->init.last && v.tok(eq) != "=") ++eq;
  if (eq == p->init.last || !constant_expr(v, {eq + 1, p->init.last}, names)) return false;
  const uint32_t c = v.tl.next_code(p->cond.first);
  if (v.tok(p->cond.first) != l.induction || c >= p->cond.last) return false;
  const std::string_view rel = v.tok(c);
  if (rel != "<" && rel != "<=" && rel != ">" && rel != ">=" && rel != "!=") return false;
  if (!constant_expr(v, {c + 1, p->cond.last}, names)) return false;
  const std::string_view i0 = v.tok(p->incr.first);
  if (i0 == "++" || i0 == "--") return true;
  const uint32_t op = v.tl.next_code(p->incr.first);
  return i0 == l.induction && op < p->incr.last &&
         (v.tok(op) == "++" || v.tok(op) == "--" ||
          constant_expr(v, {op + 1, p->incr.last}, names));
}

// The forward precondition: a for loop of constant trip count, without an unroll pragma, whose
// nested loops (if any) have constant trip counts too; in device code on CUDA.
bool unrollable(const source_view& v, size_t li, bool cuda) {
  const loop& l = v.st.loops[li];
  if (l.function < 0 || (cuda && !device_code(v.st.functions[l.function]))) return false;
  for (uint32_t p : l.pragmas)
    if (!unroll_words(directive_body(v.tok(p))).empty()) return false;
  if (!constant_trip(v, l)) return false;
  for (size_t k = li + 1; k < v.st.loops.size(); ++k)
    if (l.whole.contains(v.st.loops[k].keyword) && !constant_trip(v, v.st.loops[k])) return false;
  return true;
}

class unroll_remove : public basic_rule {
 public:
  unroll_remove()
      : basic_rule({"loop_unroll.remove",
                    "loop_unroll",
                    rule_direction::backward,
                    "delete an unroll pragma (#pragma unroll [N], #pragma GCC unroll N, #pragma "
                    "clang loop unroll…) before a loop",
                    "the pragma is code (not a comment or string) directly before the loop; "
                    "`unroll 1` is not a site (it asks for no unrolling)",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const loop& l : v.st.loops) {
        if (l.function < 0) continue;
        for (uint32_t p : l.pragmas) {
          const std::string body = directive_body(v.tok(p)), w = unroll_words(body);
          if (w.empty()) continue;
          out.push_back(site(v, "pragma:" + w + "@" + loop_ref(l), l.locus, v.tl.tokens[p].where,
                             "#pragma " + body + " before " + l.anchor));
        }
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::pragma, "is not an unroll pragma",
                          [](const source_view& v, const anchor_target& t) {
                            return !unroll_words(directive_body(v.tok(t.span.first))).empty();
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const loop& l = v->st.loops[tg->t.index];
    change c(b);
    auto params = c.delete_pragma(*v, tg->t.span.first);
    rule_result r = start(inv, l.locus);
    r.note = "deleted #pragma " + params["pragma"] + " before " + l.anchor;
    r.inverse = inverse_of(inv, "loop_unroll.add", l.anchor, std::move(params));
    return c.finish(std::move(r));
  }
};

class unroll_add : public basic_rule {
 public:
  unroll_add()
      : basic_rule({"loop_unroll.add",
                    "loop_unroll",
                    rule_direction::forward,
                    "put an unroll pragma before a for loop: `#pragma unroll` (CUDA, full; param "
                    "factor=N for `unroll N`) or `#pragma GCC unroll N` (C++, factor default 4); "
                    "param pragma= gives the exact directive text",
                    "a for loop whose init, bound and step are compile-time constants in the "
                    "tokens (literals, constexpr names, #defines, non-type template parameters), "
                    "with no unroll pragma, whose nested loops are constant too; in __global__ or "
                    "__device__ code on CUDA",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (size_t i = 0; i < v.st.loops.size(); ++i) {
        const loop& l = v.st.loops[i];
        if (!unrollable(v, i, is_cuda(b))) continue;
        rule_site s = site(v, l.anchor, l.locus, l.where, "constant-trip loop " + l.anchor);
        s.params["factor"] = is_cuda(b) ? "full" : "4";
        out.push_back(std::move(s));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::loop,
                          std::string("is not a constant-trip for loop without an unroll pragma") +
                              (is_cuda(b) ? " in device code" : ""),
                          [&](const source_view& v, const anchor_target& t) {
                            return unrollable(v, t.index, is_cuda(b));
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const loop& l = v->st.loops[tg->t.index];
    std::string body;
    if (auto p = inv.params.find("pragma"); p != inv.params.end()) {
      body = p->second;
      if (unroll_words(body).empty())
        return fail(errc::invalid_argument, "pragma='" + body + "' is not an unroll pragma");
    } else {
      auto fp = inv.params.find("factor");
      const std::string factor = fp == inv.params.end() ? (is_cuda(b) ? "full" : "4") : fp->second;
      if (factor != "full" &&
          (factor.empty() || factor.find_first_not_of("0123456789") != std::string::npos ||
           factor == "0" || factor == "1"))
        return fail(errc::invalid_argument, "factor='" + factor + "': a count >= 2 or full");
      if (!is_cuda(b) && factor == "full")
        return fail(errc::invalid_argument, "GCC unroll needs a count (factor=N)");
      body =
          is_cuda(b) ? (factor == "full" ? "unroll" : "unroll " + factor) : "GCC unroll " + factor;
    }
    change c(b);
    c.insert_pragma(*v, l, inv, body);
    rule_result r = start(inv, l.locus);
    r.note = "inserted #pragma " + body + " before " + l.anchor;
    r.inverse =
        inverse_of(inv, "loop_unroll.remove", "pragma:" + unroll_words(body) + "@" + loop_ref(l));
    return c.finish(std::move(r));
  }
};

}  // namespace

std::vector<const rule*> unroll_rules() {
  static const unroll_remove remove;
  static const unroll_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
