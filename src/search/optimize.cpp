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
#include "core/text.h"
#include "features/feature_audit.h"
#include "search/journal.h"
#include "search/plan.h"
#include "search/progress.h"
#include "search/verdict.h"

namespace lathe::search {

using nlohmann::json;
using detail::amounts_from;
using detail::amounts_json;
using detail::event_key;

const char* to_string(stop_reason s) {
  switch (s) {
    case stop_reason::steps: return "steps";
    case stop_reason::evals: return "evals";
    case stop_reason::calls: return "calls";
    case stop_reason::tokens: return "tokens";
    case stop_reason::usd: return "usd";
    case stop_reason::seconds: return "seconds";
    case stop_reason::exhausted: return "exhausted";
    case stop_reason::stalled: return "stalled";
    case stop_reason::waiting: return "waiting";
  }
  return "?";
}

std::string new_run_id() { return lathe::new_run_id(run_kind::optimize); }

result<double> resume_seconds(store& db, const std::string& run_id) {
  detail::journal j(db, run_id);
  if (auto ok = j.load(); !ok) return tl::unexpected(ok.error());
  return j.recorded_elapsed();
}

namespace {

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

std::string first_line(const std::string& s, size_t max = 240) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "…";
  return line;
}

std::string ratio_text(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", r);
  return b;
}

}  // namespace

std::string speed_reading(double ratio, double margin) {
  char m[24];
  std::snprintf(m, sizeof m, "%.3f", margin);
  const std::string r = ratio_text(ratio);
  if (ratio >= 1.0 + margin) return r + ": faster (clears 1 + " + m + ")";
  if (ratio > 1.0)
    return r + ": read faster, but inside the noise margin (1 + " + m + "): undecided, not slower";
  if (ratio * (1.0 + margin) > 1.0) return r + ": the same within the noise margin (1 + " + m + ")";
  return r + ": slower (below 1 / (1 + " + m + "))";
}

