// The LLM proposer's nine operations against a scripted model, on real kernels of the repository:
// what each prompt shows, what each reply becomes, and what lathe refuses to believe.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "agent/kernel_text.h"
#include "scripted.h"

namespace lathe::agent::test {
namespace {

const std::string omp_line = "#pragma omp parallel for schedule(static)\n";
const std::string axpy_loop = "  for (int64_t i = 0; i < n; ++i) z[i] = s * x[i] + y[i];\n";

json backward_reply(const std::string& edits, json removes = {"omp_parallel"}) {
  return {{"action", "remove_omp_parallel"},
          {"locus", "lathe_launch/r"},
          {"removes", removes},
          {"rationale", "rows run on one thread"},
          {"edits", edits}};
}

backward_request backward_of(const kernel_bundle& k) {
  backward_request r;
  r.t = &softmax();
  r.kernel = k;
  r.features = {{"lathe_launch/r", "omp_parallel", {{"schedule", "static"}}},
                {"exp_ps", "simd", {{"width", "8"}}}};
  r.action_prior = {"remove_parallelism"};
  r.rejected = {{"remove simd at exp_ps: wrong_result"}};
  r.target = "platform: cpu\narchitecture: x86-64-v3";
  return r;
}

TEST(llm_proposer, backward_removes_one_mechanism_from_the_softmax_expert) {
  const kernel_bundle expert = softmax_expert();
  scripted model;
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, "") +
                           "@@@ FLAGS\n- -fopenmp\n@@@ END\n"));
  llm_proposer p(model, prompts());
  auto got = p.propose_backward(backward_of(expert));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_FALSE(has(got->kernel.sources.at("kernel.cpp"), "#pragma omp"));
  EXPECT_EQ(got->kernel.manifest.flags, std::vector<std::string>{"-O3"});
  EXPECT_NE(got->kernel.hash, expert.hash);
  EXPECT_EQ(got->kernel.hash, bundle_hash(got->kernel));
  EXPECT_TRUE(got->kernel.origin.empty());
  EXPECT_EQ(got->features_removed, std::vector<std::string>{"omp_parallel"});
  EXPECT_EQ(got->action, "remove_omp_parallel");
  EXPECT_EQ(got->locus, "lathe_launch/r");
  EXPECT_TRUE(has(got->edits, "@@@ FLAGS")) << got->edits;
  EXPECT_EQ(to_string(got->prov), "llm:scripted/test");
  EXPECT_EQ(got->calls, 1);
  // What the model was shown.
  ASSERT_EQ(model.seen.size(), 1u);
  const llm::request& q = model.seen[0];
  EXPECT_EQ(model.first_user_line(0), "lathe-operation: propose_backward v2");
  EXPECT_EQ(q.template_id, "propose_backward");
  EXPECT_EQ(q.template_version, 2);
  EXPECT_FALSE(q.json_schema.empty());
  const std::string& u = q.messages[0].content;
  EXPECT_TRUE(has(u, "=== FILE kernel.cpp ===\n// Expert row softmax")) << u.substr(0, 2000);
  EXPECT_TRUE(has(u, "flags: -O3 -fopenmp"));
  EXPECT_TRUE(has(u, "omp_parallel @ lathe_launch/r (schedule=static)\nsimd @ exp_ps (width=8)"));
  EXPECT_TRUE(has(u, "- remove simd at exp_ps: wrong_result"));
  EXPECT_TRUE(has(u, "- remove_parallelism"));
  EXPECT_TRUE(has(u, "name: softmax\noperator: softmax"));
  EXPECT_TRUE(has(u, "architecture: x86-64-v3"));
  EXPECT_TRUE(has(q.system, "one mechanism with its adapters, never half of one"));
  EXPECT_FALSE(has(u, "   1| ")) << "line numbers are for audits only";
  // The bundle travels to a model that works on files.
  EXPECT_EQ(model.bundles[0], expert.hash);
}

