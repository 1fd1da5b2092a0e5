// The whole proposer path, end to end, into the real gate (issue 4, "Proposer tests whose replies
// are really built and gated"): a model answers through a provider, the call is metered (budget
// ledger, call record in a store), the LLM proposer checks the reply and applies its edits, and
// the gate builds and checks the kernel it produced. The verdict comes from the gate, never from
// the test: the same step made wrong — by the mock model's own fault, or by one character of a
// scripted reply — must flip it.
#include <gtest/gtest.h>

#include "agent/llm_proposer.h"
#include "agent/scripted.h"
#include "gate/gate.h"
#include "gate/host_target.h"
#include "spec/task_file.h"
#include "llm/call_log.h"
#include "llm/metered.h"
#include "mock_run.h"
#include "store/store.h"

namespace lathe::mock_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const agent::prompt_library& prompts() {
  static const agent::prompt_library lib = [] {
    auto l = agent::prompt_library::load(source_dir() / "prompts");
    if (!l) throw std::runtime_error(l.error().message);
    return *l;
  }();
  return lib;
}

class proposer_gate : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LATHE_LOCK_DIR", (dir_.path() / "locks").c_str(), 1);
    auto tc = gate::detect_toolchain(source_dir() / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    cfg_.tools = *tc;
    cfg_.cache_dir = dir_.path() / "cache";
    cfg_.tgt = gate::detect_cpu_target();
    cfg_.sandbox.worker_exe = fs::path(LATHE_BINARY_DIR) / "lathe-worker";
    cfg_.sandbox.address_space_bytes = uint64_t{4} << 30;
    cfg_.sandbox.rss_limit_bytes = uint64_t{2} << 30;
    cfg_.call_timeout_s = 20;
    cfg_.time = false;  // the checks decide here; no test times
    auto db = store::open(dir_.path() / "lathe.db");
    ASSERT_TRUE(db) << db.error().message;
    db_.emplace(std::move(*db));
  }

  task load(const std::string& rel) {
    auto t = load_task(source_dir() / rel);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : task{};
  }
  kernel_bundle bundle(const std::string& rel) {
    auto b = load_bundle(source_dir() / rel);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    return b ? *b : kernel_bundle{};
  }
  outcome gate(const task& t, const kernel_bundle& k) {
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.baseline = *load_bundle(*find_kernel(t, t.baseline));
    req.prov = {"llm", "test", false};
    const evaluation e = gate::evaluate(cfg_, req);
    last_message_ = e.message;
    return e.result;
  }

  // The mock behind the command provider, metered into `ledger` and this test's store.
  std::unique_ptr<llm::metered_provider> mock(const std::vector<std::string>& args,
                                              llm::ledger& ledger, llm::call_log& log) {
    llm::command_config c;
    c.name = "mock";
    c.argv = {mock_binary().string()};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.timeout_seconds = 60;
    llm::meter m;
    m.budget = &ledger;
    m.log = &log;
    m.max_seconds = 60;
    m.command = true;
    return std::make_unique<llm::metered_provider>(std::make_unique<llm::command_provider>(c), m);
  }

  test::temp_dir dir_;
  gate::gate_config cfg_;
  std::optional<lathe::store> db_;
  std::string last_message_;
};

agent::backward_request softmax_backward(const task& t, const kernel_bundle& expert) {
  agent::backward_request r;
  r.t = &t;
  r.kernel = expert;
  r.features = {{"lathe_launch/r", "omp_parallel", {{"schedule", "static"}}}};
  r.target = "platform: cpu";
  return r;
}

