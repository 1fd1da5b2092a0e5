// The v2 prompt fields (agent/situation_text.h) and their rendering through the proposer: every
// fact issue 23 lists for a model, in the prompt a model reads; and v1 kept readable (a proposer
// pinned to version 1 asks exactly what a v1-only library asks).
#include <gtest/gtest.h>

#include <fstream>

#include "agent/situation_text.h"
#include "core/test_util.h"
#include "scripted.h"

namespace lathe::agent::test {
namespace {

target cpu_host() {
  target h;
  h.plat = platform::cpu;
  h.arch = "x86-64-v3";
  h.cores = 8;
  h.flops_per_s = 400e9;
  h.copy_bytes_per_s = 20e9;
  h.cache_bytes_per_s = 90e9;
  h.llc_bytes = 32 << 20;
  return h;
}

TEST(contract_text, names_the_abi_the_comparison_the_flags_threads_and_the_isa) {
  const std::string c = contract_text(softmax(), cpu_host());
  for (const char* part : {"256-byte aligned", "contiguous, row-major", "never aliasing", "write every element",
                           "scalars are doubles", "lathe_workspace_bytes", "up to 8 (OMP_NUM_THREADS=8",
                           "no processes", "`+ -fopenmp`", "this host's, x86-64-v3", "`@@@ ISA <level>`",
                           "a level above x86-64-v3 is unsupported_target", "not allowed by this task",
                           "none may be linked"})
    EXPECT_TRUE(has(c, part)) << part << "\n" << c;
  // The comparison rule and each output's own tolerances (softmax overrides atol).
  EXPECT_TRUE(has(c, "|out - ref| <= atol + rtol * |ref|")) << c;
  EXPECT_TRUE(has(c, "||out - ref||_2 / ||ref||_2 <= nerr")) << c;
  const effective_tolerance tol = tolerance_for(softmax().compare, softmax().outputs[0].type);
  char line[128];
  std::snprintf(line, sizeof line, "(float32): rtol %g, atol %g, nerr %g", tol.rtol, tol.atol, tol.nerr);
  EXPECT_TRUE(has(c, line)) << line << "\n" << c;
  EXPECT_TRUE(has(c, "atol 1e-09")) << c;
  // Its declared perturbations are said, so that a kernel is written for them.
  EXPECT_TRUE(has(c, "shifted by 100")) << c;
  EXPECT_TRUE(has(c, "scaled by 0.1")) << c;
}

TEST(contract_text, says_each_comparison_kind_and_the_cuda_stream_rules) {
  task t = softmax();
  t.plat = platform::cuda;
  t.compare.kind = comparison_kind::topk;
  t.outputs.push_back({"indices", dtype::i32, t.outputs[0].shape, {}});
  target gpu;
  gpu.plat = platform::cuda;
  gpu.arch = "sm_90a";
  const std::string c = contract_text(t, gpu);
  EXPECT_TRUE(has(c, "only enqueues work on args->stream")) << c;
  EXPECT_TRUE(has(c, "(none: sm_90a)")) << c;
  EXPECT_TRUE(has(c, "top-k")) << c;
  EXPECT_TRUE(has(c, "checked against the input itself")) << c;
  EXPECT_TRUE(has(c, "- indices (int32): ")) << c;
  EXPECT_FALSE(has(c, "OMP_NUM_THREADS")) << c;
  t.compare.kind = comparison_kind::sorted_set;
  EXPECT_TRUE(has(contract_text(t, gpu), "sorted multiset"));
}

// What a real model found unclear in a ModelNew's contract (issue 44, item 2; /tmp/relay-mn of
// 2026-12-06): the worker's threads and what a parallel region costs, whether an output's memory
// may be reused, whether parameter values change between calls, whether FLAGS / ISA apply, and
// where fast math begins. Each sentence is checked against what the worker and the gate do.
TEST(contract_text, a_modelnew_says_threads_output_memory_parameter_draws_flags_and_fast_math) {
  task t = softmax();
  t.problem = "/p/kb.py";
  target host = cpu_host();
  host.cores = 2;
  const std::string c = contract_text(t, host, candidate_language::modelnew);
  for (const char* part :
       {// 1. threads: sandbox.cpp sets OMP_NUM_THREADS, lathe_kernel.py no set_num_threads.
        "OMP_NUM_THREADS=2 (the CPUs lathe may run on)", "lathe calls no torch.set_num_threads",
        "torch runs 2 intra-op threads", "built with -fopenmp gets the same 2", "the eager baseline runs with the same",
        "OMP_WAIT_POLICY=PASSIVE", "pays a wake-up and a join",
        // 2. output memory: lathe_modelnew.py own() and the copy.
        "Reusing an output's memory across calls is allowed", "computed from this call's inputs and parameters",
        "keeps no reference to it", "a tensor subclass", "an input, a bound parameter or buffer, or a view of one",
        // 3. parameter values: drawn again per check and per timed block, rotated per call.
        "parameter values change between calls", "a fresh draw of its constructor's initialization",
        "must be computed in forward, on every call", "cached by tensor identity or address",
        // 7. FLAGS / ISA and fast math.
        "@@@ FLAGS and @@@ ISA lines change nothing in how it is built", "load_inline's extra_cflags alone",
        "-ffast-math, -Ofast, -funsafe-math-optimizations, -ffinite-math-only", "__expf",
        "Not allowed by this task: none of them in extra_cflags",
        "(a polynomial exp, a reciprocal refined by Newton steps) is not fast math",
        // A problem's inputs are drawn by its own code, not by the task's distributions.
        "drawn by the problem file's own code",
        // The constructor's numbers (listed as scalars) and what the clock holds.
        "the Model's constructor arguments (get_init_inputs())", "never other values",
        "each call lathe's binding of the parameters, forward, and the check and copy of its outputs",
        "drawing the inputs is outside the clock"})
    EXPECT_TRUE(has(c, part)) << part << "\n" << c;
  EXPECT_FALSE(has(c, "must not be cached across calls")) << c;  // read as "no buffer reuse"
  EXPECT_FALSE(has(c, "--use_fast_math")) << c;                  // nvcc's, not on a CPU problem
  EXPECT_FALSE(has(c, "drawn from the task's distributions")) << c;
  t.allow_fast_math = true;
  EXPECT_TRUE(has(contract_text(t, host, candidate_language::modelnew), "Allowed by this task."));
  // The C ABI's contract is the one recorded runs saw.
  const std::string abi = contract_text(t, host, candidate_language::c_abi);
  EXPECT_EQ(abi, contract_text(t, host));
  EXPECT_TRUE(has(abi, "drawn from the task's distributions")) << abi;
  EXPECT_FALSE(has(abi, "set_num_threads")) << abi;
  // On a CUDA problem: cuda_sources run, Triton does not yet (it compiles at its first call in
  // the confined worker); the prompt said until 2026-12-07 that both ran.
  t.plat = platform::cuda;
  target gpu = host;
  gpu.plat = platform::cuda;
  const std::string cu = contract_text(t, gpu, candidate_language::modelnew);
  EXPECT_TRUE(has(cu, "CUDA sources (cuda_sources) run on CUDA problems")) << cu;
  EXPECT_TRUE(has(cu, "Triton kernels do not yet")) << cu;
  EXPECT_FALSE(has(cu, "and Triton run")) << cu;
  EXPECT_TRUE(has(c, "A CPU problem: C++ only (no cuda_sources)")) << c;
}

TEST(progress_text, gives_times_the_paired_ratio_the_roofline_with_its_ceilings_and_the_budget) {
  // Softmax's timed shape set moves `bytes`: at 20 GB/s of DRAM its floor is memory-bound.
  const shape_set& ts = timing_shape(softmax());
  const double bytes = *eval_cost(softmax().cost.bytes, ts);
  progress_facts p;
  p.step = 3;
  p.steps = 8;
  p.accepted = 1;
  p.start_seconds = 2.41 * bytes / 20e9;
  p.best_seconds = 1.25 * bytes / 20e9;
  p.best_ratio = 1.928;
  p.floor_seconds = bytes / 20e9;
  p.roofline = roofline_text(softmax(), cpu_host(), p.floor_seconds);
  p.budget_left = "5 step(s), 12 evaluation(s)";
  const std::string s = progress_text(p);
  const std::string start = "start kernel: " + seconds_text(*p.start_seconds);
  const std::string best = "best kernel: " + seconds_text(*p.best_seconds) + ", 1.928x over the start kernel";
  for (const std::string& part : {start, best})
    EXPECT_TRUE(has(s, part)) << part << "\n" << s;
  for (const char* part : {"step 3 of 8; 1 step(s) accepted so far", "budget left: 5 step(s), 12 evaluation(s)",
                           "paired timing", "80.0% of the floor's speed", "memory-bound at 20.0 GB/s", "compute 400.0 GFLOP/s",
                           "DRAM 20.0 GB/s", "last-level cache 90.0 GB/s", "clears 1 + the noise margin",
                           "holds on a fresh re-measure"})
    EXPECT_TRUE(has(s, part)) << part << "\n" << s;
  char b[64];
  std::snprintf(b, sizeof b, "%.4g bytes", bytes);
  EXPECT_TRUE(has(s, b)) << b << "\n" << s;
  EXPECT_EQ(seconds_text(2.41e-3), "2.41 ms");
  EXPECT_EQ(seconds_text(815e-6), "815 us");
  EXPECT_EQ(seconds_text(1e-3), "1.00 ms");
  // Nothing measured yet: said, never guessed.
  const std::string blank = progress_text(progress_facts{});
  EXPECT_TRUE(has(blank, "start kernel: not timed yet")) << blank;
  EXPECT_TRUE(has(blank, "position not measured yet")) << blank;
}

// The noise rule of the last decision (issue 44, item 2): a real model read "faster at first
// (13.858x) but not on the fresh re-measure (6.487x [4.311, 9.763])" and could not tell what margin
// the gate had applied. progress says the rule, with the last margin and its A/A interval.
TEST(progress_text, gives_the_last_decisions_noise_margin_and_its_a_a_interval) {
  progress_facts p;
  p.step = 2;
  p.steps = 2;
  p.margin_floor = 0.05;
  p.aa_unstable = 0.2;
  p.margin = std::expm1(3 * std::log(1.64));  // the gate's epsilon of an A/A [0.61, 1.64]
  p.aa_low = 0.61;
  p.aa_high = 1.64;
  const std::string s = progress_text(p);
  for (const char* part : {"clears 1 + the noise margin", "holds on a fresh re-measure",
                           "three times the reach from 1 of the measurement's A/A control", "never below 0.050",
                           "reaches further than 20% from 1", "left undecided: the machine was too noisy to tell",
                           "last timed decision: noise margin 1 + 3.411, from the A/A interval [0.610, 1.640] (past 20% "
                           "from 1: too wide to decide anything within the margin): a ratio counted as faster only where "
                           "its interval's low end was above 4.411"})
    EXPECT_TRUE(has(s, part)) << part << "\n" << s;
  // A quiet machine: the floor is the margin, the A/A not called too wide.
  const std::string quiet = margin_text(0.05, 0.98, 1.015, 0.2);
  EXPECT_EQ(quiet, "noise margin 1 + 0.050, from the A/A interval [0.980, 1.015]: a ratio counted as faster only "
                   "where its interval's low end was above 1.050");
  EXPECT_TRUE(has(margin_text(INFINITY, std::nullopt, std::nullopt, 0.2), "no finite noise margin"));
  // Without a decision's facts (evolve), the line is the one it always was.
  EXPECT_TRUE(has(progress_text(progress_facts{}),
                  "acceptance: a candidate is timed against the best kernel; it is kept when its paired ratio "
                  "clears 1 + the noise margin of that measurement and holds on a fresh re-measure"));
}

// A PyTorch problem's cost model has its bytes only (spec/problem.cpp): "0 flops" beside a GEMM
// read as no work (issue 44, item 2). The flops are said to be uncounted and the floor memory-only.
TEST(roofline_text, a_task_without_a_flop_count_says_so_and_calls_its_floor_memory_only) {
  task t = softmax();
  t.problem = "/p/kb.py";
  t.cost.flops.clear();
  const std::string s = roofline_text(t, cpu_host(), 1e-5);
  for (const char* part : {"flops not counted (lathe does not count a PyTorch problem's)", "a memory-only bound",
                           "(a GEMM, a convolution) may sit far above it", "The floor here is 10.0 us, memory only"})
    EXPECT_TRUE(has(s, part)) << part << "\n" << s;
  EXPECT_FALSE(has(s, " 0 flops")) << s;
  EXPECT_FALSE(has(s, "max(flops / compute ceiling")) << s;
  progress_facts p;
  p.best_seconds = 1e-4;
  p.floor_seconds = 1e-5;
  p.floor_memory_only = true;
  p.roofline = s;
  EXPECT_TRUE(has(progress_text(p), "10.0% of the memory-only floor's speed")) << progress_text(p);
  // A task that counts its flops reads as before.
  const std::string counted = roofline_text(softmax(), cpu_host(), 1e-5);
  EXPECT_TRUE(has(counted, " flops, ") && has(counted, "floor = max(flops / compute ceiling")) << counted;
  EXPECT_FALSE(has(counted, "not counted")) << counted;
}

TEST(card_evidence_text, gives_the_source_effect_each_held_out_trial_and_the_status) {
  skill_card c;
  c.source_tasks = {"softmax"};
  c.declared_ratio = 1.8;
  c.evidence = {4, 7};
  c.target = "x86-64-v3";
  card_trial ok;
  ok.task = "layernorm";
  ok.verdict = trial_verdict::reproduced;
  ok.outcome = "ok";
  ok.ratio = 1.62;
  card_trial bad;
  bad.task = "row_mean";
  bad.verdict = trial_verdict::gate_failed;
  bad.outcome = "wrong_result";
  c.trials = {ok, bad};
  c.status = card_status::admitted;
  const std::string s = card_evidence_text(c);
  EXPECT_TRUE(has(s, "softmax: 1.800x (geomean of 2 paired evaluation(s), on x86-64-v3)")) << s;
  EXPECT_TRUE(has(s, "layernorm: reproduced 1.620x")) << s;
  EXPECT_TRUE(has(s, "row_mean: gate_failed (wrong_result)")) << s;
  EXPECT_TRUE(has(s, "status: admitted")) << s;
  // The language its evidence was measured in (issue 44, item 3); a trial on a ModelNew says so.
  EXPECT_TRUE(has(s, "\nlanguage of its evidence: c-abi (lathe_launch bundles)\n")) << s;
  EXPECT_FALSE(has(s, "kernel)")) << s;
  c.trials[0].lang = candidate_language::modelnew;
  EXPECT_TRUE(has(card_evidence_text(c), "layernorm: reproduced 1.620x (on a modelnew kernel)")) << card_evidence_text(c);
}

mutate_request a_mutation() {
  mutate_request r;
  r.t = &softmax();
  r.parent = softmax_expert();
  r.direction = "fewer passes";
  r.rejected = {{"a blocked row loop: not faster: paired 1.020x: read faster, but inside the noise margin"}};
  r.progress.step = 2;
  r.progress.steps = 4;
  r.progress.start_seconds = 1e-3;
  r.progress.budget_left = "3 step(s)";
  return r;
}

json a_declined_mutation() {
  return json{{"action", "none"}, {"locus", "lathe_launch"}, {"adds", json::array()},
              {"removes", json::array()}, {"rationale", "nothing"}, {"edits", ""}};
}

TEST(llm_proposer_v2, mutate_prompt_carries_the_contract_progress_and_registry_names_models_use) {
  scripted model;
  model.say(a_declined_mutation());
  llm_options o;
  o.host = cpu_host();
  o.prompt_version = 2;  // v3 adds the language (a_modelnew_parent_is_asked_for_in_its_language…)
  llm_proposer p(model, prompts(), o);
  EXPECT_EQ(p.version_for(operation::mutate), 2);
  (void)p.mutate(a_mutation());
  ASSERT_EQ(model.seen.size(), 1u);
  EXPECT_EQ(model.seen[0].template_version, 2);
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_EQ(model.first_user_line(0), "lathe-operation: mutate v2");
  for (const char* part : {"## contract\nABI", "256-byte aligned", "`+ -fopenmp`", "## progress\nstep 2 of 4",
                           "budget left: 3 step(s)", "start kernel: 1.00 ms", "inside the noise margin",
                           "- prefetch: ", "- non_temporal_store: ", "- cache_blocking: "})
    EXPECT_TRUE(has(u, part)) << part;
}

TEST(llm_proposer_v2, pinned_to_v1_it_asks_exactly_what_a_v1_only_library_asks) {
  lathe::test::temp_dir dir;
  for (const auto& t : prompts().all())
    if (t.version == 1) fs::copy_file(t.origin, dir.path() / fs::path(t.origin).filename());
  auto v1_only = prompt_library::load(dir.path());
  ASSERT_TRUE(v1_only) << v1_only.error().message;
  scripted old_model, pinned_model;
  old_model.say(a_declined_mutation());
  pinned_model.say(a_declined_mutation());
  llm_options pin;
  pin.prompt_version = 1;
  pin.host = cpu_host();
  llm_proposer old_lathe(old_model, *v1_only), pinned(pinned_model, prompts(), pin);
  EXPECT_EQ(pinned.version_for(operation::mutate), 1);
  (void)old_lathe.mutate(a_mutation());
  (void)pinned.mutate(a_mutation());
  ASSERT_EQ(old_model.seen.size(), 1u);
  ASSERT_EQ(pinned_model.seen.size(), 1u);
  EXPECT_EQ(pinned_model.seen[0].template_version, 1);
  EXPECT_EQ(pinned_model.seen[0].fields_hash, old_model.seen[0].fields_hash);
  EXPECT_EQ(pinned_model.seen[0].messages[0].content, old_model.seen[0].messages[0].content);
  EXPECT_EQ(pinned_model.seen[0].system, old_model.seen[0].system);
  EXPECT_FALSE(has(pinned_model.seen[0].messages[0].content, "## contract"));
}

TEST(llm_proposer_v2, materialize_shows_each_cards_measured_effects) {
  materialize_request r;
  r.t = &softmax();
  r.kernel = softmax_expert();
  skill_card c;
  c.id = "c1";
  c.name = "omp-rows";
  c.intent = "rows across threads";
  c.source_tasks = {"layernorm"};
  c.declared_ratio = 3.1;
  c.status = card_status::candidate;
  r.cards = {c};
  r.progress.library = "1 card(s) in the library";
  scripted model;
  model.say(json{{"action", "none"}, {"locus", "lathe_launch"}, {"adds", json::array({"omp_parallel"})}, {"rationale", "no"},
                 {"edits", ""}});
  llm_proposer p(model, prompts());
  (void)p.materialize(r);
  ASSERT_EQ(model.seen.size(), 1u);
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "measured on its source task(s) layernorm: 3.100x")) << u.substr(0, 400);
  EXPECT_TRUE(has(u, "held-out tasks: not tried yet"));
  EXPECT_TRUE(has(u, "library: 1 card(s) in the library"));
}