TEST(llm_proposer, forward_restores_a_feature_without_seeing_the_backward_diff) {
  const kernel_bundle naive = axpy_naive();
  scripted model;
  model.say(
      json{{"action", "add_simd"},
           {"locus", "lathe_launch/i"},
           {"adds", {"simd"}},
           {"rationale", "vectorize the loop"},
           {"edits", search_replace("naive.cpp", axpy_loop, "  #pragma omp simd\n" + axpy_loop)}});
  forward_request r;
  r.t = &axpy();
  r.predecessor = naive;
  r.restore = {"lathe_launch/i", "simd", {{"width", "8"}}};
  r.action = "remove_simd";
  llm_proposer p(model, prompts());
  auto got = p.rederive_forward(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(has(got->kernel.sources.at("naive.cpp"), "#pragma omp simd\n  for (int64_t i"));
  EXPECT_EQ(got->features_added, std::vector<std::string>{"simd"});
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_EQ(model.first_user_line(0), "lathe-operation: rederive_forward v2");
  EXPECT_TRUE(has(u, "simd @ lathe_launch/i (width=8)\ndefinition: simd: explicit vector"));
  EXPECT_TRUE(has(u, "## rejected\n(none)")) << "an empty list is (none)";
  EXPECT_TRUE(has(model.seen[0].system, "Do not look for the previous version; re-derive"));
  // An unregistered feature is not asked about at all.
  r.restore.name = "openmp_magic";
  auto refused = p.rederive_forward(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, failure_kind::unsupported);
  EXPECT_EQ(model.seen.size(), 1u);
}

TEST(llm_proposer, abstract_card_fills_a_card_that_is_not_admitted) {
  const kernel_bundle before = axpy_naive();
  kernel_bundle after = before;
  after.sources["naive.cpp"] = "// with simd\n" + before.sources.at("naive.cpp");
  card_request r;
  r.t = &axpy();
  r.before = before;
  r.after = after;
  r.step.action = "add_simd";
  r.step.locus = "lathe_launch/i";
  r.step.edit = "@@@ FILE naive.cpp\n...";
  r.step.added = {{"lathe_launch/i", "simd", {}}};
  r.step.speedup = 1.8;
  r.target = "x86-64-v3";
  json card = {{"intent", "vectorize the innermost element-wise loop"},
               {"anchor", "an element-wise loop over contiguous arrays"},
               {"carrier", "#pragma omp simd before the loop"},
               {"preconditions", {"no loop-carried dependence"}},
               {"constraints", {{{"what", "capability"}, {"value", "avx2"}}}},
               {"effect", "8 elements per instruction"},
               {"risk", "none known"},
               {"scope", "element-wise CPU kernels"},
               {"requires", json::array()},
               {"provides", {"simd"}},
               {"conflicts", json::array()}};
  json bad = card;
  bad["constraints"][0]["what"] = "vibes";  // not a checkable kind: repaired
  scripted model;
  model.say(bad);
  model.say(card);
  llm_proposer p(model, prompts());
  auto got = p.abstract_card(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->intent, "vectorize the innermost element-wise loop");
  EXPECT_EQ(got->carriers.at("cpp/cpu"), "#pragma omp simd before the loop");
  ASSERT_EQ(got->constraints.size(), 1u);
  EXPECT_EQ(got->constraints[0].value, "avx2");
  EXPECT_EQ(got->provides_features, std::vector<std::string>{"simd"});
  EXPECT_FALSE(got->admitted());
  ASSERT_EQ(model.seen.size(), 2u);
  EXPECT_TRUE(has(model.last_message(1), "$.constraints[0].what: not one of"));
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "measured speedup: 1.800x"));
  EXPECT_TRUE(has(u, "features added by the step: simd @ lathe_launch/i"));
  EXPECT_TRUE(has(u, "=== FILE naive.cpp ===\n// with simd"));
  // The registry shown is the task's platform's: CPU names, no CUDA-only ones.
  EXPECT_TRUE(has(u, "- omp_parallel: "));
  EXPECT_FALSE(has(u, "- smem_tiling: "));
  EXPECT_TRUE(has(model.seen[0].system,
                  "Tuning values stay in the carrier; intent names the mechanism only"));
}

