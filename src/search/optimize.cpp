// The optimize run (optimize.h): the start kernel, the loop, the final measurements, every action
// a run event (journal.h) the moment it exists.
#include "search/optimize.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "core/json.h"
#include "core/json_lineage.h"
#include "core/json_run.h"
#include "agent/kernel_text.h"
#include "agent/situation_text.h"
#include "core/text.h"
#include "features/feature_audit.h"
#include "search/journal.h"
#include "search/optimize_run.h"
#include "search/plan.h"

namespace lathe::search {

using nlohmann::json;
using detail::amounts_json;
using detail::event_key;

std::string new_run_id() { return lathe::new_run_id(run_kind::optimize); }

const char* to_string(start_how h) {
  switch (h) {
    case start_how::given: return "given";
    case start_how::seeded: return "seeded";
    case start_how::naive: return "naive";
  }
  return "?";
}

std::string start_text(start_how h, const std::string& naive_because) {
  return h == start_how::naive ? cat(to_string(h), " (", naive_because, ")") : to_string(h);
}

result<double> resume_seconds(store& db, const std::string& run_id) {
  detail::journal j(db, run_id);
  if (auto ok = j.load(); !ok) return tl::unexpected(ok.error());
  return j.recorded_elapsed();
}

std::string speed_reading(double ratio, double margin) {
  char m[24];
  std::snprintf(m, sizeof m, "%.3f", margin);
  const std::string r = detail::ratio_text(ratio);
  if (ratio >= 1.0 + margin) return r + ": faster (clears 1 + " + m + ")";
  if (ratio > 1.0)
    return r + ": read faster, but inside the noise margin (1 + " + m + "): undecided, not slower";
  if (ratio * (1.0 + margin) > 1.0) return r + ": the same within the noise margin (1 + " + m + ")";
  return r + ": slower (below 1 / (1 + " + m + "))";
}

std::string speed_reading(double ratio, double margin, decision d, double ci_low, double ci_high) {
  char m[24], r[96];
  std::snprintf(m, sizeof m, "%.3f", margin);
  std::snprintf(r, sizeof r, "%.3fx [%.3f, %.3f]", ratio, ci_low, ci_high);
  switch (d) {
    case decision::faster: return std::string(r) + ": faster (the interval clears 1 + " + m + ")";
    case decision::slower: return std::string(r) + ": slower (the interval lies below 1 / (1 + " + m + "))";
    case decision::undecided: return std::string(r) + ": undecided: the machine's noise leaves it open";
    case decision::same: break;
  }
  if (ratio > 1.0)
    return std::string(r) + ": read faster, but the interval reaches below 1 + " + m + ": undecided, not slower";
  return std::string(r) + ": the same within the noise margin (1 + " + m + ")";
}

namespace detail {
namespace {

// The noise rule a timed verdict was decided by, in words (agent/situation_text.h margin_text).
std::string noise_of(const verdict& v) { return agent::margin_text(v.margin, v.aa_low, v.aa_high, v.aa_unstable); }

// A first series the machine's noise left open: correct, its speed unknown, and why (issue 22).
std::string undecided_text(const verdict& v) {
  return cat("undecided: correct, but the machine was too noisy to tell its speed (", first_line(v.message),
             v.ratio ? cat("; ", noise_of(v)) : std::string(),
             "); not a verdict on the kernel: the same idea may be tried again, in a stronger form");
}

// Why a candidate that read faster at first was not kept, in words a proposer can act on: a real
// model could not tell what "faster at first (13.858x) but not on the fresh re-measure (6.487x
// [4.311, 9.763])" meant (issue 44, item 2): the re-measure's reading, the margin it had to clear
// and the A/A interval that margin came from, and whether that was a verdict on the kernel.
std::string remeasure_text(const verdict& first, const verdict& second) {
  std::string s = cat("correct, and faster at first (", first.reading(), ") but not on the fresh re-measure: ");
  if (!second.ratio)
    return s + cat("its gate said ", outcome_text(second.outcome), ": ", first_line(second.message));
  s += second.reading();
  if (second.outcome == outcome::unstable || second.decision == decision::undecided)
    return s + cat("; ", noise_of(second),
                   ". Undecided is not a verdict on the kernel: the same idea may be tried again, in a stronger form");
  if (second.decision == decision::slower) return s + "; the first reading did not hold";
  return s + cat("; ", noise_of(second), ": the first reading's gain did not hold");
}

}  // namespace

// One step: a proposal, its gate, repairs, the re-measure, the verdict.
result<void> optimize_runner::step(int32_t n) {
  const double pace = out.proposals > 0 ? elapsed() / std::max<int64_t>(1, budget.spent().steps) : 1.0;
  const event_key pk = event_key::proposal(n, 0);
  const bool replay = j.replaying(pk);
  auto hold = loop.reserve(llm::one_step_taking(replay ? 0.0 : std::max(0.5, pace)));
  if (!hold) return {};
  current_step = n;
  const std::string target = proposer_target();
  inspection = target.substr(std::min(target.size(), o.target_text.size()));
  const agent::progress_facts facts = tracker.facts(n, budget.bounds().run.steps, budget.bounds(), budget.spent());
  auto planned = planner.next(best, best_features, target, facts, recent_notes(), memory);
  if (!planned) return tl::unexpected(planned.error());
  const request req = std::move(*planned);
  if (req.exhausted) {
    loop.release(std::move(*hold));
    loop.stop(stop_reason::exhausted, req.why);
    return {};
  }
  auto pr = propose(pk, req.op, req.source, req.card_ids, req.call);
  if (!pr) return tl::unexpected(pr.error());
  loop.commit(std::move(*hold), llm::one_step);
  if (!pr->ok) {
    const auto& f = pr->failed;
    if (loop.ends_run(f)) return {};
    planner.failed(req, best, f);
    ++stall;
    return reject(n, 0, "proposer", "",
                  cat(req.source, ": the proposer failed (", agent::to_string(f.kind), "): ", first_line(f.message)));
  }
  agent::proposal cand = *pr->ok;
  planner.proposed(req, best);
  if (cand.kernel.hash == best.hash) {
    ++stall;
    return reject(n, 0, "duplicate", cand.kernel.hash, cat(agent::summary_text(cand.rationale), ": no change to the kernel"));
  }
  if (auto it = gated.find(cand.kernel.hash); it != gated.end()) {
    ++stall;
    return reject(n, 0, "duplicate", cand.kernel.hash,
                  cat(agent::summary_text(cand.rationale), ": the same kernel was gated before (", it->second, ")"));
  }
  // The gate against the best; repair rounds on a failure.
  std::optional<verdict> first;
  for (int32_t round = 0;; ++round) {
    auto vd = compare(event_key::candidate(n, round), "candidate",
                      cand.kernel, best, cand.prov);
    if (!vd) return tl::unexpected(vd.error());
    if (!*vd) return reject(n, 0, "budget", cand.kernel.hash, cat(agent::summary_text(cand.rationale), ": not gated: ", loop.detail()));
    first = **vd;
    gated[cand.kernel.hash] = cat(outcome_text(first->outcome), first->ratio ? cat(" ", ratio_text(*first->ratio)) : std::string());
    // No repair for the machine's noise or for lathe or the task failing around the kernel.
    if (first->passed || first->outcome == outcome::unstable || first->outcome == outcome::infra_error) break;
    if (round >= o.max_repairs) break;
    agent::repair_request rr{&t, cand.kernel, cand.action + ": " + first_line(cand.rationale),
                             first->outcome.value_or(outcome::wrong_result),
                             first->diagnostics.empty() ? first->message : first->diagnostics, proposer_target()};
    auto fixed = propose(event_key::proposal(n, round + 1), "repair", req.source,
                         req.card_ids, [&] { return p.repair(rr); });
    if (!fixed) return tl::unexpected(fixed.error());
    if (!fixed->ok) {
      if (loop.ends_run(fixed->failed) && loop.waiting()) return {};
      break;
    }
    const std::string action = cand.action;
    cand = *fixed->ok;
    if (cand.action.empty()) cand.action = action;
    if (gated.count(cand.kernel.hash)) break;
  }
  if (first->outcome == outcome::unstable) {
    // Correct, and its speed left open by the machine's noise: said as such, so that a proposer
    // does not take a possibly faster kernel for a refused one (issue 22).
    ++stall;
    return reject(n, 0, "undecided", cand.kernel.hash, cat(agent::summary_text(cand.rationale), ": ", undecided_text(*first)));
  }
  if (!first->passed) {
    ++stall;
    return reject(n, 0, "gate", cand.kernel.hash,
                  cat(agent::summary_text(cand.rationale), ": gate ", outcome_text(first->outcome), ": ", first_line(first->message)));
  }
  if (!first->faster()) {
    ++stall;
    return reject(n, 0, "not_faster", cand.kernel.hash,
                  cat(agent::summary_text(cand.rationale), ": not faster: paired ",
                      first->ratio ? first->reading() : std::string("(untimed)")));
  }
  auto again = compare(event_key::remeasure(n), "remeasure", cand.kernel, best, cand.prov);
  if (!again) return tl::unexpected(again.error());
  if (!*again)
    return reject(n, 0, "budget", cand.kernel.hash, cat(agent::summary_text(cand.rationale), ": not re-measured: ", loop.detail()));
  const verdict second = **again;
  if (!second.faster()) {
    ++stall;
    const std::string reread = second.ratio ? second.reading()
                                             : std::string(outcome_text(second.outcome));
    gated[cand.kernel.hash] = cat("did not hold on re-measure: ", reread);
    return reject(n, 0, "remeasure", cand.kernel.hash,
                  cat(agent::summary_text(cand.rationale), ": ", remeasure_text(*first, second)));
  }
  return accept(n, req, cand, *first, second);
}

result<void> optimize_runner::accept(int32_t n, const request& req, const agent::proposal& cand, const verdict& first,
                    const verdict& second) {
  const std::vector<feature> before = best_features;
  const kernel_bundle from = best;
  best = cand.kernel;
  planner.accepted(req, from, best);
  best_inspection = second.inspection;
  if (auto ob = observe_best(); !ob) return tl::unexpected(ob.error());
  const auto d = lineages::diff_features(before, best_features);
  optimize_step s;
  s.step = n;
  s.source = req.source;
  s.cards = req.card_ids;
  s.first_ratio = *first.ratio;
  s.tr.from_kernel = from.hash;
  s.tr.to_kernel = best.hash;
  s.tr.action = cand.action;
  s.tr.locus = cand.locus;
  s.tr.edit = cand.edits;
  s.tr.added = d.added;
  s.tr.removed = d.removed;
  s.tr.speedup = *second.ratio;
  s.tr.evaluations = {first.id, second.id};
  s.tr.prov = cand.prov;
  best_ratio *= *second.ratio;
  tracker.accepted(second.seconds, best_ratio);
  stall = 0;
  memory_entry m;
  m.step = n;
  m.action = cand.action;
  m.locus = cand.locus;
  for (const auto& f : d.added) m.added.push_back(f.name);
  m.ratio = *second.ratio;
  m.edits = cand.edits.substr(0, 1500);
  memory.push_back(std::move(m));
  out.steps.push_back(s);
  json body{{"step", n},           {"kernel", best.hash},  {"from", from.hash},   {"ratio", *second.ratio},
            {"first_ratio", *first.ratio}, {"source", req.source}, {"cards", req.card_ids}, {"transition", s.tr}};
  return emit(event_kind::accepted, event_key::accepted(n), std::move(body), n,
              cat("step ", std::to_string(n), " accepted: ", cand.action, " (", req.source, ") ",
                  ratio_text(*second.ratio), " re-measured; best ", ratio_text(best_ratio), " over start"));
}

}  // namespace detail

namespace {

json summary_json(const optimize_result& r, const task& t, const optimize_options& o) {
  json steps = json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"step", s.step}, {"source", s.source}, {"cards", s.cards}, {"first_ratio", s.first_ratio},
                     {"transition", s.tr}});
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  return {{"task", t.name},
          {"strategy", to_string(o.strat)},
          {"ablation", to_string(o.abl)},
          {"proposer", o.proposer_label},
          {"start", {{"name", r.start.name}, {"hash", r.start.hash}, {"how", start_text(r.how, r.naive_because)}}},
          {"best", {{"name", r.best.name}, {"hash", r.best.hash}}},
          {"steps", steps},
          {"proposals", r.proposals},
          {"rejected", r.rejected},
          {"evaluations", r.evaluations},
          {"stop", to_string(r.stop)},
          {"stop_detail", r.stop_detail},
          {"best_vs_start", opt(r.best_vs_start)},
          {"final_best_outcome", outcome_text(r.final_best_outcome)},
          {"expert_vs_start", opt(r.expert_vs_start)},
          {"gap_recovered", opt(r.gap_recovered)},
          {"final_evaluations", r.final_evaluations},
          {"used", amounts_json(r.used)},
          {"resumed", r.resumed}};
}

