// An optimize run's actions (optimize_run.h): the proposer's ranking and proposals, gate
// evaluations, the start kernel and the final measurements, each recorded as a run event the
// moment it exists, or taken from the journal on resume.
#include "search/optimize_run.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "core/json_lineage.h"
#include "core/json_run.h"
#include "features/feature_audit.h"
#include "search/records.h"

namespace lathe::search::detail {

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

std::string first_line(const std::string& s, size_t max) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "…";
  return line;
}

std::string ratio_text(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", r);
  return b;
}

llm::amounts minus(const llm::amounts& a, const llm::amounts& b) {
  llm::amounts d;
  d.steps = a.steps - b.steps;
  d.evals = a.evals - b.evals;
  d.calls = a.calls - b.calls;
  d.tokens = a.tokens - b.tokens;
  d.usd = std::max(0.0, a.usd - b.usd);
  return d;
}

// The proposer's ranking of path options, or its recorded one.
result<std::vector<std::string>> optimize_runner::rank(const agent::rank_request& rq) {
  const event_key key = event_key::ranking(current_step);
  if (const json* rec = j.recorded(key)) {
    loop.charge(amounts_from(rec->value("used", json::object())));
    return rec->value("order", std::vector<std::string>{});
  }
  const llm::amounts before = budget.spent();
  auto got = p.rank_paths(rq);
  const llm::amounts used = minus(budget.spent(), before);
  std::vector<std::string> order;
  json body{{"used", amounts_json(used)}, {"options", json::array()}};
  for (const auto& opt : rq.paths) body["options"].push_back(opt.id);
  if (got) {
    order = got->order;
    body["reasons"] = got->reasons;
    body["provenance"] = got->prov;
  } else {
    body["failure"] = {{"kind", agent::to_string(got.error().kind)}, {"message", got.error().message}};
  }
  body["order"] = order;
  if (auto e = emit(event_kind::ranking, key, std::move(body), current_step,
                    cat("step ", std::to_string(current_step), ": ", std::to_string(rq.paths.size()),
                        " options ranked", got ? "" : " (the proposer failed: given order kept)"));
      !e)
    return tl::unexpected(e.error());
  return order;
}

void optimize_runner::tell(const std::string& kind, int32_t step, const std::string& message) {
  if (!o.progress) return;
  optimize_progress pr;
  pr.run_id = out.r.id;
  pr.kind = kind;
  pr.step = step;
  pr.message = message;
  pr.best_ratio = best_ratio;
  pr.used = budget.spent();
  pr.limits = budget.bounds();
  const lathe::budget& b = pr.limits.run;
  std::optional<double> eta;
  auto take = [&](double x) { eta = eta ? std::min(*eta, x) : x; };
  const double secs = pr.used.seconds;
  if (b.seconds) take(std::max(0.0, *b.seconds - secs));
  if (b.steps && pr.used.steps > 0) take(secs / pr.used.steps * std::max<int64_t>(0, *b.steps - pr.used.steps));
  if (b.evals && pr.used.evals > 0) take(secs / pr.used.evals * std::max<int64_t>(0, *b.evals - pr.used.evals));
  pr.eta_seconds = eta;
  o.progress(pr);
}

result<void> optimize_runner::emit(const std::string& kind, const event_key& key, json body, int32_t step,
                  const std::string& message) {
  told_step = step;
  return loop.emit(kind, key, std::move(body), message);
}

// A proposer operation, or its recorded result.
result<proposed> optimize_runner::propose(const event_key& key, const std::string& op, const std::string& source,
                         const std::vector<std::string>& card_ids,
                         const std::function<agent::op_result<agent::proposal>()>& call) {
  proposed res;
  if (const json* rec = j.recorded(key)) {
    loop.charge(amounts_from(rec->value("used", json::object())));
    ++out.proposals;
    if (!rec->value("ok", false)) {
      res.failed = detail::failure_from(*rec);
      return res;
    }
    auto pr = detail::proposal_from(*rec, db);
    if (!pr) return tl::unexpected(pr.error());
    res.ok = std::move(*pr);
    return res;
  }
  const llm::amounts before = budget.spent();
  auto r = call();
  const llm::amounts used = minus(budget.spent(), before);
  ++out.proposals;
  json body{{"op", op},         {"source", source},           {"cards", card_ids},
            {"ok", r.has_value()}, {"used", amounts_json(used)}, {"inspection", inspection}};
  std::string message;
  if (r) {
    if (auto put = db.put_kernel(r->kernel); !put) return tl::unexpected(put.error());
    detail::put_proposal(body, *r);
    message = cat(op, ": ", r->action, " at ", r->locus, " (", to_string(r->prov), ")");
    res.ok = std::move(*r);
  } else if (r.error().kind == agent::failure_kind::waiting) {
    // Batch mode: no event, so that the resumed run asks again and reads the answer.
    res.failed = r.error();
    return res;
  } else {
    body["failure"] = {{"kind", agent::to_string(r.error().kind)}, {"message", r.error().message}};
    message = cat(op, ": the proposer failed (", agent::to_string(r.error().kind), "): ", first_line(r.error().message));
    res.failed = r.error();
  }
  if (auto e = emit(event_kind::proposal, key, std::move(body), current_step, message); !e) return tl::unexpected(e.error());
  return res;
}