TEST(llm_proposer, materialize_applies_cards_and_refuses_without_one) {
  skill_card c;
  c.id = "card-7";
  c.intent = "spread independent iterations over threads";
  c.anchor = "an outer loop with independent iterations";
  c.carriers = {{"cpp/cpu", "#pragma omp parallel for"}, {"cuda/cuda", "grid-stride loop"}};
  c.preconditions = {"iterations are independent"};
  c.risk = "thread start-up cost on small inputs";
  materialize_request r;
  r.t = &axpy();
  r.kernel = axpy_naive();
  r.cards = {c};
  scripted model;
  model.say(json{
      {"action", "apply_omp_parallel"},
      {"locus", "lathe_launch/i"},
      {"adds", {"omp_parallel"}},
      {"rationale", "threads"},
      {"edits", search_replace("naive.cpp", axpy_loop, "#pragma omp parallel for\n" + axpy_loop) +
                    "@@@ FLAGS\n+ -fopenmp\n@@@ END\n"}});
  llm_proposer p(model, prompts());
  auto got = p.materialize(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->kernel.manifest.flags, (std::vector<std::string>{"-O3", "-fopenmp"}));
  EXPECT_FALSE(got->kernel.bare);  // its flags are no longer a bare file's
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "--- card 1 of 1 (card-7) ---\nintent: spread independent"));
  EXPECT_TRUE(has(u, "carrier (cpp/cpu):\n#pragma omp parallel for"));
  EXPECT_FALSE(has(u, "grid-stride loop")) << "only the kernel's language's carrier";
  EXPECT_TRUE(has(u, "risk: thread start-up cost"));
  r.cards.clear();
  auto none = p.materialize(r);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, failure_kind::refused);
  EXPECT_EQ(model.seen.size(), 1u);
}

TEST(llm_proposer, repair_shows_clipped_diagnostics_and_fixes_the_kernel) {
  kernel_bundle broken = axpy_naive();
  broken.sources["naive.cpp"] = std::string(broken.sources.at("naive.cpp"));
  const std::string bad_loop = "  for (int64_t i = 0; i < n - 1; ++i) z[i] = s * x[i] + y[i];\n";
  auto& src = broken.sources["naive.cpp"];
  src.replace(src.find(axpy_loop), axpy_loop.size(), bad_loop);
  broken.hash = bundle_hash(broken);
  repair_request r;
  r.t = &axpy();
  r.failed = broken;
  r.goal = "the naive kernel";
  r.verdict = outcome::unwritten_output;
  r.diagnostics =
      "output Z element 999 was never written\n" + std::string(60000, 'x') + "\nEND-OF-LOG";
  scripted model;
  model.say(json{{"diagnosis", "the loop stops one element early"},
                 {"rationale", "loop to n"},
                 {"edits", search_replace("naive.cpp", bad_loop, axpy_loop)}});
  llm_options o;
  o.max_diagnostics_bytes = 4096;
  llm_proposer p(model, prompts(), o);
  auto got = p.repair(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->kernel.sources.at("naive.cpp"), axpy_naive().sources.at("naive.cpp"));
  EXPECT_EQ(got->action, "repair");
  EXPECT_EQ(got->rationale, "diagnosis: the loop stops one element early\nloop to n");
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "unwritten_output"));
  EXPECT_TRUE(has(u, "output Z element 999 was never written"));
  EXPECT_TRUE(has(u, "END-OF-LOG"));
  EXPECT_TRUE(has(u, "bytes cut"));
  EXPECT_LT(u.size(), 12000u);
}

