#include "skills/retrieve.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "agent/kernel_text.h"
#include "core/feature_registry.h"
#include "core/op_family.h"
#include "core/text.h"
#include "skills/tuned.h"
#include "spec/problem_inputs.h"

namespace lathe::skills {

namespace {

using name_set = std::set<std::string>;

std::optional<double> geomean(const std::vector<double>& xs) {
  double sum = 0;
  size_t n = 0;
  for (double x : xs)
    if (x > 0) sum += std::log(x), ++n;
  if (n == 0) return std::nullopt;
  return std::exp(sum / double(n));
}

double size_of(const std::map<std::string, int64_t>& shape) {
  double v = 1;
  for (const auto& [k, n] : shape) v *= double(std::max<int64_t>(n, 1));
  return v;
}

bool applies_to(const std::string& feature_name, platform p) {
  const feature_definition* d = find_feature(feature_name);
  if (!d) return false;
  const std::string_view plats = d->platforms;
  const std::string_view want = to_string(p);
  for (size_t at = plats.find(want); at != std::string_view::npos; at = plats.find(want, at + 1)) {
    const bool left = at == 0 || plats[at - 1] == ',';
    const bool right = at + want.size() == plats.size() || plats[at + want.size()] == ',';
    if (left && right) return true;
  }
  return false;
}

bool subset(const std::vector<std::string>& xs, const name_set& of) {
  return std::all_of(xs.begin(), xs.end(), [&](const std::string& x) { return of.count(x) > 0; });
}

std::vector<std::string> missing(const std::vector<std::string>& xs, const name_set& of) {
  std::vector<std::string> out;
  for (const auto& x : xs)
    if (!of.count(x)) out.push_back(x);
  return out;
}

rejection reject(const skill_card& c, rejection_stage st, std::string reason) {
  return rejection{c.id, c.name, st, std::move(reason), std::nullopt};
}

// A tuned-knobs card (skills/tuned.h) serves a kernel of its family on its target only, and not
// one whose tunables already have its values.
std::optional<rejection> tuned_rejection(const skill_card& c, const retrieve_query& q) {
  if (!c.tuned) return std::nullopt;
  static const tune_space none;
  if (auto why = tuned_family_misfit(c, q.tunables ? *q.tunables : none, q.tgt))
    return reject(c, rejection_stage::tunables, *why);
  if (q.tunables && q.tunables->defaults == c.tuned->values)
    return reject(c, rejection_stage::present, "the kernel's tunables already have these values");
  return std::nullopt;
}

}  // namespace

const char* to_string(op_relation r) {
  switch (r) {
    case op_relation::same: return "same";
    case op_relation::related: return "related";
    case op_relation::other: return "other";
  }
  return "?";
}

const char* to_string(rejection_stage s) {
  switch (s) {
    case rejection_stage::status: return "status";
    case rejection_stage::platform: return "platform";
    case rejection_stage::language: return "language";
    case rejection_stage::constraint: return "constraint";
    case rejection_stage::present: return "present";
    case rejection_stage::requires_unmet: return "requires_unmet";
    case rejection_stage::conflict: return "conflict";
    case rejection_stage::tunables: return "tunables";
  }
  return "?";
}

op_relation relation(std::string_view a, std::string_view b) {
  if (a == b) return op_relation::same;
  return related_families(family_of_op(a), family_of_op(b)) ? op_relation::related : op_relation::other;
}

op_relation relation_to(std::string_view card_op, const task& t) {
  if (card_op == t.op) return op_relation::same;  // a card learned on this very problem
  const std::vector<op_family> fams = families_of_ops(problem_ops(t));
  if (fams.empty()) return relation(card_op, t.op);
  const op_family f = family_of_op(card_op);
  if (f == op_family::other) return op_relation::other;
  if (f == fams.front()) return op_relation::same;
  const bool among = std::find(fams.begin(), fams.end(), f) != fams.end();
  return among || related_families(f, fams.front()) ? op_relation::related : op_relation::other;
}

std::vector<platform> card_platforms(const skill_card& c) {
  std::vector<platform> out;
  auto add = [&](platform p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (const auto& [key, text] : c.carriers) {
    if (key.ends_with("/cpu")) add(platform::cpu);
    else if (key.ends_with("/cuda")) add(platform::cuda);
  }
  if (out.empty()) add(c.target.rfind("sm_", 0) == 0 ? platform::cuda : platform::cpu);
  return out;
}

std::optional<rejection> usable_on(const skill_card& c, language lang, platform plat, candidate_language cand) {
  std::vector<std::string> foreign;
  for (const auto& f : c.provides_features)
    if (!applies_to(f, plat)) foreign.push_back(f);
  if (!foreign.empty())
    return reject(c, rejection_stage::platform,
                  "provides " + join(foreign, ", ") + ", not a feature of " + to_string(plat) + " kernels");
  std::vector<std::string> has;
  for (const auto& [k, v] : c.carriers) has.push_back(k);
  const std::string it_has = " (it has " + (has.empty() ? std::string("none") : join(has, ", ")) + ")";
  if (c.tuned && cand != candidate_language::c_abi)
    return reject(c, rejection_stage::language,
                  cat("a tuned configuration sets a C-ABI bundle's tunables; a ", to_string(cand), " kernel declares none"));
  if (cand != candidate_language::c_abi) {
    // A ModelNew builds C++ (CUDA on a CUDA problem) through load_inline: a C-ABI card's code is
    // carried into that extension, its technique adapted to the extension's function. A rule
    // invocation is not: the rules rewrite the files of a C-ABI bundle, not C++ inside Python.
    const std::string native = agent::carrier_key(plat == platform::cuda ? language::cuda : language::cpp, plat);
    const std::string python = agent::carrier_key(language::python, plat);
    if (c.carriers.count(native) || c.carriers.count(python)) return std::nullopt;
    return reject(c, rejection_stage::language,
                  cat("no carrier a ", to_string(cand), " kernel can build: it takes ", native,
                      " into its inline extension, or ", python, it_has,
                      c.carriers.count("rules") ? "; a rules carrier replays on C-ABI bundles only" : ""));
  }
  // The carrier is code in this kernel's language against the lathe ABI (v1, the only version:
  // every stored carrier targets it), or a rule invocation, which is replayed on the kernel.
  const std::string key = agent::carrier_key(lang, plat);
  if (c.carriers.count(key) || c.carriers.count("rules")) return std::nullopt;
  return reject(c, rejection_stage::language, "no carrier for " + key + it_has);
}

score_parts score(const skill_card& c, const retrieve_query& q) {
  score_parts s;
  s.rel = q.op.empty() && q.t ? relation_to(c.op, *q.t) : relation(c.op, q.op);
  std::vector<double> ratios;
  if (c.declared_ratio) ratios.push_back(*c.declared_ratio);
  for (const auto& t : c.trials)
    if (t.verdict == trial_verdict::reproduced && t.ratio) ratios.push_back(*t.ratio);
  s.measured = geomean(ratios);
  if (s.measured) s.gain = std::clamp(std::log(*s.measured) / std::log(4.0), 0.0, 1.0);
  std::map<std::string, int64_t> shape = q.shape;
  if (shape.empty() && q.t)
    for (const auto& set : q.t->shapes)
      if (set.time || shape.empty()) shape = set.symbols;
  s.shape = shape.empty() || c.shape.empty()
                ? 0.5
                : 1.0 / (1.0 + std::abs(std::log10(size_of(c.shape) / size_of(shape))));
  const int tier = s.rel == op_relation::same ? 2 : s.rel == op_relation::related ? 1 : 0;
  s.total = 4.0 * tier + s.gain + 0.5 * s.shape;
  return s;
}

std::vector<constraint_failure> recheck(const skill_card& c, const target& other, const task* t) {
  std::vector<constraint_failure> out;
  for (const auto& k : effective_constraints(c))
    if (auto f = check(k, other, t)) out.push_back(std::move(*f));
  return out;
}

retrieval retrieve(const std::vector<skill_card>& cards, const retrieve_query& q, const retrieve_options& o) {
  retrieval out;
  const platform plat = q.tgt.plat;
  std::vector<const skill_card*> candidates;
  for (const auto& c : cards) {
    if (c.status == card_status::refused && !o.include_refused) {
      out.rejected.push_back(reject(c, rejection_stage::status, "refused at admission: " + c.status_reason));
      continue;
    }
    // A tuned card crowned in this store: its evidence is the gate's own crown on its target, and
    // every application is a configured bundle the gate decides again, so it serves while a
    // candidate (skills/tuned.h crowned_here). An imported or hand-written one waits for admission.
    if (o.admitted_only && !c.admitted() && !crowned_here(c)) {
      out.rejected.push_back(reject(c, rejection_stage::status, std::string("not admitted (") + to_string(c.status) + ")"));
      continue;
    }
    std::optional<rejection> no = usable_on(c, q.lang, plat, q.cand);
    if (!no) no = tuned_rejection(c, q);
    if (no) {
      out.rejected.push_back(std::move(*no));
      continue;
    }
    auto failed = o.check_constraints ? recheck(c, q.tgt, q.t) : std::vector<constraint_failure>{};
    if (!failed.empty()) {
      std::vector<std::string> why;
      for (const auto& f : failed) why.push_back("constraint " + constraint_text(f.what) + " fails on " + f.target + ": " + f.reason);
      rejection r = reject(c, rejection_stage::constraint, join(why, "; "));
      r.failed = failed.front();
      out.rejected.push_back(std::move(r));
      continue;
    }
    candidates.push_back(&c);
  }

  // The path: from the kernel's features, the best-scored card whose requirements are met and
  // that conflicts with nothing present; what it provides is then present for the next.
  name_set have(q.features.begin(), q.features.end());
  std::map<std::string, std::string> provider;  // feature -> path card id that brought it
  std::vector<score_parts> scores;
  for (const auto* c : candidates) scores.push_back(score(*c, q));
  std::vector<bool> placed(candidates.size(), false);
  auto blocked = [&](const skill_card& c) -> std::optional<std::string> {
    for (const auto& f : c.conflicts_features)
      if (have.count(f))
        return f + (provider.count(f) ? " (brought by card " + provider[f] + ")" : " (the kernel has it)");
    return std::nullopt;
  };
  auto present = [&](const skill_card& c) { return !c.provides_features.empty() && subset(c.provides_features, have); };
  for (size_t i = 0; i < candidates.size(); ++i) {
    const skill_card& c = *candidates[i];
    if (present(c)) {
      out.rejected.push_back(reject(c, rejection_stage::present, "the kernel already has " + join(c.provides_features, ", ")));
      placed[i] = true;
    } else if (auto f = blocked(c)) {
      out.rejected.push_back(reject(c, rejection_stage::conflict, "conflicts with " + *f));
      placed[i] = true;
    }
  }
  for (;;) {
    std::optional<size_t> best;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (placed[i] || !subset(candidates[i]->requires_features, have) || blocked(*candidates[i]) ||
          present(*candidates[i]))
        continue;
      if (!best || scores[i].total > scores[*best].total ||
          (scores[i].total == scores[*best].total && candidates[i]->name < candidates[*best]->name))
        best = i;
    }
    if (!best) break;
    const skill_card& c = *candidates[*best];
    placed[*best] = true;
    retrieved r{c, scores[*best], {}};
    for (const auto& f : c.requires_features)
      if (provider.count(f) && std::find(r.after.begin(), r.after.end(), provider[f]) == r.after.end())
        r.after.push_back(provider[f]);
    for (const auto& f : c.provides_features)
      if (have.insert(f).second) provider[f] = c.id;
    out.path.push_back(c.id);
    out.ranked.push_back(std::move(r));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (placed[i]) continue;
    const skill_card& c = *candidates[i];
    if (present(c)) {
      std::vector<std::string> by;
      for (const auto& f : c.provides_features)
        if (provider.count(f)) by.push_back(provider[f]);
      out.rejected.push_back(reject(c, rejection_stage::present, "provided by earlier card(s) of the path: " + join(by, ", ")));
    } else if (auto f = blocked(c)) {
      out.rejected.push_back(reject(c, rejection_stage::conflict, "conflicts with " + *f));
    } else {
      out.rejected.push_back(reject(c, rejection_stage::requires_unmet,
                                    "requires " + join(missing(c.requires_features, have), ", ") +
                                        ", which neither the kernel nor any card of the path provides"));
    }
  }
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [](const retrieved& a, const retrieved& b) { return a.score.total > b.score.total; });
  return out;
}

}  // namespace lathe::skills
