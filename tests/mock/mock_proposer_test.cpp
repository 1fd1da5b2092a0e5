// The mock behind the real LLM proposer (agent/llm_proposer.h): the shipped prompts/ rendered
// with lathe's own field text, sent through the real `command` provider, answered by
// lathe-mock-model, and believed only after the proposer's checks (schema, registry names, edits
// applied exactly, citations verified). Faults the mock makes on purpose are repaired within the
// proposer's bound, because the mock answers a repair round without faults.
#include <gtest/gtest.h>

#include "agent/llm_proposer.h"
#include "spec/task_file.h"
#include "mock_run.h"

namespace lathe::mock_test {
namespace {

using agent::llm_proposer;

const agent::prompt_library& prompts() {
  static const agent::prompt_library lib = [] {
    auto l = agent::prompt_library::load(source_dir() / "prompts");
    if (!l) throw std::runtime_error(l.error().message);
    return *l;
  }();
  return lib;
}

const task& load(const std::string& rel) {
  static std::map<std::string, task> tasks;
  auto it = tasks.find(rel);
  if (it == tasks.end()) {
    auto t = load_task(source_dir() / rel);
    if (!t) throw std::runtime_error(t.error().message);
    it = tasks.emplace(rel, *t).first;
  }
  return it->second;
}

llm::command_provider mock(std::vector<std::string> args) {
  llm::command_config cfg;
  cfg.name = "mock";
  cfg.argv = {mock_binary().string()};
  cfg.argv.insert(cfg.argv.end(), args.begin(), args.end());
  cfg.timeout_seconds = 60;
  return llm::command_provider(cfg);
}

agent::backward_request backward(const kernel_bundle& k) {
  agent::backward_request r;
  r.t = &load("tasks/softmax");
  r.kernel = k;
  r.features = {{"lathe_launch/r", "omp_parallel", {{"schedule", "static"}}},
                {"exp_and_sum", "simd", {{"width", "8"}}}};
  r.target = "platform: cpu\narchitecture: x86-64-v3";
  return r;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(mock_with_llm_proposer, backward_step_from_the_shipped_prompt) {
  const auto expert = bundle("tasks/softmax/kernels/expert");
  for (const char* mode : {"blocks", "files"}) {
    auto model = mock({"--seed", "1", "--edit-mode", mode});
    llm_proposer p(model, prompts());
    auto got = p.propose_backward(backward(expert));
    ASSERT_TRUE(got) << mode << ": " << got.error().message;
    EXPECT_EQ(got->features_removed, std::vector<std::string>{"omp_parallel"});
    EXPECT_EQ(got->locus, "lathe_launch/r");
    EXPECT_FALSE(has(got->kernel.sources.at("kernel.cpp"), "#pragma omp"));
    EXPECT_EQ(got->kernel.manifest.flags, std::vector<std::string>{"-O3"});
    EXPECT_EQ(to_string(got->prov), "llm:command/mock");
    EXPECT_EQ(got->calls, 1);
  }
}

// A text-only model: the command runs in an empty directory, so the mock reads the kernel from the
// prompt (kernel_text's manifest lines and `=== FILE` sections) and its edits must still apply.
class text_only : public llm::provider {
 public:
  explicit text_only(llm::command_provider& p) : p_(p) {}
  std::string name() const override { return p_.name(); }
  llm::call_result call(const llm::request& r, const llm::cancel_token* c) override {
    return p_.call(r, c);
  }

 private:
  llm::command_provider& p_;
};

TEST(mock_with_llm_proposer, blocks_mode_reads_the_kernel_from_the_prompt) {
  const auto expert = bundle("tasks/relu_cuda/kernels/expert");
  for (int seed = 0; seed < 4; ++seed) {
    auto command = mock({"--seed", std::to_string(seed)});
    text_only model(command);
    agent::backward_request r;
    r.t = &load("tasks/relu_cuda");
    r.kernel = expert;
    r.features = {{"relu_vec/u", "loop_unroll", {}},
                  {"relu_vec", "restrict", {}},
                  {"relu_vec", "launch_bounds", {}}};
    auto got = llm_proposer(model, prompts()).propose_backward(r);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->calls, 1);
    EXPECT_NE(got->kernel.hash, expert.hash);
  }
  // The manifest's flags were read from the prompt: removing OpenMP also drops -fopenmp.
  auto command = mock({"--seed", "1"});
  text_only model(command);
  auto got = llm_proposer(model, prompts())
                 .propose_backward(backward(bundle("tasks/softmax/kernels/expert")));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->kernel.manifest.flags, std::vector<std::string>{"-O3"});
}

TEST(mock_with_llm_proposer, faults_are_repaired_within_the_bound) {
  const auto expert = bundle("tasks/softmax/kernels/expert");
  for (const char* fault : {"--bad-edit-rate", "--invalid-rate"}) {
    auto model = mock({"--seed", "1", fault, "1"});
    llm_proposer p(model, prompts());
    auto got = p.propose_backward(backward(expert));
    ASSERT_TRUE(got) << fault << ": " << got.error().message;
    EXPECT_EQ(got->calls, 2) << fault;  // the faulty answer, then the repair round
    EXPECT_FALSE(has(got->kernel.sources.at("kernel.cpp"), "#pragma omp"));
  }
  // Without repair rounds the fault is what the proposer reports.
  agent::llm_options none;
  none.max_repairs = 0;
  auto bad_edit = mock({"--seed", "1", "--bad-edit-rate", "1"});
  auto e = llm_proposer(bad_edit, prompts(), none).propose_backward(backward(expert));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().kind, agent::failure_kind::edit_not_applied);
  auto invalid = mock({"--seed", "1", "--invalid-rate", "1"});
  auto i = llm_proposer(invalid, prompts(), none).propose_backward(backward(expert));
  ASSERT_FALSE(i);
  EXPECT_EQ(i.error().kind, agent::failure_kind::invalid_reply);
}

