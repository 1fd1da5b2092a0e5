// Rules on the manifest's target ISA (anchor `isa:LEVEL`, the catalog's second extension of the
// front end's grammar, beside `flags:`): isa.remove lowers a C++ kernel's x86-64 psABI level
// (x86-64-v3 → x86-64-v2; param level= for any lower one), isa.add raises it (up to x86-64-v4).
// Like an -O level, an ISA level is a build setting, not a mechanism in the kernel, so these
// rules remove and add no feature; they let a backward walk show what the level alone is worth.
// The change is one `@@@ ISA LEVEL` line (docs/edits.md); which level a host can run is the gate's
// decision (unsupported_target above the host), never these rules'.
//
// CUDA is left out: sm_90a → sm_90 takes away only the `a` features (wgmma, setmaxnreg), which a
// kernel either uses (and then does not compile without) or does not (and then loses nothing
// measurable), so a rule would show nothing a backward walk needs yet.
#include <algorithm>

#include "agent/rules/catalog_detail.h"
#include "core/target.h"

namespace lathe::agent::rules::detail {

namespace {

// The psABI levels as g++ spells them for -march (it has no "x86-64-v1"), index = level - 1.
const std::vector<std::string> kLevels = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};

// The x86-64 level of a C++ kernel's manifest (1..4); -1 for CUDA, no `isa` (the host's level,
// which a syntactic rule cannot know) or an unknown one.
int cpu_level(const kernel_bundle& b) {
  return is_cuda(b) ? -1 : x86_level(b.manifest.isa);
}

result<std::string> level_of(const std::string& anchor) {
  if (!anchor.starts_with("isa:") || anchor.size() == 4)
    return fail(errc::invalid_argument, "anchor '" + anchor + "': expected isa:LEVEL");
  return anchor.substr(4);
}

// Intrinsics and vector types that exist only at some level: the SSE…AVX-512 families
// (`_mm*`, `__m128*`, `__m256*`, `__m512*`, `__mmask*`), GCC's builtins behind them, and the
// scalar BMI1/BMI2/LZCNT/POPCNT/F16C ones of x86-64-v2/v3.
bool intrinsic_name(std::string_view id) {
  for (std::string_view p :
       {"_mm",    "__m128",  "__m256",  "__m512",  "__mmask",   "__builtin_ia32_", "_bextr",
        "_blsi",  "_blsmsk", "_blsr",   "_bzhi",   "_pdep",     "_pext",           "_lzcnt",
        "_tzcnt", "_mulx",   "_andn_u", "_popcnt", "_cvtsh_ss", "_cvtss_sh"})
    if (id.starts_with(p)) return true;
  return false;
}

bool target_word(std::string_view id) {
  return id == "target" || id == "__target__" || id == "target_clones" || id == "__target_clones__";
}

struct isa_use {
  uint32_t line = 0;  // of the token that shows it
  std::string what;   // empty: nothing ties the code to an ISA
};

// What in `tl` ties the code to an ISA: an intrinsic or vector type, inline assembly (its
// instructions are not checked), `__attribute__((target…))` or `[[gnu::target…]]`; in a
// `#define` body too (tokenized on its own), `#include <…intrin.h>`, `#pragma GCC target`.
// Tokens in inactive branches never count; conditional ones do (the safe side). Comments and
// strings are other kinds of token, so a name there never counts.
isa_use first_isa_use(const token_list& tl, bool in_define = false) {
  for (size_t i = 0; i < tl.tokens.size(); ++i) {
    const token& t = tl.tokens[i];
    if (t.where == branch::inactive) continue;
    const std::string_view s = tl.text(t);
    const auto found = [&](std::string what) { return isa_use{t.line, std::move(what)}; };
    if (t.kind == token_kind::identifier) {
      if (intrinsic_name(s)) return found(std::string(s));
      if (s == "asm" || s == "__asm__" || s == "__asm")
        return found(std::string(s) + " (inline assembly)");
      if (s == "__attribute__" || s == "__attribute") {
        const size_t open = tl.next_code(i);
        if (open >= tl.tokens.size() || tl.text(open) != "(" || tl.tokens[open].match < 0) continue;
        for (size_t k = open; k < static_cast<size_t>(tl.tokens[open].match); ++k)
          if (tl.tokens[k].kind == token_kind::identifier && target_word(tl.text(k)))
            return found("__attribute__((" + std::string(tl.text(k)) + " …))");
      }
      if (target_word(s)) {
        const long colons = tl.prev_code(i);
        const long ns = colons >= 0 ? tl.prev_code(static_cast<size_t>(colons)) : -1;
        if (ns >= 0 && tl.text(static_cast<size_t>(colons)) == "::" &&
            (tl.text(static_cast<size_t>(ns)) == "gnu" ||
             tl.text(static_cast<size_t>(ns)) == "__gnu__"))
          return found("[[gnu::" + std::string(s) + " …]]");
      }
    } else if (t.kind == token_kind::preprocessor && !in_define) {
      const std::string_view name = directive_name(s);
      const std::string body = directive_body(s);
      if (name == "include") {
        const size_t open = body.find_first_of("<\""), close = body.find_last_of(">\"");
        if (open != std::string::npos && close != std::string::npos && close > open &&
            body.substr(open + 1, close - open - 1).ends_with("intrin.h"))
          return found("#include " + body);
      } else if (name == "pragma") {
        if (body.starts_with("GCC target") ||
            (body.starts_with("clang attribute") && body.find("target") != std::string::npos))
          return found("#pragma " + body);
      } else if (name == "define") {
        isa_use inner = first_isa_use(tokenize(body), true);
        if (!inner.what.empty())
          return found(inner.what + " in #define " + body.substr(0, body.find_first_of(" (\t")));
      }
    }
  }
  return {};
}

// The first place in the bundle's sources that needs the kernel's ISA ("kernel.cpp:12:
// _mm256_add_ps"); empty when none does.
std::string isa_need(const kernel_bundle& b) {
  for (const std::string& f : code_files(b)) {
    const isa_use u = first_isa_use(tokenize(b.sources.at(f)));
    if (!u.what.empty()) return f + ":" + std::to_string(u.line) + ": " + u.what;
  }
  return {};
}

rule_site isa_site(const std::string& isa, std::string level) {
  rule_site s;
  s.anchor = "isa:" + isa;
  s.locus = "<isa>";
  s.params["level"] = std::move(level);
  s.what = "target ISA " + isa + " (the manifest's isa)";
  return s;
}

// The ISA rules edit no file: a site is the manifest's `isa`.
class isa_rule : public basic_rule {
 public:
  using basic_rule::basic_rule;