// A gate evaluation (timed: paired against `against`; else the checks only), or its recorded
// verdict. nullopt: the budget refused it (stop is set).
result<std::optional<verdict>> optimize_runner::evaluate(const event_key& key, const std::string& purpose,
                                        const kernel_bundle& k, const kernel_bundle& against, bool time,
                                        const provenance& prov, bool reserved) {
  if (const json* rec = j.recorded(key)) {
    if (reserved) ++out.evaluations;
    else loop.replayed_evaluation();
    return std::optional<verdict>(verdict_from(*rec));
  }
  const auto gated = loop.gate([&] { return time ? v.compare(t, k, against, prov) : v.check(t, k, against, prov); },
                               reserved);
  if (!gated) return std::optional<verdict>();
  const evaluation& e = *gated;
  verdict vd;
  vd.id = e.id;
  vd.outcome = e.result;
  vd.message = e.message;
  vd.diagnostics = e.diagnostics.substr(0, 4000);
  vd.ratio = lineages::ratio(e);
  vd.seconds = e.median_seconds;
  vd.against_seconds = e.baseline_median_seconds;
  if (e.roofline_fraction && e.median_seconds) vd.floor = *e.roofline_fraction * *e.median_seconds;
  vd.margin = lineages::margin(e, t.plat);
  vd.passed = lineages::passed(e);
  vd.decision = e.decision;
  if (e.paired && e.paired->ci_low > 0 && e.paired->ci_high > 0) {
    vd.ci_low = e.paired->ci_low;
    vd.ci_high = e.paired->ci_high;
  }
  if (e.aa && e.aa->ci_low > 0 && e.aa->ci_high > 0) {
    vd.aa_low = e.aa->ci_low;
    vd.aa_high = e.aa->ci_high;
  }
  if (vd.ratio) vd.aa_unstable = e.policy.aa_unstable;
  vd.inspection = detail::inspection_of(e);
  json body = verdict_json(vd);
  body["purpose"] = purpose;
  body["kernel"] = k.hash;
  body["against"] = against.hash;
  body["used"] = amounts_json(llm::one_evaluation);
  const std::string message =
      cat(purpose, " ", short_hash(k.hash), ": ", outcome_text(vd.outcome),
          vd.ratio ? cat(", ", ratio_text(*vd.ratio), " vs ", short_hash(against.hash)) : std::string());
  if (auto w = emit(event_kind::evaluation, key, std::move(body), current_step, message); !w) return tl::unexpected(w.error());
  return std::optional<verdict>(vd);
}

// A timed comparison; `unstable` is the gate declining to decide on a noisy machine, not a verdict
// on the kernel: asked again up to o.unstable_retries times (each a gate evaluation, all kept).
result<std::optional<verdict>> optimize_runner::compare(const event_key& key, const std::string& purpose, const kernel_bundle& k,
                                       const kernel_bundle& against, const provenance& prov) {
  auto vd = evaluate(key, purpose, k, against, true, prov);
  for (int32_t again = 1; again <= o.unstable_retries; ++again) {
    if (!vd || !*vd || (*vd)->outcome != outcome::unstable) break;
    vd = evaluate(key.retry(again), purpose, k, against, true, prov);
  }
  if (vd && *vd && (*vd)->ratio) tracker.decided((*vd)->margin, (*vd)->aa_low, (*vd)->aa_high, (*vd)->aa_unstable);
  if (vd && *vd && (*vd)->passed)
    tracker.timed(against.hash == out.start.hash, against.hash == best.hash, (*vd)->against_seconds, (*vd)->floor);
  return vd;
}

