// lathe-mock-model on prompts built the documented way over the shipped kernels: determinism,
// each operation's reply shape, edits that apply (agent/edit.h) and really remove or add the
// mechanism they claim, and the faults it makes on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "agent/edit.h"
#include "agent/replies.h"
#include "agent/schema.h"
#include "mock_fields.h"
#include "core/lines.h"

namespace lathe::mock_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every shipped kernel bundle (tasks and the integration tests' tasks), by relative path.
std::vector<std::string> shipped_bundles() {
  std::vector<std::string> out;
  for (const char* root : {"tasks", "tests/integration/tasks"})
    for (const auto& t : fs::directory_iterator(source_dir() / root)) {
      if (!fs::is_directory(t.path() / "kernels")) continue;
      for (const auto& k : fs::directory_iterator(t.path() / "kernels"))
        out.push_back(fs::relative(k.path(), source_dir()).string());
    }
  std::sort(out.begin(), out.end());
  return out;
}

bool refused(const json& j) {
  return j.value("rationale", "").rfind("refused: ", 0) == 0 && j.value("edits", "x").empty();
}

// The LLM proposer's own checks of a reply (agent/replies.h): its schema, then registry names.
std::string problems(const std::string& op, const json& j) {
  for (auto o : agent::all_operations) {
    if (op != agent::to_string(o)) continue;
    std::string out = agent::describe(agent::validate(agent::reply_schema(o), j));
    if (auto names = agent::unregistered_names(j)) out += (out.empty() ? "" : "; ") + *names;
    return out;
  }
  return "unknown operation " + op;
}

// The keys docs/proposer.md ("Replies") requires, per operation.
const std::map<std::string, std::vector<std::string>> required = {
    {"propose_backward", {"action", "locus", "removes", "rationale", "edits"}},
    {"rederive_forward", {"action", "locus", "adds", "rationale", "edits"}},
    {"audit_features", {"verdicts"}},
    {"abstract_card",
     {"intent", "anchor", "carrier", "preconditions", "constraints", "effect", "risk", "scope",
      "requires", "provides", "conflicts"}},
    {"materialize", {"action", "locus", "adds", "rationale", "edits"}},
    {"repair", {"diagnosis", "rationale", "edits"}},
    {"seed_baseline", {"rationale", "edits"}},
    {"rank_paths", {"order"}},
    {"mutate", {"action", "locus", "adds", "removes", "rationale", "edits"}},
};

void expect_keys(const std::string& op, const json& j) {
  for (const auto& k : required.at(op)) EXPECT_TRUE(j.contains(k)) << op << " lacks " << k;
  EXPECT_EQ(j.size(), required.at(op).size()) << op << ": " << j.dump();
  EXPECT_EQ(problems(op, j), "") << j.dump(1);
}

const char* relu_expert = "tasks/relu_cuda/kernels/expert";
const char* softmax_expert = "tasks/softmax/kernels/expert";
const char* softmax_naive = "tasks/softmax/kernels/naive";

TEST(mock_model, same_prompt_and_seed_give_the_same_reply_byte_for_byte) {
  const auto b = bundle(relu_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  const auto first =
      ask({"--seed", "7", "--wrong-rate", "0.5", "--invalid-rate", "0.3"}, prompt, b);
  const auto second =
      ask({"--seed", "7", "--wrong-rate", "0.5", "--invalid-rate", "0.3"}, prompt, b);
  EXPECT_EQ(first.run.out, second.run.out);
  EXPECT_EQ(first.run.err, second.run.err);
}

TEST(mock_model, different_seeds_give_different_valid_edits_where_the_kernel_allows) {
  const auto b = bundle(relu_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  std::set<std::string> edits, features;
  for (int seed = 0; seed < 8; ++seed) {
    const auto r = ask({"--seed", std::to_string(seed)}, prompt, b);
    ASSERT_FALSE(refused(r.value));
    auto applied = agent::apply_reply(b, r.value["edits"].get<std::string>());
    EXPECT_TRUE(applied) << (applied ? "" : applied.error().message);
    edits.insert(r.value["edits"].get<std::string>());
    features.insert(r.value["removes"][0].get<std::string>());
  }
  EXPECT_GE(edits.size(), 4u);
  EXPECT_GE(features.size(), 2u);
}

TEST(mock_model, every_backward_edit_of_a_shipped_kernel_applies_and_removes_its_mechanism) {
  int answered = 0;
  for (const auto& rel : shipped_bundles()) {
    const auto b = bundle(rel);
    const std::string prompt = prompt_for("propose_backward", backward_fields(b));
    for (int seed = 0; seed < 3; ++seed) {
      const auto r = ask({"--seed", std::to_string(seed)}, prompt, b);
      expect_keys("propose_backward", r.value);
      if (refused(r.value)) continue;
      ++answered;
      const std::string feature = r.value["removes"][0];
      auto after = agent::apply_reply(b, r.value["edits"].get<std::string>());
      ASSERT_TRUE(after) << rel << ": " << after.error().message;
      EXPECT_LT(mechanism_count(*after, feature), mechanism_count(b, feature))
          << rel << " seed " << seed << ": " << feature << " not removed\n"
          << r.value["edits"].get<std::string>();
    }
  }
  EXPECT_GE(answered, 20);
}

TEST(mock_model, nothing_to_remove_is_a_refusal_with_empty_edits) {
  const auto b = bundle("tests/integration/tasks/axpy/kernels/naive.cpp");
  const auto r = ask({}, prompt_for("propose_backward", backward_fields(b)), b);
  expect_keys("propose_backward", r.value);
  EXPECT_TRUE(refused(r.value)) << r.value.dump();
}

TEST(mock_model, the_listed_features_and_the_action_prior_decide_what_is_removed) {
  const auto b = bundle(relu_expert);
  for (int seed = 0; seed < 4; ++seed) {
    const auto listed =
        ask({"--seed", std::to_string(seed)},
            prompt_for("propose_backward", backward_fields(b, "launch_bounds @ relu_vec\n")), b);
    EXPECT_EQ(listed.value["removes"][0], "launch_bounds");
    EXPECT_EQ(listed.value["locus"], "relu_vec");
    const auto prior =
        ask({"--seed", std::to_string(seed)},
            prompt_for("propose_backward",
                       backward_fields(b, "restrict @ relu_vec\nloop_unroll @ relu_vec/u\n",
                                       "remove_loop_unroll\nremove_restrict\n")),
            b);
    EXPECT_EQ(prior.value["removes"][0], "loop_unroll");
  }
}

TEST(mock_model, forward_adds_the_feature_to_restore_on_naive_kernels) {
  const std::vector<std::pair<std::string, std::string>> kernels = {
      {softmax_naive, "lathe_launch"},
      {"tasks/gemm/kernels/naive", "lathe_launch"},
      {"tasks/transpose/kernels/naive", "lathe_launch"},
      {"tests/integration/tasks/axpy/kernels/naive.cpp", "lathe_launch"},
      {"tasks/softmax_cuda/kernels/naive", "softmax_naive"},
      {"tasks/relu_cuda/kernels/naive", "relu_naive"},
      {"tasks/gemm_cuda/kernels/naive", "gemm_naive"},
  };
  std::set<std::string> added;
  for (const auto& [rel, fn] : kernels) {
    const auto b = bundle(rel);
    for (const char* name : {"loop_unroll", "restrict", "omp_parallel", "simd", "read_only_load",
                             "launch_bounds", "fast_math"}) {
      const auto r =
          ask({"--seed", "3"}, prompt_for("rederive_forward", forward_fields(b, name, fn)), b);
      expect_keys("rederive_forward", r.value);
      if (refused(r.value)) continue;
      EXPECT_EQ(r.value["adds"][0], name);
      auto after = agent::apply_reply(b, r.value["edits"].get<std::string>());
      ASSERT_TRUE(after) << rel << " " << name << ": " << after.error().message;
      EXPECT_GT(mechanism_count(*after, name), mechanism_count(b, name)) << rel << " " << name;
      added.insert(std::string(name) + (b.manifest.lang == language::cuda ? "/cuda" : "/cpu"));
    }
  }
  for (const char* must :
       {"loop_unroll/cpu", "restrict/cpu", "omp_parallel/cpu", "simd/cpu", "loop_unroll/cuda",
        "read_only_load/cuda", "launch_bounds/cuda", "fast_math/cuda"})
    EXPECT_TRUE(added.count(must)) << must;
}

TEST(mock_model, omp_parallel_brings_its_flag) {
  const auto b = bundle(softmax_naive);
  const auto r = ask(
      {}, prompt_for("rederive_forward", forward_fields(b, "omp_parallel", "lathe_launch/r")), b);
  ASSERT_FALSE(refused(r.value));
  auto after = agent::apply_reply(b, r.value["edits"].get<std::string>());
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_NE(std::find(after->manifest.flags.begin(), after->manifest.flags.end(), "-fopenmp"),
            after->manifest.flags.end());
  EXPECT_EQ(r.value["locus"], "lathe_launch/r");
}

TEST(mock_model, materialize_applies_what_the_card_provides_and_mutate_changes_the_kernel) {
  const auto b = bundle(softmax_naive);
  const auto m = ask({}, prompt_for("materialize", materialize_fields(b, "restrict")), b);
  expect_keys("materialize", m.value);
  EXPECT_EQ(m.value["adds"][0], "restrict");
  auto after = agent::apply_reply(b, m.value["edits"].get<std::string>());
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_GT(mechanism_count(*after, "restrict"), 0);

  const auto none = ask({}, prompt_for("materialize", materialize_fields(b, "wgmma")), b);
  EXPECT_TRUE(refused(none.value)) << none.value.dump();

  std::set<std::string> mutations;
  for (const char* rel : {relu_expert, softmax_naive, "tasks/gemm_cuda/kernels/stage2_regtile"}) {
    const auto k = bundle(rel);
    for (int seed = 0; seed < 4; ++seed) {
      const auto r =
          ask({"--seed", std::to_string(seed)}, prompt_for("mutate", mutate_fields(k)), k);
      expect_keys("mutate", r.value);
      ASSERT_FALSE(refused(r.value)) << rel;
      auto applied = agent::apply_reply(k, r.value["edits"].get<std::string>());
      EXPECT_TRUE(applied) << rel << ": " << (applied ? "" : applied.error().message);
      mutations.insert(r.value["edits"].get<std::string>());
    }
  }
  EXPECT_GE(mutations.size(), 8u);
}

// --mutation-changes N: one answer composes up to N drawn changes (each applied to what the
// previous left), so a run's children rarely repeat a kernel; block sizes named by a constant are
// retuned. The default (one change) is what every other test sees.
TEST(mock_model, mutation_changes_compose_several_edits_and_block_sizes_are_retuned) {
  const auto k = bundle("tasks/softmax_cuda/kernels/naive");
  std::set<std::string> one, several, actions;
  int composed = 0;
  for (int seed = 0; seed < 12; ++seed) {
    const auto a = ask({"--seed", std::to_string(seed)}, prompt_for("mutate", mutate_fields(k)), k);
    one.insert(a.value["edits"].get<std::string>());
    actions.insert(a.value["action"].get<std::string>());
    const auto b = ask({"--seed", std::to_string(seed), "--mutation-changes", "3"},
                       prompt_for("mutate", mutate_fields(k)), k);
    expect_keys("mutate", b.value);
    EXPECT_EQ(problems("mutate", b.value), "");
    auto applied = agent::apply_reply(k, b.value["edits"].get<std::string>());
    ASSERT_TRUE(applied) << applied.error().message;
    several.insert(applied->hash);
    // One sentence per change in the rationale.
    const std::string why = b.value["rationale"];
    if (std::count(why.begin(), why.end(), '.') >= 2 && why.find(". ") != std::string::npos) ++composed;
  }
  EXPECT_GE(composed, 4);
  EXPECT_GT(several.size(), one.size());
  EXPECT_TRUE(actions.count("tune_block_size")) << "actions drawn: " << actions.size();
  EXPECT_EQ(run_mock({"--mutation-changes", "9"}, "", fs::temp_directory_path()).status, 2);
}

// Composed mutations stay applicable generation after generation: each answer's edits apply to
// its parent, which is the previous generation's child (what evolve feeds back).
TEST(mock_model, composed_mutations_apply_along_a_chain_of_generations) {
  for (const char* rel : {"tasks/softmax_cuda/kernels/naive", "tasks/rmsnorm_cuda/kernels/naive"}) {
    for (int seed = 0; seed < 4; ++seed) {
      kernel_bundle k = bundle(rel);
      for (int g = 0; g < 5; ++g) {
        const auto r = ask({"--seed", std::to_string(seed * 10 + g), "--mutation-changes", "3"},
                           prompt_for("mutate", mutate_fields(k, "generation " + std::to_string(g))), k);
        if (refused(r.value)) break;
        auto applied = agent::apply_reply(k, r.value["edits"].get<std::string>());
        ASSERT_TRUE(applied) << rel << " seed " << seed << " generation " << g << ": " << applied.error().message
                             << "\n" << r.value["edits"].get<std::string>();
        k = *applied;
      }
    }
  }
}

TEST(mock_model, wrong_rate_one_makes_each_documented_kind_of_wrong_kernel) {
  const auto b = bundle(softmax_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  const auto right = ask({"--seed", "1"}, prompt, b);
  auto correct = agent::apply_reply(b, right.value["edits"].get<std::string>());
  ASSERT_TRUE(correct);
  const std::map<std::string, std::string> signature = {
      {"bound", "r < R - 1"}, {"store", "* 1.0625f"}, {"constant", "(1.0f + 0.0625f)"}};
  for (const auto& [kind, text] : signature) {
    const auto r = ask({"--seed", "1", "--wrong-rate", "1", "--wrong-kind", kind}, prompt, b);
    EXPECT_EQ(r.value["removes"], right.value["removes"]);  // the same step, made wrong
    auto wrong = agent::apply_reply(b, r.value["edits"].get<std::string>());
    ASSERT_TRUE(wrong) << wrong.error().message;
    const std::string& src = wrong->sources.at("kernel.cpp");
    EXPECT_NE(src.find(text), std::string::npos) << kind;
    EXPECT_EQ(correct->sources.at("kernel.cpp").find(text), std::string::npos) << kind;
    EXPECT_NE(r.run.err.find("wrong answer (" + kind + ")"), std::string::npos) << r.run.err;
    EXPECT_EQ(mechanism_count(*wrong, "omp_parallel"), 0);
  }
  // Without --wrong-kind the kinds are drawn: several seeds see more than one.
  std::set<std::string> kinds;
  for (int seed = 0; seed < 12; ++seed) {
    const auto r = ask({"--seed", std::to_string(seed), "--wrong-rate", "1"}, prompt, b);
    const auto p = r.run.err.find("wrong answer (");
    ASSERT_NE(p, std::string::npos);
    kinds.insert(r.run.err.substr(p + 14, r.run.err.find(')', p) - p - 14));
  }
  EXPECT_GE(kinds.size(), 2u);
}

TEST(mock_model, repair_undoes_each_kind_of_wrong_result) {
  const auto b = bundle(softmax_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  const auto right = ask({"--seed", "1"}, prompt, b);
  auto correct = agent::apply_reply(b, right.value["edits"].get<std::string>());
  ASSERT_TRUE(correct);
  for (const char* kind : {"bound", "store", "constant"}) {
    const auto r = ask({"--seed", "1", "--wrong-rate", "1", "--wrong-kind", kind}, prompt, b);
    auto wrong = agent::apply_reply(b, r.value["edits"].get<std::string>());
    ASSERT_TRUE(wrong);
    const auto fix = ask({}, prompt_for("repair", repair_fields(*wrong)), *wrong);
    expect_keys("repair", fix.value);
    auto repaired = agent::apply_reply(*wrong, fix.value["edits"].get<std::string>());
    ASSERT_TRUE(repaired) << kind << ": " << repaired.error().message;
    EXPECT_EQ(repaired->sources, correct->sources) << kind;
  }
  // A kernel without any of the mock's slips: nothing to repair, said so.
  const auto none = ask({}, prompt_for("repair", repair_fields(b)), b);
  EXPECT_TRUE(refused(none.value)) << none.value.dump();
}

TEST(mock_model, bad_edit_rate_one_gives_an_edit_that_does_not_apply) {
  for (const char* rel : {softmax_expert, relu_expert}) {
    const auto b = bundle(rel);
    const std::string prompt = prompt_for("propose_backward", backward_fields(b));
    for (int seed = 0; seed < 3; ++seed) {
      const auto r = ask({"--seed", std::to_string(seed), "--bad-edit-rate", "1"}, prompt, b);
      auto applied = agent::apply_reply(b, r.value["edits"].get<std::string>());
      ASSERT_FALSE(applied) << rel;
      EXPECT_EQ(applied.error().verdict, outcome::edit_not_applied);
      EXPECT_NE(applied.error().message.find("SEARCH"), std::string::npos)
          << applied.error().message;
    }
  }
}

TEST(mock_model, invalid_rate_one_breaks_the_schema_every_time) {
  const auto b = bundle(relu_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  std::set<std::string> kinds;
  for (int seed = 0; seed < 12; ++seed) {
    const auto r = ask({"--seed", std::to_string(seed), "--invalid-rate", "1"}, prompt, b);
    EXPECT_NE(problems("propose_backward", r.value), "") << r.value.dump();
    const auto p = r.run.err.find("invalid reply: ");
    ASSERT_NE(p, std::string::npos);
    kinds.insert(r.run.err.substr(p + 15, r.run.err.find(' ', p + 15) - p - 15));
    const auto valid = ask({"--seed", std::to_string(seed)}, prompt, b);
    EXPECT_EQ(problems("propose_backward", valid.value), "");
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"missing_key", "unregistered_name", "wrong_type"}));
}

TEST(mock_model, a_repair_round_answers_the_original_operation_again_without_faults) {
  const auto b = bundle(relu_expert);
  llm::request req = request_for("propose_backward", backward_fields(b));
  const auto first = ask({"--seed", "5", "--invalid-rate", "1", "--bad-edit-rate", "1"},
                         llm::command_prompt(req), b);
  EXPECT_NE(problems("propose_backward", first.value), "");
  req.messages.push_back({"assistant", first.run.out});
  req.messages.push_back({"user", "lathe-feedback: invalid_reply\n$.removes: required"});
  const auto again =
      ask({"--seed", "5", "--invalid-rate", "1", "--bad-edit-rate", "1", "--wrong-rate", "1"},
          llm::command_prompt(req), b);
  EXPECT_EQ(problems("propose_backward", again.value), "");
  auto applied = agent::apply_reply(b, again.value["edits"].get<std::string>());
  ASSERT_TRUE(applied) << applied.error().message;
  // The same choice as an unfaulted first answer.
  const auto clean = ask({"--seed", "5"}, prompt_for("propose_backward", backward_fields(b)), b);
  EXPECT_EQ(again.value["edits"], clean.value["edits"]);
  EXPECT_NE(again.run.err.find("repair round"), std::string::npos);
}

TEST(mock_model, files_mode_edits_the_working_directory_and_leaves_edits_empty) {
  const auto b = bundle(softmax_expert);
  const std::string prompt = prompt_for("propose_backward", backward_fields(b));
  test::temp_dir dir;
  materialize(b, dir.path());
  const auto r = run_mock({"--seed", "1", "--edit-mode", "files"}, prompt, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = reply_json(r.out);
  EXPECT_EQ(j["edits"], "");
  auto changed = load_bundle(dir.path());
  ASSERT_TRUE(changed);
  EXPECT_NE(changed->sources.at("kernel.cpp"), b.sources.at("kernel.cpp"));
  EXPECT_EQ(mechanism_count(*changed, "omp_parallel"), 0);
  // The flag change cannot be a file edit (kernel.toml is the manifest): a FLAGS block follows.
  EXPECT_NE(r.out.find("@@@ FLAGS\n- -fopenmp\n@@@ END"), std::string::npos) << r.out;
  // The same answer as blocks mode.
  const auto blocks = ask({"--seed", "1"}, prompt, b);
  auto via_blocks = agent::apply_reply(b, blocks.value["edits"].get<std::string>());
  ASSERT_TRUE(via_blocks);
  EXPECT_EQ(via_blocks->sources, changed->sources);
}

TEST(mock_model, files_mode_through_the_command_provider_gives_edits_that_apply) {
  const auto b = bundle(relu_expert);
  llm::command_config cfg;
  cfg.name = "mock";
  cfg.argv = {mock_binary().string(), "--seed", "2", "--edit-mode", "files"};
  cfg.timeout_seconds = 60;
  llm::command_provider provider(cfg);
  const auto r = provider.call_in(request_for("propose_backward", backward_fields(b)), b);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->text.find("@@@ WHOLE kernel.cu"), std::string::npos) << r->text;
  const json j = reply_json(r->text);
  auto applied = agent::apply_reply(b, r->text);
  ASSERT_TRUE(applied) << applied.error().message;
  const std::string feature = j["removes"][0];
  EXPECT_LT(mechanism_count(*applied, feature), mechanism_count(b, feature));
  // Blocks mode through the same provider: the JSON's edits give the same kernel.
  cfg.argv = {mock_binary().string(), "--seed", "2"};
  llm::command_provider blocks(cfg);
  const auto rb = blocks.call_in(request_for("propose_backward", backward_fields(b)), b);
  ASSERT_TRUE(rb) << rb.error().message;
  auto via_blocks = agent::apply_reply(b, reply_json(rb->text)["edits"].get<std::string>());
  ASSERT_TRUE(via_blocks);
  EXPECT_EQ(via_blocks->sources, applied->sources);
}

TEST(mock_model, audit_cites_code_lines_and_wrong_audits_cite_comments) {
  const auto b = bundle(relu_expert);
  const std::vector<std::string> asked = {"loop_unroll", "restrict", "launch_bounds", "wgmma",
                                          "vector_access"};
  const std::string prompt = prompt_for("audit_features", audit_fields(b, asked));
  const auto r = ask({"--seed", "4"}, prompt, b);
  expect_keys("audit_features", r.value);
  ASSERT_EQ(r.value["verdicts"].size(), asked.size());
  const auto lines = split_lines(b.sources.at("kernel.cu"));
  for (size_t i = 0; i < asked.size(); ++i) {
    const auto& v = r.value["verdicts"][i];
    EXPECT_EQ(v["name"], asked[i]);
    EXPECT_EQ(v["status"], asked[i] == "wgmma" ? "absent" : "present") << asked[i];
    for (const auto& c : v["citations"]) {
      EXPECT_EQ(c["file"], "kernel.cu");
      const int first = c["first"];
      ASSERT_GE(first, 1);
      ASSERT_LE(first, static_cast<int>(lines.size()));
      const std::string line(lines[first - 1]);
      EXPECT_NE(line.find(asked[i] == "loop_unroll"     ? "#pragma unroll"
                          : asked[i] == "restrict"      ? "__restrict__"
                          : asked[i] == "launch_bounds" ? "__launch_bounds__"
                                                        : "float4"),
                std::string::npos)
          << line;
    }
  }
  const auto wrong = ask({"--seed", "4", "--wrong-rate", "1"}, prompt, b);
  int bad = 0;
  for (const auto& v : wrong.value["verdicts"])
    for (const auto& c : v["citations"]) {
      const int first = c["first"];
      if (first > static_cast<int>(lines.size())) {
        ++bad;
        continue;
      }
      const std::string line(lines[first - 1]);
      const auto code = line.find_first_not_of(" \t");
      if (code == std::string::npos || line.compare(code, 2, "//") == 0) ++bad;
    }
  EXPECT_EQ(bad, 1) << wrong.value.dump(1);
}

TEST(mock_model, seed_baseline_writes_a_cpu_kernel_from_the_reference_and_refuses_cuda) {
  const std::string ref = test::read_text(source_dir() / "tasks/softmax/reference.cpp");
  test::temp_dir dir;
  const auto r = run_mock(
      {}, prompt_for("seed_baseline", seed_fields(ref, "cpu x86-64-v3", "kernel.cpp")), dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = reply_json(r.out);
  expect_keys("seed_baseline", j);
  auto edits = agent::parse_edits(j["edits"].get<std::string>());
  ASSERT_TRUE(edits) << edits.error().message;
  ASSERT_EQ(edits->files.size(), 1u);
  EXPECT_EQ(edits->files[0].kind, agent::file_edit_kind::whole);
  EXPECT_EQ(edits->files[0].path, "kernel.cpp");
  const std::string& code = edits->files[0].contents;
  EXPECT_NE(code.find("extern \"C\" int lathe_launch("), std::string::npos);
  EXPECT_NE(code.find("lathe_workspace_bytes"), std::string::npos);
  EXPECT_EQ(code.find("lathe_reference"), std::string::npos);  // the screen would refuse it

  const std::string cuda_ref = test::read_text(source_dir() / "tasks/relu_cuda/reference.cpp");
  const auto c =
      run_mock({}, prompt_for("seed_baseline", seed_fields(cuda_ref, "cuda sm_90a", "kernel.cu")),
               dir.path());
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_TRUE(refused(reply_json(c.out)));
}

TEST(mock_model, rank_paths_orders_every_id_once_by_what_the_kernel_lacks) {
  const auto b = bundle(softmax_naive);
  const std::string paths =
      "p-unroll: adds loop_unroll to the inner loops (1.1x)\n"
      "p-threads: omp_parallel over rows, then simd in the exp pass (3.2x)\n"
      "p-nothing: reorders the passes\n"
      "p-restrict: restrict on the row pointers\n";
  const auto r = ask({"--seed", "9"}, prompt_for("rank_paths", rank_fields(b, "", paths)), b);
  expect_keys("rank_paths", r.value);
  std::vector<std::string> ids;
  for (const auto& o : r.value["order"]) {
    ids.push_back(o["id"]);
    EXPECT_FALSE(o["reason"].get<std::string>().empty());
  }
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids.front(), "p-threads");  // two missing features
  EXPECT_EQ(ids.back(), "p-nothing");
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 4u);
}

TEST(mock_model, abstract_card_provides_what_the_after_kernel_gained) {
  const auto before = bundle(softmax_naive);
  const auto fwd = ask(
      {}, prompt_for("rederive_forward", forward_fields(before, "omp_parallel", "lathe_launch/r")),
      before);
  auto after = agent::apply_reply(before, fwd.value["edits"].get<std::string>());
  ASSERT_TRUE(after);
  const auto r = ask(
      {},
      prompt_for("abstract_card", card_fields(before, *after,
                                              "action: add_omp_parallel\nlocus: lathe_launch/r\n"
                                              "features added: omp_parallel\nspeedup: 1.9\n")),
      before);
  expect_keys("abstract_card", r.value);
  EXPECT_EQ(r.value["provides"], json::array({"omp_parallel"}));
  EXPECT_NE(r.value["effect"].get<std::string>().find("1.9"), std::string::npos);
  EXPECT_NE(r.value["anchor"].get<std::string>().find("lathe_launch/r"), std::string::npos);
  for (const char* k : {"requires", "provides", "conflicts"})
    for (const auto& n : r.value[k]) EXPECT_NE(find_feature(n.get<std::string>()), nullptr);
}

TEST(mock_model, exit_statuses) {
  test::temp_dir dir;
  EXPECT_EQ(run_mock({"--help"}, "", dir.path()).status, 0);
  EXPECT_EQ(run_mock({"--wrong-rate", "2"}, "", dir.path()).status, 2);
  EXPECT_EQ(run_mock({"--edit-mode", "patch"}, "", dir.path()).status, 2);
  const auto no_op = run_mock({}, "hello\n", dir.path());
  EXPECT_EQ(no_op.status, 3);
  EXPECT_NE(no_op.err.find("lathe-operation"), std::string::npos);
  EXPECT_EQ(run_mock({}, "lathe-operation: polish v1\n", dir.path()).status, 3);
  EXPECT_EQ(
      run_mock({}, "lathe-operation: propose_backward v1\n## kernel\n(none)\n", dir.path()).status,
      4);
}

}  // namespace
}  // namespace lathe::mock_test