 protected:
  // The manifest's level, checked against the anchor. Errors: not_found (no such level here).
  result<int> current(const kernel_bundle& b, const rule_invocation& inv) const {
    auto want = level_of(inv.anchor);
    if (!want) return tl::unexpected(want.error());
    if (is_cuda(b))
      return fail(errc::not_found, std::string(name()) +
                                       " changes x86-64 levels of C++ kernels; this kernel is "
                                       "CUDA (no rule changes sm_ targets: docs/rules.md)");
    const int n = cpu_level(b);
    const std::string have =
        b.manifest.isa.empty() ? "not set (the host's level)" : "'" + b.manifest.isa + "'";
    if (*want != b.manifest.isa || n < 0)
      return fail(errc::not_found,
                  "the manifest's isa is " + have + ", not the x86-64 level " + *want);
    return n;
  }
  // The param level=, else `fallback`; it must lie in [lo, hi].
  result<std::string> target_level(const rule_invocation& inv, const std::string& fallback, int lo,
                                   int hi) const {
    auto l = inv.params.find("level");
    const std::string level = l == inv.params.end() ? fallback : l->second;
    const int n = x86_level(level);
    if (n < lo || n > hi || lo > hi) {
      std::string allowed;
      for (int k = lo; k <= hi; ++k) allowed += (allowed.empty() ? "" : ", ") + kLevels[k - 1];
      return fail(errc::invalid_argument,
                  "level='" + level + "': " + (allowed.empty() ? "no level here" : allowed));
    }
    return level;
  }
  result<rule_result> finish(const kernel_bundle& b, const rule_invocation& inv,
                             const std::string& level, std::string note,
                             rule_invocation inverse) const {
    change c(b);
    c.set_isa(level);
    rule_result r = start(inv, "<isa>");
    r.note = std::move(note);
    r.inverse = std::move(inverse);
    return c.finish(std::move(r));
  }
};

const std::vector<std::string> kRounding = {
    "results stay within the task's tolerance when the level changes how g++ rounds: FMA "
    "contraction of a*b+c (x86-64-v3 and up), the vector width of `omp simd` reductions "
    "(assumed; checked by the gate)"};

class isa_remove : public isa_rule {
 public:
  isa_remove()
      : isa_rule({"isa.remove", "", rule_direction::backward,
                  "lower a C++ kernel's x86-64 level by one (x86-64-v3 → x86-64-v2; param "
                  "level= for any lower level, down to x86-64)",
                  "the manifest's isa is x86-64-v2, -v3 or -v4, and no active or conditional "
                  "token of a source needs it: no identifier starting _mm, __m128, __m256, "
                  "__m512, __mmask or __builtin_ia32_, no BMI/LZCNT/POPCNT/F16C intrinsic "
                  "(_bzhi_u32, _tzcnt_u32…), no inline asm, no __attribute__((target…)) or "
                  "[[gnu::target…]], no #include of an …intrin.h header, no #pragma GCC target, "
                  "in code or in #define bodies",
                  kRounding}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    const int n = cpu_level(b);
    if (n < 2 || !isa_need(b).empty()) return {};
    return {isa_site(b.manifest.isa, kLevels[n - 2])};
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto n = current(b, inv);
    if (!n) return tl::unexpected(n.error());
    if (*n < 2)
      return fail(errc::not_found, b.manifest.isa + " is the lowest x86-64 level: nothing below");
    auto level = target_level(inv, kLevels[*n - 2], 1, *n - 1);
    if (!level) return tl::unexpected(level.error());
    if (const std::string need = isa_need(b); !need.empty())
      return fail(errc::invalid_argument, "the sources need the ISA (" + need + "): lowered to " +
                                              *level + ", the kernel would not compile");
    return finish(b, inv, *level, "lowered the target ISA from " + b.manifest.isa + " to " + *level,
                  {"isa.add", "isa:" + *level, {{"level", b.manifest.isa}}});
  }
};

class isa_add : public isa_rule {
 public:
  isa_add()
      : isa_rule({"isa.add",
                  "",
                  rule_direction::forward,
                  "raise a C++ kernel's x86-64 level by one (x86-64-v2 → x86-64-v3; param level= "
                  "for any higher level, up to x86-64-v4)",
                  "the manifest's isa is x86-64, -v2 or -v3",
                  {"the machine that runs the kernel supports the level (assumed; checked by the "
                   "gate: unsupported_target above the host's level)",
                   kRounding.front()}}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    const int n = cpu_level(b);
    if (n < 1 || n > 3) return {};
    return {isa_site(b.manifest.isa, kLevels[n])};
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto n = current(b, inv);
    if (!n) return tl::unexpected(n.error());
    if (*n > 3)
      return fail(errc::not_found, b.manifest.isa + " is the highest x86-64 level: nothing above");
    auto level = target_level(inv, kLevels[*n], *n + 1, 4);
    if (!level) return tl::unexpected(level.error());
    // The inverse lowers again, which isa.remove refuses on sources that need the ISA (they may
    // have been written for the lower level and need it still): then there is none.
    rule_invocation inverse;
    if (isa_need(b).empty()) inverse = {"isa.remove", "isa:" + *level, {{"level", b.manifest.isa}}};
    return finish(b, inv, *level,
                  "raised the target ISA from " + b.manifest.isa + " to " + *level +
                      " (the gate answers unsupported_target on a host below " + *level + ")",
                  std::move(inverse));
  }
};

}  // namespace

std::vector<const rule*> isa_rules() {
  static const isa_remove lower;
  static const isa_add raise;
  return {&lower, &raise};
}

}  // namespace lathe::agent::rules::detail