// A C-ABI card applied to a ModelNew (issue 44, item 3): the v3 prompt shows the card's C++
// carrier (not every carrier it has) and says that its technique goes into the inline extension's
// C++, its flags into load_inline's arguments. A C-ABI kernel's prompt says nothing of the kind.
TEST(llm_proposer_v3, materialize_on_a_modelnew_carries_the_cards_cpp_into_its_inline_extension) {
  skill_card c;
  c.id = "c1";
  c.name = "omp-parallel-loop";
  c.intent = "Add omp_parallel: the outer loop across threads";
  c.carriers["cpp/cpu"] = "#pragma omp parallel for\nfor (int64_t i = 0; i < n; ++i)";
  c.carriers["rules"] = "rule omp_parallel.add at lathe_launch/i";
  c.source_tasks = {"silu"};
  c.declared_ratio = 1.9;
  c.status = card_status::admitted;
  materialize_request r;
  r.t = &softmax();
  r.cards = {c};
  r.kernel.name = "eager";
  r.kernel.manifest.lang = language::python;
  r.kernel.manifest.entry = "eager.py";
  r.kernel.manifest.files = {"eager.py"};
  r.kernel.sources["eager.py"] = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n";
  for (const bool modelnew : {true, false}) {
    SCOPED_TRACE(modelnew);
    if (!modelnew) r.kernel = softmax_expert();
    scripted model;
    model.say(json{{"action", "none"}, {"locus", "ModelNew.forward"}, {"adds", json::array({"omp_parallel"})},
                   {"rationale", "no"}, {"edits", ""}});
    llm_proposer p(model, prompts());
    (void)p.materialize(r);
    ASSERT_EQ(model.seen.size(), 1u);
    EXPECT_EQ(model.first_user_line(0), "lathe-operation: materialize v3");
    const std::string& u = model.seen[0].messages[0].content;
    EXPECT_TRUE(has(u, "carrier (cpp/cpu):\n#pragma omp parallel for")) << u;
    EXPECT_TRUE(has(u, "language of its evidence: c-abi")) << u;
    if (modelnew) {
      EXPECT_TRUE(has(u, "## language\nmodelnew\n")) << u;
      // Only the code the extension can take (a Python kernel matched no carrier and was shown all).
      EXPECT_FALSE(has(u, "carrier (rules)")) << u;
      EXPECT_TRUE(has(u, "carried into a modelnew: This card was learned on c-abi kernels")) << u;
      EXPECT_TRUE(has(u, "inside the C++ of the kernel's inline extension (the cpp_sources")) << u;
      EXPECT_TRUE(has(u, "go in load_inline's extra_cflags and extra_ldflags")) << u;
    } else {
      EXPECT_FALSE(has(u, "carried into")) << u;
    }
  }
}

}  // namespace
}  // namespace lathe::agent::test
