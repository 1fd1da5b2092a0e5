// Rules on the manifest's compile flags (anchor `flags:FLAG`, the catalog's first extension of the
// front end's grammar; catalog_isa.cpp has the second, `isa:LEVEL`): fast_math_flag.{remove,add}
// (--use_fast_math for nvcc, -ffast-math for g++, -Ofast removed as -O3) and opt_level.{remove,add}
// (-O3 ⇄ -O2/-O1). An -O level is no mechanism of the registry (DESIGN.md: features are mechanisms
// in a kernel), so opt_level removes and adds no feature; it exists so that a backward walk can
// show what the optimizer level alone is worth. Which flags a task accepts is the gate's screen's
// decision, not these rules'.
#include <algorithm>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail {

namespace {

const std::vector<std::string> kFastFlags = {"--use_fast_math", "-use_fast_math", "-ffast-math",
                                             "-Ofast"};
const std::vector<std::string> kLowLevels = {"-O2", "-O1", "-O0", "-Os"};

// The flag an anchor `flags:FLAG` names.
result<std::string> flag_of(const std::string& anchor) {
  if (!anchor.starts_with("flags:") || anchor.size() == 6)
    return fail(errc::invalid_argument, "anchor '" + anchor + "': expected flags:FLAG");
  return anchor.substr(6);
}

bool in(const std::vector<std::string>& set, const std::string& f) {
  return std::find(set.begin(), set.end(), f) != set.end();
}

rule_site flag_site(std::string flag, std::string what) {
  rule_site s;
  s.anchor = "flags:" + flag;
  s.locus = "<flags>";
  s.what = std::move(what);
  return s;
}

// The flag rules edit no file: a site is the manifest's flag list.
class flag_rule : public basic_rule {
 public:
  using basic_rule::basic_rule;

