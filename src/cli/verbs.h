#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace lathe::cli {

struct common_options {
  std::optional<std::string> workspace;
};

void add_eval(CLI::App& app, const common_options& common, int& exit_code);
void add_doctor(CLI::App& app, const common_options& common, int& exit_code);
void add_profile(CLI::App& app, const common_options& common, int& exit_code);
void add_rules(CLI::App& app, const common_options& common, int& exit_code);
void add_runs(CLI::App& app, const common_options& common, int& exit_code);
void add_lineage(CLI::App& app, const common_options& common, int& exit_code);  // init, decompose
void add_skills(CLI::App& app, const common_options& common, int& exit_code);
void add_optimize(CLI::App& app, const common_options& common, int& exit_code);
void add_bench(CLI::App& app, const common_options& common, int& exit_code);
void add_screen(CLI::App& app, const common_options& common, int& exit_code);
void add_evolve(CLI::App& app, const common_options& common, int& exit_code);  // evolve, score
void add_export(CLI::App& app, const common_options& common, int& exit_code);  // export training
void add_report(CLI::App& app, const common_options& common, int& exit_code);
void add_task(CLI::App& app, const common_options& common, int& exit_code);  // task show
void add_solve(CLI::App& app, const common_options& common, int& exit_code);
void add_tune(CLI::App& app, const common_options& common, int& exit_code);
void add_synth(CLI::App& app, const common_options& common, int& exit_code);  // synth (issue 47)

}  // namespace lathe::cli