TEST(llm_proposer, seed_baseline_replaces_the_placeholder_entry) {
  const std::string code =
      "#include <lathe/abi.h>\nextern \"C\" int lathe_launch(const lathe_args* a) {\n"
      "  return 0;\n}\n";
  scripted model;
  model.say(json{{"rationale", "one loop"},
                 {"edits", "@@@ WHOLE kernel.cpp\n```cpp\n" + code + "```\n@@@ END\n"}});
  seed_request r;
  r.t = &axpy();
  r.reference_source = "// the reference: z = a*x + y\n";
  r.entry_features = {"restrict"};
  llm_proposer p(model, prompts());
  auto got = p.seed_baseline(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->kernel.manifest.entry, "kernel.cpp");
  EXPECT_EQ(got->kernel.manifest.lang, language::cpp);
  EXPECT_EQ(got->kernel.sources.size(), 1u);
  EXPECT_EQ(got->kernel.sources.at("kernel.cpp"), code);
  EXPECT_EQ(got->action, "seed");
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "// the reference: z = a*x + y"));
  EXPECT_TRUE(has(u, "@@@ WHOLE kernel.cpp"));
  EXPECT_TRUE(has(u, "- restrict: pointer parameters"));
  EXPECT_EQ(model.bundles[0], seed_bundle(axpy()).hash);
  // CUDA tasks start from kernel.cu.
  const kernel_bundle cu = seed_bundle(load(source_dir() / "tests/integration/tasks/axpy_cuda"));
  EXPECT_EQ(cu.manifest.entry, "kernel.cu");
  EXPECT_EQ(cu.manifest.lang, language::cuda);
  EXPECT_EQ(cu.sources.at("kernel.cu"), seed_placeholder);
}

TEST(llm_proposer, rank_paths_needs_every_id_exactly_once) {
  rank_request r;
  r.t = &axpy();
  r.kernel = axpy_naive();
  r.paths = {{"p1", "omp_parallel", {}}, {"p2", "simd", {}}, {"p3", "simd then omp_parallel", {}}};
  auto entry = [](const char* id) {
    return json{{"id", id}, {"reason", std::string("because ") + id}};
  };
  scripted model;
  model.say(json{{"order", {entry("p3"), entry("p1")}}});  // p2 missing
  model.say(
      json{{"order", {entry("p3"), entry("p1"), entry("p1"), entry("p9")}}});  // twice, unknown
  model.say(json{{"order", {entry("p3"), entry("p1"), entry("p2")}}});
  llm_proposer p(model, prompts());
  auto got = p.rank_paths(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->order, (std::vector<std::string>{"p3", "p1", "p2"}));
  EXPECT_EQ(got->reasons[0], "because p3");
  EXPECT_EQ(got->calls, 3);
  EXPECT_TRUE(has(model.seen[0].messages[0].content,
                  "p1: omp_parallel\np2: simd\np3: simd then omp_parallel"));
  EXPECT_TRUE(has(model.last_message(1), "lathe-feedback: invalid_reply\n"));
  EXPECT_TRUE(has(model.last_message(1), "missing: p2"));
  EXPECT_TRUE(has(model.last_message(2), "named more than once: p1"));
  EXPECT_TRUE(has(model.last_message(2), "not among the given ids: p9"));

  // Never fixed within the bound: invalid_reply, every call counted.
  scripted stubborn;
  for (int i = 0; i < 3; ++i) stubborn.say(json{{"order", {entry("p1"), entry("p2")}}});
  llm_options o;
  o.max_repairs = 1;
  llm_proposer q(stubborn, prompts(), o);
  auto failed = q.rank_paths(r);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, failure_kind::invalid_reply);
  EXPECT_TRUE(has(failed.error().message, "missing: p3"));
  EXPECT_EQ(failed.error().calls, 2);
  EXPECT_EQ(stubborn.seen.size(), 2u);

  // One path: nothing to rank, no call.
  r.paths.resize(1);
  scripted silent;
  llm_proposer s(silent, prompts());
  auto one = s.rank_paths(r);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->order, std::vector<std::string>{"p1"});
  EXPECT_TRUE(silent.seen.empty());
}

