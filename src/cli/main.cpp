// lathe: the only layer that prints. Verbs register themselves on the CLI11 app; exit codes:
// 0 success, 1 the gate said no (or a verb's own failure), 2 bad usage or configuration.
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/did_you_mean.h"
#include "cli/verbs.h"

namespace {

// The verb a command line names: its first word that is not a global option (or its value).
std::string verb_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workspace") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] != '-') return a;
  }
  return {};
}

// The long flags of `app` and the subcommands selected under it, for a mistyped one.
void flags_of(const CLI::App* app, std::vector<std::string>& out) {
  for (const CLI::Option* o : app->get_options())
    for (const auto& n : o->get_lnames()) out.push_back("--" + n);
  for (const CLI::App* sub : app->get_subcommands()) flags_of(sub, out);
}

// "did you mean" for a verb that is none, or flags that are not the verb's.
void suggest(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string verb = verb_of(argc, argv);
  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands({})) verbs.push_back(sub->get_name());
  if (!verb.empty() && std::find(verbs.begin(), verbs.end(), verb) == verbs.end()) {
    const std::string near = lathe::cli::closest_name(verb, verbs);
    std::fprintf(stderr, "lathe: '%s' is not a verb%s\n", verb.c_str(),
                 near.empty() ? " (lathe --help lists them)" : ("; did you mean '" + near + "'?").c_str());
    return;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return;
  std::vector<std::string> flags;
  flags_of(&app, flags);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    a = a.substr(0, a.find('='));
    if (std::find(flags.begin(), flags.end(), a) != flags.end()) continue;
    if (const std::string near = lathe::cli::closest_name(a, flags); !near.empty())
      std::fprintf(stderr, "lathe: unknown flag %s; did you mean %s?\n", a.c_str(), near.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: an agent CLI (llm/command) or a kernel worker running as this user must not
  // read lathe's environment (API keys) or memory through /proc/<pid>/environ or /proc/<pid>/mem.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"lathe: verified, conditional optimization skills from expert kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lathe 0.1.0");
  app.footer("Run `lathe <verb> --help` for a verb's options. Docs: docs/ in the source tree.");
  lathe::cli::common_options common;
  app.add_option("--workspace", common.workspace,
                 "workspace directory (default: .lathe/ found upward from the current directory)");
  int code = 0;
  lathe::cli::add_eval(app, common, code);
  lathe::cli::add_doctor(app, common, code);
  lathe::cli::add_profile(app, common, code);
  lathe::cli::add_rules(app, common, code);
  lathe::cli::add_lineage(app, common, code);
  lathe::cli::add_skills(app, common, code);
  lathe::cli::add_optimize(app, common, code);
  lathe::cli::add_bench(app, common, code);
  lathe::cli::add_solve(app, common, code);
  lathe::cli::add_tune(app, common, code);
  lathe::cli::add_screen(app, common, code);
  lathe::cli::add_task(app, common, code);
  lathe::cli::add_synth(app, common, code);
  lathe::cli::add_evolve(app, common, code);
  lathe::cli::add_export(app, common, code);
  lathe::cli::add_runs(app, common, code);
  lathe::cli::add_report(app, common, code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    suggest(app, e, argc, argv);
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return code;
}
