#include "search/bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <deque>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "core/text.h"

namespace lathe::search {

using nlohmann::json;

namespace {

json row_json(const bench_row& r) {
  return {{"task", r.result.task},
          {"status", to_string(r.result.status)},
          {"outcome", r.result.outcome},
          {"speedup", r.result.speedup ? json(*r.result.speedup) : json(nullptr)},
          {"ci", r.result.ci_low && r.result.ci_high ? json{*r.result.ci_low, *r.result.ci_high} : json(nullptr)},
          {"message", r.message},
          {"evaluation", r.evaluation},
          {"candidate", r.candidate_hash},
          {"run", r.run},
          {"attempt", r.attempt},
          {"role", r.role}};
}

json groups_json(const std::vector<klineage_group>& gs) {
  json out = json::array();
  for (const auto& g : gs)
    out.push_back({{"role", g.role}, {"tasks", g.tasks}, {"runs", g.runs}, {"successes", g.successes},
                   {"failures", g.failures}, {"geomean", g.geomean ? json(*g.geomean) : json(nullptr)}});
  return out;
}

result<void> open_run(run& r, store& db, const bench_options& o) {
  r.id = o.run_id.empty() ? new_run_id(run_kind::bench) : o.run_id;
  r.kind = run_kind::bench;
  r.task = o.suite;
  r.state = run_state::running;
  r.args = json{{"suite", o.suite}, {"candidates", o.candidates}, {"p", o.ps},
                {"protocol", to_string(o.protocol)}, {"runs", o.runs}}.dump();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return {};
}

// The attempt's own failure or missing candidate as a row; nullopt when there is a candidate.
std::optional<bench_row> unproduced(const bench_attempt& a, bench_row row) {
  if (!a.failure.empty()) {
    row.result.status = task_status::failed;
    row.result.outcome = a.outcome ? std::string(to_string(*a.outcome)) : "error";
    row.message = a.failure.substr(0, a.failure.find('\n'));
    return row;
  }
  if (!a.candidate) {
    row.result.status = task_status::no_candidate;
    row.message = "no candidate";
    return row;
  }
  return std::nullopt;
}


// The paired series' interval, where it is finite (fewer than two rounds: none, never decided).
void set_interval(task_result& r, const paired_series& p) {
  if (p.ci_low > 0 && std::isfinite(p.ci_low) && std::isfinite(p.ci_high)) {
    r.ci_low = p.ci_low;
    r.ci_high = p.ci_high;
  }
}

// "1.045x [0.940, 1.160]": the point estimate and, where there is one, its interval.
std::string speedup_text(const task_result& r) {
  if (!r.speedup) return "-";
  std::string s = number_text("%.3fx", *r.speedup);
  if (r.ci_low && r.ci_high) s += " [" + number_text("%.3f", *r.ci_low) + ", " + number_text("%.3f", *r.ci_high) + "]";
  return s;
}

}  // namespace

json summary_json(const bench_summary& s) {
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  json fast = json::array();
  for (const auto& f : s.fast)
    fast.push_back({{"p", f.p}, {"fraction", f.fraction}, {"count", f.count}, {"count_point_estimate", f.count_point}});
  return {{"tasks", s.tasks},
          {"correct", s.correct},
          {"failed", s.failed},
          {"no_candidate", s.no_candidate},
          {"correctness_rate", s.correctness_rate},
          {"fast_p", fast},
          {"geomean", opt(s.geomean)},
          {"mean", opt(s.mean)},
          {"median", opt(s.median)},
          {"mean_with_failures_as_zero", s.mean_with_failures_as_zero}};
}

const char* to_string(bench_protocol p) { return p == bench_protocol::klineage ? "klineage" : "lathe"; }

bench_producer given_candidates() {
  return [](const bench_entry& e, int32_t) {
    bench_attempt a;
    a.candidate = e.candidate;
    return a;
  };
}

namespace {

// One entry's row from its attempt: unproduced, measured by its producer, or gated here (the part
// that may run beside other entries' under bench_options::in_flight).
bench_row decide_row(const bench_entry& e, const bench_attempt& a, lineages::verifier& v, store& db,
                     const bench_options& o) {
  bench_row row;
  row.result.task = e.t.name;
  row.role = to_string(e.t.role);
  row.run = a.run;
  if (auto early = unproduced(a, row)) return *early;
  if (a.speedup || a.outcome) {
    // Measured by its producer (optimize's final paired series against the start = baseline).
    row.candidate_hash = a.candidate->hash;
    const outcome got = a.outcome.value_or(outcome::ok);
    row.result.outcome = to_string(got);
    row.message = a.message;
    row.evaluation = a.evaluation;
    row.result.status = correct(got) ? task_status::correct : task_status::failed;
    if (got == outcome::ok) row.result.speedup = a.speedup;
    // The producer's final paired series, read back for its interval.
    if (row.result.speedup && a.evaluation > 0)
      if (auto ev = db.get_evaluation(a.evaluation); ev && ev->paired) set_interval(row.result, *ev->paired);
    return row;
  }
  evaluation ev = o.check_only ? v.check(e.t, *a.candidate, e.baseline, {"human", "bench", false})
                               : v.compare(e.t, *a.candidate, e.baseline, {"human", "bench", false});
  for (int32_t again = 0; !o.check_only && again < o.unstable_retries && ev.result == outcome::unstable; ++again)
    ev = v.compare(e.t, *a.candidate, e.baseline, {"human", "bench", false});
  row.evaluation = ev.id;
  row.candidate_hash = a.candidate->hash;
  row.result.outcome = std::string(to_string(ev.result));
  row.message = ev.message.substr(0, ev.message.find('\n'));
  row.result.status = correct(ev.result) ? task_status::correct : task_status::failed;
  if (lineages::passed(ev) && !o.check_only) {
    row.result.speedup = lineages::ratio(ev);
    if (row.result.speedup && ev.paired) set_interval(row.result, *ev.paired);
  }
  return row;
}

}  // namespace

result<bench_result> run_bench(const std::vector<bench_entry>& entries, const bench_producer& produce,
                               lineages::verifier& v, store& db, const bench_options& o) {
  bench_result out;
  run& r = out.r;
  if (auto opened = open_run(r, db, o); !opened) return tl::unexpected(opened.error());
  // A window of at most in_flight evaluations; the oldest is finished (its event written, its
  // progress said) before another starts, so rows come out in the entries' order. The producer
  // runs on this thread, in order.
  std::deque<std::future<bench_row>> window;
  auto finish_oldest = [&]() -> result<void> {
    bench_row row = window.front().get();
    window.pop_front();
    if (auto ev = db.add_run_event(r.id, "task", row_json(row).dump()); !ev) return tl::unexpected(ev.error());
    if (o.progress) o.progress(row);
    out.rows.push_back(std::move(row));
    return {};
  };
  const size_t width = static_cast<size_t>(std::max(1, o.in_flight));
  if (width > 1 && o.lanes.size() < width)
    return fail(errc::invalid_argument, "bench: " + std::to_string(width) + " evaluations at once need as many "
                                        "verifiers, each on its own store connection (bench_options::lanes)");
  for (size_t i = 0; i < entries.size(); ++i) {
    const bench_entry& e = entries[i];
    const bench_attempt a = produce(e, 0);
    // Only the gate's evaluations run beside others, each through its lane; a row decided without
    // one (no candidate, or measured by its producer) is made on this thread, with `db`.
    bench_row probe;
    const bool gated = !unproduced(a, probe) && !a.speedup && !a.outcome;
    lineages::verifier& lane = width > 1 && gated ? *o.lanes[i % width] : v;
    window.push_back(std::async(width > 1 && gated ? std::launch::async : std::launch::deferred,
                                [&e, a, &lane, &db, &o] { return decide_row(e, a, lane, db, o); }));
    while (window.size() >= width)
      if (auto done = finish_oldest(); !done) return tl::unexpected(done.error());
  }
  while (!window.empty())
    if (auto done = finish_oldest(); !done) return tl::unexpected(done.error());
  std::vector<task_result> results;
  for (const auto& row : out.rows) results.push_back(row.result);
  out.summary = summarize(results, o.ps);
  json rows = json::array();
  for (const auto& row : out.rows) rows.push_back(row_json(row));
  r.summary = json{{"suite", o.suite},
                   {"candidates", o.candidates},
                   {"protocol", to_string(o.protocol)},
                   {"tasks", rows},
                   {"skipped", o.skipped},
                   {"aggregates", summary_json(out.summary)}}
                  .dump();
  r.state = run_state::finished;
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return out;
}

std::vector<klineage_group> klineage_groups(const std::vector<bench_row>& rows) {
  std::vector<klineage_group> out;
  for (const char* role : {"source", "heldout"}) {
    klineage_group g;
    g.role = role;
    std::vector<std::string> tasks;
    double logs = 0;
    for (const auto& row : rows) {
      if (row.role != role) continue;
      if (std::find(tasks.begin(), tasks.end(), row.result.task) == tasks.end()) tasks.push_back(row.result.task);
      ++g.runs;
      if (row.result.status == task_status::correct && row.result.speedup && *row.result.speedup > 0) {
        ++g.successes;
        logs += std::log(*row.result.speedup);
      } else {
        ++g.failures;  // failed, no candidate, or correct without a time
      }
    }
    g.tasks = static_cast<int32_t>(tasks.size());
    if (g.successes > 0) g.geomean = std::exp(logs / g.successes);
    if (g.runs > 0) out.push_back(g);
  }
  return out;
}

result<bench_result> run_bench_klineage(const std::vector<bench_entry>& entries, const bench_producer& produce,
                                        const bench_timer& time, store& db, const bench_options& o) {
  bench_result out;
  run& r = out.r;
  if (auto opened = open_run(r, db, o); !opened) return tl::unexpected(opened.error());
  for (const auto& e : entries) {
    for (int32_t i = 0; i < std::max(1, o.runs); ++i) {
      bench_row row;
      row.result.task = e.t.name;
      row.role = to_string(e.t.role);
      row.attempt = i;
      const bench_attempt a = produce(e, i);
      row.run = a.run;
      if (auto early = unproduced(a, row)) {
        row = *early;
      } else {
        // The run's kernel, then the baseline, each checked on 3 seeds and timed do_bench-style
        // in this run: the ratio of their means.
        row.candidate_hash = a.candidate->hash;
        const bench_timing c = time(e.t, *a.candidate, false);
        row.evaluation = c.evaluation;
        row.result.outcome = outcome_text(c.outcome);
        row.message = c.message.substr(0, c.message.find('\n'));
        if (!c.mean_seconds) {
          row.result.status = task_status::failed;
        } else {
          const bench_timing b = time(e.t, e.baseline, true);
          if (!b.mean_seconds || *c.mean_seconds <= 0) {
            row.result.status = task_status::failed;
            row.result.outcome = cat("baseline_", outcome_text(b.outcome));
            row.message = "the baseline failed: " + b.message.substr(0, b.message.find('\n'));
          } else {
            row.result.status = task_status::correct;
            row.result.speedup = *b.mean_seconds / *c.mean_seconds;
          }
        }
      }
      if (auto ev = db.add_run_event(r.id, "task", row_json(row).dump()); !ev) return tl::unexpected(ev.error());
      if (o.progress) o.progress(row);
      out.rows.push_back(std::move(row));
    }
  }
  out.groups = klineage_groups(out.rows);
  json rows = json::array();
  for (const auto& row : out.rows) rows.push_back(row_json(row));
  r.summary = json{{"suite", o.suite},
                   {"candidates", o.candidates},
                   {"protocol", to_string(o.protocol)},
                   {"runs_per_task", o.runs},
                   {"tasks", rows},
                   {"skipped", o.skipped},
                   {"groups", groups_json(out.groups)}}
                  .dump();
  r.state = run_state::finished;
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return out;
}

std::string klineage_markdown(const bench_result& r, const bench_options& o) {
  std::string md = cat("# lathe bench ", o.suite, " (KLineage Appendix-D protocol)\n\ncandidates: `", o.candidates,
                       "`, ", std::to_string(o.runs), " runs per task, run `", r.r.id, "`\n\n");
  md += "| task | role | run | status | outcome | speedup vs baseline (do_bench means) |\n|---|---|---|---|---|---|\n";
  for (const auto& row : r.rows)
    md += cat("| ", row.result.task, " | ", row.role, " | ", std::to_string(row.attempt + 1), " | ",
              to_string(row.result.status), " | ", row.result.outcome.empty() ? "-" : row.result.outcome, " | ",
              row.result.speedup ? number_text("%.3fx", *row.result.speedup) : std::string("-"), " |\n");
  md += "\n| tasks | runs | successes | failures | geometric mean speedup (successful runs only) |\n|---|---|---|---|---|\n";
  for (const auto& g : r.groups)
    md += cat("| ", g.role, ": ", std::to_string(g.tasks), " | ", std::to_string(g.runs), " | ",
              std::to_string(g.successes), " | ", std::to_string(g.failures), " | ",
              g.geomean ? number_text("%.3fx", *g.geomean) : std::string("- (no success)"), " |\n");
  md += "\nSource tasks and held-out (new-operator) tasks are reported apart, never pooled.\n";
  if (!o.skipped.empty()) md += "\nskipped (not run here, not counted): " + join(o.skipped, "; ") + "\n";
  return md;
}

std::string bench_markdown(const bench_result& r, const bench_options& o) {
  if (o.protocol == bench_protocol::klineage) return klineage_markdown(r, o);
  std::string md = cat("# lathe bench ", o.suite, "\n\ncandidates: `", o.candidates, "`, run `", r.r.id, "`\n\n");
  const bool runs = std::any_of(r.rows.begin(), r.rows.end(), [](const bench_row& x) { return !x.run.empty(); });
  md += runs ? "| task | status | outcome | speedup vs baseline [95% interval] | optimize run |\n|---|---|---|---|---|\n"
             : "| task | status | outcome | speedup vs baseline [95% interval] |\n|---|---|---|---|\n";
  for (const auto& row : r.rows)
    md += cat("| ", row.result.task, " | ", to_string(row.result.status), " | ",
              row.result.outcome.empty() ? "-" : row.result.outcome, " | ", speedup_text(row.result),
              runs ? " | " + (row.run.empty() ? std::string("-") : row.run) : std::string(), " |\n");
  const bench_summary& s = r.summary;
  md += cat("\n| aggregate | value |\n|---|---|\n| tasks | ", std::to_string(s.tasks), " (", std::to_string(s.correct),
            " correct, ", std::to_string(s.failed), " failed, ", std::to_string(s.no_candidate), " without a candidate) |\n",
            "| correctness rate | ", number_text("%.3f", s.correctness_rate), " |\n");
  for (const auto& f : s.fast)
    md += cat("| fast_", number_text("%.1f", f.p), " (interval above p) | ", number_text("%.3f", f.fraction), " (",
              std::to_string(f.count), " of ", std::to_string(s.tasks), "; ", std::to_string(f.count_point),
              " by the point estimate alone) |\n");
  auto opt = [&](const std::optional<double>& x) { return x ? number_text("%.3fx", *x) : std::string("- (no correct task)"); };
  md += cat("| geometric mean speedup (correct tasks) | ", opt(s.geomean), " |\n",
            "| arithmetic mean speedup (correct tasks) | ", opt(s.mean), " |\n",
            "| median speedup (correct tasks) | ", opt(s.median), " |\n",
            "| mean speedup, failures as 0 (all tasks) | ", number_text("%.3fx", s.mean_with_failures_as_zero), " |\n");
  if (!o.skipped.empty()) md += "\nskipped (not run here, not counted): " + join(o.skipped, "; ") + "\n";
  return md;
}

}  // namespace lathe::search
