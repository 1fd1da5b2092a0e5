// `lathe bench` over KernelBench's layout (issue 24, item 5; docs/bench.md "KernelBench's
// layout"): a folder of problem files named as KernelBench names them (`19_ReLU.py`, level from
// the folder's name `level1` or --level) and a folder of candidates named as its
// eval_from_generations writes them (`level_<L>_problem_<P>_sample_<S>_kernel.py`), several
// samples per problem. Each sample is one bench run over every problem (fast_p's denominator is
// every problem); the best correct sample per problem gives the best-of-samples aggregates; the
// results can also be written in the shape of KernelBench's eval results file.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "search/bench.h"
#include "spec/kernelbench_layout.h"
#include "store/store.h"

namespace lathe::cli {

struct kernelbench_candidate {
  int level = 0, problem = 0, sample = 0;
  std::filesystem::path file;
  std::string refused;  // why it is not read (a link, not a regular file); empty: it is read
};

// The entries of `dir` named level_<L>_problem_<P>_sample_<S>_kernel.py, sorted by (L, P, S).
// A samples folder is written by whatever generated the candidates: an entry that is a link (one
// to a root-only file was read and run, issue 42) or not a regular file is listed as refused.
std::vector<kernelbench_candidate> kernelbench_candidates(const std::filesystem::path& dir);

// A sample's bundle, read beneath its folder without following a link (spec/safe_file.h); an
// error that says why for a refused one.
result<kernel_bundle> load_kernelbench_sample(const kernelbench_candidate& c);

// kernelbench_problem_id and kernelbench_level: spec/kernelbench_layout.h (solve writes the layout).

// One sample's bench run.
struct kernelbench_sample_run {
  int sample = 0;
  search::bench_result result;
};

// Best of samples: per problem, the correct sample with the highest speedup (a correct one
// without a speedup when none has one; else the first sample's failure), summarized with `ps`.
search::bench_summary best_of_samples(const std::vector<kernelbench_sample_run>& runs,
                                      const std::vector<double>& ps);

// KernelBench's eval results shape: {"<problem>": {"<sample>": {"compiled", "correctness",
// "runtime" (ms, the candidate's median; -1 when not timed), "ref_runtime" (ms, the baseline's),
// "speedup", "metadata": {lathe's outcome, message, evaluation id, task}}}}. `problem_of` maps a
// task name to its problem number.
nlohmann::json kernelbench_results_json(const std::vector<kernelbench_sample_run>& runs,
                                        const std::map<std::string, int>& problem_of, const store& db);

}  // namespace lathe::cli