// The start kernel: given, seeded by the proposer (checked, repaired), or the naive one.
result<void> optimize_runner::start_kernel() {
  kernel_bundle start;
  start_how how = start_how::given;
  std::string why;
  if (ks.start) {
    start = *ks.start;
  } else {
    agent::seed_request sr;
    sr.t = &t;
    // A PyTorch problem's reference is the problem file itself.
    std::ifstream in(t.problem.empty() ? t.dir / t.reference : t.problem);
    std::stringstream ss;
    ss << in.rdbuf();
    sr.reference_source = ss.str();
    sr.entry_features = planner.entry_features();
    sr.target = o.target_text;
    auto seeded = propose(event_key::seed_proposal(0), "seed", "seed", {}, [&] { return p.seed_baseline(sr); });
    if (!seeded) return tl::unexpected(seeded.error());
    std::optional<kernel_bundle> got;
    if (seeded->ok) {
      kernel_bundle cand = seeded->ok->kernel;
      for (int32_t round = 0;; ++round) {
        auto vd = evaluate(event_key::seeded_start_check(round), "start", cand, cand, false, seeded->ok->prov);
        if (!vd) return tl::unexpected(vd.error());
        if (!*vd) return fail(errc::invalid_argument, "the budget refused checking the seeded start kernel: " + loop.detail());
        if ((*vd)->passed) {
          got = cand;
          break;
        }
        why = cat("the seed failed the gate (", outcome_text((*vd)->outcome), "): ", first_line((*vd)->message));
        if (round >= o.max_repairs) break;
        agent::repair_request rr{&t, cand, "a first kernel for the task from its reference",
                                 (*vd)->outcome.value_or(outcome::wrong_result),
                                 (*vd)->diagnostics.empty() ? (*vd)->message : (*vd)->diagnostics, o.target_text};
        auto fixed = propose(event_key::seed_proposal(round + 1), "repair", "seed", {},
                             [&] { return p.repair(rr); });
        if (!fixed) return tl::unexpected(fixed.error());
        if (!fixed->ok) break;
        cand = fixed->ok->kernel;
      }
    } else {
      why = cat("the proposer cannot seed (", agent::to_string(seeded->failed.kind), "): ",
                first_line(seeded->failed.message));
    }
    if (got) {
      start = *got;
      how = start_how::seeded;
    } else if (ks.naive) {
      start = *ks.naive;
      how = start_how::naive;
    } else {
      return fail(errc::unsupported, "no start kernel: " + why + "; and the task has no naive kernel");
    }
  }
  if (auto put = db.put_kernel(start); !put) return tl::unexpected(put.error());
  if (how != start_how::seeded) {  // a seeded kernel passed its check above
    auto vd = evaluate(event_key::given_start_check(), "start", start, start, false, {"human", start.name, false});
    if (!vd) return tl::unexpected(vd.error());
    if (!*vd) return fail(errc::invalid_argument, "the budget refused checking the start kernel: " + loop.detail());
    if (!(*vd)->passed)
      return fail(errc::invalid_argument, cat("the start kernel ", start.name, " fails the gate (", outcome_text((*vd)->outcome),
                                              "): ", first_line((*vd)->message)));
  }
  out.start = start;
  out.how = how;
  if (how == start_how::naive) out.naive_because = why;
  best = start;
  const std::string how_text = start_text(out.how, out.naive_because);
  if (auto e = emit(event_kind::start, event_key::start(), {{"kernel", start.hash}, {"name", start.name}, {"how", how_text}}, 0,
                    cat("start kernel ", start.name.empty() ? short_hash(start.hash) : start.name, ": ", how_text));
      !e)
    return tl::unexpected(e.error());
  return observe_best();
}

// The fresh paired measurements the summary reports.
result<void> optimize_runner::finals(std::optional<llm::reservation>& held) {
  if (held) loop.release(std::move(*held));
  if (!out.steps.empty()) {
    auto vd = compare(event_key::final_best(), "final_best", best, out.start, {"human", "final", false});
    if (!vd) return tl::unexpected(vd.error());
    if (*vd) {
      out.final_evaluations.push_back((*vd)->id);
      if ((*vd)->passed && (*vd)->ratio) out.best_vs_start = (*vd)->ratio;
      else out.final_best_outcome = (*vd)->outcome;
    }
  }
  if (o.measure_expert && ks.expert && ks.expert->hash != out.start.hash) {
    auto vd = compare(event_key::final_expert(), "final_expert", *ks.expert, out.start, {"human", "final", false});
    if (!vd) return tl::unexpected(vd.error());
    if (*vd) {
      out.final_evaluations.push_back((*vd)->id);
      if ((*vd)->passed && (*vd)->ratio) out.expert_vs_start = (*vd)->ratio;
    }
  }
  // Undefined when the best's own figure is missing (its final series did not decide).
  if (out.expert_vs_start && *out.expert_vs_start > 1.0 && (out.steps.empty() || out.best_vs_start)) {
    const double got = out.steps.empty() ? 1.0 : *out.best_vs_start;
    out.gap_recovered = std::log(got) / std::log(*out.expert_vs_start);
  }
  return {};
}

result<void> optimize_runner::observe_best() {
  best_features = lineages::features_of(v.features(t, best));
  return {};
}

std::string optimize_runner::proposer_target() const {
  std::string s = o.target_text;
  std::vector<std::string> feats;
  for (const auto& f : best_features) feats.push_back(lineages::feature_text(f));
  s += cat("\n\nThe current kernel (", short_hash(best.hash), ", ", ratio_text(best_ratio),
           " over the start kernel): verified features ", feats.empty() ? "none" : join(feats, ", "));
  // gate_verifier::features reads C++/CUDA sources and objects only: a real model took "none" on a
  // ModelNew full of AVX-512 intrinsics for a verdict on its claims (issue 44, item 2).
  if (best.manifest.lang == language::python && feats.empty())
    s += " (lathe detects no features in a Python kernel: it reads neither the Python file nor the C++ in "
         "its load_inline strings, so this list stays empty whatever the kernel does)";
  if (!best_inspection.empty()) s += "; last measured: " + best_inspection;
  if (o.inspect) {
    const std::string extra = o.inspect(t, best);
    if (!extra.empty()) s += "\nProfile: " + extra;
  }
  return s;
}

}  // namespace lathe::search::detail
