// Where a verb's evaluations run: --executor and the Slurm options on the command line, over
// [executor] in lathe.toml (docs/config.md "[executor]"), over the defaults (local).
#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>
#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include "cli/executor_slurm.h"
#include "llm/config.h"

namespace fs = std::filesystem;

namespace lathe::cli {

namespace {

std::optional<executor_kind> parse_kind(const std::string& w) {
  if (w == "local") return executor_kind::local;
  if (w == "slurm") return executor_kind::slurm;
  return std::nullopt;
}

// [executor] of `file` into `c` (a file without the table leaves `c` as it is).
result<void> read_executor_table(const fs::path& file, executor_choice& c) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  toml::parse_result parsed = toml::parse(ss.str(), file.string());
  if (!parsed) return fail(errc::parse_error, file.string() + ": TOML syntax: " + std::string(parsed.error().description()));
  const toml::table* t = parsed.table()["executor"].as_table();
  if (!t) return {};
  const auto bad = [&](const std::string& key, const std::string& why) {
    return fail(errc::parse_error, file.string() + ": [executor] " + key + ": " + why);
  };
  for (const auto& [key, node] : *t) {
    const std::string k(key.str());
    if (k == "kind") {
      const auto kind = parse_kind(node.value_or(std::string()));
      if (!kind) return bad(k, "must be \"local\" or \"slurm\"");
      c.kind = *kind;
    } else if (k == "partition" || k == "time") {
      if (!node.is_string()) return bad(k, "must be a string (time in Slurm's format, e.g. \"30:00\")");
      (k == "partition" ? c.slurm.partition : c.slurm.time_limit) = *node.value<std::string>();
    } else if (k == "sbatch_args") {
      const toml::array* a = node.as_array();
      if (!a) return bad(k, "must be an array of strings, e.g. [\"--account=x\"]");
      c.slurm.sbatch_args.clear();
      for (const auto& e : *a) {
        if (!e.is_string()) return bad(k, "must be an array of strings, e.g. [\"--account=x\"]");
        c.slurm.sbatch_args.push_back(*e.value<std::string>());
      }
    } else if (k == "resubmits") {
      const auto n = node.value<int64_t>();
      if (!n || *n < 0 || *n > 100) return bad(k, "must be an integer from 0 to 100");
      c.slurm.resubmits = static_cast<int32_t>(*n);
    } else {
      return bad(k, "unknown key (kind, partition, time, sbatch_args, resubmits)");
    }
  }
  c.source = file.string();
  return {};
}

}  // namespace

void add_executor_options(CLI::App* verb, executor_cli& c) {
  verb->add_option("--executor", c.kind,
                   "local (default): evaluations on this host; slurm: each evaluation a Slurm batch job running "
                   "`lathe eval` on this workspace (SLURM_CONF names the cluster; the same command run again "
                   "after a kill resumes; docs/scale.md \"Slurm\"). Default: lathe.toml's [executor] kind")
      ->check(CLI::IsMember({"local", "slurm"}));
  verb->add_option("--slurm-partition", c.partition, "slurm executor: the jobs' partition (default: the cluster's)");
  verb->add_option("--slurm-time", c.time_limit, "slurm executor: each job's time limit, Slurm's format (e.g. 30:00)");
  verb->add_option("--slurm-arg", c.sbatch_args,
                   "slurm executor: one more sbatch option, written --slurm-arg=--account=X; repeatable");
  verb->add_option("--slurm-resubmits", c.resubmits,
                   "slurm executor: a job Slurm ended before its end (cancelled, timed out, preempted, node "
                   "failure) is submitted again at most this often (default 3); then the evaluation is infra_error")
      ->check(CLI::Range(0, 100));
}

result<executor_choice> resolve_executor(const workspace& ws, const executor_cli& given) {
  executor_choice c;
  c.source = "default";
  for (const auto& p : llm::config_candidates(ws.root, llm::process_env())) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    if (auto read = read_executor_table(p, c); !read) return tl::unexpected(read.error());
    break;  // the first file found says everything (docs/config.md)
  }
  if (given.kind) {
    c.kind = *parse_kind(*given.kind);
    c.source = "command line";
  }
  if (given.partition) c.slurm.partition = *given.partition;
  if (given.time_limit) c.slurm.time_limit = *given.time_limit;
  if (given.sbatch_args) c.slurm.sbatch_args = *given.sbatch_args;
  if (given.resubmits) c.slurm.resubmits = *given.resubmits;
  return c;
}

}  // namespace lathe::cli
