// lathe synth SRC... --out DIR (issue 47): KernelBench problems mined from PyTorch source trees, as
// Kernel-Smith builds its data. The analysis is python/lathe_synth.py, which reads the trees with
// Python's ast and never imports or runs them. A module whose constructor values or input shapes
// the source does not declare gets a few guessed candidates, tried only in the one sandbox
// (synth_trials.h); lathe_synth.py --apply then keeps the first that ran. This verb runs both with
// a clean environment and a time limit and prints the summary: modules found, kept (by
// declaration, by trial), refused by reason (docs/synth.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/fail.h"
#include "cli/synth_trials.h"
#include "cli/verbs.h"
#include "gate/process.h"
#include "spec/problem.h"

namespace lathe::cli {
namespace {

using nlohmann::json;

struct synth_options {
  std::vector<std::string> sources;
  std::string out;
  uint64_t max_file_bytes = uint64_t{1} << 20;  // 1 MiB: torch.nn's largest file is ~100 KiB
  double timeout_s = 600;
  int trials = 8;  // candidates per module at most (0: no trials)
  double trial_timeout_s = 10;
  double target_ms = 4;  // forward time the kept modules' batch is scaled toward (0: off)
  bool json = false;
  bool own_package = false;  // an installed package's tree may import itself (docs/synth.md)
};

void print_summary(const json& s, const std::string& out, double seconds) {
  std::printf(
      "read %d files (%d links not followed, %d files refused); %d nn.Module classes without "
      "a forward skipped\n",
      s.value("files_read", 0), s.value("links_not_followed", 0), s.value("files_refused", 0),
      s.value("without_forward", 0));
  std::printf("found    %d modules with a forward (%d extracted standalone)\n", s.value("found", 0),
              s.value("extracted", 0));
  std::printf("refused  %d\n", s.value("refused", 0));
  std::vector<std::pair<int, std::string>> kinds;  // by count, the largest first
  const json by_kind = s.value("refused_by_kind", json::object());
  for (const auto& [kind, r] : by_kind.items()) kinds.emplace_back(r.value("count", 0), kind);
  std::sort(kinds.begin(), kinds.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [count, kind] : kinds)
    std::printf("  %5d  %-38s e.g. %s\n", count, kind.c_str(),
                by_kind[kind].value("example", std::string()).c_str());
  std::printf(
      "kept     %d -> %s/problems (KernelBench format; manifest %s/manifest.json): %d by "
      "declaration, %d by trial\n",
      s.value("kept", 0), out.c_str(), out.c_str(), s.value("kept_declared", 0),
      s.value("kept_by_trial", 0));
  const json t = s.value("trials", json::object());
  std::printf("trials   %d modules tried in the sandbox, %d candidates, %.2f s\n",
              t.value("modules", 0), t.value("candidates_tried", 0), t.value("seconds", 0.0));
  const json f = s.value("filters", json::object());
  const json by_filter = f.value("refused", json::object());
  std::printf(
      "filters  %d kept passed them (deterministic, finite, not constant, at most the gate's "
      "tensors); refused: %d nondeterministic, %d not finite, %d constant, %d too many tensors\n",
      f.value("passed", 0), by_filter.value("nondeterministic", 0),
      by_filter.value("not finite", 0), by_filter.value("constant", 0),
      by_filter.value("too many tensors", 0));
  std::printf(
      "dedup    %d duplicates dropped in %d clusters (the same code after normalizing names, or "
      "the same outputs on shared inputs); one of each cluster kept\n",
      s.value("duplicates", 0), s.value("clusters", 0));
  std::printf("sizes    %d kept with their batch scaled toward --target-ms (the others as "
              "planned or declared)\n",
              s.value("sized", 0));
  std::string families;  // by name (python/lathe_synth_family.py names them)
  const json by_family = s.value("families", json::object());
  for (const auto& [family, count] : by_family.items())
    families += (families.empty() ? "" : ", ") + family + " " + std::to_string(count.get<int>());
  std::printf("families %s\n", families.empty() ? "none (nothing ran)" : families.c_str());
  std::printf(
      "not done yet: inputs from where the tree builds and calls a module (docs/synth.md)\n");
  std::printf("wall time %.2f s\n", seconds);
}

// One run of lathe_synth.py: its summary (the last line of its output), or the failure's exit code.
int run_script(std::vector<std::string> args, double timeout_s, json& summary) {
  const auto interpreters = gate::python_interpreters();
  if (interpreters.empty()) return fail_with("synth: no python3 (set LATHE_PYTHON)", 2);
  args.insert(args.begin(), {interpreters.front().string(), "-I", "-B",
                             gate::python_script("lathe_synth.py", "LATHE_SYNTH_SCRIPT").string()});
  const gate::tool_result r = gate::run_tool(args, timeout_s);
  if (r.timed_out)
    return fail_with("synth: the analysis passed " + std::to_string(timeout_s) + " s", 1);
  // The summary is the last line; anything before it is the interpreter's (a warning).
  const size_t end = r.output.find_last_not_of('\n');
  const size_t begin = end == std::string::npos ? 0 : r.output.rfind('\n', end);
  summary =
      json::parse(r.output.substr(begin == std::string::npos ? 0 : begin + 1), nullptr, false);
  if (r.exit_code != 0 || !summary.is_object())
    return fail_with(r.output.empty() ? std::string("synth: the analysis did not start") : r.output,
                     2);
  return 0;
}

int run_synth(const synth_options& o) {
  std::vector<std::string> args{"--out",
                                o.out,
                                "--max-file-bytes",
                                std::to_string(o.max_file_bytes),
                                "--trials",
                                std::to_string(std::max(o.trials, 0))};
  if (o.own_package) args.push_back("--own-package");
  for (const auto& s : o.sources) args.push_back(s);
  const auto start = std::chrono::steady_clock::now();
  json s;
  if (const int code = run_script(args, o.timeout_s, s); code != 0) return code;
  std::error_code ec;
  if (o.trials > 0 && std::filesystem::exists(std::filesystem::path(o.out) / "plan.json", ec)) {
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const json t = run_synth_trials(
        o.out, {o.trial_timeout_s, std::max(1.0, o.timeout_s - spent), o.target_ms});
    if (t["error"].is_string())
      std::fprintf(stderr, "synth: trials: %s\n", t["error"].get<std::string>().c_str());
    if (const int code =
            run_script({"--out", o.out, "--apply", o.out + "/trials.json"}, o.timeout_s, s);
        code != 0)
      return code;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    json j = s;
    j["schema"] = "lathe.synth_summary/1";
    j["wall_seconds"] = seconds;
    j["manifest"] = o.out + "/manifest.json";
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_summary(s, o.out, seconds);
  }
  return 0;
}

}  // namespace

void add_synth(CLI::App& app, const common_options&, int& exit_code) {
  auto o = std::make_shared<synth_options>();
  CLI::App* sub = app.add_subcommand(
      "synth",
      "KernelBench problems mined from PyTorch source trees: nn.Module classes with their in-file "
      "dependencies inlined, read with Python's ast; inputs the source does not declare guessed "
      "and "
      "tried in the sandbox; a manifest of what was kept and refused, with reasons");
  sub->add_option("src", o->sources, "Python source trees (folders) or files")->required();
  sub->add_option("--out", o->out,
                  "where problems/, extracted/ and manifest.json go (new or empty, or a "
                  "previous synth output)")
      ->required();
  sub->add_option("--max-file-bytes", o->max_file_bytes,
                  "larger files are refused unread (default 1 MiB)");
  sub->add_option("--timeout", o->timeout_s,
                  "seconds the analysis and the trials may take (default 600)");
  sub->add_option("--trials", o->trials,
                  "candidate inputs tried per module whose source does not declare "
                  "them, in the sandbox (default 8; 0: none)");
  sub->add_option("--trial-timeout", o->trial_timeout_s,
                  "seconds each candidate may take (default 10)");
  sub->add_option("--target-ms", o->target_ms,
                  "a kept module's leading (batch) dimension is scaled by powers of two toward "
                  "this forward time, measured in the sandbox (default 4; 0: the guessed sizes)");
  sub->add_flag("--json", o->json, "print the summary as JSON (lathe.synth_summary/1)");
  sub->add_flag("--allow-own-package", o->own_package,
                "a source tree that is an installed package (torchvision) may import itself; its "
                "problems then import it, which lathe's candidate worker refuses (docs/synth.md)");
  sub->callback([o, &exit_code] { exit_code = run_synth(*o); });
}

}  // namespace lathe::cli
