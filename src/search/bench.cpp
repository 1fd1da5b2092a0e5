#include "search/bench.h"

#include <cstdio>
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
          {"message", r.message},
          {"evaluation", r.evaluation},
          {"candidate", r.candidate_hash}};
}

json summary_json(const bench_summary& s) {
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  json fast = json::array();
  for (const auto& f : s.fast) fast.push_back({{"p", f.p}, {"fraction", f.fraction}, {"count", f.count}});
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

std::string fixed(double x, const char* fmt = "%.3f") {
  char b[32];
  std::snprintf(b, sizeof b, fmt, x);
  return b;
}

}  // namespace

result<bench_result> run_bench(const std::vector<bench_entry>& entries, lineages::verifier& v, store& db,
                               const bench_options& o) {
  bench_result out;
  run& r = out.r;
  r.id = o.run_id.empty() ? new_run_id(run_kind::bench) : o.run_id;
  r.kind = run_kind::bench;
  r.task = o.suite;
  r.state = run_state::running;
  r.args = json{{"suite", o.suite}, {"candidates", o.candidates}, {"p", o.ps}}.dump();
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  for (const auto& e : entries) {
    bench_row row;
    row.result.task = e.t.name;
    if (!e.candidate) {
      row.result.status = task_status::no_candidate;
      row.message = "no candidate";
    } else {
      evaluation ev = v.compare(e.t, *e.candidate, e.baseline, {"human", "bench", false});
      for (int32_t again = 0; again < o.unstable_retries && ev.result == outcome::unstable; ++again)
        ev = v.compare(e.t, *e.candidate, e.baseline, {"human", "bench", false});
      row.evaluation = ev.id;
      row.candidate_hash = e.candidate->hash;
      row.result.outcome = std::string(to_string(ev.result));
      row.message = ev.message.substr(0, ev.message.find('\n'));
      const bool undecided = ev.result == outcome::unstable;
      row.result.status = lineages::passed(ev) || undecided ? task_status::correct : task_status::failed;
      if (lineages::passed(ev)) row.result.speedup = lineages::ratio(ev);
    }
    if (auto ev = db.add_run_event(r.id, "task", row_json(row).dump()); !ev) return tl::unexpected(ev.error());
    if (o.progress) o.progress(row);
    out.rows.push_back(std::move(row));
  }
  std::vector<task_result> results;
  for (const auto& row : out.rows) results.push_back(row.result);
  out.summary = summarize(results, o.ps);
  json rows = json::array();
  for (const auto& row : out.rows) rows.push_back(row_json(row));
  r.summary = json{{"suite", o.suite},
                   {"candidates", o.candidates},
                   {"tasks", rows},
                   {"skipped", o.skipped},
                   {"aggregates", summary_json(out.summary)}}
                  .dump();
  r.state = run_state::finished;
  if (auto put = db.put_run(r); !put) return tl::unexpected(put.error());
  return out;
}

std::string bench_markdown(const bench_result& r, const bench_options& o) {
  std::string md = cat("# lathe bench ", o.suite, "\n\ncandidates: `", o.candidates, "`, run `", r.r.id, "`\n\n");
  md += "| task | status | outcome | speedup vs baseline |\n|---|---|---|---|\n";
  for (const auto& row : r.rows)
    md += cat("| ", row.result.task, " | ", to_string(row.result.status), " | ",
              row.result.outcome.empty() ? "-" : row.result.outcome, " | ",
              row.result.speedup ? fixed(*row.result.speedup, "%.3fx") : std::string("-"), " |\n");
  const bench_summary& s = r.summary;
  md += cat("\n| aggregate | value |\n|---|---|\n| tasks | ", std::to_string(s.tasks), " (", std::to_string(s.correct),
            " correct, ", std::to_string(s.failed), " failed, ", std::to_string(s.no_candidate), " without a candidate) |\n",
            "| correctness rate | ", fixed(s.correctness_rate), " |\n");
  for (const auto& f : s.fast)
    md += cat("| fast_", fixed(f.p, "%.1f"), " | ", fixed(f.fraction), " (", std::to_string(f.count), " of ",
              std::to_string(s.tasks), ") |\n");
  auto opt = [&](const std::optional<double>& x) { return x ? fixed(*x, "%.3fx") : std::string("- (no correct task)"); };
  md += cat("| geometric mean speedup (correct tasks) | ", opt(s.geomean), " |\n",
            "| arithmetic mean speedup (correct tasks) | ", opt(s.mean), " |\n",
            "| median speedup (correct tasks) | ", opt(s.median), " |\n",
            "| mean speedup, failures as 0 (all tasks) | ", fixed(s.mean_with_failures_as_zero, "%.3fx"), " |\n");
  if (!o.skipped.empty()) md += "\nskipped (not run here, not counted): " + join(o.skipped, "; ") + "\n";
  return md;
}

}  // namespace lathe::search
