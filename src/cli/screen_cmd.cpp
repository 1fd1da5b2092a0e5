// lathe screen PATH... [--task TASK] [--json]: the gate's static screen on its own, before
// anything is built or run: kernel bundles (sources, flags, libraries) and Python bindings
// (python/lathe_screen.py: fallbacks, PyTorch compute, precision downgrades).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "gate/screen.h"
#include "spec/bundle.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct screen_options {
  std::vector<std::string> paths;
  std::string task;
  bool json = false;
};

int run_screen(const screen_options& o) {
  task t;  // without --task: no libraries allowed, no precision contract
  if (!o.task.empty()) {
    auto loaded = find_task(o.task, locate());
    if (!loaded) return fail_with(loaded.error(), 2);
    t = *loaded;
  }
  nlohmann::json files = nlohmann::json::array();
  size_t total = 0;
  for (const auto& p : o.paths) {
    std::vector<gate::finding> found;
    std::error_code ec;
    if (fs::path(p).extension() == ".py" && fs::is_regular_file(p, ec)) {
      std::ifstream in(p);
      const std::string text(std::istreambuf_iterator<char>(in), {});
      found = gate::screen_python_binding(fs::path(p).filename().string(), text, t,
                                          gate::screen_role::candidate);
    } else {
      auto b = load_bundle(p);
      if (!b) return fail_with(b.error(), 2);
      found = gate::screen_sources(*b, t, gate::screen_role::candidate);
    }
    total += found.size();
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : found) list.push_back({{"what", f.what}, {"where", f.where}, {"detail", f.detail}});
    files.push_back({{"path", p}, {"findings", std::move(list)}});
    if (!o.json) {
      std::printf("%s: %s\n", p.c_str(), found.empty() ? "clean" : (std::to_string(found.size()) + " finding(s)").c_str());
      for (const auto& f : found) std::printf("  %s: %s: %s\n", f.where.c_str(), f.what.c_str(), f.detail.c_str());
    }
  }
  if (o.json)
    std::printf("%s\n", nlohmann::json{{"schema", "lathe.screen/1"}, {"task", t.name}, {"files", files}}.dump(2).c_str());
  return total == 0 ? 0 : 1;
}

}  // namespace

void add_screen(CLI::App& app, const common_options&, int& exit_code) {
  auto o = std::make_shared<screen_options>();
  CLI::App* sub = app.add_subcommand(
      "screen", "static screen of kernel bundles and Python bindings, without building or running them");
  sub->add_option("paths", o->paths, "kernel bundles (directory, .cpp, .cu) or Python bindings (.py)")
      ->required();
  sub->add_option("--task", o->task,
                  "hold them to this task's contract (allowed libraries, e.g. \"torch\"; precision)");
  sub->add_flag("--json", o->json, "print the findings as JSON (schema lathe.screen/1)");
  sub->footer("Python bindings are parsed, never imported: try/except fallbacks, calls into PyTorch's "
              "compute (unless the task allows \"torch\"), precision below the task's (half types, "
              "autocast, TF32 switches).\nExit code 0 when nothing was found, 1 with findings, 2 for "
              "bad usage.");
  sub->callback([o, &exit_code] { exit_code = run_screen(*o); });
}

}  // namespace lathe::cli