TEST(llm_proposer, mutate_shows_inspirations_and_may_add_nothing) {
  mutate_request r;
  r.t = &softmax();
  r.parent = softmax_expert();
  r.inspirations = {bundle(source_dir() / "tasks/softmax/kernels/naive")};
  r.direction = "fewer passes over each row";
  scripted model;
  model.say(json{{"action", "retune_schedule"},
                 {"locus", "lathe_launch/r"},
                 {"adds", json::array()},
                 {"removes", json::array()},
                 {"rationale", "dynamic scheduling"},
                 {"edits", search_replace("kernel.cpp", omp_line,
                                          "#pragma omp parallel for schedule(dynamic, 4)\n")}});
  llm_proposer p(model, prompts());
  auto got = p.mutate(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(has(got->kernel.sources.at("kernel.cpp"), "schedule(dynamic, 4)"));
  EXPECT_TRUE(got->features_added.empty());
  const std::string& u = model.seen[0].messages[0].content;
  EXPECT_TRUE(has(u, "--- inspiration 1 ---\nlanguage: cpp"));
  EXPECT_TRUE(has(u, "fewer passes over each row"));
  EXPECT_EQ(model.first_user_line(0), "lathe-operation: mutate v3");
  // The parent is a C++ bundle: the language section names the C ABI, the contract is the ABI's.
  EXPECT_TRUE(has(u, "## language\nc-abi\n"));
  EXPECT_TRUE(has(u, "ABI (include/lathe/abi.h"));
  // Kernel-Smith's sampling for mutations, by default; every other operation deterministic.
  EXPECT_EQ(model.seen[0].temperature, 0.6);
  EXPECT_EQ(model.seen[0].top_p, 0.95);
}

// A ModelNew parent (issue 44): the v3 prompt names the language and gives a ModelNew's contract
// instead of the ABI's; pinned to v2 (a recorded run), the prompt is the ABI one it always was.
TEST(llm_proposer, a_modelnew_parent_is_asked_for_in_its_language_from_v3_on) {
  mutate_request r;
  r.t = &softmax();
  r.parent.name = "eager";
  r.parent.manifest.lang = language::python;
  r.parent.manifest.entry = "eager.py";
  r.parent.manifest.files = {"eager.py"};
  r.parent.sources["eager.py"] = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n\nclass ModelNew(Model):\n    pass\n";
  for (int32_t pin : {0, 2}) {
    SCOPED_TRACE(pin);
    scripted model;
    model.say("not an answer");
    llm_options o;
    o.prompt_version = pin;
    o.max_repairs = 0;
    llm_proposer p(model, prompts(), o);
    (void)p.mutate(r);
    ASSERT_FALSE(model.seen.empty());
    const std::string& u = model.seen[0].messages[0].content;
    if (pin == 0) {
      EXPECT_EQ(model.first_user_line(0), "lathe-operation: mutate v3");
      EXPECT_TRUE(has(u, "## language\nmodelnew\n")) << u;
      EXPECT_TRUE(has(u, "ModelNew (one Python file")) << u;
      EXPECT_TRUE(has(u, "load_inline")) << u;
      EXPECT_FALSE(has(u, "ABI (include/lathe/abi.h")) << u;
    } else {
      EXPECT_EQ(model.first_user_line(0), "lathe-operation: mutate v2");
      EXPECT_FALSE(has(u, "## language"));
      EXPECT_TRUE(has(u, "ABI (include/lathe/abi.h"));
    }
  }
}

// A PyTorch problem's inputs are drawn by its own code (issue 44, item 2): the task field says so,
// per input, instead of the task's unused default distribution ("constant 0", which a model read as
// the inputs' values); parameters are named by their state_dict entry.
TEST(kernel_text, a_problems_inputs_say_where_their_values_come_from) {
  task t = softmax();
  ASSERT_GE(t.inputs.size(), 1u);
  const std::string plain = task_text(t);
  EXPECT_TRUE(has(plain, "values uniform") || has(plain, "values normal")) << plain;
  t.problem = "/p/kb.py";
  t.inputs.push_back(t.inputs[0]);
  t.inputs.back().name = "fc_weight";
  t.inputs.back().dist = {};
  t.problem_model = R"({"forward": [{"input": 0}], "state": ["fc.weight"]})";
  const std::string text = task_text(t);
  EXPECT_FALSE(has(text, "values constant")) << text;
  EXPECT_TRUE(has(text, ", values drawn by the problem file's own code")) << text;
  EXPECT_TRUE(has(text, "fc_weight: float32 [") && has(text, "state_dict tensor `fc.weight`")) << text;
}

// A rejected note's rationale (issue 44, item 2): cut mid-word at 240 bytes ("masked tai…"), a real
// model could not tell what had been tried. Whole up to 600 characters, else cut at a sentence end
// (else a word boundary) and said to be cut.
TEST(kernel_text, a_rationale_is_summarized_whole_or_cut_at_a_sentence_and_said_so) {
  const std::string short_one = "Fuse the five ops into one pass.\nRepack W per call.";
  EXPECT_EQ(summary_text(short_one), "Fuse the five ops into one pass. Repack W per call.");
  std::string sentences;
  for (int i = 0; sentences.size() < 700; ++i)
    sentences += "Sentence " + std::to_string(i) + " says what the masked tail loop does per row. ";
  const std::string cut = summary_text(sentences);
  EXPECT_LE(cut.size(), 600u + 40u) << cut;
  const size_t mark = cut.find(" [… ");
  ASSERT_NE(mark, std::string::npos) << cut;
  EXPECT_EQ(cut[mark - 1], '.') << cut;  // a whole sentence, then the mark
  EXPECT_TRUE(cut.ends_with(" more characters cut]")) << cut;
  EXPECT_EQ(sentences.substr(0, mark), cut.substr(0, mark));
  // No sentence end in reach: a word boundary, never half a word or half a UTF-8 character.
  std::string words;
  while (words.size() < 800) words += "masked_tail×loop ";
  const std::string by_word = summary_text(words, 100);
  const size_t at = by_word.find(" [… ");
  ASSERT_NE(at, std::string::npos) << by_word;
  EXPECT_TRUE(by_word.substr(0, at).ends_with("masked_tail×loop")) << by_word;
  // In the prompt: the rejected field lists each note whole.
  scripted model;
  model.say("not an answer");
  llm_options o;
  o.max_repairs = 0;
  llm_proposer p(model, prompts(), o);
  mutate_request r;
  r.t = &softmax();
  r.parent = softmax_expert();
  r.rejected = {{summary_text(short_one) + ": gate wrong_result: max err 3.1"}};
  (void)p.mutate(r);
  ASSERT_FALSE(model.seen.empty());
  EXPECT_TRUE(has(model.seen[0].messages[0].content,
                  "## rejected\n- Fuse the five ops into one pass. Repack W per call.: gate wrong_result"));
}

TEST(llm_proposer, sampling_per_operation_from_lathe_toml_reaches_the_request) {
  // The llm layer's table names are the proposer's operations, and "default".
  for (operation op : all_operations)
    EXPECT_NE(std::find(llm::sampling_tables.begin(), llm::sampling_tables.end(), to_string(op)),
              llm::sampling_tables.end())
        << to_string(op);
  EXPECT_EQ(llm::sampling_tables.size(), std::size(all_operations) + 1);
  EXPECT_EQ(default_sampling(operation::audit_features).temperature, 0.0);
  EXPECT_EQ(default_sampling(operation::abstract_card).temperature, 0.0);
  EXPECT_FALSE(default_sampling(operation::abstract_card).top_p);
  llm::config cfg;
  cfg.sampling_by["default"] = llm::sampling{0.3, std::nullopt, 9000};
  cfg.sampling_by["propose_backward"] = llm::sampling{0.1, 0.5, std::nullopt};
  const auto by = sampling_from(cfg);
  EXPECT_EQ(by.at(operation::propose_backward), (sampling_settings{0.1, 0.5, 9000}));
  EXPECT_EQ(by.at(operation::mutate), (sampling_settings{0.3, 0.95, 9000}));  // default over its own
  EXPECT_EQ(by.at(operation::audit_features), (sampling_settings{0.3, std::nullopt, 9000}));
  scripted model;
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, "")));
  llm_options o;
  o.sampling = by;
  llm_proposer p(model, prompts(), o);
  ASSERT_TRUE(p.propose_backward(backward_of(softmax_expert())));
  ASSERT_EQ(model.seen.size(), 1u);
  EXPECT_EQ(model.seen[0].temperature, 0.1);
  EXPECT_EQ(model.seen[0].top_p, 0.5);
  EXPECT_EQ(model.seen[0].max_tokens, 9000);
}

