#include "cli/bench_kernelbench.h"

#include <algorithm>
#include <regex>

#include "spec/bundle.h"
#include "spec/safe_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::cli {

std::vector<kernelbench_candidate> kernelbench_candidates(const fs::path& dir) {
  static const std::regex name(R"(level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py)");
  std::vector<kernelbench_candidate> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (!std::regex_match(f, m, name)) continue;
    const fs::file_type type = e.symlink_status(ec).type();
    if (type == fs::file_type::directory) continue;
    const std::string refused =
        type == fs::file_type::symlink ? "a symbolic link: lathe reads no candidate through a link (it could name any "
                                         "file on this machine); copy the file into the folder instead"
        : type != fs::file_type::regular ? "not a regular file"
                                         : "";
    out.push_back({std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), e.path(), refused});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.level, a.problem, a.sample) < std::tie(b.level, b.problem, b.sample);
  });
  return out;
}

result<kernel_bundle> load_kernelbench_sample(const kernelbench_candidate& c) {
  if (!c.refused.empty()) return fail(errc::invalid_argument, c.file.string() + ": " + c.refused);
  // A bundle file's cap (bundle.cpp): a sample is one source file.
  auto text = gate::read_beneath(c.file.parent_path(), c.file.filename(), uint64_t{16} << 20);
  if (!text) return tl::unexpected(text.error());
  return bare_bundle(c.file, std::move(*text));
}

search::bench_summary best_of_samples(const std::vector<kernelbench_sample_run>& runs,
                                      const std::vector<double>& ps) {
  std::map<std::string, search::task_result> best;
  std::vector<std::string> order;
  const auto rank = [](const search::task_result& r) {
    if (r.status != search::task_status::correct) return r.status == search::task_status::failed ? 1.0 : 0.0;
    return 2.0 + (r.speedup ? *r.speedup : 0.0);
  };
  for (const auto& run : runs)
    for (const auto& row : run.result.rows) {
      auto it = best.find(row.result.task);
      if (it == best.end()) {
        order.push_back(row.result.task);
        best.emplace(row.result.task, row.result);
      } else if (rank(row.result) > rank(it->second)) {
        it->second = row.result;
      }
    }
  std::vector<search::task_result> results;
  for (const auto& t : order) results.push_back(best.at(t));
  return search::summarize(results, ps);
}

json kernelbench_results_json(const std::vector<kernelbench_sample_run>& runs,
                              const std::map<std::string, int>& problem_of, const store& db) {
  json out = json::object();
  for (const auto& run : runs)
    for (const auto& row : run.result.rows) {
      const auto p = problem_of.find(row.result.task);
      if (p == problem_of.end() || row.result.status == search::task_status::no_candidate) continue;
      // row.result.outcome is the gate's outcome by name (or a producer's "error": not built).
      const std::optional<outcome> gated = parse_outcome(row.result.outcome);
      json r = {{"compiled", gated && built(*gated)},
                {"correctness", row.result.status == search::task_status::correct},
                {"runtime", -1.0},
                {"ref_runtime", -1.0},
                {"speedup", row.result.speedup ? json(*row.result.speedup) : json(nullptr)},
                {"metadata",
                 {{"outcome", row.result.outcome}, {"message", row.message}, {"task", row.result.task},
                  {"lathe_evaluation", row.evaluation}, {"timing", "lathe paired series (decision mode)"},
                  // The paired ratio's 95% interval: lathe's fast_p counts a gain only when its low
                  // end clears p; "speedup" stays the point estimate KernelBench's tools read.
                  {"speedup_ci", row.result.ci_low && row.result.ci_high
                                     ? json{*row.result.ci_low, *row.result.ci_high}
                                     : json(nullptr)}}}};
      if (row.evaluation > 0)
        if (auto ev = db.get_evaluation(row.evaluation)) {
          if (ev->median_seconds) r["runtime"] = *ev->median_seconds * 1e3;
          if (ev->baseline_median_seconds) r["ref_runtime"] = *ev->baseline_median_seconds * 1e3;
        }
      out[std::to_string(p->second)][std::to_string(run.sample)] = r;
    }
  return out;
}

}  // namespace lathe::cli
