// lathe: the only layer that prints. Verbs register themselves on the CLI11 app; exit codes:
// 0 success, 1 the gate said no (or a verb's own failure), 2 bad usage or configuration.
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/verbs.h"

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
  lathe::cli::add_screen(app, common, code);
  lathe::cli::add_task(app, common, code);
  lathe::cli::add_evolve(app, common, code);
  lathe::cli::add_export(app, common, code);
  lathe::cli::add_runs(app, common, code);
  lathe::cli::add_report(app, common, code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return code;
}
