// launch_bounds.remove / launch_bounds.add: `__launch_bounds__(THREADS[, MIN_BLOCKS])` on a
// __global__ function. The forward form takes the block size from the kernel's launches when
// every one of them writes the same literal or constexpr name: the tokens then show the bound
// holds for this file's launches; launches from elsewhere are assumed to respect it.
#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

// The `__launch_bounds__` token of a function and its closing `)`; nullopt when absent.
std::optional<std::pair<uint32_t, uint32_t>> bounds_of(const source_view& v, const function& f) {
  for (uint32_t i = f.whole.first; i < f.name_token; ++i) {
    if (v.tok(i) != "__launch_bounds__") continue;
    const size_t open = v.tl.next_code(i);
    if (open >= v.tl.tokens.size() || v.tok(open) != "(" || v.tl.tokens[open].match < 0)
      return std::nullopt;
    return std::pair{i, static_cast<uint32_t>(v.tl.tokens[open].match)};
  }
  return std::nullopt;
}

// The block size every launch of `f` in the bundle writes, when it is one literal or constexpr
// name; "" otherwise (a dim3, an expression, launches that differ, no launch at all).
std::string block_size(const kernel_bundle& b, const function& f) {
  std::string found;
  bool any = false;
  for (const std::string& file : code_files(b)) {
    auto v = view_of(b, file);
    const auto names = constants(*v, -1);
    for (const launch& l : v->st.launches) {
      const std::string& k = l.kernel;
      if (k != f.name && !k.ends_with("::" + f.name) && !k.starts_with(f.name + "<")) continue;
      if (l.config_args.size() < 2) return "";
      const token_span s = l.config_args[1];
      if (s.last != s.first + 1) return "";
      const std::string text(v->tok(s.first));
      const bool literal = v->tl.tokens[s.first].kind == token_kind::number;
      if (!literal && !names.count(text)) return "";
      if (any && text != found) return "";
      found = text;
      any = true;
    }
  }
  return found;
}

class bounds_remove : public basic_rule {
 public:
  bounds_remove()
      : basic_rule({"launch_bounds.remove",
                    "launch_bounds",
                    rule_direction::backward,
                    "delete __launch_bounds__(…) from a kernel",
                    "a function definition whose qualifiers hold __launch_bounds__(…)",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions)
        if (auto lb = bounds_of(v, fn))
          out.push_back(site(v, fn.anchor, fn.name, v.tl.tokens[lb->first].where,
                             std::string(v.bytes({lb->first, lb->second + 1})) + " on " + fn.name));
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::function, "is not a function");
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    auto lb = bounds_of(*v, fn);
    if (!lb) return fail(errc::invalid_argument, fn.name + " has no __launch_bounds__");
    const std::string args(v->bytes({lb->first + 2, lb->second}));
    // From the end of the token before (blanks included) to the `)`: `void __launch_bounds__(T)
    // \n k(` becomes `void\n k(`, which the forward form's insertion gives back byte for byte.
    const long prev = v->tl.prev_code(lb->first);
    const uint32_t from = prev >= 0 ? v->tl.tokens[prev].end : v->tl.tokens[lb->first].begin;
    change c(b);
    c.replace(*v, from, v->tl.tokens[lb->second].end, "");
    rule_result r = start(inv, fn.name);
    r.note = "deleted __launch_bounds__(" + args + ") from " + fn.name;
    r.inverse = inverse_of(inv, "launch_bounds.add", inv.anchor, {{"args", args}});
    return c.finish(std::move(r));
  }
};

class bounds_add : public basic_rule {
 public:
  bounds_add()
      : basic_rule({"launch_bounds.add",
                    "launch_bounds",
                    rule_direction::forward,
                    "qualify a kernel __launch_bounds__(threads[, min_blocks]); threads from its "
                    "launches' block size when that is one literal or constexpr name, else the "
                    "param threads=; param args= gives the exact argument text",
                    "a __global__ function definition without __launch_bounds__",
                    {"no launch of the kernel uses more threads per block than the bound (such a "
                     "launch fails; assumed; checked by the gate)"}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    return file_sites(b, [&](const source_view& v, std::vector<rule_site>& out) {
      for (const function& fn : v.st.functions) {
        if (!fn.is_kernel() || bounds_of(v, fn)) continue;
        const std::string threads = block_size(b, fn);
        rule_site s = site(v, fn.anchor, fn.name, fn.where,
                           "kernel " + fn.name +
                               (threads.empty() ? " (block size not a literal: give threads=)"
                                                : " launched with " + threads + " threads"));
        s.params["threads"] = threads;
        out.push_back(std::move(s));
      }
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(b, inv, anchor_kind::function, "is not a __global__ function",
                          [](const source_view& v, const anchor_target& t) {
                            return v.st.functions[t.index].is_kernel();
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const function& fn = v->st.functions[tg->t.index];
    if (bounds_of(*v, fn)) return fail(errc::invalid_argument, fn.name + " has __launch_bounds__");
    std::string args;
    if (auto a = inv.params.find("args"); a != inv.params.end()) args = a->second;
    if (args.empty()) {
      auto th = inv.params.find("threads");
      args = th != inv.params.end() && !th->second.empty() ? th->second : block_size(b, fn);
      if (args.empty())
        return fail(errc::invalid_argument,
                    "the launches of " + fn.name +
                        " do not write one literal or constexpr block size: give threads=N");
      if (auto mb = inv.params.find("min_blocks"); mb != inv.params.end() && !mb->second.empty())
        args += ", " + mb->second;
    }
    const long prev = v->tl.prev_code(fn.name_token);
    if (prev < static_cast<long>(fn.whole.first))
      return fail(errc::invalid_argument, fn.name + ": no return type before the name");
    change c(b);
    c.insert(*v, v->tl.tokens[prev].end, " __launch_bounds__(" + args + ")");
    rule_result r = start(inv, fn.name);
    r.note = "qualified " + fn.name + " __launch_bounds__(" + args + ")";
    r.inverse = inverse_of(inv, "launch_bounds.remove", inv.anchor);
    return c.finish(std::move(r));
  }
};

}  // namespace

std::vector<const rule*> launch_bounds_rules() {
  static const bounds_remove remove;
  static const bounds_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
