// lathe export training (issue 9, item 6; docs/evolve.md "Training data"): step-centric samples
// from evolve runs, one per parent -> child step, in chat format with the reward, filtered the
// Kernel-Smith way. Pure: the caller reads the runs' child events and kernels; every filter is
// a function of those, so each is tested on constructed cases.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/kernel.h"
#include "search/evolve.h"

namespace lathe::search {

struct export_options {
  double epsilon = 0.0;          // keep an optimization step when speedup over its parent > 1 + ε
  bool best_steps = false;       // only the best steps (below)
  size_t max_chars = 0;          // drop samples whose prompt + answer exceed this (0: no limit)
  double leak_similarity = 0.9;  // a child this similar to a shown inspiration (and more similar
                                 // to it than to its parent) copied it: dropped
};

// Why a step was not exported; counted per reason in the summary.
enum class drop_reason : uint8_t {
  failed,          // the child failed the gate, or the proposer wrote none
  not_faster,      // an optimization step at or below 1 + ε over its parent
  not_best_step,   // --best-steps: the parent had no speedup yet, or no room was left
  leaked,          // the child copies an inspiration shown in its prompt
  too_long,        // over the context-length limit
  migrant,         // a migration is no step
  duplicate,       // the same prompt and answer, byte for byte, as a sample already kept (a child
                   // that two islands both found, a kernel gated twice): one copy would weigh twice
};
const char* to_string(drop_reason r);

struct step_source {
  std::string run;
  std::string task_text;             // the task as the prompt shows it
  child_record child;
  const kernel_bundle* parent = nullptr;      // null for translations
  const kernel_bundle* kernel = nullptr;      // the child (null when the proposer failed)
  std::vector<const kernel_bundle*> inspirations;
  std::optional<double> run_best_speedup;     // the run's best over the baseline
  bool training_grade = true;                 // false for rule-engine, mock and replayed runs
};

struct export_result {
  std::vector<nlohmann::json> samples;        // JSONL lines
  std::map<std::string, int64_t> dropped;     // reason -> count
  int64_t steps = 0;
};

// Similarity of two kernels' sources: Jaccard index of their sets of non-blank, trimmed lines.
double source_similarity(const kernel_bundle& a, const kernel_bundle& b);

// The speedup of a step over its parent: the contest's paired ratio when there was one, else the
// ratio of the two speedups over the baseline (both paired).
std::optional<double> step_speedup(const child_record& c);

// Decides one step: a sample, or why not.
std::optional<drop_reason> judge(const step_source& s, const export_options& o);

// Builds the samples of `steps` (in order) with the filters of `o`.
export_result export_steps(const std::vector<step_source>& steps, const export_options& o);

// Whether a run's proposer makes training-grade data: not the rule engine, the mock model, or
// answers replayed from a cassette ("rules:", "mock", "replay:").
bool training_grade(const std::string& proposer_label);

}  // namespace lathe::search
