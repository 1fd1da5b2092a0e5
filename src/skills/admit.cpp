// Admission: held-out trials of cards, each one logged, and the decision (docs/skills.md,
// "Admission").
#include "skills/admit.h"

#include <chrono>
#include <cstdio>
#include <future>
#include <set>

#include "agent/kernel_text.h"
#include "core/text.h"
#include "spec/bundle.h"
#include "spec/problem.h"
#include "spec/task_file.h"
#include "skills/constraints.h"
#include "skills/retrieve.h"
#include "skills/tuned.h"

namespace lathe::skills {

namespace {

struct ground {
  const task* t = nullptr;
  kernel_bundle start;
  std::optional<std::vector<feature>> features;  // built once, on the first card that needs them
};

std::string ratio_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "x%.3f", r);
  return buf;
}

std::string margin_text(double m) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", m);
  return buf;
}

bool has_all(const std::vector<feature>& have, const std::vector<std::string>& names) {
  if (names.empty()) return false;
  for (const auto& n : names) {
    bool found = false;
    for (const auto& f : have) found |= f.name == n;
    if (!found) return false;
  }
  return true;
}

bool is_fatal(agent::failure_kind k) {
  return k == agent::failure_kind::call || k == agent::failure_kind::budget;
}

class trial_runner {
 public:
  trial_runner(lineages::verifier& v, agent::proposer& p, const admit_options& o, admission_cost& cost)
      : v_(v), p_(p), o_(o), cost_(cost) {}

  // A trial of `c` on `g` in two parts. First the part up to the gate (constraints, features,
  // materialize: the proposer and the store, on the calling thread): `after` is the kernel the
  // gate is to judge against the start kernel; none when the trial ended before (its reason set).
  struct prepared {
    card_trial tr;
    std::optional<kernel_bundle> after;
  };
  result<prepared> prepare(const skill_card& c, ground& g) {
    const task& t = *g.t;
    prepared out;
    card_trial& tr = out.tr;
    tr.task = t.name;
    tr.kernel_before = g.start.hash;
    tr.lang = language_of(g.start);
    tr.prov = p_.origin();
    if (auto failed = recheck(c, o_.tgt, &t); !failed.empty()) {
      const auto& f = failed.front();
      tr.reason = "constraint " + constraint_text(f.what) + " fails on " + f.target + ": " + f.reason;
      return out;
    }
    if (auto no = usable_on(c, g.start.manifest.lang, t.plat, tr.lang)) {
      tr.reason = no->reason;
      return out;
    }
    if (c.tuned) {
      // A tuned card is applied mechanically (skills/tuned.h), not by the proposer.
      auto k = apply_tuned(c, g.start, t, o_.tgt);
      if (!k) {
        tr.reason = "not applied: " + k.error().message;
        return out;
      }
      tr.prov = {"rules", tune_action, true};
      out.after = std::move(*k);
      return out;
    }
    if (!g.features) {
      g.features.emplace();
      for (const auto& d : v_.features(t, g.start).found) g.features->push_back(d.what);
    }
    if (has_all(*g.features, c.provides_features)) {
      tr.reason = "the start kernel already has " + join(c.provides_features, ", ");
      return out;
    }
    agent::materialize_request req;
    req.t = &t;
    req.kernel = g.start;
    req.features = *g.features;
    req.cards = {c};
    req.target = o_.target_text.empty() ? agent::target_text(o_.tgt) : o_.target_text;
    ++cost_.proposer_calls;
    auto prop = p_.materialize(req);
    if (!prop) {
      cost_.model_calls += prop.error().calls;
      if (is_fatal(prop.error().kind))
        return fail(errc::unsupported, "materializing card " + c.name + " on " + t.name + ": " +
                                           agent::to_string(prop.error().kind) + ": " + prop.error().message);
      tr.reason = std::string("the proposer could not apply it: ") + agent::to_string(prop.error().kind) + ": " +
                  prop.error().message;
      return out;
    }
    cost_.model_calls += prop->calls;
    tr.prov = prop->prov.kind.empty() ? p_.origin() : prop->prov;
    if (prop->kernel.hash == g.start.hash) {
      tr.reason = "the materialized kernel is the start kernel (nothing changed)";
      return out;
    }
    out.after = prop->kernel;
    return out;
  }

