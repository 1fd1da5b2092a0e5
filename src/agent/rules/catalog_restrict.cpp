// restrict.remove / restrict.add: `__restrict__` on a function's pointer parameters. Removing it
// is always sound; adding it promises the compiler that nothing else reaches the same memory,
// which no token shows: that is assumed, and the gate's comparison catches a kernel that breaks
// it only when the task's inputs alias (the ABI says tensors never do).
#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

bool restrict_word(std::string_view w) {
  return w == "__restrict__" || w == "__restrict" || w == "restrict";
}

std::string param_anchor(const function& f, const param& p) {
  return "param:" + func_ref(f) + "/" + p.name;
}

// A parameter the forward form may qualify: a named plain pointer (not a reference to one, not a
// function pointer), of a function with a body that is not the ABI entry (extern "C": its
// declaration is lathe/abi.h's).
bool qualifiable(const source_view& v, const function& f, const param& p) {
  if (!p.pointer || p.restrict || p.name.empty() || has_qualifier(f, "extern")) return false;
  bool star = false;
  for (uint32_t i = p.tokens.first; i < p.tokens.last; ++i) {
    if (v.tok(i) == "&" || v.tok(i) == "&&" || v.tok(i) == "(" || v.tok(i) == "[") return false;
    star = star || v.tok(i) == "*";
  }
  return star;
}

class param_rule : public basic_rule {
 public:
  using basic_rule::basic_rule;

 protected:
  // A site per parameter `pick` accepts, of every function in every code file; `what` names the
  // kind of parameter ("restrict parameter ").
  std::vector<rule_site> param_sites(const kernel_bundle& b, std::string_view what,
                                     bool (*pick)(const source_view&, const function&,
                                                  const param&)) const {
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions)
        for (const param& p : fn.params)
          if (pick(v, fn, p))
            out.push_back(site(v, param_anchor(fn, p), fn.name, worst_branch(v.tl, p.tokens),
                               std::string(what) + p.name + " of " + fn.name));
    });
  }
};

class restrict_remove : public param_rule {
 public:
  restrict_remove()
      : param_rule({"restrict.remove",
                    "restrict",
                    rule_direction::backward,
                    "delete __restrict__ (or __restrict, restrict) from a pointer parameter",
                    "a named parameter of a function definition whose tokens hold the qualifier",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return param_sites(b, "restrict parameter ",
                       [](const source_view&, const function&, const param& p) {
                         return p.restrict && !p.name.empty();
                       });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::param, "is not a parameter");
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.function];
    const param& p = fn.params[tg->t.index];
    uint32_t q = p.tokens.last;
    for (uint32_t i = p.tokens.first; i < p.tokens.last && q == p.tokens.last; ++i)
      if (restrict_word(v->tok(i))) q = i;
    if (q == p.tokens.last)
      return fail(errc::invalid_argument,
                  "parameter " + p.name + " of " + fn.name + " is not restrict");
    // The qualifier and the blanks after it (`float* __restrict__ x` -> `float* x`).
    const uint32_t from = v->tl.tokens[q].begin;
    uint32_t to = v->tl.tokens[q].end;
    while (to < v->text.size() && (v->text[to] == ' ' || v->text[to] == '\t')) ++to;
    change c(b);
    c.replace(*v, from, to, "");
    rule_result r = start(inv, fn.name);
    r.note = "deleted " + std::string(v->tok(q)) + " from parameter " + p.name + " of " + fn.name;
    r.inverse = inverse_of(inv, "restrict.add", inv.anchor, {{"keyword", std::string(v->tok(q))}});
    return c.finish(std::move(r));
  }
};

class restrict_add : public param_rule {
 public:
  restrict_add()
      : param_rule({"restrict.add",
                    "restrict",
                    rule_direction::forward,
                    "qualify a pointer parameter __restrict__ (param keyword= for __restrict)",
                    "a named plain pointer parameter (not a reference to a pointer, not a "
                    "function pointer or array) of a function definition other than the "
                    "extern \"C\" ABI entry, not already restrict",
                    {"no aliasing: while the function runs, the memory this pointer reaches is "
                     "reached through no other pointer or name (assumed; checked by the gate)"}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return param_sites(b, "pointer parameter ", qualifiable);
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::param, "is not a parameter");
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.function];
    const param& p = fn.params[tg->t.index];
    if (!qualifiable(*v, fn, p))
      return fail(errc::invalid_argument, "parameter " + p.name + " of " + fn.name +
                                              " is not a plain pointer the rule may qualify");
    auto kp = inv.params.find("keyword");
    const std::string keyword = kp == inv.params.end() ? "__restrict__" : kp->second;
    if (!restrict_word(keyword))
      return fail(errc::invalid_argument, "keyword='" + keyword + "' is not a restrict qualifier");
    uint32_t star = p.tokens.first;
    for (uint32_t i = p.tokens.first; i < p.tokens.last; ++i)
      if (v->tok(i) == "*") star = i;
    const uint32_t at = v->tl.tokens[star].end;
    const bool blank = at < v->text.size() && (v->text[at] == ' ' || v->text[at] == '\t');
    change c(b);
    c.insert(*v, at, " " + keyword + (blank ? "" : " "));
    rule_result r = start(inv, fn.name);
    r.note = "qualified parameter " + p.name + " of " + fn.name + " " + keyword;
    r.inverse = inverse_of(inv, "restrict.remove", inv.anchor);
    return c.finish(std::move(r));
  }
};

}  // namespace

std::vector<const rule*> restrict_rules() {
  static const restrict_remove remove;
  static const restrict_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
