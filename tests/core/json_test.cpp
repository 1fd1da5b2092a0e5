// JSON of every core type: round trips, enums as names, tolerance of missing fields.
#include <cstdint>
#include "core/json.h"
#include "core/json_card.h"
#include "core/json_lineage.h"
#include "core/json_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace lathe {
namespace {

// to_json -> text -> parse -> from_json -> to_json must give the same document.
template <class T>
T round_trip(const T& value, json* out = nullptr) {
  json j = value;
  const json parsed = json::parse(j.dump());
  T back = parsed.get<T>();
  json again = back;
  EXPECT_EQ(again, j) << j.dump(2);
  if (out) *out = j;
  return back;
}

task sample_task() {
  task t;
  t.name = "gemm";
  t.op = "gemm";
  t.plat = platform::cuda;
  t.role = task_role::heldout;
  t.description = "C = A B";
  t.baseline = "cublas";
  t.dir = "/tasks/gemm";
  t.reference = "reference.cpp";
  tensor_spec a{
      "A", dtype::bf16, {{"M", 0}, {"", 64}}, {distribution_kind::normal, -1, 1, 0.5, 2.0, 0}};
  tensor_spec c{"C", dtype::f32, {{"M", 0}, {"N", 0}}, {}};
  t.inputs = {a};
  t.outputs = {c};
  t.scalars = {{"eps", 1e-5}, {"alpha", 2.0}};
  t.shapes = {{"small", {{"M", 17}, {"N", 33}}, false}, {"main", {{"M", 512}, {"N", 512}}, true}};
  t.perturb = {{0.001, 8.0}, {-1.0}};
  t.compare.kind = comparison_kind::sorted_set;
  t.compare.tol.rtol = 1e-3;
  t.compare.tol.nerr = 1e-2;
  t.cost = {"2*M*N*64", "4*(M*N)"};
  t.allow_libraries = {"cublas"};
  t.allow_fast_math = true;
  return t;
}

TEST(json, task_round_trips_with_enums_as_names) {
  json j;
  task back = round_trip(sample_task(), &j);
  EXPECT_EQ(j["platform"], "cuda");
  EXPECT_EQ(j["role"], "heldout");
  EXPECT_EQ(j["operator"], "gemm");
  EXPECT_EQ(j["inputs"][0]["dtype"], "bfloat16");
  EXPECT_EQ(j["inputs"][0]["shape"], json::parse(R"(["M", 64])"));
  EXPECT_EQ(j["inputs"][0]["distribution"]["kind"], "normal");
  EXPECT_EQ(j["comparison"]["kind"], "sorted_set");
  EXPECT_TRUE(j["comparison"]["atol"].is_null());
  EXPECT_EQ(back.name, "gemm");
  EXPECT_EQ(back.plat, platform::cuda);
  EXPECT_EQ(back.inputs[0].type, dtype::bf16);
  EXPECT_EQ(back.inputs[0].shape[0].symbol, "M");
  EXPECT_EQ(back.inputs[0].shape[1].value, 64);
  EXPECT_EQ(back.inputs[0].dist.stddev, 2.0);
  EXPECT_EQ(back.shapes[1].symbols.at("N"), 512);
  EXPECT_TRUE(back.shapes[1].time);
  EXPECT_EQ(back.compare.tol.rtol, 1e-3);
  EXPECT_FALSE(back.compare.tol.atol.has_value());
  EXPECT_EQ(back.dir, std::filesystem::path("/tasks/gemm"));
  EXPECT_EQ(back.perturb.scale, (std::vector<double>{0.001, 8.0}));
  EXPECT_TRUE(back.allow_fast_math);
}

TEST(json, distributions_of_every_kind) {
  for (auto d : {distribution{distribution_kind::uniform, -2, 3, 0, 1, 0},
                 distribution{distribution_kind::integers, 0, 9, 0, 1, 0},
                 distribution{distribution_kind::normal, -1, 1, 4, 0.25, 0},
                 distribution{distribution_kind::constant, -1, 1, 0, 1, 7.5}}) {
    distribution back = round_trip(d);
    EXPECT_EQ(back.kind, d.kind);
    if (d.kind == distribution_kind::constant) {
      EXPECT_EQ(back.value, 7.5);
    }
    if (d.kind == distribution_kind::normal) {
      EXPECT_EQ(back.mean, 4);
    }
    if (d.kind == distribution_kind::integers) {
      EXPECT_EQ(back.high, 9);
    }
  }
}

TEST(json, kernel_manifest_and_target) {
  kernel_manifest m;
  m.lang = language::cuda;
  m.entry = "k.cu";
  m.files = {"k.cu", "tile.cuh"};
  m.flags = {"-O3", "--use_fast_math"};
  m.defines = {{"TILE", "64"}};
  m.libraries = {"cublas"};
  m.isa = "sm_90a";
  json j;
  kernel_manifest back = round_trip(m, &j);
  EXPECT_EQ(j["language"], "cuda");
  EXPECT_EQ(back.defines.at("TILE"), "64");
  EXPECT_EQ(back.files, m.files);
  EXPECT_FALSE(j.contains("tune"));  // no tunables: the JSON is what it was before them
  // Tunables (docs/tune.md) survive the store's JSON: a stored kernel keeps its hash.
  m.tune.params = {{"TILE", {32, 64, 128}}, {"UNROLL", {1, 4}}};
  m.tune.constraints = {"TILE * UNROLL <= 256"};
  m.tune.defaults = {{"TILE", 64}, {"UNROLL", 1}};
  back = round_trip(m, &j);
  ASSERT_EQ(back.tune.params.size(), 2u);
  EXPECT_EQ(back.tune.params[0].name, "TILE");
  EXPECT_EQ(back.tune.params[0].values, (std::vector<int64_t>{32, 64, 128}));
  EXPECT_EQ(back.tune.params[1].values, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(back.tune.constraints, m.tune.constraints);
  EXPECT_EQ(back.tune.defaults, m.tune.defaults);

  target t;
  t.plat = platform::cuda;
  t.arch = "sm_90a";
  t.device = "NVIDIA H200";
  t.capabilities = {"tma", "wgmma"};
  t.cores = 132;
  t.llc_bytes = uint64_t{50} << 20;
  t.copy_bytes_per_s = 4.2e12;
  t.flops_per_s = 6.7e13;
  target tb = round_trip(t, &j);
  EXPECT_EQ(j["platform"], "cuda");
  EXPECT_EQ(tb.capabilities, t.capabilities);
  EXPECT_EQ(tb.llc_bytes, t.llc_bytes);
  EXPECT_EQ(tb.copy_bytes_per_s, 4.2e12);
}

TEST(json, gpu_target_and_snapshot_round_trip) {
  target t;
  t.plat = platform::cuda;
  t.arch = "sm_90a";
  t.device = "NVIDIA H200";
  t.capabilities = {"bf16", "cp.async", "tma", "wgmma"};
  t.cores = 132;
  t.llc_bytes = 52428800;
  t.copy_bytes_per_s = 4.2e12;
  t.cache_bytes_per_s = 9.5e12;
  t.flops_per_s = 5.1e13;
  t.tensor_flops_per_s = 8.07e14;
  t.uuid = "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9";
  t.cc_major = 9;
  t.cc_minor = 0;
  t.memory_bytes = 150754820096;
  t.smem_optin_bytes = 232448;
  t.smem_per_sm_bytes = 233472;
  t.registers_per_sm = 65536;
  t.sm_clock_mhz = 1980;
  t.mem_clock_mhz = 3201;
  t.memory_bus_bits = 6144;
  t.driver_version = 13000;
  t.runtime_version = 12080;
  json j;
  target back = round_trip(t, &j);
  EXPECT_EQ(back.uuid, t.uuid);
  EXPECT_EQ(back.cc_major, 9);
  EXPECT_EQ(back.memory_bytes, t.memory_bytes);
  EXPECT_EQ(back.smem_optin_bytes, t.smem_optin_bytes);
  EXPECT_EQ(back.smem_per_sm_bytes, t.smem_per_sm_bytes);
  EXPECT_EQ(back.registers_per_sm, 65536u);
  EXPECT_EQ(back.sm_clock_mhz, 1980u);
  EXPECT_EQ(back.mem_clock_mhz, 3201u);
  EXPECT_EQ(back.memory_bus_bits, 6144u);
  EXPECT_EQ(back.driver_version, 13000);
  EXPECT_EQ(back.runtime_version, 12080);
  EXPECT_EQ(back.cache_bytes_per_s, 9.5e12);
  EXPECT_EQ(back.tensor_flops_per_s, 8.07e14);
  EXPECT_EQ(j["tensor_flops_per_s"], 8.07e14);

  // A CPU target carries no device fields, but keeps its in-cache ceiling.
  target cpu;
  cpu.arch = "x86-64-v3";
  cpu.cache_bytes_per_s = 2e11;
  json jc;
  target cb = round_trip(cpu, &jc);
  EXPECT_FALSE(jc.contains("uuid"));
  EXPECT_FALSE(jc.contains("tensor_flops_per_s"));
  EXPECT_EQ(cb.cache_bytes_per_s, 2e11);

  gpu_snapshot s{1755, 3201, 41, 123.456, 0x44, "2026-11-29T10:15:30.123Z"};
  json js;
  gpu_snapshot sb = round_trip(s, &js);
  EXPECT_EQ(sb.sm_clock_mhz, 1755u);
  EXPECT_EQ(sb.mem_clock_mhz, 3201u);
  EXPECT_EQ(sb.temperature_c, 41);
  EXPECT_EQ(sb.power_w, 123.456);
  EXPECT_EQ(sb.throttle_reasons, 0x44u);
  EXPECT_EQ(sb.time, s.time);
  EXPECT_EQ(js["throttle_reasons"], 0x44);
}

TEST(json, lineage_side_types) {
  feature f{"gemm_kernel/k", "smem_tiling", {{"tile", "64"}}, detection_method::ptx};
  json j;
  feature fb = round_trip(f, &j);
  EXPECT_EQ(j["method"], "ptx");
  EXPECT_EQ(fb.params.at("tile"), "64");

  transition tr;
  tr.from_kernel = "aa";
  tr.to_kernel = "bb";
  tr.action = "tiling";
  tr.locus = "gemm_kernel";
  tr.edit = "@@ -1 +1 @@";
  tr.removed = {f};
  tr.speedup = 1.8;
  tr.evaluations = {3, 4};
  tr.rejected = {"compile_error: x"};
  tr.prov = {"rules", "tile", true};
  transition tb = round_trip(tr);
  EXPECT_EQ(tb.speedup, 1.8);
  EXPECT_TRUE(tb.prov.mechanical);
  EXPECT_EQ(tb.removed.at(0).name, "smem_tiling");

  lineage l;
  l.task = "gemm";
  l.kernels = {"aa", "bb"};
  l.steps = {tr};
  l.term = termination::step_limit;
  l.reason = "12 steps";
  l.remaining_features = {"wgmma"};
  lineage lb = round_trip(l, &j);
  EXPECT_EQ(j["termination"], "step_limit");
  EXPECT_EQ(lb.term, termination::step_limit);
  EXPECT_EQ(lb.steps.size(), 1u);

  skill_card c;
  c.id = "card-1";
  c.intent = "tile K";
  c.carriers = {{"cuda", "diff"}};
  c.constraints = {{"smem_bytes", "49152"}};
  c.evidence = {7};
  c.requires_features = {"smem_tiling"};
  c.provides_features = {"register_tiling"};
  c.conflicts_features = {"wgmma"};
  c.status = card_status::admitted;
  skill_card cb = round_trip(c, &j);
  EXPECT_EQ(j["requires"], json::parse(R"(["smem_tiling"])"));
  EXPECT_EQ(cb.constraints.at(0).value, "49152");
  EXPECT_TRUE(cb.admitted());
  EXPECT_EQ(cb.status, card_status::admitted);
  // The language of its evidence (issue 44, item 3), c-abi unless said; a trial's kernel's too.
  EXPECT_EQ(j["evidence_language"], "c-abi");
  c.evidence_lang = candidate_language::modelnew;
  card_trial trial;
  trial.task = "kb_swish";
  trial.lang = candidate_language::modelnew;
  c.trials = {trial};
  cb = round_trip(c, &j);
  EXPECT_EQ(j["evidence_language"], "modelnew");
  EXPECT_EQ(j["trials"][0]["language"], "modelnew");
  EXPECT_EQ(cb.evidence_lang, candidate_language::modelnew);
  EXPECT_EQ(cb.trials.at(0).lang, candidate_language::modelnew);
  // A card stored before the field existed (no evidence_language, trials without a language)
  // still loads, as the C-ABI card it was; an unknown language is refused, not guessed.
  json old = j;
  old.erase("evidence_language");
  old["trials"][0].erase("language");
  const skill_card ob = old.get<skill_card>();
  EXPECT_EQ(ob.evidence_lang, candidate_language::c_abi);
  EXPECT_EQ(ob.trials.at(0).lang, candidate_language::c_abi);
  EXPECT_EQ(ob.name, cb.name);
  json unknown = j;
  unknown["evidence_language"] = "fortran";
  EXPECT_ANY_THROW(unknown.get<skill_card>());

  run r;
  r.id = "r1";
  r.kind = run_kind::decompose;
  r.task = "gemm";
  r.state = run_state::finished;
  r.limits.steps = 10;
  r.limits.usd = 2.5;
  r.created_at = "2026-11-29T12:00:00Z";
  run rb = round_trip(r, &j);
  EXPECT_EQ(j["kind"], "decompose");
  EXPECT_EQ(j["state"], "finished");
  EXPECT_TRUE(j["budget"]["tokens"].is_null());  // no limit is null, not 0
  EXPECT_EQ(rb.limits.steps, 10);
  EXPECT_FALSE(rb.limits.tokens.has_value());
  EXPECT_EQ(rb.limits.usd, 2.5);
}

TEST(json, evaluation_round_trips) {
  evaluation e;
  e.id = 12;
  e.task = "gemm";
  e.kernel_hash = "k";
  e.kernel_name = "expert";
  e.baseline_hash = "b";
  e.baseline_name = "naive";
  e.tgt.arch = "x86-64-v3";
  e.toolchain = "g++ 12.2";
  e.policy.target_rse = 0.01;
  e.prov = {"human", "", false};
  e.result = outcome::wrong_result;
  e.message = "output C: 3 mismatches";
  e.diagnostics = "log";
  check_record cr;
  cr.shape_set = "small";
  cr.seed = 0xffffffffffffffffull;  // uint64 survives the trip
  cr.output = "C";
  cr.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  cr.mismatches = 3;
  cr.first_mismatches = {"[1,2]: got 1, want 2"};
  e.checks = {cr};
  e.median_seconds = 1e-3;
  paired_series p;
  p.a_label = "expert";
  p.b_label = "naive";
  p.a_seconds = {1, 2};
  p.b_seconds = {3, 4};
  p.a_first = {1, 0};
  p.ratio = 2.1;
  p.stop_reason = "noise";
  e.paired = p;
  e.timing_shape = "main";
  e.wall_seconds = 3.5;
  e.stage_seconds = {{"compile", 1.5}, {"check", 0.5}};
  json j = e;
  EXPECT_EQ(j["outcome"], "wrong_result");
  EXPECT_TRUE(j["aa"].is_null());
  EXPECT_TRUE(
      json::parse(j.dump())["checks"][0]["max_abs_err"].is_null());  // NaN is written as null…
  evaluation back = json::parse(j.dump()).get<evaluation>();
  EXPECT_TRUE(std::isnan(back.checks.at(0).max_abs_err));  // …and read back as NaN, not 0
  EXPECT_EQ(back.checks[0].seed, 0xffffffffffffffffull);
  EXPECT_EQ(back.result, outcome::wrong_result);
  EXPECT_EQ(back.median_seconds, 1e-3);
  EXPECT_FALSE(back.baseline_median_seconds.has_value());
  ASSERT_TRUE(back.paired.has_value());
  EXPECT_EQ(back.paired->a_first, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(back.paired->ratio, 2.1);
  EXPECT_FALSE(back.aa.has_value());
  ASSERT_EQ(back.stage_seconds.size(), 2u);
  EXPECT_EQ(back.stage_seconds[0].first, "compile");  // order kept
  EXPECT_EQ(back.policy.target_rse, 0.01);
  EXPECT_EQ(json::parse(json(back).dump()), json::parse(j.dump()));

  timing_policy tp;
  tp.min_rounds = 9;
  EXPECT_EQ(round_trip(tp).min_rounds, 9u);
  EXPECT_TRUE(round_trip(tp).starts_at_once);
  tp.starts_at_once = false;
  EXPECT_FALSE(round_trip(tp).starts_at_once);
  // A policy stored before the field says nothing of how its workers started: not at once.
  EXPECT_FALSE(json::parse(R"({"processes": 4})").get<timing_policy>().starts_at_once);
  round_trip(p);
  round_trip(provenance{"llm", "anthropic/x", false});
  round_trip(budget{});
}

TEST(json, problem_fields_round_trip) {
  evaluation e;
  e.reference_runtime = "torch 2.11.0 (cuda 13.0, python 3.12.3)";
  comparability_result c;
  c.protocol = "kernelbench";
  c.mean_seconds = 2e-3;
  c.eager_mean_seconds = 3e-3;
  c.eager_median_seconds = 2.9e-3;
  c.speedup_vs_eager = 1.5;
  e.comparability = c;
  evaluation back = json::parse(json(e).dump()).get<evaluation>();
  EXPECT_EQ(back.reference_runtime, e.reference_runtime);
  ASSERT_TRUE(back.comparability && back.comparability->speedup_vs_eager);
  EXPECT_EQ(*back.comparability->speedup_vs_eager, 1.5);
  EXPECT_EQ(*back.comparability->eager_median_seconds, 2.9e-3);
  // Absent for tasks that are not problems: no key, not an empty string or a null figure.
  const json plain = evaluation{};
  EXPECT_FALSE(plain.contains("reference_runtime"));
  task t;
  t.name = "kb";
  t.problem = "/x/kb.py";
  t.problem_format = problem_format::kernelbench;
  t.problem_runtime = "torch 1.13.1 (cpu, python 3.11.2)";
  const json tj = t;
  EXPECT_EQ(tj["problem"]["format"], "kernelbench");
  task tb = json::parse(tj.dump()).get<task>();
  EXPECT_EQ(tb.problem, t.problem);
  EXPECT_EQ(tb.problem_runtime, t.problem_runtime);
  EXPECT_EQ(tb.problem_format, problem_format::kernelbench);
  EXPECT_FALSE(json(task{}).contains("problem"));
  // A problem's format (a string before it was an enum) written back as stored; an unknown word
  // refused, like an unknown outcome.
  for (const char* w : {"kernelbench", "klineage", "klineage-definition", ""}) {
    const json s{{"name", "kb"}, {"problem", {{"file", "/x/kb.py"}, {"format", w}}}};
    EXPECT_EQ(json(s.get<task>())["problem"]["format"], w);
  }
  EXPECT_THROW((json{{"name", "kb"}, {"problem", {{"file", "/x/kb.py"}, {"format", "triton"}}}}.get<task>()),
               json::type_error);
}

TEST(json, gpu_evaluation_fields_round_trip) {
  evaluation e;
  e.trials_on = trial_site::device;
  comparability_result c;
  c.protocol = "kernelbench";
  c.warmup = 3;
  c.trials = 100;
  c.mean_seconds = 3.1e-3;
  c.std_seconds = 1e-5;
  c.min_seconds = 3.0e-3;
  c.max_seconds = 3.3e-3;
  c.median_seconds = 3.09e-3;
  c.p20_seconds = 3.05e-3;
  c.p80_seconds = 3.12e-3;
  c.host_seconds = 0.35;
  e.comparability = c;
  gpu_snapshot g;
  g.sm_clock_mhz = 1980;
  g.power_w = 314.5;
  g.throttle_reasons = 4;
  e.gpu_before = g;
  paired_series p;
  p.a_method = timing_method::graph;
  p.b_method = timing_method::events;
  e.paired = p;
  json j = e;
  EXPECT_EQ(j["trials_on"], "device");
  EXPECT_TRUE(j["gpu_after"].is_null());
  evaluation back = json::parse(j.dump()).get<evaluation>();
  EXPECT_EQ(back.trials_on, trial_site::device);
  ASSERT_TRUE(back.comparability);
  EXPECT_EQ(back.comparability->protocol, "kernelbench");
  EXPECT_EQ(back.comparability->trials, 100u);
  EXPECT_EQ(back.comparability->p80_seconds, 3.12e-3);
  EXPECT_EQ(back.comparability->host_seconds, 0.35);
  ASSERT_TRUE(back.gpu_before);
  EXPECT_EQ(back.gpu_before->sm_clock_mhz, 1980u);
  EXPECT_EQ(back.gpu_before->throttle_reasons, 4u);
  EXPECT_FALSE(back.gpu_after);
  EXPECT_EQ(back.paired->a_method, timing_method::graph);
  EXPECT_EQ(back.paired->b_method, timing_method::events);
  // Records from before device trials read as host trials.
  EXPECT_EQ(json::parse(R"({"outcome": "ok"})").get<evaluation>().trials_on, trial_site::host);
}

// The words of trials_on, problem_path and the timing methods (strings before they were enums)
// written back as they were stored: "" for a method a record lacks, no problem_path key when
// none; a word lathe does not know refused, like an unknown outcome.
TEST(json, evaluation_words_are_written_back_as_stored) {
  for (const char* w : {"wall", "events", "graph", ""}) {
    const json s{{"a_method", w}, {"b_method", w}};
    EXPECT_EQ(json(s.get<paired_series>())["a_method"], w);
    EXPECT_EQ(json(s.get<paired_series>())["b_method"], w);
  }
  for (const char* w : {"host", "device"})
    EXPECT_EQ(json(json{{"outcome", "ok"}, {"trials_on", w}}.get<evaluation>())["trials_on"], w);
  for (const char* w : {"host", "cuda_ipc"})
    EXPECT_EQ(json(json{{"outcome", "ok"}, {"problem_path", w}}.get<evaluation>())["problem_path"], w);
  EXPECT_FALSE(json(json{{"outcome", "ok"}}.get<evaluation>()).contains("problem_path"));
  EXPECT_FALSE(json(json{{"outcome", "ok"}, {"problem_path", ""}}.get<evaluation>()).contains("problem_path"));
  EXPECT_THROW((json{{"outcome", "ok"}, {"trials_on", "moon"}}.get<evaluation>()), json::type_error);
  EXPECT_THROW((json{{"outcome", "ok"}, {"problem_path", "ftp"}}.get<evaluation>()), json::type_error);
  EXPECT_THROW((json{{"a_method", "sundial"}}.get<paired_series>()), json::type_error);
}

TEST(json, missing_fields_take_defaults) {
  // Records written by an older lathe lack newer fields: they must still load.
  task t = json::parse(R"({"name": "x"})").get<task>();
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.baseline, "naive");
  EXPECT_EQ(t.plat, platform::cpu);
  evaluation e = json::parse(R"({"outcome": "timeout"})").get<evaluation>();
  EXPECT_EQ(e.result, outcome::timeout);
  EXPECT_EQ(e.policy.min_rounds, timing_policy{}.min_rounds);
  EXPECT_FALSE(e.paired.has_value());
  tensor_spec s = json::parse(R"({"name": "A", "dtype": "f16"})").get<tensor_spec>();
  EXPECT_EQ(s.type, dtype::f16);
  EXPECT_TRUE(s.shape.empty());
  kernel_manifest m = json::object().get<kernel_manifest>();
  EXPECT_EQ(m.lang, language::cpp);
  run r = json::parse(R"({"id": "r", "budget": {"steps": null}})").get<run>();
  EXPECT_FALSE(r.limits.steps.has_value());
}

TEST(json, unknown_enum_names_are_errors) {
  EXPECT_THROW(json::parse(R"({"platform": "tpu"})").get<task>(), json::exception);
  EXPECT_THROW(json::parse(R"({"outcome": "passed"})").get<evaluation>(), json::exception);
  EXPECT_THROW(json::parse(R"({"dtype": "floot32"})").get<tensor_spec>(), json::exception);
  EXPECT_THROW(json::parse(R"({"kind": "poisson"})").get<distribution>(), json::exception);
  EXPECT_THROW(json::parse(R"({"platform": 1})").get<target>(), json::exception);
}

}  // namespace
}  // namespace lathe
