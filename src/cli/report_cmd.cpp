// lathe report RUN [-o FILE.html] [--json]: a run as one self-contained HTML page, or as the
// lathe.report/1 JSON document the page is drawn from (report/model.h, docs/report.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "report/html.h"
#include "report/model.h"

namespace lathe::cli {
namespace {

struct report_options {
  std::string run, output;
  bool json = false;
};

// Writes `text` to `path` whole; an error names the path.
result<void> write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return fail(errc::io_error, "cannot write " + path);
  return {};
}

int run_report_verb(const common_options& common, const report_options& o) {
  if (o.output.empty() && !o.json) {
    std::fprintf(stderr, "lathe: report needs -o FILE.html (the page) or --json (the data on stdout)\n");
    return 2;
  }
  std::optional<std::filesystem::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, false);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto model = report::run_report(*ctx->db, o.run);
  if (!model) return fail_with(model.error(), model.error().code == errc::not_found ? 2 : 1);
  if (!o.output.empty()) {
    if (auto w = write_file(o.output, report::render_html(*model)); !w) return fail_with(w.error(), 1);
    const auto& g = (*model)["graph"];
    std::fprintf(o.json ? stderr : stdout, "wrote     %s: %zu kernel(s), %zu transition(s), %zu rejected attempt(s), "
                 "%zu evaluation(s), %zu card(s)\n", o.output.c_str(), g["nodes"].size(), g["edges"].size(),
                 g["rejected"].size(), (*model)["evaluations"].size(), (*model)["cards"].size());
  }
  if (o.json) std::printf("%s\n", report::json_text(*model).c_str());
  return 0;
}

}  // namespace

void add_report(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<report_options>();
  CLI::App* sub = app.add_subcommand("report", "a run as one self-contained HTML page (or its data as JSON)");
  sub->add_option("run", o->run, "the run's id (`lathe runs list`)")->required();
  sub->add_option("-o,--output", o->output, "write the HTML page here (one file: inline style, script and SVG; nothing fetched)");
  sub->add_flag("--json", o->json, "print the report's data as JSON (schema lathe.report/1) on stdout");
  sub->footer(
      "The page shows, as the run has them: the lineage as a graph (kernels with time and features,\n"
      "transitions with their paired speedup and provenance; rejected attempts behind a toggle), the\n"
      "best speedup against the budget used, the evolve archive and best score per generation, the\n"
      "skill cards used, every evaluation (outcome, errors, timing samples, dispersion) and the source\n"
      "diffs between consecutive kernels. It is drawn from the same data --json prints.\n"
      "Exit code 0: written; 1: the store could not be read or the file written; 2: usage, or no such run.");
  sub->callback([o, &common, &exit_code] { exit_code = run_report_verb(common, *o); });
}

}  // namespace lathe::cli
