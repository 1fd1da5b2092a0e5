// lathe export training RUN… (issue 9, item 6; docs/evolve.md "Training data"): the steps of
// evolve runs as JSONL chat samples with rewards and provenance; search/export.h filters.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "agent/kernel_text.h"
#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "search/event_kinds.h"
#include "search/export.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct export_cli {
  std::vector<std::string> runs;
  std::string out;
  double epsilon = 0.0, leak = 0.9;
  size_t max_chars = 0;
  bool best_steps = false;
};

int run_export(const common_options& common, const export_cli& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, false);
  if (!ctx) return fail_with(ctx.error().message, 2);
  std::map<std::string, kernel_bundle> kernels;
  auto kernel = [&](const std::string& h) -> const kernel_bundle* {
    if (h.empty()) return nullptr;
    if (auto it = kernels.find(h); it != kernels.end()) return &it->second;
    auto k = ctx->db->get_kernel(h);
    if (!k) return nullptr;
    return &(kernels[h] = std::move(*k));
  };
  std::vector<search::step_source> steps;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& id : o.runs) {
    auto r = ctx->db->get_run(id);
    if (!r) return fail_with(r.error().message, 2);
    if (!*r) return fail_with("no run '" + id + "' (`lathe runs list`)", 2);
    if ((*r)->kind != run_kind::evolve)
      return fail_with("run '" + id + "' is a " + std::string(to_string((*r)->kind)) + " run: export reads evolve runs", 2);
    const nlohmann::json summary = nlohmann::json::parse((*r)->summary.empty() ? "{}" : (*r)->summary, nullptr, false);
    const std::string proposer = summary.is_object() ? summary.value("proposer", std::string()) : std::string();
    std::optional<double> best;
    if (summary.is_object() && summary.contains("best_speedup") && summary["best_speedup"].is_number())
      best = summary["best_speedup"].get<double>();
    std::string task_text = (*r)->task;
    if (auto t = find_task((*r)->task, ctx->where)) task_text = agent::task_text(*t);
    auto events = ctx->db->run_events(id);
    if (!events) return fail_with(events.error().message, 2);
    const bool grade = search::training_grade(proposer);
    for (const auto& ev : *events) {
      if (ev.kind != search::event_kind::child) continue;  // the child records
      const nlohmann::json body = nlohmann::json::parse(ev.json, nullptr, false);
      if (!body.is_object()) continue;
      search::step_source s;
      s.run = id;
      s.task_text = task_text;
      s.child = search::child_from(body);
      s.parent = kernel(s.child.parent);
      s.kernel = kernel(s.child.kernel);
      for (const auto& h : s.child.inspirations) s.inspirations.push_back(kernel(h));
      s.run_best_speedup = best;
      s.training_grade = grade;
      steps.push_back(std::move(s));
    }
    runs.push_back({{"run", id}, {"proposer", proposer}, {"training_grade", grade}});
  }
  search::export_options eo;
  eo.epsilon = o.epsilon;
  eo.best_steps = o.best_steps;
  eo.max_chars = o.max_chars;
  eo.leak_similarity = o.leak;
  const search::export_result res = search::export_steps(steps, eo);
  FILE* out = stdout;
  if (!o.out.empty() && !(out = std::fopen(o.out.c_str(), "w"))) return fail_with("cannot write " + o.out, 1);
  for (const auto& s : res.samples) std::fprintf(out, "%s\n", s.dump().c_str());
  if (out != stdout) std::fclose(out);
  nlohmann::json summary{{"schema", "lathe.export/1"}, {"runs", runs}, {"steps", res.steps},
                         {"samples", res.samples.size()}, {"dropped", res.dropped},
                         {"options", {{"epsilon", o.epsilon}, {"best_steps", o.best_steps}, {"max_chars", o.max_chars},
                                      {"leak_similarity", o.leak}}}};
  std::fprintf(stderr, "%s\n", summary.dump().c_str());
  for (const auto& r : runs)
    if (!r.value("training_grade", true))
      std::fprintf(stderr, "lathe: run %s was made by %s: its samples are marked training_grade=false "
                           "(they show that the machinery works, not what a model wrote)\n",
                   r.value("run", std::string()).c_str(), r.value("proposer", std::string()).c_str());
  return 0;
}

}  // namespace

void add_export(CLI::App& app, const common_options& common, int& exit_code) {
  CLI::App* ex = app.add_subcommand("export", "export runs as data");
  ex->require_subcommand(1);
  auto o = std::make_shared<export_cli>();
  CLI::App* tr = ex->add_subcommand("training", "evolve runs as step-centric JSONL chat samples with rewards");
  tr->add_option("runs", o->runs, "evolve runs (`lathe runs list`)")->required();
  tr->add_option("-o,--out", o->out, "write the JSONL here (default: stdout; the summary goes to stderr)");
  tr->add_option("--epsilon", o->epsilon, "keep an optimization step when its speedup over the parent exceeds 1 + ε")
      ->capture_default_str();
  tr->add_flag("--best-steps", o->best_steps,
               "only steps whose parent already had a speedup and whose child leaves room to the run's best");
  tr->add_option("--max-chars", o->max_chars, "drop samples longer than this (prompt + answer; 0: no limit)")
      ->capture_default_str();
  tr->add_option("--leak-similarity", o->leak,
                 "drop a child at least this similar (line Jaccard) to an inspiration shown in its prompt, "
                 "and more similar to it than to its parent")
      ->capture_default_str();
  tr->footer("Translations are kept when correct; optimization steps when correct and faster than their parent\n"
             "by more than ε (the contest's paired ratio, else the ratio of the two speedups over the baseline).\n"
             "Samples from rule-engine, mock-model or replayed runs carry training_grade=false.");
  tr->callback([o, &common, &exit_code] { exit_code = run_export(common, *o); });
}

}  // namespace lathe::cli