TEST(mock_with_llm_proposer, a_wrong_answer_is_believed_until_the_gate_sees_it) {
  // The proposer never gates (mock_gate_test does): the wrong kernel comes back as a proposal.
  const auto expert = bundle("tasks/softmax/kernels/expert");
  auto model = mock({"--seed", "1", "--wrong-rate", "1", "--wrong-kind", "store"});
  auto got = llm_proposer(model, prompts()).propose_backward(backward(expert));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(has(got->kernel.sources.at("kernel.cpp"), "* 1.0625f"));
}

TEST(mock_with_llm_proposer, audits_pass_and_a_wrong_citation_is_demoted) {
  agent::audit_request r;
  r.t = &load("tasks/relu_cuda");
  r.kernel = bundle("tasks/relu_cuda/kernels/expert");
  r.features = {"loop_unroll", "restrict", "launch_bounds", "vector_access", "wgmma"};
  auto right = mock({"--seed", "3"});
  auto got = llm_proposer(right, prompts()).audit_features(r);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(got->passed()) << (got->demoted.empty() ? "" : got->demoted.front());
  ASSERT_EQ(got->verdicts.size(), 5u);
  EXPECT_EQ(got->verdicts[4].status, agent::presence::absent);
  auto wrong = mock({"--seed", "3", "--wrong-rate", "1"});
  auto demoted = llm_proposer(wrong, prompts()).audit_features(r);
  ASSERT_TRUE(demoted) << demoted.error().message;
  EXPECT_FALSE(demoted->passed());
  EXPECT_EQ(demoted->demoted.size(), 1u);
}