  // The gate's part of a prepared trial (gated below). Touches no state of the runner but the
  // verifier: trials of one card may run it at once on several CPU slots.
  card_trial gate(const task& t, const kernel_bundle& start, prepared p) {
    return p.after ? gated(t, *p.after, start, std::move(p.tr)) : std::move(p.tr);
  }

 private:
  // The applied card's kernel against the start kernel, one paired series (unstable asked again).
  card_trial gated(const task& t, const kernel_bundle& after, const kernel_bundle& start, card_trial tr) {
    if (after.hash == start.hash) {
      tr.reason = "the applied card gives the start kernel (nothing changed)";
      return tr;
    }
    tr.kernel_after = after.hash;
    evaluation e;
    for (int32_t attempt = 0; attempt <= o_.unstable_retries; ++attempt) {
      e = v_.compare(t, after, start, tr.prov);
      tr.evaluations.push_back(e.id);
      if (e.result != outcome::unstable) break;
    }
    tr.outcome = std::string(to_string(e.result));
    tr.ratio = lineages::ratio(e);
    if (!lineages::passed(e)) {
      tr.verdict = trial_verdict::gate_failed;
      tr.reason = "the gate said " + tr.outcome + (e.message.empty() ? "" : ": " + e.message);
      return tr;
    }
    // The gate's rule (verifier.h faster): the ratio's interval clears 1 + margin.
    const double m = lineages::margin(e, t.plat);
    const std::string need = "1 + margin " + margin_text(m);
    const std::string interval =
        e.paired ? " [" + ratio_text(e.paired->ci_low) + ", " + ratio_text(e.paired->ci_high) + "]" : "";
    if (lineages::faster(e)) {
      tr.verdict = trial_verdict::reproduced;
      tr.reason = "paired ratio " + ratio_text(*tr.ratio) + interval + ": the interval clears " + need;
    } else {
      tr.verdict = trial_verdict::not_reproduced;
      tr.reason = tr.ratio ? "paired ratio " + ratio_text(*tr.ratio) + interval + ": the interval does not clear " + need +
                                 " (the gate: " + (e.decision ? std::string(to_string(*e.decision)) : "no decision") + ")"
                           : std::string("passed, but no paired ratio was measured");
    }
    return tr;
  }

  lineages::verifier& v_;
  agent::proposer& p_;
  const admit_options& o_;
  admission_cost& cost_;
};

// The kernels of the lineages a card was induced from ("<lineage id>#<step>"), cached by id.
result<std::set<std::string>> own_kernels(const skill_card& c, const store& s,
                                          std::map<std::string, std::vector<std::string>>& cache) {
  std::set<std::string> out;
  for (const auto& src : c.sources) {
    const std::string id = src.substr(0, src.rfind('#'));
    if (!cache.count(id)) {
      auto l = s.get_lineage(id);
      if (!l) return tl::unexpected(l.error());
      cache[id] = *l ? (*l)->kernels : std::vector<std::string>{};
    }
    out.insert(cache[id].begin(), cache[id].end());
  }
  return out;
}

std::string verdicts_text(const std::vector<card_trial>& trials) {
  std::vector<std::string> parts;
  for (const auto& t : trials)
    parts.push_back(t.task + ": " + to_string(t.verdict) + (t.ratio ? " " + ratio_text(*t.ratio) : "") +
                    (t.reason.empty() ? "" : " (" + t.reason + ")"));
  return parts.empty() ? "no held-out task to try it on" : join(parts, "; ");
}