// ---- repair rounds --------------------------------------------------------------------------

TEST(llm_proposer, a_reply_off_its_schema_is_shown_its_error_and_repaired) {
  scripted model;
  model.say_text("I would remove the OpenMP pragma.");  // no JSON at all
  json missing = backward_reply(search_replace("kernel.cpp", omp_line, ""));
  missing.erase("locus");
  model.say(missing);
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, "")));
  llm_proposer p(model, prompts());
  auto got = p.propose_backward(backward_of(softmax_expert()));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->calls, 3);
  ASSERT_EQ(model.seen.size(), 3u);
  const auto& second = model.seen[1];
  ASSERT_EQ(second.messages.size(), 3u);
  EXPECT_EQ(second.messages[1].role, "assistant");
  EXPECT_EQ(second.messages[1].content, "I would remove the OpenMP pragma.");
  EXPECT_TRUE(second.messages[2].content.starts_with("lathe-feedback: invalid_reply\n"));
  EXPECT_TRUE(has(second.messages[2].content, "not JSON"));
  EXPECT_TRUE(has(model.last_message(2), "$.locus: required"));
  EXPECT_EQ(second.template_id, "propose_backward/repair");
  EXPECT_EQ(model.bundles[1], softmax_expert().hash) << "a repair works on the original kernel";
}