 protected:
  result<rule_result> finish(const kernel_bundle& b, const rule_invocation& inv,
                             const std::vector<std::pair<bool, std::string>>& flags,
                             std::string note, rule_invocation inverse) const {
    change c(b);
    for (const auto& [add, f] : flags) add ? c.add_flag(f) : c.remove_flag(f);
    rule_result r = start(inv, "<flags>");
    r.note = std::move(note);
    r.inverse = std::move(inverse);
    return c.finish(std::move(r));
  }
};

class fast_flag_remove : public flag_rule {
 public:
  fast_flag_remove()
      : flag_rule({"fast_math_flag.remove",
                   "fast_math",
                   rule_direction::backward,
                   "delete a fast-math compile flag (--use_fast_math, -ffast-math; -Ofast "
                   "becomes -O3)",
                   "the manifest's flags hold it",
                   {}}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    std::vector<rule_site> out;
    for (const std::string& f : b.manifest.flags)
      if (in(kFastFlags, f)) out.push_back(flag_site(f, "compile flag " + f));
    return out;
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto f = flag_of(inv.anchor);
    if (!f) return tl::unexpected(f.error());
    if (!in(kFastFlags, *f) || !has_flag(b, *f))
      return fail(errc::not_found, "no fast-math flag " + *f + " in the manifest's flags");
    std::vector<std::pair<bool, std::string>> flags{{false, *f}};
    if (*f == "-Ofast" && !has_flag(b, "-O3")) flags.push_back({true, "-O3"});
    return finish(b, inv, flags, "deleted the compile flag " + *f,
                  {"fast_math_flag.add", inv.anchor, {{"allow_fast_math", "true"}}});
  }
};

class fast_flag_add : public flag_rule {
 public:
  fast_flag_add()
      : flag_rule({"fast_math_flag.add",
                   "fast_math",
                   rule_direction::forward,
                   "add the fast-math compile flag: --use_fast_math (CUDA) or -ffast-math (C++); "
                   "needs allow_fast_math=true",
                   "no fast-math flag in the manifest",
                   {"the task's tolerance accepts approximate math everywhere in the kernel "
                    "(flush to zero, approximate division and transcendentals, reassociation; "
                    "assumed; checked by the gate)"}}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    for (const std::string& f : b.manifest.flags)
      if (in(kFastFlags, f)) return {};
    const std::string f = is_cuda(b) ? "--use_fast_math" : "-ffast-math";
    return {flag_site(f, "compile flag " + f)};
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    if (!allows_fast_math(inv))
      return fail(errc::unsupported,
                  "fast_math_flag.add changes results: it runs only with allow_fast_math=true");
    auto f = flag_of(inv.anchor);
    if (!f) return tl::unexpected(f.error());
    const std::string want = is_cuda(b) ? "--use_fast_math" : "-ffast-math";
    if (*f != want && !(is_cuda(b) && *f == "-use_fast_math"))
      return fail(errc::invalid_argument, "the fast-math flag of this kernel is " + want);
    for (const std::string& x : b.manifest.flags)
      if (in(kFastFlags, x)) return fail(errc::invalid_argument, "the manifest already has " + x);
    return finish(b, inv, {{true, *f}}, "added the compile flag " + *f,
                  {"fast_math_flag.remove", inv.anchor, {}});
  }
};

class level_remove : public flag_rule {
 public:
  level_remove()
      : flag_rule({"opt_level.remove",
                   "",
                   rule_direction::backward,
                   "lower -O3 to -O2 (param level=-O1/-O0)",
                   "the manifest's flags hold -O3",
                   {}}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    if (!has_flag(b, "-O3")) return {};
    rule_site s = flag_site("-O3", "optimizer level -O3");
    s.params["level"] = "-O2";
    return {s};
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto f = flag_of(inv.anchor);
    if (!f) return tl::unexpected(f.error());
    if (*f != "-O3" || !has_flag(b, "-O3"))
      return fail(errc::not_found, "opt_level.remove takes flags:-O3, and the manifest has it not");
    auto l = inv.params.find("level");
    const std::string level = l == inv.params.end() ? "-O2" : l->second;
    if (!in(kLowLevels, level))
      return fail(errc::invalid_argument, "level='" + level + "': -O2, -O1, -O0 or -Os");
    return finish(b, inv, {{false, "-O3"}, {true, level}}, "lowered -O3 to " + level,
                  {"opt_level.add", "flags:" + level, {}});
  }
};

class level_add : public flag_rule {
 public:
  level_add()
      : flag_rule({"opt_level.add",
                   "",
                   rule_direction::forward,
                   "raise an explicit -O2/-O1/-O0/-Os to -O3",
                   "the manifest's flags hold one of those and not -O3",
                   {}}) {}
  std::vector<rule_site> sites(const kernel_bundle& b) const override {
    std::vector<rule_site> out;
    if (has_flag(b, "-O3")) return out;
    for (const std::string& f : b.manifest.flags)
      if (in(kLowLevels, f)) out.push_back(flag_site(f, "optimizer level " + f));
    return out;
  }
  result<rule_result> apply(const kernel_bundle& b, const rule_invocation& inv) const override {
    auto f = flag_of(inv.anchor);
    if (!f) return tl::unexpected(f.error());
    if (!in(kLowLevels, *f) || !has_flag(b, *f) || has_flag(b, "-O3"))
      return fail(errc::not_found, "no optimizer level " + *f + " to raise in the manifest");
    return finish(b, inv, {{false, *f}, {true, "-O3"}}, "raised " + *f + " to -O3",
                  {"opt_level.remove", "flags:-O3", {{"level", *f}}});
  }
};

}  // namespace

std::vector<const rule*> flag_rules() {
  static const fast_flag_remove fast_remove;
  static const fast_flag_add fast_add;
  static const level_remove level_down;
  static const level_add level_up;
  return {&fast_remove, &fast_add, &level_down, &level_up};
}

}  // namespace lathe::agent::rules::detail
