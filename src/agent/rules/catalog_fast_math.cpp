// fast_math.remove / fast_math.add (CUDA device code): the approximate intrinsics `__expf`,
// `__logf`, `__sinf`, `__cosf`, `__tanf`, `__powf`, `__exp10f`, `__log2f`, `__log10f` ⇄ their
// precise functions, `rsqrtf(x)` ⇄ `(1.0f / sqrtf(x))`, and `__fdividef(a, b)` → `((a) / (b))`
// (backward only: a division is no call, and which ones tolerate the approximation is the task's
// business). Approximate math changes results within the task's tolerance or not at all: the
// forward form runs only when the invocation says the task allows it (allow_fast_math=true).
// The compile flags (--use_fast_math, -ffast-math) are catalog_flags.cpp's.
#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

const std::map<std::string_view, std::string_view> kFastToPrecise = {
    {"__expf", "expf"},     {"__logf", "logf"},   {"__sinf", "sinf"},
    {"__cosf", "cosf"},     {"__tanf", "tanf"},   {"__powf", "powf"},
    {"__exp10f", "exp10f"}, {"__log2f", "log2f"}, {"__log10f", "log10f"}};

std::string_view fast_of(std::string_view precise) {
  for (const auto& [f, p] : kFastToPrecise)
    if (p == precise) return f;
  return "";
}

bool one_literal(std::string_view t) {
  return t == "1.0f" || t == "1.f" || t == "1.0F";
}

struct fast_site {
  uint32_t from, to;  // bytes replaced
  std::string text;
};

// The forward rewrite of a precise call, when it has one: a rename, or `1.0f / sqrtf(x)` (with
// its enclosing parentheses when they hold exactly that) to `rsqrtf(x)`.
std::optional<fast_site> forward_of(const source_view& v, const call& c) {
  const token& name = v.tl.tokens[c.name_token];
  if (auto f = fast_of(c.name); !f.empty() && c.name.find("::") == std::string::npos)
    return fast_site{name.begin, name.end, std::string(f)};
  if (c.name != "sqrtf" || c.arguments.size() != 1) return std::nullopt;
  const long slash = v.tl.prev_code(c.whole.first);
  const long one = slash > 0 ? v.tl.prev_code(slash) : -1;
  if (one < 0 || v.tok(slash) != "/" || !one_literal(v.tok(one))) return std::nullopt;
  const std::string rs = "rsqrtf" + std::string(v.bytes(c.parens));
  const long open = v.tl.prev_code(one);
  const size_t close = v.tl.next_code(c.whole.last - 1);
  if (open >= 0 && v.tok(open) == "(" && close < v.tl.tokens.size() &&
      v.tl.tokens[open].match == static_cast<int32_t>(close))
    return fast_site{v.tl.tokens[open].begin, v.tl.tokens[close].end, rs};
  // `a / 1.0f / sqrtf(x)` is (a / 1) / sqrt(x): not a reciprocal square root.
  const std::string_view before = open >= 0 ? v.tok(open) : "";
  if (before == "/" || before == "%") return std::nullopt;
  return fast_site{v.tl.tokens[one].begin, v.tl.tokens[c.whole.last - 1].end, rs};
}

