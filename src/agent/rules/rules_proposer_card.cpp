// The rule engine's reading operations: the feature audit (from the detectors, cited by source
// line), cards abstracted from a rule step, and path rankings.
#include <algorithm>
#include <cctype>
#include <set>

#include "agent/audit.h"
#include "agent/kernel_text.h"
#include "agent/rules/rules_proposer.h"
#include "core/feature_registry.h"
#include "core/text.h"

namespace lathe::agent::rules {

namespace {

// A source detection's evidence starts "FILE:LINE: text" (detect_source); anything else (the
// manifest's flags, "kernel.toml flags: -ffast-math") is no bundle line and gives no citation.
std::optional<citation> citation_of(const kernel_bundle& k, const std::string& evidence) {
  const size_t colon = evidence.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string file = evidence.substr(0, colon);
  size_t i = colon + 1, n = 0;
  int32_t line = 0;
  while (i < evidence.size() && std::isdigit(static_cast<unsigned char>(evidence[i])) && n < 9)
    line = line * 10 + (evidence[i++] - '0'), ++n;
  if (n == 0 || i >= evidence.size() || evidence[i] != ':' || !k.sources.count(file)) return std::nullopt;
  return citation{file, line, line};
}

// A card is for the forward direction (before = less optimized): the step's rule if it is a
// forward one, else the forward rules of the feature the step moved.
std::vector<std::string> step_features(const card_request& r, const rule* step_rule) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const auto& f : r.step.added) add(f.name);
  for (const auto& f : r.step.removed) add(f.name);
  if (step_rule) add(std::string(step_rule->feature()));
  return out;
}

bool same_kernel(const kernel_bundle& a, const kernel_bundle& b) {
  if (a.sources != b.sources) return false;
  auto fa = a.manifest.flags, fb = b.manifest.flags;
  std::sort(fa.begin(), fa.end());
  std::sort(fb.begin(), fb.end());
  return fa == fb;  // a flag's position is no part of the step (opt_level re-adds at the end)
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Registry names written as whole words in `text` ("smem_tiling", not "smem_tiling2").
std::vector<std::string> named_features(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& d : feature_registry()) {
    const std::string n(d.name);
    for (size_t at = text.find(n); at != std::string::npos; at = text.find(n, at + 1)) {
      const bool left = at == 0 || !is_word(text[at - 1]);
      const bool right = at + n.size() >= text.size() || !is_word(text[at + n.size()]);
      if (left && right) {
        out.push_back(n);
        break;
      }
    }
  }
  return out;
}

}  // namespace

audit_result audit_kernel(const kernel_bundle& k, const std::vector<std::string>& names,
                          const artifact* built) {
  const std::vector<detection> source = detect_source(k);
  std::optional<detections> all;
  if (built) all = detect_features(k, *built);
  std::vector<feature_verdict> given;
  for (const std::string& name : names) {
    feature_verdict v;
    v.name = name;
    if (!has_detector(name)) {
      v.status = presence::unknown;
      v.note = find_feature(name) ? "no detector covers " + name + ": the rule engine cannot decide it"
                                  : name + " is not a registry name";
      given.push_back(std::move(v));
      continue;
    }
    std::vector<std::string> evidence;
    for (const detection& d : source) {
      if (d.what.name != name) continue;
      if (v.locus.empty()) v.locus = d.what.locus;
      evidence.push_back(d.evidence);
      // A verdict cites a few places, not every one (verify_audit bounds each, not their number).
      if (auto c = citation_of(k, d.evidence); c && v.citations.size() < 8) v.citations.push_back(*c);
    }
    bool present = !evidence.empty();
    if (all) {
      // The artifact decides what it can show (detect.h, "Artifact first"); its notes say where
      // the source asked for something the compiler did not make.
      present = all->has(name);
      if (const detection* d = all->find(name)) {
        if (v.locus.empty()) v.locus = d->what.locus;
        evidence.insert(evidence.begin(), d->evidence);
      }
      for (const auto& n : all->notes)
        if (n.rfind(name + ":", 0) == 0) evidence.push_back(n);
    }
    v.status = present ? presence::present : presence::absent;
    if (!present) v.citations.clear();
    v.note = present ? "detected: " + join(evidence, "; ")
                     : "no detector found it" + std::string(all ? " (artifact and source)" : " in the source") +
                           (evidence.empty() ? "" : ": " + join(evidence, "; "));
    given.push_back(std::move(v));
  }
  // The same check a model's audit gets: a `present` without a citation of real code is unknown.
  audit_result out = verify_audit(k, names, given);
  out.prov = {"rules", "detect", true};
  return out;
}

op_result<audit_result> rules_proposer::audit_features(const audit_request& r) {
  std::vector<std::string> outside;
  for (const auto& n : r.features)
    if (!find_feature(n)) outside.push_back(n);
  if (!outside.empty())
    return tl::unexpected(failure{failure_kind::unsupported,
                                  "rules: not registry names: " + join(outside, ", ")});
  return audit_kernel(r.kernel, r.features);
}