// Why `g` is no admission ground for `c` (refused: never a trial, never in the card's log).
std::optional<std::string> not_ground(const skill_card& c, const ground& g, const std::set<std::string>& own,
                                      const target& tgt) {
  if (std::find(c.source_tasks.begin(), c.source_tasks.end(), g.t->name) != c.source_tasks.end())
    return "task " + g.t->name + " is a source task of the card";
  if (own.count(g.start.hash)) return "kernel " + g.start.hash.substr(0, 12) + " belongs to one of the card's own lineages";
  // A tuned card is tried on kernels of its family only: another kernel has no such tunables.
  if (c.tuned) {
    // The tuned kernel itself, copied under another task, is not held out (compared by content).
    if (tuned_from(c, g.start))
      return "kernel " + g.start.name + " is the kernel the card was tuned from (" + c.tuned->kernel +
             ", the same bundle): not held out";
    if (auto why = tuned_family_misfit(c, g.start.manifest.tune, tgt))
      return "kernel " + g.start.name + " is not of the tuned card's family: " + *why;
    // Of the family but unable to take the values (outside its space, refused by a constraint):
    // no trial, rather than a trial that could only fail and refuse the card.
    if (auto applied = apply_tuned(c, g.start, *g.t, tgt); !applied)
      return "kernel " + g.start.name + " cannot take the tuned values: " + applied.error().message;
  }
  return std::nullopt;
}

// The decision on a card tried: admitted when reproduced on min_tasks distinct held-out tasks,
// else refused. A tuned card with no trial (no held-out kernel declares its tunables) stays as it
// was: nothing was tried, and retrieval serves it while a candidate.
void decide(skill_card& c, const std::vector<card_trial>& trials, size_t reproduced, int32_t min_tasks) {
  if (c.tuned && trials.empty()) {
    c.status_reason = "no held-out kernel declares its tunables: not tried, left " + std::string(to_string(c.status));
    return;
  }
  if (int32_t(reproduced) >= min_tasks) {
    bool all_rules = true;
    for (const auto& t : trials)
      if (t.verdict == trial_verdict::reproduced) all_rules &= t.prov.kind == "rules";
    c.status = all_rules ? card_status::replay_admitted : card_status::admitted;
    c.status_reason = "reproduced on " + std::to_string(reproduced) + " held-out task(s)" +
                      (all_rules ? " by rule replay (mechanical)" : "") + ": " + verdicts_text(trials);
  } else {
    c.status = card_status::refused;
    c.status_reason = "reproduced on " + std::to_string(reproduced) + " of the " + std::to_string(min_tasks) +
                      " held-out tasks needed: " + verdicts_text(trials);
  }
}

// The trials of `c` on its grounds, logged (store.add_card_trial) into `ca`, `reproduced` the
// tasks where its effect was. In_flight tasks at a time: each trial prepared here in order (the
// proposer and the store on this thread), their gates at once (each on a free slot), the trials
// logged in order up to the one that admits the card, as one at a time would have stopped.
result<void> try_card(const skill_card& c, const std::vector<ground*>& grounds, trial_runner& runner, store& s,
                      const admit_options& o, admission_cost& cost, card_admission& ca,
                      std::set<std::string>& reproduced) {
  const size_t width = static_cast<size_t>(std::max(1, o.in_flight));
  bool admitted = false;
  for (size_t at = 0; at < grounds.size() && !admitted; at += width) {
    std::vector<std::pair<ground*, trial_runner::prepared>> batch;
    for (size_t i = at; i < std::min(grounds.size(), at + width); ++i) {
      auto p = runner.prepare(c, *grounds[i]);
      if (!p) return tl::unexpected(p.error());
      batch.push_back({grounds[i], std::move(*p)});
    }
    std::vector<std::future<card_trial>> gates;
    for (auto& [g, p] : batch)
      gates.push_back(std::async(batch.size() > 1 ? std::launch::async : std::launch::deferred,
                                 [&runner, g = g, p = std::move(p)]() mutable {
                                   return runner.gate(*g->t, g->start, std::move(p));
                                 }));
    for (auto& f : gates) {
      card_trial tr = f.get();  // every gate of the batch joined before the loop can end
      cost.gate_evaluations += static_cast<int64_t>(tr.evaluations.size());
      if (admitted) continue;  // past the trial that admitted the card: gated, not logged
      if (auto id = s.add_card_trial(c.id, tr); !id) return tl::unexpected(id.error());
      if (tr.verdict == trial_verdict::reproduced) reproduced.insert(tr.task);
      ca.trials.push_back(std::move(tr));
      admitted = o.stop_when_admitted && int32_t(reproduced.size()) >= o.min_tasks;
    }
  }
  return {};
}

}  // namespace

