// lathe bench SUITE (--candidates DIR | --kernel NAME) (issue 8; docs/bench.md): the verb finds
// the suite's tasks and each one's candidate, and prints; search/bench.h gates and aggregates.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "gate/bundle.h"
#include "gate/task_file.h"
#include "cli/proposer_session.h"  // make_gate_hooks
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "search/bench.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct bench_cli {
  std::string suite, candidates, kernel, markdown, strategy;
  double max_time = 1.0;
  bool quick = false, json = false;
};

int fail_with(const std::string& m, int code) {
  std::fprintf(stderr, "lathe: %s\n", m.c_str());
  return code;
}

// The suite's task directories: `all`, `source` or `heldout` (the shipped tasks of that role), or
// a directory whose subdirectories hold task.toml files. Sorted by name.
result<std::vector<fs::path>> suite_dirs(const std::string& suite, const paths& where) {
  const bool shipped = suite == "all" || suite == "source" || suite == "heldout";
  const fs::path root = shipped ? where.tasks_dir : fs::path(suite);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return fail(errc::not_found, "suite '" + suite + "': not a directory, nor all | source | heldout");
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (fs::exists(e.path() / "task.toml", ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  if (out.empty()) return fail(errc::not_found, "suite '" + suite + "' holds no task (no */task.toml)");
  return out;
}

int run_bench_cmd(const common_options& common, const bench_cli& o) {
  if (!o.strategy.empty())
    return fail_with("bench --strategy (optimize every task of the suite) is not built yet: use --candidates DIR or --kernel NAME", 2);
  if (o.candidates.empty() == o.kernel.empty())
    return fail_with("bench needs exactly one of --candidates DIR and --kernel NAME", 2);
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  auto dirs = suite_dirs(o.suite, ctx->where);
  if (!dirs) return fail_with(dirs.error().message, 2);
  if (!o.candidates.empty() && !fs::is_directory(o.candidates))
    return fail_with("--candidates " + o.candidates + ": not a directory", 2);

  search::bench_options bo;
  bo.suite = o.suite;
  bo.candidates = o.candidates.empty() ? "each task's kernels/" + o.kernel : o.candidates;
  std::vector<search::bench_entry> entries;
  for (const auto& d : *dirs) {
    auto t = find_task(d.string(), ctx->where);
    if (!t) return fail_with(t.error().message, 2);
    if (o.suite == "source" && t->role != task_role::source) continue;
    if (o.suite == "heldout" && t->role != task_role::heldout) continue;
    if (t->plat == platform::cuda && !ctx->gpu) {
      bo.skipped.push_back(t->name + ": CUDA task, no GPU here");
      continue;
    }
    search::bench_entry e;
    auto base = find_task_kernel(*t, t->baseline);
    if (!base) return fail_with(base.error().message, 2);
    e.baseline = std::move(*base);
    std::error_code ec;
    if (!o.kernel.empty()) {
      if (auto p = find_kernel(*t, o.kernel)) {
        auto got = load_bundle(*p);
        if (!got) return fail_with(got.error().message, 2);
        e.candidate = std::move(*got);
      }
    } else {
      for (const fs::path& p : {fs::path(o.candidates) / t->name, fs::path(o.candidates) / (t->name + ".cpp"),
                               fs::path(o.candidates) / (t->name + ".cu")}) {
        if (!fs::exists(p, ec)) continue;
        auto got = find_task_kernel(*t, p.string());
        if (!got) return fail_with(got.error().message, 2);
        e.candidate = std::move(*got);
        break;
      }
    }
    e.t = std::move(*t);
    entries.push_back(std::move(e));
  }
  if (entries.empty()) return fail_with("no task of suite '" + o.suite + "' can run here: " + join(bo.skipped, "; "), 2);
  gate_settings gs;
  gs.max_time = o.max_time;
  gs.quick = o.quick;
  lineages::gate_verifier v(make_gate_hooks(*ctx, gs));
  if (!o.json)
    bo.progress = [](const search::bench_row& r) {
      std::fprintf(stderr, "… %s: %s%s\n", r.result.task.c_str(), to_string(r.result.status),
                   r.result.speedup ? (" " + std::to_string(*r.result.speedup) + "x").c_str() : "");
    };
  auto res = search::run_bench(entries, v, *ctx->db, bo);
  if (!res) return fail_with(res.error().message, 1);
  const std::string md = search::bench_markdown(*res, bo);
  if (!o.markdown.empty()) {
    std::ofstream out(o.markdown, std::ios::trunc);
    out << md;
    if (!out) return fail_with("cannot write " + o.markdown, 1);
  }
  if (o.json) {
    json j = json::parse(res->r.summary);
    j["schema"] = "lathe.bench/1";
    j["run"] = res->r.id;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", md.c_str());
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<bench_cli>();
  CLI::App* b = app.add_subcommand("bench", "gate a suite's candidates against each task's baseline: per task outcome and paired speedup, and the suite's aggregates");
  b->add_option("suite", o->suite, "all | source | heldout (the shipped tasks), or a directory of task directories")->required();
  b->add_option("--candidates", o->candidates, "a directory with one candidate per task: DIR/<task> (bundle), DIR/<task>.cpp or DIR/<task>.cu");
  b->add_option("--kernel", o->kernel, "instead: each task's own kernels/<NAME> as its candidate (e.g. expert)");
  b->add_option("--strategy", o->strategy, "optimize every task with this strategy (not built yet)");
  b->add_option("--max-time", o->max_time, "longest paired timing series per task, seconds")->capture_default_str();
  b->add_flag("--quick", o->quick, "half the timing effort: 2 process pairs, 4 rounds per paired series");
  b->add_option("--markdown", o->markdown, "also write the table and the aggregates as Markdown to this file");
  b->add_flag("--json", o->json, "print as JSON (schema lathe.bench/1)");
  b->footer("fast_p counts every task of the suite in its denominator (KernelBench's definition); speedup means, "
            "geometric mean and median are over correct tasks only; tasks without a candidate are listed as such. "
            "docs/bench.md defines every aggregate.\nExit code 0: the suite ran (whatever its results); 1: it failed; 2: usage.");
  b->callback([o, &common, &exit_code] { exit_code = run_bench_cmd(common, *o); });
}

}  // namespace lathe::cli