namespace {

stop_reason stop_of(llm::resource r) {
  switch (r) {
    case llm::resource::steps: return stop_reason::steps;
    case llm::resource::evals: return stop_reason::evals;
    case llm::resource::calls: return stop_reason::calls;
    case llm::resource::tokens: return stop_reason::tokens;
    case llm::resource::usd: return stop_reason::usd;
    case llm::resource::seconds: return stop_reason::seconds;
  }
  return stop_reason::exhausted;
}

// The limit a ledger has reached (after a model call was refused its reservation).
std::optional<llm::resource> reached_limit(const llm::ledger& l) {
  const llm::amounts s = l.spent();
  const budget& b = l.bounds().run;
  if (b.tokens && s.tokens >= *b.tokens) return llm::resource::tokens;
  if (b.usd && s.usd >= *b.usd) return llm::resource::usd;
  if (l.bounds().calls && s.calls >= *l.bounds().calls) return llm::resource::calls;
  if (b.seconds && s.seconds >= *b.seconds) return llm::resource::seconds;
  if (b.steps && s.steps >= *b.steps) return llm::resource::steps;
  if (b.evals && s.evals >= *b.evals) return llm::resource::evals;
  return std::nullopt;
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

using detail::verdict;
using detail::verdict_from;
using detail::verdict_json;

struct proposed {
  std::optional<agent::proposal> ok;
  agent::failure failed;
};

struct runner {
  const task& t;
  const optimize_kernels& ks;
  lineages::verifier& v;
  agent::proposer& p;
  store& db;
  llm::ledger& budget;
  const optimize_options& o;
  detail::journal& j;
  optimize_result& out;
  plan& planner;

  runner(const task& t_, const optimize_kernels& ks_, lineages::verifier& v_, agent::proposer& p_, store& db_,
         llm::ledger& budget_, const optimize_options& o_, detail::journal& j_, optimize_result& out_, plan& planner_)
      : t(t_), ks(ks_), v(v_), p(p_), db(db_), budget(budget_), o(o_), j(j_), out(out_), planner(planner_) {}

  kernel_bundle best;
  std::vector<feature> best_features;
  std::string best_inspection;
  double best_ratio = 1.0;
  std::vector<agent::attempt_note> notes;
  std::vector<memory_entry> memory;
  std::map<std::string, std::string> gated;  // kernel hash -> its verdict in words
  std::optional<stop_reason> stop;
  std::string stop_detail;
  int32_t stall = 0;
  int32_t current_step = 0;
  std::string inspection;  // what the proposer was told of the best kernel at this step
  progress_tracker tracker{t, o.tgt};

  // The proposer's ranking of path options, or its recorded one.
  result<std::vector<std::string>> rank(const agent::rank_request& rq) {
    const event_key key = event_key::ranking(current_step);
    if (const json* rec = j.recorded(key)) {
      charge(amounts_from(rec->value("used", json::object())));
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
    if (auto e = emit("ranking", key, std::move(body), current_step,
                      cat("step ", std::to_string(current_step), ": ", std::to_string(rq.paths.size()),
                          " options ranked", got ? "" : " (the proposer failed: given order kept)"));
        !e)
      return tl::unexpected(e.error());
    return order;
  }

  double elapsed() const { return budget.spent().seconds; }

  void tell(const std::string& kind, int32_t step, const std::string& message) {
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

  result<void> emit(const std::string& kind, const event_key& key, json body, int32_t step,
                    const std::string& message) {
    auto wrote = j.emit(kind, key, std::move(body), elapsed());
    if (!wrote) return tl::unexpected(wrote.error());
    if (*wrote) tell(kind, step, message);
    return {};
  }

  // Charges a recorded action's use again (resume): the same reservations the live run made.
  void charge(const llm::amounts& used) {
    llm::amounts a = used;
    a.seconds = 0;
    if (auto r = budget.reserve(a)) budget.commit(std::move(*r), a);
  }

  void set_stop(stop_reason s, std::string detail) {
    if (stop) return;
    stop = s;
    stop_detail = std::move(detail);
  }

  // A proposer operation, or its recorded result.
  result<proposed> propose(const event_key& key, const std::string& op, const std::string& source,
                           const std::vector<std::string>& card_ids,
                           const std::function<agent::op_result<agent::proposal>()>& call) {
    proposed res;
    if (const json* rec = j.recorded(key)) {
      charge(amounts_from(rec->value("used", json::object())));
      ++out.proposals;
      if (!rec->value("ok", false)) {
        const json f = rec->value("failure", json::object());
        res.failed.kind = agent::failure_kind::refused;
        for (auto k : {agent::failure_kind::call, agent::failure_kind::budget, agent::failure_kind::invalid_reply,
                       agent::failure_kind::edit_not_applied, agent::failure_kind::unsupported,
                       agent::failure_kind::refused})
          if (f.value("kind", std::string()) == agent::to_string(k)) res.failed.kind = k;
        res.failed.message = f.value("message", std::string());
        return res;
      }
      auto k = db.get_kernel(rec->value("kernel", std::string()));
      if (!k) return tl::unexpected(k.error());
      agent::proposal pr;
      pr.kernel = std::move(*k);
      pr.action = rec->value("action", std::string());
      pr.locus = rec->value("locus", std::string());
      pr.features_added = rec->value("adds", std::vector<std::string>{});
      pr.features_removed = rec->value("removes", std::vector<std::string>{});
      pr.rationale = rec->value("rationale", std::string());
      pr.edits = rec->value("edits", std::string());
      if (rec->contains("provenance")) pr.prov = rec->at("provenance").get<provenance>();
      pr.calls = rec->value("calls", 0);
      res.ok = std::move(pr);
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
      body["kernel"] = r->kernel.hash;
      body["action"] = r->action;
      body["locus"] = r->locus;
      body["adds"] = r->features_added;
      body["removes"] = r->features_removed;
      body["rationale"] = r->rationale;
      body["edits"] = r->edits;
      body["provenance"] = r->prov;
      body["calls"] = r->calls;
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
    if (auto e = emit("proposal", key, std::move(body), current_step, message); !e) return tl::unexpected(e.error());
    return res;
  }

  // A gate evaluation (timed: paired against `against`; else the checks only), or its recorded
  // verdict. nullopt: the budget refused it (stop is set).
  result<std::optional<verdict>> evaluate(const event_key& key, const std::string& purpose,
                                          const kernel_bundle& k, const kernel_bundle& against, bool time,
                                          const provenance& prov, bool reserved = false) {
    if (const json* rec = j.recorded(key)) {
      if (!reserved) charge(llm::one_evaluation);
      ++out.evaluations;
      return std::optional<verdict>(verdict_from(*rec));
    }
    std::optional<llm::reservation> hold;
    if (!reserved) {
      auto r = budget.reserve(llm::one_evaluation);
      if (!r) {
        set_stop(stop_of(r.error().limit), r.error().message);
        return std::optional<verdict>();
      }
      hold = std::move(*r);
    }
    const evaluation e = time ? v.compare(t, k, against, prov) : v.check(t, k, against, prov);
    if (hold) budget.commit(std::move(*hold), llm::one_evaluation);
    ++out.evaluations;
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
    vd.inspection = detail::inspection_of(e);
    json body = verdict_json(vd);
    body["purpose"] = purpose;
    body["kernel"] = k.hash;
    body["against"] = against.hash;
    body["used"] = amounts_json(llm::one_evaluation);
    const std::string message =
        cat(purpose, " ", short_hash(k.hash), ": ", outcome_text(vd.outcome),
            vd.ratio ? cat(", ", ratio_text(*vd.ratio), " vs ", short_hash(against.hash)) : std::string());
    if (auto w = emit("evaluation", key, std::move(body), current_step, message); !w) return tl::unexpected(w.error());
    return std::optional<verdict>(vd);
  }

  // A timed comparison; `unstable` is the gate declining to decide on a noisy machine, not a verdict
  // on the kernel: asked again up to o.unstable_retries times (each a gate evaluation, all kept).
  result<std::optional<verdict>> compare(const event_key& key, const std::string& purpose, const kernel_bundle& k,
                                         const kernel_bundle& against, const provenance& prov) {
    auto vd = evaluate(key, purpose, k, against, true, prov);
    for (int32_t again = 1; again <= o.unstable_retries; ++again) {
      if (!vd || !*vd || (*vd)->outcome != outcome::unstable) break;
      vd = evaluate(key.retry(again), purpose, k, against, true, prov);
    }
    if (vd && *vd && (*vd)->passed)
      tracker.timed(against.hash == out.start.hash, against.hash == best.hash, (*vd)->against_seconds, (*vd)->floor);
    return vd;
  }

  result<void> observe_best() {
    best_features = lineages::features_of(v.features(t, best));
    return {};
  }

  std::string proposer_target() const {
    std::string s = o.target_text;
    std::vector<std::string> feats;
    for (const auto& f : best_features) feats.push_back(lineages::feature_text(f));
    s += cat("\n\nThe current kernel (", short_hash(best.hash), ", ", ratio_text(best_ratio),
             " over the start kernel): verified features ", feats.empty() ? "none" : join(feats, ", "));
    if (!best_inspection.empty()) s += "; last measured: " + best_inspection;
    if (o.inspect) {
      const std::string extra = o.inspect(t, best);
      if (!extra.empty()) s += "\nProfile: " + extra;
    }
    return s;
  }

  void note(const std::string& summary) { notes.push_back({summary}); }
  std::vector<agent::attempt_note> recent_notes() const {
    const size_t keep = 24;
    if (notes.size() <= keep) return notes;
    return {notes.end() - static_cast<std::ptrdiff_t>(keep), notes.end()};
  }

  result<void> reject(int32_t step, int32_t attempt, const std::string& stage, const std::string& kernel,
                      const std::string& summary) {
    ++out.rejected;
    note(summary);
    json body{{"step", step}, {"attempt", attempt}, {"stage", stage}, {"kernel", kernel}, {"summary", summary}};
    return emit("rejected", event_key::rejected(step, attempt), std::move(body), step,
                cat("step ", std::to_string(step), " rejected (", stage, "): ", first_line(summary, 160)));
  }

  // The start kernel: given, seeded by the proposer (checked, repaired), or the naive one.
  result<void> start_kernel() {
    kernel_bundle start;
    std::string how;
    if (ks.start) {
      start = *ks.start;
      how = "given";
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
      std::string why;
      if (seeded->ok) {
        kernel_bundle cand = seeded->ok->kernel;
        for (int32_t round = 0;; ++round) {
          auto vd = evaluate(event_key::seeded_start_check(round), "start", cand, cand, false, seeded->ok->prov);
          if (!vd) return tl::unexpected(vd.error());
          if (!*vd) return fail(errc::invalid_argument, "the budget refused checking the seeded start kernel: " + stop_detail);
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
        how = "seeded";
      } else if (ks.naive) {
        start = *ks.naive;
        how = "naive (" + why + ")";
      } else {
        return fail(errc::unsupported, "no start kernel: " + why + "; and the task has no naive kernel");
      }
    }
    if (auto put = db.put_kernel(start); !put) return tl::unexpected(put.error());
    if (how == "given" || how.rfind("naive", 0) == 0) {
      auto vd = evaluate(event_key::given_start_check(), "start", start, start, false, {"human", start.name, false});
      if (!vd) return tl::unexpected(vd.error());
      if (!*vd) return fail(errc::invalid_argument, "the budget refused checking the start kernel: " + stop_detail);
      if (!(*vd)->passed)
        return fail(errc::invalid_argument, cat("the start kernel ", start.name, " fails the gate (", outcome_text((*vd)->outcome),
                                                "): ", first_line((*vd)->message)));
    }
    out.start = start;
    out.start_how = how;
    best = start;
    if (auto e = emit("start", event_key::start(), {{"kernel", start.hash}, {"name", start.name}, {"how", how}}, 0,
                      cat("start kernel ", start.name.empty() ? short_hash(start.hash) : start.name, ": ", how));
        !e)
      return tl::unexpected(e.error());
    return observe_best();
  }

  // One step: a proposal, its gate, repairs, the re-measure, the verdict.
  result<void> step(int32_t n) {
    const double pace = out.proposals > 0 ? elapsed() / std::max<int64_t>(1, budget.spent().steps) : 1.0;
    const event_key pk = event_key::proposal(n, 0);
    const bool replay = j.replaying(pk);
    auto hold = budget.reserve(llm::one_step_taking(replay ? 0.0 : std::max(0.5, pace)));
    if (!hold) {
      set_stop(stop_of(hold.error().limit), hold.error().message);
      return {};
    }
    current_step = n;
    const std::string target = proposer_target();
    inspection = target.substr(std::min(target.size(), o.target_text.size()));
    const agent::progress_facts facts = tracker.facts(n, budget.bounds().run.steps, budget.bounds(), budget.spent());
    auto planned = planner.next(best, best_features, target, facts, recent_notes(), memory);
    if (!planned) return tl::unexpected(planned.error());
    const request req = std::move(*planned);
    if (req.exhausted) {
      budget.release(std::move(*hold));
      set_stop(stop_reason::exhausted, req.why);
      return {};
    }
    auto pr = propose(pk, req.op, req.source, req.card_ids, req.call);
    if (!pr) return tl::unexpected(pr.error());
    budget.commit(std::move(*hold), llm::one_step);
    if (!pr->ok) {
      const auto& f = pr->failed;
      if (f.kind == agent::failure_kind::waiting) {
        set_stop(stop_reason::waiting, f.message);
        return {};
      }
      if (f.kind == agent::failure_kind::budget) {
        const auto lim = reached_limit(budget);
        set_stop(lim ? stop_of(*lim) : stop_reason::tokens, f.message);
        return {};
      }
      planner.failed(req, best, f);
      ++stall;
      return reject(n, 0, "proposer", "",
                    cat(req.source, ": the proposer failed (", agent::to_string(f.kind), "): ", first_line(f.message)));
    }
    agent::proposal cand = *pr->ok;
    planner.proposed(req, best);
    if (cand.kernel.hash == best.hash) {
      ++stall;
      return reject(n, 0, "duplicate", cand.kernel.hash, cat(first_line(cand.rationale), ": no change to the kernel"));
    }
    if (auto it = gated.find(cand.kernel.hash); it != gated.end()) {
      ++stall;
      return reject(n, 0, "duplicate", cand.kernel.hash,
                    cat(first_line(cand.rationale), ": the same kernel was gated before (", it->second, ")"));
    }
    // The gate against the best; repair rounds on a failure.
    std::optional<verdict> first;
    for (int32_t round = 0;; ++round) {
      auto vd = compare(event_key::candidate(n, round), "candidate",
                        cand.kernel, best, cand.prov);
      if (!vd) return tl::unexpected(vd.error());
      if (!*vd) return reject(n, 0, "budget", cand.kernel.hash, cat(first_line(cand.rationale), ": not gated: ", stop_detail));
      first = **vd;
      gated[cand.kernel.hash] = cat(outcome_text(first->outcome), first->ratio ? " " + ratio_text(*first->ratio) : std::string());
      if (first->passed || first->outcome == outcome::unstable || round >= o.max_repairs) break;
      agent::repair_request rr{&t, cand.kernel, cand.action + ": " + first_line(cand.rationale),
                               first->outcome.value_or(outcome::wrong_result),
                               first->diagnostics.empty() ? first->message : first->diagnostics, proposer_target()};
      auto fixed = propose(event_key::proposal(n, round + 1), "repair", req.source,
                           req.card_ids, [&] { return p.repair(rr); });
      if (!fixed) return tl::unexpected(fixed.error());
      if (!fixed->ok) {
        if (fixed->failed.kind == agent::failure_kind::waiting) {
          set_stop(stop_reason::waiting, fixed->failed.message);
          return {};
        }
        if (fixed->failed.kind == agent::failure_kind::budget) {
          const auto lim = reached_limit(budget);
          set_stop(lim ? stop_of(*lim) : stop_reason::tokens, fixed->failed.message);
        }
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
      return reject(n, 0, "undecided", cand.kernel.hash,
                    cat(first_line(cand.rationale), ": undecided: correct, but the machine was too noisy "
                        "to tell its speed (", first_line(first->message), "); not a verdict on the kernel"));
    }
    if (!first->passed) {
      ++stall;
      return reject(n, 0, "gate", cand.kernel.hash,
                    cat(first_line(cand.rationale), ": gate ", outcome_text(first->outcome), ": ", first_line(first->message)));
    }
    if (!first->faster()) {
      ++stall;
      return reject(n, 0, "not_faster", cand.kernel.hash,
                    cat(first_line(cand.rationale), ": not faster: paired ",
                        first->ratio ? speed_reading(*first->ratio, first->margin) : std::string("(untimed)")));
    }
    auto again = compare(event_key::remeasure(n), "remeasure", cand.kernel, best, cand.prov);
    if (!again) return tl::unexpected(again.error());
    if (!*again)
      return reject(n, 0, "budget", cand.kernel.hash, cat(first_line(cand.rationale), ": not re-measured: ", stop_detail));
    const verdict second = **again;
    if (!second.faster()) {
      ++stall;
      const std::string reread = second.ratio ? speed_reading(*second.ratio, second.margin)
                                               : std::string(outcome_text(second.outcome));
      gated[cand.kernel.hash] = cat("did not hold on re-measure: ", reread);
      return reject(n, 0, "remeasure", cand.kernel.hash,
                    cat(first_line(cand.rationale), ": faster at first (", ratio_text(*first->ratio),
                        ") but not on the fresh re-measure (", reread, ")"));
    }
    return accept(n, req, cand, *first, second);
  }

  result<void> accept(int32_t n, const request& req, const agent::proposal& cand, const verdict& first,
                      const verdict& second) {
    const std::vector<feature> before = best_features;
    const kernel_bundle from = best;
    best = cand.kernel;
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
    return emit("accepted", event_key::accepted(n), std::move(body), n,
                cat("step ", std::to_string(n), " accepted: ", cand.action, " (", req.source, ") ",
                    ratio_text(*second.ratio), " re-measured; best ", ratio_text(best_ratio), " over start"));
  }

  // The fresh paired measurements the summary reports.
  result<void> finals(std::optional<llm::reservation>& held) {
    if (held) budget.release(std::move(*held));
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
};

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
          {"start", {{"name", r.start.name}, {"hash", r.start.hash}, {"how", r.start_how}}},
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
  runner* self = nullptr;
  auto planner = make_plan(t, p, db, o, [&self](const agent::rank_request& rq) { return self->rank(rq); });
  if (!planner) return tl::unexpected(planner.error());
  runner loop{t, kernels, v, p, db, ledger, o, j, out, **planner};
  self = &loop;

  auto body = [&]() -> result<void> {
    json st{{"task", t.name}, {"strategy", to_string(o.strat)}, {"ablation", to_string(o.abl)},
            {"limits", ledger.bounds().run}, {"options", options_json(o)}};
    if (auto e = loop.emit("started", event_key::started(), std::move(st), 0, "optimize " + t.name + " with strategy " + to_string(o.strat));
        !e)
      return tl::unexpected(e.error());
    if (out.resumed)
      if (auto e = loop.emit("resumed", event_key::resumed(j.last_seq()), {{"from_seq", j.last_seq()}}, 0,
                            "resumed after event " + std::to_string(j.last_seq()));
          !e)
        return tl::unexpected(e.error());
    // The final measurements are reserved before anything else spends the evaluations.
    const int64_t finals = 1 + ((o.measure_expert && kernels.expert) ? 1 : 0);
    std::optional<llm::reservation> held;
    if (auto h = ledger.reserve(llm::evaluations(finals))) held = std::move(*h);
    else
      return fail(errc::invalid_argument, "the budget cannot hold the final measurements (" + h.error().message + ")");
    if (auto s = loop.start_kernel(); !s) return s;
    for (int32_t n = 1; !loop.stop; ++n) {
      if (auto s = loop.step(n); !s) return s;
      if (o.max_stall > 0 && loop.stall >= o.max_stall)
        loop.set_stop(stop_reason::stalled, std::to_string(loop.stall) + " steps in a row without an accepted one");
    }
    out.stop = *loop.stop;
    out.stop_detail = loop.stop_detail;
    // Batch mode: the run waits for answers (interrupted, resumable); no final measurement yet.
    if (out.stop == stop_reason::waiting) {
      out.best = loop.best;
      out.used = ledger.spent();
      return result<void>{};
    }
    if (auto f = loop.finals(held); !f) return f;
    out.best = loop.best;
    out.used = ledger.spent();
    return loop.emit("finished", event_key::finished(), {{"stop", to_string(out.stop)}, {"detail", out.stop_detail}}, 0,
                    cat("finished: ", to_string(out.stop), " (", out.stop_detail, ")"));
  };
  auto done = body();
  if (!done) {
    r.state = run_state::failed;
    r.message = done.error().message;
    (void)db.put_run(r);
    return tl::unexpected(done.error());
  }
  r.state = out.stop == stop_reason::waiting ? run_state::interrupted : run_state::finished;
  r.message = out.stop == stop_reason::waiting ? out.stop_detail : std::string();
  r.summary = summary_json(out, t, o).dump();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return out;
}

}  // namespace lathe::search