TEST(llm_proposer, an_edit_that_does_not_apply_is_fed_back_and_the_next_applies) {
  scripted model;
  model.say(backward_reply(search_replace("kernel.cpp", "#pragma omp parallel for\n", "")));
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, "")));
  llm_proposer p(model, prompts());
  auto got = p.propose_backward(backward_of(softmax_expert()));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->calls, 2);
  const std::string& feedback = model.last_message(1);
  EXPECT_TRUE(feedback.starts_with("lathe-feedback: edit_not_applied\n")) << feedback;
  EXPECT_TRUE(has(feedback, "kernel.cpp")) << feedback;
  EXPECT_TRUE(has(feedback, "schedule(static)"))
      << "the message shows what the file holds: " << feedback;
  EXPECT_FALSE(has(got->kernel.sources.at("kernel.cpp"), "#pragma omp"));
}

TEST(llm_proposer, the_repair_bound_ends_in_invalid_reply_or_edit_not_applied) {
  scripted garbled;
  for (int i = 0; i < 5; ++i) garbled.say_text("{\"action\": ");
  llm_proposer p(garbled, prompts());  // max_repairs 2: three calls
  auto invalid = p.propose_backward(backward_of(softmax_expert()));
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().kind, failure_kind::invalid_reply);
  EXPECT_EQ(invalid.error().calls, 3);
  EXPECT_EQ(garbled.seen.size(), 3u);

  scripted misses;
  for (int i = 0; i < 5; ++i)
    misses.say(backward_reply(search_replace("kernel.cpp", "no such line\n", "")));
  llm_proposer q(misses, prompts());
  auto unapplied = q.propose_backward(backward_of(softmax_expert()));
  ASSERT_FALSE(unapplied);
  EXPECT_EQ(unapplied.error().kind, failure_kind::edit_not_applied);
  EXPECT_EQ(unapplied.error().calls, 3);
  EXPECT_TRUE(has(unapplied.error().message, "SEARCH")) << unapplied.error().message;

  // Schema and edit repairs share one bound: one bad reply of each kind exhausts max_repairs 1.
  scripted mixed;
  mixed.say_text("not json");
  mixed.say(backward_reply(search_replace("kernel.cpp", "no such line\n", "")));
  mixed.say(backward_reply(search_replace("kernel.cpp", omp_line, "")));
  llm_options o;
  o.max_repairs = 1;
  llm_proposer m(mixed, prompts(), o);
  auto both = m.propose_backward(backward_of(softmax_expert()));
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().kind, failure_kind::edit_not_applied);
  EXPECT_EQ(mixed.seen.size(), 2u);
}

