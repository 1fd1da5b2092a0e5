// JSON of gate evaluations: the body of lathe.eval/1 (docs/schemas.md) and the stored record.
#include <cstdint>
#include "core/json.h"
#include "core/json_detail.h"

namespace lathe {

using namespace json_detail;

void to_json(json& j, const check_record& c) {
  j = json{{"shape_set", c.shape_set},
           {"seed", c.seed},
           {"output", c.output},
           {"passed", c.passed},
           {"max_abs_err", c.max_abs_err},
           {"max_rel_err", c.max_rel_err},
           {"norm_err", c.norm_err},
           {"mismatches", c.mismatches},
           {"first_mismatches", c.first_mismatches}};
}

void from_json(const json& j, check_record& c) {
  c = check_record{};
  get(j, "shape_set", c.shape_set);
  get(j, "seed", c.seed);
  get(j, "output", c.output);
  get(j, "passed", c.passed);
  get_double(j, "max_abs_err", c.max_abs_err);
  get_double(j, "max_rel_err", c.max_rel_err);
  get_double(j, "norm_err", c.norm_err);
  get(j, "mismatches", c.mismatches);
  get(j, "first_mismatches", c.first_mismatches);
}

void to_json(json& j, const timing_policy& p) {
  j = json{{"min_seconds", p.min_seconds}, {"max_seconds", p.max_seconds},
           {"target_rse", p.target_rse},   {"block_seconds", p.block_seconds},
           {"min_rounds", p.min_rounds},   {"warmup_seconds", p.warmup_seconds}, {"settle_seconds", p.settle_seconds},
           {"aa_unstable", p.aa_unstable}, {"roofline_slack", p.roofline_slack},
           {"processes", p.processes}, {"starts_at_once", p.starts_at_once}};
}

void from_json(const json& j, timing_policy& p) {
  p = timing_policy{};
  get_double(j, "min_seconds", p.min_seconds);
  get_double(j, "max_seconds", p.max_seconds);
  get_double(j, "target_rse", p.target_rse);
  get_double(j, "block_seconds", p.block_seconds);
  get(j, "min_rounds", p.min_rounds);
  get_double(j, "warmup_seconds", p.warmup_seconds);
  p.settle_seconds = 0;  // a record from before settling: its processes were not settled
  get_double(j, "settle_seconds", p.settle_seconds);
  get_double(j, "aa_unstable", p.aa_unstable);
  get_double(j, "roofline_slack", p.roofline_slack);
  get(j, "processes", p.processes);
  p.starts_at_once = false;  // a record from before the field: not said (CUDA's started one by one)
  get(j, "starts_at_once", p.starts_at_once);
}

void to_json(json& j, const paired_series& s) {
  json first = json::array();
  for (uint8_t f : s.a_first) first.push_back(f != 0);
  j = json{{"a_label", s.a_label},        {"b_label", s.b_label},        {"a_seconds", s.a_seconds},
           {"b_seconds", s.b_seconds},    {"a_first", std::move(first)}, {"pair", s.pair}, {"ratio", s.ratio},
           {"ci_low", s.ci_low},          {"ci_high", s.ci_high},        {"rse", s.rse},
           {"stop_reason", s.stop_reason}, {"a_method", word_or_empty(s.a_method)}, {"b_method", word_or_empty(s.b_method)}};
}

void to_json(json& j, const comparability_result& c) {
  j = json{{"protocol", c.protocol},         {"warmup", c.warmup},
           {"trials", c.trials},             {"mean_seconds", c.mean_seconds},
           {"std_seconds", c.std_seconds},   {"min_seconds", c.min_seconds},
           {"max_seconds", c.max_seconds},   {"median_seconds", c.median_seconds},
           {"p20_seconds", c.p20_seconds},   {"p80_seconds", c.p80_seconds},
           {"host_seconds", c.host_seconds}};
  put_opt(j, "eager_mean_seconds", c.eager_mean_seconds);
  put_opt(j, "eager_median_seconds", c.eager_median_seconds);
  put_opt(j, "speedup_vs_eager", c.speedup_vs_eager);
}

void from_json(const json& j, comparability_result& c) {
  c = comparability_result{};
  get(j, "protocol", c.protocol);
  get(j, "warmup", c.warmup);
  get(j, "trials", c.trials);
  get_double(j, "mean_seconds", c.mean_seconds);
  get_double(j, "std_seconds", c.std_seconds);
  get_double(j, "min_seconds", c.min_seconds);
  get_double(j, "max_seconds", c.max_seconds);
  get_double(j, "median_seconds", c.median_seconds);
  get_double(j, "p20_seconds", c.p20_seconds);
  get_double(j, "p80_seconds", c.p80_seconds);
  get_double(j, "host_seconds", c.host_seconds);
  get_opt(j, "eager_mean_seconds", c.eager_mean_seconds);
  get_opt(j, "eager_median_seconds", c.eager_median_seconds);
  get_opt(j, "speedup_vs_eager", c.speedup_vs_eager);
}

void from_json(const json& j, paired_series& s) {
  s = paired_series{};
  get(j, "a_label", s.a_label);
  get(j, "b_label", s.b_label);
  get(j, "a_seconds", s.a_seconds);
  get(j, "b_seconds", s.b_seconds);
  if (auto it = j.find("a_first"); it != j.end() && it->is_array()) {
    for (const auto& f : *it)
      s.a_first.push_back(f.is_boolean() ? f.get<bool>() : f.get<int>() != 0);
  }
  get(j, "pair", s.pair);
  get_double(j, "ratio", s.ratio);
  get_double(j, "ci_low", s.ci_low);
  get_double(j, "ci_high", s.ci_high);
  get_double(j, "rse", s.rse);
  get(j, "stop_reason", s.stop_reason);
  get_word(j, "a_method", s.a_method, timing_method::graph);
  get_word(j, "b_method", s.b_method, timing_method::graph);
}

void to_json(json& j, const evaluation& e) {
  // stage_seconds keeps its order (screen, compile, load, check, time): an array of pairs,
  // because a JSON object's key order is not preserved by every reader.
  json stages = json::array();
  for (const auto& [stage, seconds] : e.stage_seconds)
    stages.push_back({{"stage", stage}, {"seconds", seconds}});
  j = json{{"id", e.id},
           {"task", e.task},
           {"kernel_hash", e.kernel_hash},
           {"kernel_name", e.kernel_name},
           {"baseline_hash", e.baseline_hash},
           {"baseline_name", e.baseline_name},
           {"target", e.tgt},
           {"toolchain", e.toolchain},
           {"policy", e.policy},
           {"provenance", e.prov},
           {"outcome", std::string(to_string(e.result))},
           {"message", e.message},
           {"diagnostics", e.diagnostics},
           {"checks", e.checks},
           {"timing_shape", e.timing_shape},
           {"wall_seconds", e.wall_seconds},
           {"stage_seconds", std::move(stages)}};
  put_opt(j, "median_seconds", e.median_seconds);
  put_opt(j, "baseline_median_seconds", e.baseline_median_seconds);
  put_opt(j, "dispersion", e.dispersion);
  put_opt(j, "paired", e.paired);
  put_opt(j, "aa", e.aa);
  put_opt(j, "roofline_fraction", e.roofline_fraction);
  if (e.decision) j["decision"] = to_string(*e.decision);
  put_opt(j, "epsilon", e.epsilon);
  put_opt(j, "comparability", e.comparability);
  put_opt(j, "gpu_before", e.gpu_before);
  put_opt(j, "gpu_after", e.gpu_after);
  j["trials_on"] = to_string(e.trials_on);
  if (!e.reference_runtime.empty()) j["reference_runtime"] = e.reference_runtime;
  if (e.problem_path) j["problem_path"] = to_string(*e.problem_path);
  if (e.slot) j["slot"] = {{"index", e.slot->index}, {"count", e.slot->count}, {"cores", e.slot->cores}};
  json res = json::array();
  for (const auto& r : e.resources)
    res.push_back({{"function", r.function}, {"registers", r.registers},
                   {"shared_bytes", r.shared_bytes}, {"stack_bytes", r.stack_bytes},
                   {"spill_stores", r.spill_stores}, {"spill_loads", r.spill_loads}});
  j["resources"] = std::move(res);
  j["ptx_blob"] = e.ptx_blob;
}

void from_json(const json& j, evaluation& e) {
  e = evaluation{};
  get(j, "id", e.id);
  get(j, "task", e.task);
  get(j, "kernel_hash", e.kernel_hash);
  get(j, "kernel_name", e.kernel_name);
  get(j, "baseline_hash", e.baseline_hash);
  get(j, "baseline_name", e.baseline_name);
  get(j, "target", e.tgt);
  get(j, "toolchain", e.toolchain);
  get(j, "policy", e.policy);
  get(j, "provenance", e.prov);
  if (auto it = j.find("outcome"); it != j.end() && !it->is_null()) {
    const auto name = it->get<std::string>();
    auto o = parse_outcome(name);
    if (!o) bad_value(j, "outcome", "unknown outcome '" + name + "'");
    e.result = *o;
  }
  get(j, "message", e.message);
  get(j, "diagnostics", e.diagnostics);
  get(j, "checks", e.checks);
  get_opt(j, "median_seconds", e.median_seconds);
  get_opt(j, "baseline_median_seconds", e.baseline_median_seconds);
  get_opt(j, "dispersion", e.dispersion);
  get_opt(j, "paired", e.paired);
  get_opt(j, "aa", e.aa);
  get_opt(j, "roofline_fraction", e.roofline_fraction);
  e.decision = parse_decision(j.value("decision", std::string()));
  get_opt(j, "epsilon", e.epsilon);
  get_opt(j, "comparability", e.comparability);
  get_opt(j, "gpu_before", e.gpu_before);
  get_opt(j, "gpu_after", e.gpu_after);
  get_enum(j, "trials_on", e.trials_on, trial_site::device);
  get(j, "reference_runtime", e.reference_runtime);
  get_word(j, "problem_path", e.problem_path, tensor_path::cuda_ipc);
  if (auto it = j.find("slot"); it != j.end() && it->is_object()) {
    slot_record s;
    get(*it, "index", s.index);
    get(*it, "count", s.count);
    get(*it, "cores", s.cores);
    e.slot = std::move(s);
  }
  get(j, "timing_shape", e.timing_shape);
  get_double(j, "wall_seconds", e.wall_seconds);
  if (auto it = j.find("resources"); it != j.end() && it->is_array()) {
    for (const auto& r : *it) {
      kernel_resources k;
      get(r, "function", k.function);
      get(r, "registers", k.registers);
      get(r, "shared_bytes", k.shared_bytes);
      get(r, "stack_bytes", k.stack_bytes);
      get(r, "spill_stores", k.spill_stores);
      get(r, "spill_loads", k.spill_loads);
      e.resources.push_back(k);
    }
  }
  get(j, "ptx_blob", e.ptx_blob);
  if (auto it = j.find("stage_seconds"); it != j.end() && it->is_array()) {
    for (const auto& s : *it) {
      std::pair<std::string, double> p{"", 0.0};
      get(s, "stage", p.first);
      get_double(s, "seconds", p.second);
      e.stage_seconds.push_back(std::move(p));
    }
  }
}

std::optional<outcome> outcome_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  const auto name = it->get<std::string>();
  if (name.empty()) return std::nullopt;
  auto o = parse_outcome(name);
  if (!o) bad_value(j, key, "unknown outcome '" + name + "'");
  return o;
}

}  // namespace lathe
