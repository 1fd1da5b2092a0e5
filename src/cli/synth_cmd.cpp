// lathe synth SRC... --out DIR (issue 47, first step): KernelBench problems mined from PyTorch
// source trees, as Kernel-Smith builds its data. The analysis is python/lathe_synth.py, which reads
// the trees with Python's ast and never imports or runs them (the trees are untrusted: nothing of
// theirs runs in this step, so it needs no sandbox; input trials, which will run mined code, must go
// through the gate's). This verb runs it with a clean environment and a time limit and prints its
// summary: modules found, refused by reason, kept (docs/synth.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/fail.h"
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
  bool json = false;
};

void print_summary(const json& s, const std::string& out, double seconds) {
  std::printf("read %d files (%d links not followed, %d files refused); %d nn.Module classes without "
              "a forward skipped\n",
              s.value("files_read", 0), s.value("links_not_followed", 0), s.value("files_refused", 0),
              s.value("without_forward", 0));
  std::printf("found    %d modules with a forward (%d extracted standalone)\n", s.value("found", 0),
              s.value("extracted", 0));
  std::printf("refused  %d\n", s.value("refused", 0));
  std::vector<std::pair<int, std::string>> kinds;  // by count, the largest first
  const json by_kind = s.value("refused_by_kind", json::object());
  for (const auto& [kind, r] : by_kind.items()) kinds.emplace_back(r.value("count", 0), kind);
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [count, kind] : kinds)
    std::printf("  %5d  %-38s e.g. %s\n", count, kind.c_str(),
                by_kind[kind].value("example", std::string()).c_str());
  std::printf("kept     %d -> %s/problems (KernelBench format; manifest %s/manifest.json)\n", s.value("kept", 0),
              out.c_str(), out.c_str());
  std::printf("not done yet: inputs by trial, filters, dedup, families (docs/synth.md)\n");
  std::printf("wall time %.2f s\n", seconds);
}

int run_synth(const synth_options& o) {
  const auto interpreters = gate::python_interpreters();
  if (interpreters.empty()) return fail_with("synth: no python3 (set LATHE_PYTHON)", 2);
  std::vector<std::string> argv{interpreters.front().string(), "-I", "-B",
                                gate::python_script("lathe_synth.py", "LATHE_SYNTH_SCRIPT").string(),
                                "--out", o.out, "--max-file-bytes", std::to_string(o.max_file_bytes)};
  for (const auto& s : o.sources) argv.push_back(s);
  const auto start = std::chrono::steady_clock::now();
  const gate::tool_result r = gate::run_tool(argv, o.timeout_s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.timed_out) return fail_with("synth: the analysis passed " + std::to_string(o.timeout_s) + " s", 1);
  // The summary is the last line; anything before it is the interpreter's (a warning).
  const size_t end = r.output.find_last_not_of('\n');
  const size_t begin = end == std::string::npos ? 0 : r.output.rfind('\n', end);
  const json s = json::parse(r.output.substr(begin == std::string::npos ? 0 : begin + 1), nullptr, false);
  if (r.exit_code != 0 || !s.is_object())
    return fail_with(r.output.empty() ? std::string("synth: the analysis did not start") : r.output, 2);
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
      "synth", "KernelBench problems mined from PyTorch source trees: nn.Module classes with their in-file "
               "dependencies inlined, read with Python's ast (never run); a manifest of what was kept and "
               "refused, with reasons");
  sub->add_option("src", o->sources, "Python source trees (folders) or files")->required();
  sub->add_option("--out", o->out, "where problems/, extracted/ and manifest.json go (new or empty, or a "
                                   "previous synth output)")->required();
  sub->add_option("--max-file-bytes", o->max_file_bytes, "larger files are refused unread (default 1 MiB)");
  sub->add_option("--timeout", o->timeout_s, "seconds the analysis may take (default 600)");
  sub->add_flag("--json", o->json, "print the summary as JSON (lathe.synth_summary/1)");
  sub->callback([o, &exit_code] { exit_code = run_synth(*o); });
}

}  // namespace lathe::cli