op_result<skill_card> rules_proposer::abstract_card(const card_request& r) {
  const rule* step_rule = nullptr;
  if (r.step.prov.kind == "rules") step_rule = find_rule(r.step.prov.detail);
  if (!step_rule) step_rule = find_rule(r.step.action);
  const std::vector<std::string> feats = step_features(r, step_rule);
  if (feats.empty())
    return tl::unexpected(failure{failure_kind::refused,
                                  "rules: the step moves no registry feature (an optimizer level?): no card"});
  // Candidates: the step's recorded invocation when it is a forward one, then every forward site
  // of the features on `before`. The first that gives `after` byte for byte is the carrier.
  std::vector<rule_invocation> tries;
  if (auto inv = from_carrier(r.step.edit); inv && find_rule(inv->rule) &&
                                             find_rule(inv->rule)->direction() == rule_direction::forward)
    tries.push_back(*inv);
  // A backward rule step (after → before) names its own inverse: the forward invocation that
  // gives back the same bytes (the removed pragma's clauses, its indentation). Found by re-running
  // the backward sites on `after` until one gives `before`.
  for (const auto& s : applicable(r.after, rule_direction::backward, catalog_opts())) {
    if (std::find(feats.begin(), feats.end(), std::string(s.what->feature())) == feats.end()) continue;
    if (auto back = s.what->apply(r.after, s.invocation);
        back && !back->inverse.rule.empty() && same_kernel(back->kernel, r.before)) {
      tries.push_back(back->inverse);
      break;
    }
  }
  for (const auto& s : applicable(r.before, rule_direction::forward, catalog_opts()))
    if (std::find(feats.begin(), feats.end(), std::string(s.what->feature())) != feats.end())
      tries.push_back(s.invocation);
  std::optional<rule_result> exact, first;
  for (const auto& inv : tries) {
    auto res = replay(inv, r.before);
    if (!res) continue;
    if (same_kernel(res->kernel, r.after)) {
      exact = std::move(*res);
      break;
    }
    if (!first) first = std::move(*res);
  }
  if (!exact && !first)
    return tl::unexpected(failure{failure_kind::refused,
                                  "rules: no forward rule adds " + join(feats, ", ") + " to the step's before kernel"});
  const rule_result& res = exact ? *exact : *first;
  const rule* fwd = find_rule(res.used.rule);
  const std::string feat(fwd->feature());
  const feature_definition* def = find_feature(feat);

  skill_card c;
  c.intent = "Add " + feat + ": " + std::string(def ? def->definition : "");
  c.anchor = res.used.anchor;
  c.carriers[rules_carrier_key] = to_carrier(res.used);
  // The text diff is a hint for a model materializing the card elsewhere, never the carrier.
  const platform plat = r.t ? r.t->plat : (r.before.manifest.lang == language::cuda ? platform::cuda : platform::cpu);
  c.carriers[carrier_key(r.before.manifest.lang, plat)] = res.edits;
  c.preconditions.push_back("syntactic (" + res.used.rule + "): " + std::string(fwd->preconditions()));
  // The catalog's assumptions already say "(assumed; checked by the gate)".
  for (const auto& a : res.assumed) c.preconditions.push_back(a);
  c.effect = r.step.speedup ? "measured paired ratio " + std::to_string(*r.step.speedup) +
                                  " on the source step (after over before)"
                            : "not measured";
  c.risk = res.assumed.empty() ? "a syntactic rewrite; the gate checks the result"
                               : "relies on " + join(res.assumed, "; ") + ", which no rule checks";
  c.scope = std::string(to_string(r.before.manifest.lang)) + " kernels where " + res.used.rule +
            " has a site (docs/rules.md, Catalog)";
  c.provides_features = {feat};
  c.verification_log.push_back(
      "abstracted by the rule engine (mechanical): " + res.used.rule + " at " + res.used.anchor +
      (exact ? " reproduces the step byte for byte" : " applies to the before kernel but does not reproduce the step exactly"));
  c.status = card_status::candidate;  // only an admission trial admits a card
  return c;
}

op_result<ranking> rules_proposer::rank_paths(const rank_request& r) {
  // What the kernel already has: the request's verified features and what the source shows.
  std::set<std::string> has;
  for (const auto& f : r.features) has.insert(f.name);
  for (const auto& d : detect_source(r.kernel)) has.insert(d.what.name);
  struct scored {
    const path_option* p;
    std::vector<std::string> lacking;
  };
  std::vector<scored> all;
  for (const auto& p : r.paths) {
    scored s{&p, {}};
    for (const auto& n : named_features(p.summary))
      if (!has.count(n)) s.lacking.push_back(n);
    all.push_back(std::move(s));
  }
  // Ties keep the caller's order (retrieval's: the lineage path), which knows more than a count.
  std::stable_sort(all.begin(), all.end(),
                   [](const scored& a, const scored& b) { return a.lacking.size() > b.lacking.size(); });
  ranking out;
  out.prov = {"rules", "rank", true};
  for (const auto& s : all) {
    out.order.push_back(s.p->id);
    out.reasons.push_back(s.lacking.empty() ? "names no feature the kernel lacks"
                                            : "names " + std::to_string(s.lacking.size()) +
                                                  " feature(s) the kernel lacks: " + join(s.lacking, ", "));
  }
  return out;
}

}  // namespace lathe::agent::rules