TEST(mock_with_llm_proposer, every_other_operation_answers_through_its_template) {
  const task& softmax = load("tasks/softmax");
  const auto naive = bundle("tasks/softmax/kernels/naive");
  auto model = mock({"--seed", "2"});
  llm_proposer p(model, prompts());

  agent::forward_request f;
  f.t = &softmax;
  f.predecessor = naive;
  f.restore = {"lathe_launch/r", "omp_parallel", {}};
  f.action = "remove_omp_parallel";
  auto fwd = p.rederive_forward(f);
  ASSERT_TRUE(fwd) << fwd.error().message;
  EXPECT_EQ(fwd->features_added, std::vector<std::string>{"omp_parallel"});
  EXPECT_TRUE(has(fwd->kernel.sources.at("kernel.cpp"), "#pragma omp parallel for"));

  agent::card_request c;
  c.t = &softmax;
  c.before = naive;
  c.after = fwd->kernel;
  c.step.action = "add_omp_parallel";
  c.step.locus = "lathe_launch/r";
  c.step.added = {{"lathe_launch/r", "omp_parallel", {}}};
  c.step.speedup = 1.9;
  c.step.edit = fwd->edits;
  c.target = "x86-64-v3";
  auto card = p.abstract_card(c);
  ASSERT_TRUE(card) << card.error().message;
  EXPECT_EQ(card->provides_features, std::vector<std::string>{"omp_parallel"});

  agent::materialize_request m;
  m.t = &softmax;
  m.kernel = naive;
  m.cards = {*card};
  auto mat = p.materialize(m);
  ASSERT_TRUE(mat) << mat.error().message;
  EXPECT_EQ(mat->features_added, std::vector<std::string>{"omp_parallel"});

  agent::mutate_request mu;
  mu.t = &load("tasks/relu_cuda");
  mu.parent = bundle("tasks/relu_cuda/kernels/expert");
  auto mut = p.mutate(mu);
  ASSERT_TRUE(mut) << mut.error().message;
  EXPECT_NE(mut->kernel.hash, mu.parent.hash);

  agent::seed_request s;
  s.t = &softmax;
  s.reference_source = test::read_text(source_dir() / "tasks/softmax/reference.cpp");
  auto seed = p.seed_baseline(s);
  ASSERT_TRUE(seed) << seed.error().message;
  EXPECT_TRUE(has(seed->kernel.sources.at(seed->kernel.manifest.entry), "lathe_launch"));

  agent::rank_request rk;
  rk.t = &softmax;
  rk.kernel = naive;
  rk.paths = {
      {"a", "reorders the passes"}, {"b", "omp_parallel over rows"}, {"c", "simd and restrict"}};
  auto ranked = p.rank_paths(rk);
  ASSERT_TRUE(ranked) << ranked.error().message;
  EXPECT_EQ(ranked->order, (std::vector<std::string>{"c", "b", "a"}));
}

TEST(mock_with_llm_proposer, a_refusal_ends_the_operation_without_a_kernel) {
  // Nothing the mock can remove from the naive axpy: it refuses every round (docs/proposer.md,
  // "Refusals"); the proposer reports a declined step at once, without repair rounds.
  agent::backward_request r;
  r.t = &load("tests/integration/tasks/axpy");
  r.kernel = bundle("tests/integration/tasks/axpy/kernels/naive.cpp");
  r.features = {{"lathe_launch/i", "simd", {}}};
  auto model = mock({});
  auto got = llm_proposer(model, prompts()).propose_backward(r);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().kind, agent::failure_kind::refused)
      << agent::to_string(got.error().kind) << ": " << got.error().message;
  EXPECT_EQ(got.error().calls, 1);
  EXPECT_NE(got.error().message.find("refused: "), std::string::npos) << got.error().message;
}

TEST(mock_with_llm_proposer, repair_undoes_the_mocks_own_slip) {
  const auto expert = bundle("tasks/softmax/kernels/expert");
  auto wrong = mock({"--seed", "1", "--wrong-rate", "1", "--wrong-kind", "bound"});
  auto slipped = llm_proposer(wrong, prompts()).propose_backward(backward(expert));
  ASSERT_TRUE(slipped) << slipped.error().message;
  auto right = mock({"--seed", "1"});
  llm_proposer p(right, prompts());
  auto clean = p.propose_backward(backward(expert));
  ASSERT_TRUE(clean);
  agent::repair_request r;
  r.t = &load("tasks/softmax");
  r.failed = slipped->kernel;
  r.goal = "remove omp_parallel at lathe_launch/r";
  r.verdict = outcome::unwritten_output;
  r.diagnostics = "37 elements never written in output 'Y', shape set 'tiny'";
  auto fixed = p.repair(r);
  ASSERT_TRUE(fixed) << fixed.error().message;
  EXPECT_EQ(fixed->kernel.sources, clean->kernel.sources);
}

}  // namespace
}  // namespace lathe::mock_test