result<admission> admit(const std::vector<skill_card>& cards, const std::vector<task>& heldout,
                        lineages::verifier& v, agent::proposer& p, store& s, const admit_options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  admission out;
  std::vector<ground> grounds;
  for (const auto& t : heldout) {
    // A bare PyTorch problem (a KernelBench file: no baseline kernel) has no role of its own, and
    // import calls it a source task. Named as ground it is held out from every card that does not
    // list it among its source tasks (refused below, as any source task is); trials start from its
    // own Model as a ModelNew (eager PyTorch), the card carried into an inline extension (issue 44,
    // item 3).
    if (!t.problem.empty() && t.baseline.empty() && o.start_kernel.empty()) {
      auto eager = gate::eager_baseline(t);
      if (!eager) {
        out.refused.push_back({t.name, "", "problem " + t.name + " has no eager ModelNew to start from here (a "
                                                               "KernelBench Model on the CPU: docs/python-kernels.md)"});
        continue;
      }
      grounds.push_back({&t, std::move(*eager), std::nullopt});
      continue;
    }
    if (t.role != task_role::heldout) {
      out.refused.push_back({t.name, "", "task " + t.name + " has role " + to_string(t.role) +
                                             ": only held-out tasks are admission ground (its kernels may feed lineages)"});
      continue;
    }
    const std::string name = o.start_kernel.empty() ? t.baseline : o.start_kernel;
    auto path = find_kernel(t, name);
    if (!path) return fail(errc::not_found, "held-out task " + t.name + " has no kernel '" + name + "'");
    auto k = load_bundle(*path);
    if (!k) return tl::unexpected(k.error());
    grounds.push_back({&t, std::move(*k), std::nullopt});
  }

  trial_runner runner(v, p, o, out.cost);
  std::map<std::string, std::vector<std::string>> lineage_cache;
  for (const auto& given : cards) {
    auto stored = s.get_card(given.id);
    if (!stored) return tl::unexpected(stored.error());
    if (!*stored) return fail(errc::not_found, "card " + given.id + " (" + given.name + ") is not in the store");
    skill_card c = std::move(**stored);
    card_admission ca{c.id, c.name, c.status, "", {}, 0};
    auto own = own_kernels(c, s, lineage_cache);
    if (!own) return tl::unexpected(own.error());

    const std::vector<platform> plats = card_platforms(c);
    const double floor = lineages::margin(evaluation{}, plats.front());
    std::set<std::string> reproduced;
    if (!c.declared_ratio || *c.declared_ratio < 1 + floor) {
      // Nothing to reproduce: a step that did not speed its kernel up is knowledge about
      // structure, not an optimization, and the library admits optimizations only.
      c.status = card_status::refused;
      c.status_reason = c.declared_ratio
                            ? "declares " + ratio_text(*c.declared_ratio) + ", below 1 + margin " + margin_text(floor) +
                                  ": its declared effect is no speedup, nothing to reproduce"
                            : "declares no measured effect: nothing to reproduce";
    } else {
      std::vector<ground*> ground_of_card;
      for (auto& g : grounds) {
        if (auto why = not_ground(c, g, *own, o.tgt)) out.refused.push_back({g.t->name, c.id, *why});
        else ground_of_card.push_back(&g);
      }
      if (auto tried = try_card(c, ground_of_card, runner, s, o, out.cost, ca, reproduced); !tried)
        return tl::unexpected(tried.error());
      decide(c, ca.trials, reproduced.size(), o.min_tasks);
    }
    c.trials.clear();
    if (auto put = s.put_card(c); !put) return tl::unexpected(put.error());
    ca.status = c.status;
    ca.reason = c.status_reason;
    ca.reproduced = int32_t(reproduced.size());
    for (platform pl : plats) {
      auto& r = out.rates[to_string(pl)];
      r.decided += c.status == card_status::candidate ? 0 : 1;  // a tuned card left untried
      if (c.admitted()) ++r.admitted;
    }
    out.cards.push_back(std::move(ca));
  }
  out.cost.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace lathe::skills
