#include "skills/tuned.h"

#include <algorithm>
#include <cstdio>

#include "agent/kernel_text.h"
#include "core/expr.h"
#include "core/hash.h"
#include "core/text.h"
#include "skills/induce.h"
#include "spec/tune.h"

namespace lathe::skills {
namespace {

std::string names_of(const std::map<std::string, int64_t>& c) {
  std::vector<std::string> out;
  for (const auto& [k, v] : c) out.push_back(k);
  return join(out, ", ");
}

std::string ratio_text(double r, const std::optional<double>& lo, const std::optional<double>& hi) {
  char b[96];
  if (lo && hi) std::snprintf(b, sizeof b, "%.3fx [%.3f, %.3f]", r, *lo, *hi);
  else std::snprintf(b, sizeof b, "%.3fx", r);
  return b;
}

std::map<std::string, int64_t> timed_symbols(const task& t) {
  for (const auto& s : t.shapes)
    if (s.time) return s.symbols;
  return t.shapes.empty() ? std::map<std::string, int64_t>{} : t.shapes.back().symbols;
}

// Where a card was measured, as its target field says it: "sm_*" is CUDA (card_platforms' rule).
platform platform_of_arch(const std::string& arch) { return arch.rfind("sm_", 0) == 0 ? platform::cuda : platform::cpu; }

}  // namespace

std::string tuned_card_id(const std::string& default_hash, const std::string& arch, const tune_config& winner) {
  return content_hash("tune|" + default_hash + "|" + arch + "|" + config_label(winner)).substr(0, 16);
}

bool tuned_from(const skill_card& c, const kernel_bundle& k) {
  if (!c.tuned || c.tuned->values.empty()) return false;
  auto d = configure(k, c.tuned->defaults);  // fails on a kernel without these tunables: not it
  return d && tuned_card_id(d->hash, c.target, c.tuned->values) == c.id;
}

skill_card card_from_tune(const tune_win& w) {
  const task& t = *w.t;
  const std::string win = config_label(w.winner), def = config_label(w.defaults);
  const std::string ratio = ratio_text(w.ratio, w.lo, w.hi);
  skill_card c;
  c.id = tuned_card_id(w.default_hash, w.tgt.arch, w.winner);
  c.name = kebab(cat("tuned-", t.op.empty() ? t.name : t.op, "-", names_of(w.winner), "-", w.tgt.arch));
  c.intent = cat("Set the tunables ", names_of(w.winner), " to ", win, ": the configuration lathe tune crowned for ",
                 w.kernel, " of ", t.name, " on ", w.tgt.arch);
  c.anchor = "[tune] " + names_of(w.winner) + " (kernel.toml)";
  c.action = tune_action;
  c.op = t.op;
  c.carriers[agent::carrier_key(w.lang, t.plat)] =
      cat("[defines] ", win, " (the tunables' values, as lathe tune configures a bundle)");
  c.preconditions = {cat("the kernel declares exactly the tunables ", names_of(w.winner), " ([tune] in kernel.toml)"),
                     cat("its declared space holds ", win, " and its constraints admit it on every shape set"),
                     cat("the target is ", w.tgt.arch, " (", to_string(t.plat), ")")};
  c.effect = cat("measured paired ratio ", ratio, " of ", win, " over the default ", def,
                 " (the crown of tune run ", w.run, ": a fresh paired series decided it faster)");
  c.risk = "tuned values fit the shapes and the machine they were measured on; another kernel of the family may "
           "not gain (the gate decides every application)";
  c.scope = cat("kernels of the ", t.op.empty() ? t.name : t.op, " family declaring the tunables ", names_of(w.winner),
                ", on ", w.tgt.arch, w.tgt.device.empty() ? std::string() : " (measured on " + w.tgt.device + ")");
  c.declared_ratio = w.ratio;
  c.evidence = w.evidence;
  c.evidence_lang = candidate_language::c_abi;
  c.verification_log.push_back(cat("made by lathe tune (mechanical: a parameter search, no model) from run ", w.run,
                                   ": ", win, " crowned at ", ratio, " over ", def,
                                   w.evidence.empty() ? std::string() : cat(" (evaluation ", std::to_string(w.evidence.front()), ")")));
  c.source_tasks = {t.name};
  c.target = w.tgt.arch;
  c.shape = timed_symbols(t);
  c.status = card_status::candidate;
  c.prov = {"rules", tune_action, true};
  c.tuned = card_tuning{w.winner, w.defaults, w.lo, w.hi, w.kernel, w.run};
  return c;
}

result<std::string> store_tuned_card(store& db, skill_card c) {
  const std::string base = c.name;
  for (int n = 1; n < 1000; ++n) {
    const std::string suffix = n == 1 ? std::string() : cat("-", std::to_string(n));
    std::string name = base.substr(0, 64 - suffix.size());
    while (!name.empty() && name.back() == '-') name.pop_back();
    name += suffix;
    auto other = db.get_card(name);
    if (!other) return tl::unexpected(other.error());
    if (*other && (*other)->id != c.id) continue;
    if (*other) {  // the same values crowned again: admission's decision and trials stand
      c.status = (*other)->status;
      c.status_reason = (*other)->status_reason;
      c.trials = (*other)->trials;
    }
    c.name = name;
    if (auto w = db.put_card(c); !w) return tl::unexpected(w.error());
    return name;
  }
  return fail(errc::internal, "no free card name for '" + base + "'");
}

bool crowned_here(const skill_card& c) {
  return c.tuned && c.prov.kind == "rules" && c.prov.detail == tune_action && c.prov.mechanical && !c.evidence.empty();
}

std::optional<std::string> tuned_family_misfit(const skill_card& c, const tune_space& s, const target& tgt) {
  if (!c.tuned || c.tuned->values.empty()) return "not a tuned card (no configuration to set)";
  if (platform_of_arch(c.target) != tgt.plat || c.target != tgt.arch)
    return cat("tuned on ", c.target, "; this target is ", tgt.arch, " (", to_string(tgt.plat), ")");
  std::vector<std::string> declared;
  for (const tunable& p : s.params) declared.push_back(p.name);
  std::vector<std::string> wanted;
  for (const auto& [k, v] : c.tuned->values) wanted.push_back(k);
  if (declared != wanted)  // both sorted: tune_space::params by name, the map by key
    return cat("the card sets the tunables ", join(wanted, ", "), "; the kernel declares ",
               declared.empty() ? std::string("none") : join(declared, ", "));
  return std::nullopt;
}

result<kernel_bundle> apply_tuned(const skill_card& c, const kernel_bundle& k, const task& t, const target& tgt) {
  const tune_space& s = k.manifest.tune;
  if (auto why = tuned_family_misfit(c, s, tgt)) return fail(errc::invalid_argument, *why);
  const tune_config& want = c.tuned->values;
  for (const tunable& p : s.params) {
    const int64_t v = want.at(p.name);
    if (std::find(p.values.begin(), p.values.end(), v) == p.values.end()) {
      std::vector<std::string> vs;
      for (int64_t x : p.values) vs.push_back(std::to_string(x));
      return fail(errc::invalid_argument, cat(p.name, " = ", std::to_string(v), " is outside the kernel's declared values (",
                                              join(vs, ", "), ")"));
    }
  }
  // The kernel's constraints on every shape set, with the target's limits, as tune admits a
  // configuration (spec/tune.h: one rule for both).
  if (auto free = tunable_names_free(s, t, tgt); !free) return tl::unexpected(free.error());
  for (auto& [set, syms] : constraint_symbols(t, tgt)) {
    for (const auto& [name, v] : want) syms[name] = v;
    for (const std::string& con : s.constraints) {
      auto ok = eval_condition(con, syms);
      const std::string where = set.empty() ? std::string() : " on shape set '" + set + "'";
      if (!ok) return fail(errc::invalid_argument, cat("the kernel's constraint '", con, "'", where, " cannot be evaluated: ",
                                                       ok.error().message));
      if (!*ok)
        return fail(errc::invalid_argument, cat(config_label(want), " breaks the kernel's constraint '", con, "'", where));
    }
  }
  return configure(k, want);
}

}  // namespace lathe::skills