class fast_remove : public basic_rule {
 public:
  fast_remove()
      : basic_rule({"fast_math.remove",
                    "fast_math",
                    rule_direction::backward,
                    "replace one approximate intrinsic by the precise function: __expf -> expf "
                    "(…), rsqrtf(x) -> (1.0f / sqrtf(x)), __fdividef(a, b) -> ((a) / (b))",
                    "CUDA; a call of one of these names in a function body",
                    {}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return call_sites(b, [](const source_view&, const call& c) { return is_fast(c); });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto tg = open_target(
        b, inv, anchor_kind::call, "is not an approximate intrinsic",
        [](const source_view& v, const anchor_target& t) { return is_fast(v.st.calls[t.index]); });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const call& c = v->st.calls[tg->t.index];
    const token& name = v->tl.tokens[c.name_token];
    change ch(b);
    uint32_t inverse_at = name.begin;
    std::string text;
    if (c.name == "rsqrtf") {
      text = "(1.0f / sqrtf" + std::string(v->bytes(c.parens)) + ")";
      ch.replace(*v, v->tl.tokens[c.whole.first].begin, v->tl.tokens[c.whole.last - 1].end, text);
      inverse_at = v->tl.tokens[c.whole.first].begin + 8;  // the `sqrtf` of "(1.0f / sqrtf"
    } else if (c.name == "__fdividef") {
      text = "((" + std::string(v->bytes(c.arguments[0])) + ") / (" +
             std::string(v->bytes(c.arguments[1])) + "))";
      ch.replace(*v, v->tl.tokens[c.whole.first].begin, v->tl.tokens[c.whole.last - 1].end, text);
      inverse_at = UINT32_MAX;
    } else {
      text = std::string(kFastToPrecise.at(c.name));
      ch.replace(*v, name.begin, name.end, text);
    }
    rule_result r = start(inv, v->st.functions[c.function].name);
    r.note = "replaced " + std::string(v->bytes(c.whole)) + " by the precise form (" + text + ")";
    auto done = ch.finish(std::move(r));
    if (!done || inverse_at == UINT32_MAX) return done;
    auto after = view_of(done->kernel, v->file);
    if (const int32_t k = call_at(*after, inverse_at); k >= 0)
      done->inverse = inverse_of(inv, "fast_math.add", after->st.calls[k].anchor,
                                 {{"allow_fast_math", "true"}});
    return done;
  }

 private:
  static bool is_fast(const call& c) {
    return (kFastToPrecise.count(c.name) && !c.arguments.empty()) ||
           (c.name == "rsqrtf" && c.arguments.size() == 1) ||
           (c.name == "__fdividef" && c.arguments.size() == 2);
  }
};

class fast_add : public basic_rule {
 public:
  fast_add()
      : basic_rule({"fast_math.add",
                    "fast_math",
                    rule_direction::forward,
                    "replace one precise call by its approximate intrinsic: expf -> __expf (…), "
                    "1.0f / sqrtf(x) -> rsqrtf(x); needs allow_fast_math=true",
                    "CUDA; a call in a __global__/__device__ function; for rsqrtf the division is "
                    "`1.0f / sqrtf(x)`, not the right operand of another division",
                    {"the task's tolerance accepts the intrinsic's error (a few ulp, larger for "
                     "large arguments; assumed; checked by the gate)"}}) {}

  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!is_cuda(b)) return {};
    return call_sites(b, [](const source_view& v, const call& c) {
      return device_code(v.st.functions[c.function]) && forward_of(v, c);
    });
  }

  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (!allows_fast_math(inv))
      return fail(errc::unsupported,
                  "fast_math.add changes results: it runs only with allow_fast_math=true (the "
                  "task allows approximate math)");
    std::optional<fast_site> fs;
    auto tg = open_target(b, inv, anchor_kind::call,
                          "is not a precise call with an approximate form in device code",
                          [&](const source_view& v, const anchor_target& t) {
                            if (device_code(v.st.functions[t.function]))
                              fs = forward_of(v, v.st.calls[t.index]);
                            return fs.has_value();
                          });
    if (!tg) return tl::unexpected(tg.error());
    const auto& v = tg->v;
    const call& c = v->st.calls[tg->t.index];
    change ch(b);
    ch.replace(*v, fs->from, fs->to, fs->text);
    rule_result r = start(inv, v->st.functions[c.function].name);
    r.note =
        "replaced " + std::string(v->text.substr(fs->from, fs->to - fs->from)) + " by " + fs->text;
    auto done = ch.finish(std::move(r));
    if (!done) return done;
    auto after = view_of(done->kernel, v->file);
    if (const int32_t k = call_at(*after, fs->from); k >= 0)
      done->inverse = inverse_of(inv, "fast_math.remove", after->st.calls[k].anchor);
    return done;
  }
};

}  // namespace

std::vector<const rule*> fast_math_rules() {
  static const fast_remove remove;
  static const fast_add add;
  return {&remove, &add};
}

}  // namespace lathe::agent::rules::detail