TEST(llm_proposer, feature_names_outside_the_registry_are_refused) {
  scripted model;
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, ""), {"openmp"}));
  model.say(backward_reply(search_replace("kernel.cpp", omp_line, ""), {"omp_parallel"}));
  llm_proposer p(model, prompts());
  auto got = p.propose_backward(backward_of(softmax_expert()));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->features_removed, std::vector<std::string>{"omp_parallel"});
  const std::string& feedback = model.last_message(1);
  EXPECT_TRUE(feedback.starts_with("lathe-feedback: invalid_reply\n"));
  EXPECT_TRUE(has(feedback, "$.removes[0] 'openmp'"));
  EXPECT_TRUE(has(feedback, "omp_parallel")) << "the registry is listed";

  scripted stubborn;
  stubborn.say(backward_reply(search_replace("kernel.cpp", omp_line, ""), {"openmp"}));
  llm_options o;
  o.max_repairs = 0;
  llm_proposer q(stubborn, prompts(), o);
  auto refused = q.propose_backward(backward_of(softmax_expert()));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, failure_kind::invalid_reply);
  EXPECT_TRUE(has(refused.error().message, "openmp"));
}

TEST(llm_proposer, edit_blocks_after_the_json_apply_too) {
  const kernel_bundle expert = softmax_expert();
  std::string without = expert.sources.at("kernel.cpp");
  without.erase(without.find(omp_line), omp_line.size());
  // An agent CLI's working-directory change, appended by the command provider.
  const std::string whole = "@@@ WHOLE kernel.cpp\n" + without + "@@@ END\n";
  scripted model;
  model.say_text("```json\n" + backward_reply("").dump() + "\n```\n" + whole);
  // The same change both in the JSON and in the working directory: applied once.
  model.say_text("```json\n" + backward_reply(search_replace("kernel.cpp", omp_line, "")).dump() +
                 "\n```\n" + whole);
  // No edit anywhere.
  model.say(backward_reply(""));
  llm_options o;
  o.max_repairs = 0;
  llm_proposer p(model, prompts(), o);
  auto outside = p.propose_backward(backward_of(expert));
  ASSERT_TRUE(outside) << outside.error().message;
  EXPECT_EQ(outside->kernel.sources.at("kernel.cpp"), without);
  auto twice = p.propose_backward(backward_of(expert));
  ASSERT_TRUE(twice) << twice.error().message;
  EXPECT_EQ(twice->kernel.hash, outside->kernel.hash);
  auto nothing = p.propose_backward(backward_of(expert));
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().kind, failure_kind::edit_not_applied);
  EXPECT_TRUE(has(nothing.error().message, "no edit"));
}

TEST(llm_proposer, an_isa_line_both_in_the_json_and_after_it_applies_once) {
  const kernel_bundle expert = softmax_expert();
  ASSERT_EQ(expert.manifest.isa, "x86-64-v3");
  scripted model;
  model.say_text("```json\n" + backward_reply("@@@ ISA x86-64-v2\n").dump() +
                 "\n```\n@@@ ISA x86-64-v2\n");
  llm_options o;
  o.max_repairs = 0;
  auto got = llm_proposer(model, prompts(), o).propose_backward(backward_of(expert));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->kernel.manifest.isa, "x86-64-v2");
  EXPECT_EQ(got->kernel.sources, expert.sources);
}

TEST(llm_proposer, a_failed_call_is_its_own_failure) {
  scripted down;  // nothing queued: the provider fails with a server error
  llm_proposer p(down, prompts());
  auto got = p.propose_backward(backward_of(softmax_expert()));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, failure_kind::call);
  EXPECT_EQ(got.error().calls, 1);
  EXPECT_TRUE(has(got.error().message, "server"));
  // Nothing to remove: declined without a call.
  backward_request r = backward_of(softmax_expert());
  r.features.clear();
  auto none = p.propose_backward(r);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, failure_kind::refused);
  EXPECT_EQ(down.seen.size(), 1u);
}

}  // namespace
}  // namespace lathe::agent::test