TEST_F(proposer_gate, the_mocks_backward_step_is_metered_recorded_and_gated_and_its_fault_flips_the_verdict) {
  const task t = load("tasks/softmax");
  const kernel_bundle expert = bundle("tasks/softmax/kernels/expert");
  llm::limits lim;
  lim.calls = 4;
  llm::ledger ledger(lim);
  llm::call_log log(*db_, {std::string("run-e2e"), "command", "mock", std::nullopt}, {});

  auto right = mock({"--seed", "5"}, ledger, log);
  auto good = agent::llm_proposer(*right, prompts()).propose_backward(softmax_backward(t, expert));
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->features_removed, std::vector<std::string>{"omp_parallel"});
  EXPECT_NE(good->kernel.hash, expert.hash);
  EXPECT_EQ(gate(t, good->kernel), outcome::ok) << last_message_;

  // The same step, made wrong by the mock (a scaled store): the edits still apply — the proposer
  // cannot know — and only the gate refuses it.
  auto wrong = mock({"--seed", "5", "--wrong-rate", "1", "--wrong-kind", "store"}, ledger, log);
  auto bad = agent::llm_proposer(*wrong, prompts()).propose_backward(softmax_backward(t, expert));
  ASSERT_TRUE(bad) << bad.error().message;
  EXPECT_NE(bad->kernel.hash, good->kernel.hash);
  EXPECT_EQ(gate(t, bad->kernel), outcome::wrong_result) << last_message_;

  // Two calls, both reserved and committed in the ledger, both stored with their template.
  EXPECT_EQ(ledger.spent().calls, 2);
  EXPECT_EQ(ledger.actions_in_flight(), 0);
  auto calls = db_->llm_calls(std::string("run-e2e"));
  ASSERT_TRUE(calls) << calls.error().message;
  ASSERT_EQ(calls->size(), 2u);
  for (const auto& c : *calls) {
    EXPECT_EQ(c.template_id, "propose_backward");
    EXPECT_EQ(c.template_version, 2);  // the newest propose_backward template
    EXPECT_EQ(c.error_kind, "none");
    ASSERT_TRUE(c.reply);
    EXPECT_NE(c.reply->find("omp_parallel"), std::string::npos);
  }

  // The ledger's call limit holds: two more calls fit, the fifth is refused before it is made.
  auto third = mock({"--seed", "6"}, ledger, log);
  agent::llm_proposer p3(*third, prompts());
  ASSERT_TRUE(p3.propose_backward(softmax_backward(t, expert)));
  ASSERT_TRUE(p3.propose_backward(softmax_backward(t, expert)));
  auto refused = p3.propose_backward(softmax_backward(t, expert));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, agent::failure_kind::budget) << refused.error().message;
  EXPECT_EQ(ledger.spent().calls, 4);
}

// A scripted reply to rederive_forward on the naive axpy: `__restrict__` on its pointer locals.
json restrict_reply(bool flip) {
  std::string edits =
      "@@@ FILE naive.cpp\n"
      "<<<<<<< SEARCH\n"
      "  const float* x = static_cast<const float*>(a->inputs[0].data);\n"
      "  const float* y = static_cast<const float*>(a->inputs[1].data);\n"
      "  float* z = static_cast<float*>(a->outputs[0].data);\n"
      "=======\n"
      "  const float* __restrict__ x = static_cast<const float*>(a->inputs[0].data);\n"
      "  const float* __restrict__ y = static_cast<const float*>(a->inputs[1].data);\n"
      "  float* __restrict__ z = static_cast<float*>(a->outputs[0].data);\n"
      ">>>>>>> REPLACE\n";
  // The flip: one character of the computation ('+' -> '-') in the same reply.
  if (flip)
    edits +=
        "<<<<<<< SEARCH\n"
        "  for (int64_t i = 0; i < n; ++i) z[i] = s * x[i] + y[i];\n"
        "=======\n"
        "  for (int64_t i = 0; i < n; ++i) z[i] = s * x[i] - y[i];\n"
        ">>>>>>> REPLACE\n";
  edits += "@@@ END\n";
  return {{"action", "add_restrict"},
          {"locus", "lathe_launch"},
          {"adds", {"restrict"}},
          {"rationale", "the three pointers never alias (the ABI says tensors do not)"},
          {"edits", edits}};
}

TEST_F(proposer_gate, flipping_one_character_of_a_scripted_reply_flips_the_gates_verdict) {
  const task t = load("tests/integration/tasks/axpy");
  const kernel_bundle naive = bundle("tests/integration/tasks/axpy/kernels/naive.cpp");
  agent::forward_request r;
  r.t = &t;
  r.predecessor = naive;
  r.restore = {"lathe_launch", "restrict", {}};
  r.target = "platform: cpu";
  outcome verdict[2];
  for (bool flip : {false, true}) {
    agent::test::scripted model;
    model.say(restrict_reply(flip));
    auto got = agent::llm_proposer(model, prompts()).rederive_forward(r);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->features_added, std::vector<std::string>{"restrict"});
    EXPECT_NE(got->kernel.sources.begin()->second.find("float* __restrict__ z"), std::string::npos);
    verdict[flip] = gate(t, got->kernel);
  }
  EXPECT_EQ(verdict[0], outcome::ok) << last_message_;
  EXPECT_EQ(verdict[1], outcome::wrong_result) << last_message_;
}

}  // namespace
}  // namespace lathe::mock_test
