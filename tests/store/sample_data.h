// Values with every field set, so that a round trip through the store that drops one shows up.
#pragma once

#include <cstdint>
#include <string>

#include "core/evaluation.h"
#include "core/hash.h"
#include "core/kernel.h"
#include "core/profile.h"
#include "store/llm_call.h"

namespace lathe::testing {

inline kernel_bundle sample_kernel() {
  kernel_bundle k;
  k.name = "vector_add_v2";
  k.manifest.lang = language::cpp;
  k.manifest.entry = "kernel.cpp";
  k.manifest.files = {"kernel.cpp", "util.h"};
  k.manifest.flags = {"-O3", "-fopenmp"};
  k.manifest.defines = {{"TILE", "64"}};
  k.manifest.isa = "x86-64-v3";
  k.sources = {{"kernel.cpp", "#include \"util.h\"\nint lathe_launch(const void*) { return 0; }\n"},
               {"util.h", std::string("// latin-1 comment: caf\xe9\n#pragma once\n")}};
  k.hash = content_hash(k.sources["kernel.cpp"] + k.sources["util.h"]);  // stands in for gate's
  return k;
}

inline paired_series sample_series(const std::string& a, const std::string& b, double ratio) {
  paired_series s;
  s.a_label = a;
  s.b_label = b;
  for (int i = 0; i < 6; ++i) {
    s.a_seconds.push_back(1.0e-5 + i * 1.1e-7);
    s.b_seconds.push_back(1.25e-5 + i * 0.9e-7);
    s.a_first.push_back(static_cast<uint8_t>(i % 2));
  }
  s.ratio = ratio;
  s.ci_low = ratio * 0.99;
  s.ci_high = ratio * 1.01;
  s.rse = 0.004;
  s.stop_reason = "noise";
  return s;
}

inline evaluation sample_evaluation(const std::string& task) {
  evaluation e;
  e.task = task;
  e.kernel_name = "vector_add_v2";
  e.kernel_hash = content_hash("candidate " + task);
  e.baseline_name = "naive";
  e.baseline_hash = content_hash("baseline " + task);
  e.tgt.plat = platform::cpu;
  e.tgt.arch = "x86-64-v3";
  e.tgt.device = "Test CPU @ 3.0GHz";
  e.tgt.capabilities = {"avx2", "fma"};
  e.tgt.cores = 2;
  e.tgt.llc_bytes = 32u << 20;
  e.toolchain = "g++ (Debian 12.2.0-14) 12.2.0";
  e.policy.max_seconds = 2.5;
  e.prov = provenance{"rules", "unroll", false};
  e.result = outcome::ok;
  e.message = "ok: 1.25x over naive";
  e.diagnostics = "screen: clean";
  check_record c;
  c.shape_set = "small";
  c.seed = 7;
  c.output = "out";
  c.passed = true;
  c.max_abs_err = 1e-7;
  c.max_rel_err = 2e-7;
  c.norm_err = 3e-8;
  e.checks = {c};
  e.median_seconds = 1.0e-5;
  e.baseline_median_seconds = 1.25e-5;
  e.dispersion = 0.003;
  e.paired = sample_series("candidate", "baseline", 1.25);
  e.aa = sample_series("baseline", "baseline copy", 1.001);
  e.roofline_fraction = 0.42;
  e.timing_shape = "large";
  e.wall_seconds = 3.5;
  e.stage_seconds = {{"compile", 1.5}, {"check", 0.5}, {"time", 1.5}};
  return e;
}

// A profile as `lathe profile` stores it: two functions, one with every figure, one with gaps.
inline profile sample_profile(const std::string& kernel_hash) {
  profile p;
  p.task = "reduction_cuda";
  p.kernel_hash = kernel_hash;
  p.kernel_name = "expert";
  p.shape_set = "main";
  p.tgt.plat = platform::cuda;
  p.tgt.arch = "sm_90";
  p.tgt.device = "NVIDIA H200";
  p.toolchain = "Build cuda_13.0.r13.0/compiler.36424714_0";
  p.tool_version = "2025.1.1.0 (build 35528883) (public-release)";
  p.command = {"/usr/local/cuda/bin/ncu", "--clock-control", "none", "lathe", "profile-run"};
  p.launches = 3;
  profiled_kernel k;
  k.name = "rowsum_vec(const float *, float *, int)";
  k.grid = {8192, 1, 1};
  k.block = {256, 1, 1};
  k.launches = 3;
  k.duration_seconds = 1.52e-4;
  k.compute_throughput_pct = 21.5;
  k.memory_throughput_pct = 91.25;
  k.dram_throughput_pct = 91.0;
  k.achieved_occupancy_pct = 88.5;
  k.l2_hit_rate_pct = 0.75;
  k.cycles_per_issue = 30.5;
  k.stalls = {{"long_scoreboard", 25.0}, {"selected", 1.0}};
  k.metrics = {{"gpu__time_duration.sum", 152000.0}, {"lts__t_sector_hit_rate.pct", 0.75}};
  k.units = {{"gpu__time_duration.sum", "nsecond"}, {"lts__t_sector_hit_rate.pct", "%"}};
  profiled_kernel gaps;
  gaps.name = "rowsum_generic(const float *, float *, int)";
  gaps.grid = {4, 1, 1};
  gaps.block = {256, 1, 1};
  gaps.launches = 1;
  gaps.duration_seconds = 2.0e-6;
  p.kernels = {k, gaps};
  p.raw_csv = "\"ID\",\"Kernel Name\"\n\"\",\"\"\n\"0\",\"rowsum_vec\"\n";
  return p;
}

// A model call as llm/call_log.cpp stores it, with every field set.
inline llm_call sample_llm_call(const std::optional<std::string>& run_id) {
  llm_call c;
  c.run_id = run_id;
  c.provider = "openai";
  c.model = "gpt-4o-2024-08-06";
  c.template_id = "propose_backward";
  c.template_version = 3;
  c.fields_hash = content_hash("fields");
  c.prompt = R"({"max_tokens":4096,"messages":[{"content":"Remove one optimization.","role":"user"}],"system":"You are a kernel engineer.","temperature":0.0})";
  c.reply = R"({"action":"unvectorize","locus":"kernel/i"})";
  c.tokens_in = 1234;
  c.tokens_out = 321;
  c.cost_usd = 0.006295;
  c.latency_seconds = 2.75;
  c.finish_reason = "stop";
  c.attempts = 2;
  c.request_id = "req_abc123";
  return c;
}

}  // namespace lathe::testing