json options_json(const optimize_options& o) {
  return {{"max_repairs", o.max_repairs}, {"max_stall", o.max_stall}, {"free_after_cards", o.free_after_cards},
          {"measure_expert", o.measure_expert}};
}

}  // namespace

result<optimize_result> optimize(const task& t, const optimize_kernels& kernels, lineages::verifier& v,
                                 agent::proposer& p, store& db, llm::ledger& ledger, const optimize_options& o) {
  optimize_result out;
  run& r = out.r;
  auto begun = detail::begin_run(db, o.resume_run, run_kind::optimize, t.name, o.run_id, ledger.bounds().run,
                                 o.args_json, out.resumed);
  if (!begun) return tl::unexpected(begun.error());
  r = *begun;

  detail::journal j(db, r.id);
  if (out.resumed) {
    if (auto ok = j.load(); !ok) return tl::unexpected(ok.error());
    const json* started = j.recorded(event_key::started());
    if (started && started->value("strategy", std::string()) != to_string(o.strat))
      return fail(errc::invalid_argument, "run '" + r.id + "' used strategy " + started->value("strategy", std::string()) +
                                              ", not " + to_string(o.strat));
  }
  detail::optimize_runner* self = nullptr;
  auto planner = make_plan(t, p, db, o, [&self](const agent::rank_request& rq) { return self->rank(rq); });
  if (!planner) return tl::unexpected(planner.error());
  detail::optimize_runner rn{t, kernels, v, p, db, ledger, o, j, out, **planner};
  self = &rn;

  auto body = [&]() -> result<void> {
    json st{{"task", t.name}, {"strategy", to_string(o.strat)}, {"ablation", to_string(o.abl)},
            {"limits", ledger.bounds().run}, {"options", options_json(o)}};
    if (auto e = rn.emit(event_kind::started, event_key::started(), std::move(st), 0, "optimize " + t.name + " with strategy " + to_string(o.strat));
        !e)
      return tl::unexpected(e.error());
    if (out.resumed)
      if (auto e = rn.emit(event_kind::resumed, event_key::resumed(j.last_seq()), {{"from_seq", j.last_seq()}}, 0,
                            "resumed after event " + std::to_string(j.last_seq()));
          !e)
        return tl::unexpected(e.error());
    // The final measurements are reserved before anything else spends the evaluations.
    const int64_t finals = 1 + ((o.measure_expert && kernels.expert) ? 1 : 0);
    std::optional<llm::reservation> held;
    if (auto h = ledger.reserve(llm::evaluations(finals))) held = std::move(*h);
    else
      return fail(errc::invalid_argument, "the budget cannot hold the final measurements (" + h.error().message + ")");
    if (auto s = rn.start_kernel(); !s) return s;
    for (int32_t n = 1; !rn.loop.stopped() && !rn.loop.waiting(); ++n) {
      if (auto s = rn.step(n); !s) return s;
      if (o.max_stall > 0 && rn.stall >= o.max_stall)
        rn.loop.stop(stop_reason::stalled, std::to_string(rn.stall) + " steps in a row without an accepted one");
    }
    out.stop = *rn.loop.reason();
    out.stop_detail = rn.loop.detail();
    // Batch mode: the run waits for answers (interrupted, resumable); no final measurement yet.
    if (out.stop == stop_reason::waiting) {
      out.best = rn.best;
      out.used = ledger.spent();
      return result<void>{};
    }
    if (auto f = rn.finals(held); !f) return f;
    out.best = rn.best;
    out.used = ledger.spent();
    return rn.emit(event_kind::finished, event_key::finished(), {{"stop", to_string(out.stop)}, {"detail", out.stop_detail}}, 0,
                    cat("finished: ", to_string(out.stop), " (", out.stop_detail, ")"));
  };
  auto done = body();
  if (auto ended = detail::end_run(db, r, done, out.stop == stop_reason::waiting, out.stop_detail,
                                   done ? summary_json(out, t, o).dump() : std::string());
      !ended)
    return tl::unexpected(ended.error());
  return out;
}

}  // namespace lathe::search
