// The rule engine's code-writing operations: backward and forward steps, materializing cards and
// mutations, each one rule invocation of the catalog (or, for a plan of cards, several in order).
// The audit, cards and rankings are in rules_proposer_card.cpp.
#include "agent/rules/rules_proposer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/feature_registry.h"
#include "core/text.h"

namespace lathe::agent::rules {

namespace {

// A caller tells the proposer about rejected attempts in prose; the rule engine's own summaries
// name the rule and the anchor (`rules apply`, proposal rationales), so a note naming both is the
// same attempt, and repeating it would give the same verdict.
bool was_rejected(const std::vector<attempt_note>& rejected, const rule_invocation& inv) {
  return std::any_of(rejected.begin(), rejected.end(), [&](const attempt_note& n) {
    return n.summary.find(inv.rule) != std::string::npos &&
           n.summary.find(inv.anchor) != std::string::npos;
  });
}

// An action prior entry as a registry name: `omp_parallel`, `remove_omp_parallel` or a rule name.
std::string prior_feature(const std::string& p) {
  if (find_feature(p)) return p;
  for (const char* pre : {"remove_", "add_"})
    if (p.rfind(pre, 0) == 0 && find_feature(p.substr(std::string(pre).size())))
      return p.substr(std::string(pre).size());
  if (const rule* r = find_rule(p)) return std::string(r->feature());
  return "";
}

std::string function_of(const std::string& locus) { return locus.substr(0, locus.find('/')); }

// 0: the site is at `locus`; 1: in its function; 2: elsewhere. Sorting by it keeps a step at the
// place the caller named whenever the rule has a site there.
int distance(const rule_site& s, const std::string& locus) {
  if (locus.empty()) return 2;
  if (s.locus == locus) return 0;
  return function_of(s.locus) == function_of(locus) ? 1 : 2;
}

// FNV-1a: stable across standard libraries (std::hash is not), so a seed means the same choice
// on every build.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string feature_text(const feature& f) { return f.name + " @ " + (f.locus.empty() ? "?" : f.locus); }

}  // namespace

rules_options options_for(const task& t, uint64_t seed) { return {t.allow_fast_math, seed}; }

provenance rules_proposer::origin() const { return {"rules", "catalog", true}; }

catalog_options rules_proposer::catalog_opts() const {
  catalog_options o;
  o.allow_fast_math = options_.allow_fast_math;
  return o;
}

proposal proposal_of(const rule_result& res) {
  proposal p;
  p.kernel = res.kernel;
  p.edits = res.edits;
  p.action = res.used.rule;
  p.locus = res.locus;
  p.features_removed = res.removes;
  p.features_added = res.adds;
  p.prov = {"rules", res.used.rule, true};
  p.rationale = "rules:" + res.used.rule + " at " + res.used.anchor + " (a mechanical rewrite)";
  if (!res.note.empty()) p.rationale += ": " + res.note;
  p.rationale += ".";
  if (!res.assumed.empty())
    p.rationale += " Relies on: " + join(res.assumed, "; ") + ".";  // each "(assumed; checked by the gate)"
  p.rationale += " Carrier: " + to_carrier(res.used);
  return p;
}

op_result<proposal> rules_proposer::propose_backward(const backward_request& r) {
  if (r.features.empty())
    return tl::unexpected(failure{failure_kind::refused, "rules: no features listed: nothing to remove"});
  // The order of features to try: the prior's, then the request's own order, each name once.
  std::vector<std::string> order;
  auto listed = [&](const std::string& n) {
    return std::any_of(r.features.begin(), r.features.end(), [&](const feature& f) { return f.name == n; });
  };
  for (const auto& p : r.action_prior)
    if (auto n = prior_feature(p); !n.empty() && listed(n) &&
                                   std::find(order.begin(), order.end(), n) == order.end())
      order.push_back(n);
  for (const auto& f : r.features)
    if (std::find(order.begin(), order.end(), f.name) == order.end()) order.push_back(f.name);

  const std::vector<applicable_site> sites = applicable(r.kernel, rule_direction::backward, catalog_opts());
  std::vector<std::string> why;  // per untouched feature, in words
  for (const std::string& name : order) {
    std::string locus;
    for (const auto& f : r.features)
      if (f.name == name && locus.empty()) locus = f.locus;
    std::vector<const applicable_site*> mine;
    for (const auto& s : sites)
      if (s.what->feature() == name) mine.push_back(&s);
    std::stable_sort(mine.begin(), mine.end(), [&](auto* a, auto* b) {
      return distance(a->site, locus) < distance(b->site, locus);
    });
    std::vector<std::string> errors;
    int skipped = 0;
    for (const applicable_site* s : mine) {
      if (was_rejected(r.rejected, s->invocation)) {
        ++skipped;
        continue;
      }
      auto res = s->what->apply(r.kernel, s->invocation);
      if (res) return proposal_of(*res);
      errors.push_back(s->invocation.anchor + ": " + res.error().message);
    }
    std::string reason = std::any_of(catalog().begin(), catalog().end(), [&](const rule* x) {
      return x->feature() == name && x->direction() == rule_direction::backward;
    }) ? (mine.empty() ? "no site of its rule in this kernel" : "")
       : "no rule of the catalog removes it";
    if (skipped) reason += (reason.empty() ? "" : "; ") + std::to_string(skipped) + " site(s) rejected before";
    if (!errors.empty()) reason += (reason.empty() ? "" : "; ") + ("the rule refused " + join(errors, "; "));
    why.push_back(name + " (" + reason + ")");
  }
  return tl::unexpected(failure{failure_kind::refused,
                                "rules: no backward rule applies; features it could not touch: " + join(why, ", ")});
}

op_result<proposal> rules_proposer::rederive_forward(const forward_request& r) {
  const std::string& name = r.restore.name;
  if (!find_feature(name))
    return tl::unexpected(failure{failure_kind::unsupported, "rules: '" + name + "' is not a registry name"});
  if (std::none_of(catalog().begin(), catalog().end(), [&](const rule* x) {
        return x->feature() == name && x->direction() == rule_direction::forward;
      }))
    return tl::unexpected(failure{failure_kind::refused, "rules: no rule of the catalog adds " + name +
                                                             "; features it could not touch: " + name});
  std::vector<applicable_site> sites = applicable(r.predecessor, rule_direction::forward, catalog_opts());
  std::erase_if(sites, [&](const applicable_site& s) { return s.what->feature() != name; });
  // The action hint names the backward rule ("simd_intrinsics.remove"): its own inverse goes
  // first, since several rules add one feature in very different ways (simd by `omp simd` or by
  // intrinsics) and the step being re-derived used this one. Then the site nearest the locus.
  const std::string inverse =
      r.action.ends_with(".remove") ? r.action.substr(0, r.action.size() - 7) + ".add" : std::string();
  std::stable_sort(sites.begin(), sites.end(), [&](const auto& a, const auto& b) {
    const bool ia = a.what->name() == inverse, ib = b.what->name() == inverse;
    if (ia != ib) return ia;
    return distance(a.site, r.restore.locus) < distance(b.site, r.restore.locus);
  });
  std::vector<std::string> errors;
  for (const applicable_site& s : sites) {
    if (was_rejected(r.rejected, s.invocation)) continue;
    // The feature's own params (an unroll factor, a thread count) where the rule takes them, so
    // the step restores what was there; the site's defaults when the rule refuses them.
    rule_invocation inv = s.invocation;
    bool tuned = false;
    for (const auto& [k, v] : r.restore.params)
      if (inv.params.count(k) && inv.params[k] != v) inv.params[k] = v, tuned = true;
    auto res = replay(inv, r.predecessor);
    if (!res && tuned) res = replay(s.invocation, r.predecessor);
    if (res) return proposal_of(*res);
    errors.push_back(s.invocation.anchor + ": " + res.error().message);
  }
  return tl::unexpected(failure{
      failure_kind::refused, "rules: no forward rule adds " + feature_text(r.restore) + " here (" +
                                 (errors.empty() ? std::string("no site in this kernel") : join(errors, "; ")) +
                                 "); features it could not touch: " + name});
}

op_result<proposal> rules_proposer::materialize(const materialize_request& r) {
  if (r.cards.empty())
    return tl::unexpected(failure{failure_kind::refused, "rules: no cards to apply"});
  kernel_bundle k = r.kernel;
  std::vector<rule_result> done;
  std::vector<std::string> skipped;
  for (size_t i = 0; i < r.cards.size(); ++i) {
    const skill_card& c = r.cards[i];
    const std::string label = "card " + (c.id.empty() ? std::to_string(i + 1) : c.id);
    // A recorded rule invocation first: the card's carrier is what reproduces its step.
    std::optional<rule_invocation> inv;
    for (const auto& [key, text] : c.carriers)
      if (auto parsed = from_carrier(text); parsed && find_rule(parsed->rule) &&
                                            (key == rules_carrier_key || !inv))
        inv = *parsed;
    result<rule_result> res = fail(errc::not_found, "no rule carrier, and no rule adds what it provides");
    if (inv) {
      const rule* what = find_rule(inv->rule);
      // The tolerance is this task's, not the card's source task's: never carry it over.
      inv->params.erase("allow_fast_math");
      if (what->feature() == "fast_math" && what->direction() == rule_direction::forward) {
        if (options_.allow_fast_math) inv->params["allow_fast_math"] = "true";
      }
      res = replay(*inv, k);
    } else {
      for (const auto& s : applicable(k, rule_direction::forward, catalog_opts())) {
        const std::string f(s.what->feature());
        if (f.empty() || std::find(c.provides_features.begin(), c.provides_features.end(), f) ==
                             c.provides_features.end() || was_rejected(r.rejected, s.invocation))
          continue;
        res = s.what->apply(k, s.invocation);
        if (res) break;
      }
    }
    if (!res) {
      skipped.push_back(label + ": " + res.error().message);
      continue;
    }
    k = res->kernel;
    done.push_back(std::move(*res));
  }
  if (done.empty())
    return tl::unexpected(failure{failure_kind::refused,
                                  "rules: no card applies to this kernel: " + join(skipped, "; ")});
  proposal p = proposal_of(done.front());
  if (done.size() > 1) {
    // Each rule's edit was written against the kernel the previous ones left, and edit blocks
    // apply in order (docs/edits.md), so the concatenation is the plan's edit.
    std::vector<std::string> names, rationales;
    for (const auto& d : done) {
      names.push_back(d.used.rule);
      rationales.push_back(proposal_of(d).rationale);
      if (&d != &done.front()) p.edits += d.edits;
      for (const auto& a : d.adds)
        if (std::find(p.features_added.begin(), p.features_added.end(), a) == p.features_added.end())
          p.features_added.push_back(a);
    }
    p.kernel = k;
    p.action = join(names, "+");
    p.prov.detail = p.action;
    p.rationale = join(rationales, "\n");
  }
  if (!skipped.empty()) p.rationale += "\nSkipped: " + join(skipped, "; ");
  return p;
}

op_result<proposal> rules_proposer::repair(const repair_request&) {
  return tl::unexpected(failure{failure_kind::unsupported,
                                "rules: the rule engine cannot repair a kernel: a rule rewrites syntax and "
                                "does not read the gate's diagnostics; configure a model for repairs"});
}

op_result<proposal> rules_proposer::seed_baseline(const seed_request&) {
  return tl::unexpected(failure{failure_kind::unsupported,
                                "rules: the rule engine writes no kernel from a reference; start from a "
                                "kernel (the task's naive one) or configure a model"});
}

op_result<proposal> rules_proposer::mutate(const mutate_request& r) {
  std::vector<applicable_site> sites = applicable(r.parent, rule_direction::forward, catalog_opts());
  std::erase_if(sites, [&](const applicable_site& s) { return was_rejected(r.rejected, s.invocation); });
  if (sites.empty())
    return tl::unexpected(failure{failure_kind::refused, "rules: no forward rule applies to this kernel"});
  // Seeded by the options and the parent, so that one parent mutates the same way in a replayed
  // run and different parents differently. Fisher-Yates over a splitmix64 stream.
  uint64_t state = options_.seed ^ fnv1a(r.parent.hash);
  auto next = [&] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (size_t i = sites.size(); i > 1; --i) std::swap(sites[i - 1], sites[next() % i]);
  // What the caller asks for (a feature named in `direction`) first, then what the inspirations
  // have and the parent lacks (their source detections): the mechanical reading of "borrow the
  // mechanisms of these kernels".
  std::set<std::string> inspired;
  if (!r.inspirations.empty()) {
    std::set<std::string> has;
    for (const auto& d : detect_source(r.parent)) has.insert(d.what.name);
    for (const auto& k : r.inspirations)
      for (const auto& d : detect_source(k))
        if (!has.count(d.what.name)) inspired.insert(d.what.name);
  }
  auto rank = [&](const applicable_site& s) {
    const std::string f(s.what->feature());
    if (!f.empty() && r.direction.find(f) != std::string::npos) return 0;
    return inspired.count(f) ? 1 : 2;
  };
  std::stable_sort(sites.begin(), sites.end(),
                   [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  std::vector<std::string> errors;
  for (const auto& s : sites) {
    auto res = s.what->apply(r.parent, s.invocation);
    if (res) return proposal_of(*res);
    errors.push_back(s.invocation.rule + " at " + s.invocation.anchor + ": " + res.error().message);
  }
  return tl::unexpected(failure{failure_kind::refused, "rules: no forward rule applied: " + join(errors, "; ")});
}

}  // namespace lathe::agent::rules
