// The mock's code through lathe's real gate: its correct backward step of a shipped CPU kernel
// passes, the same step made wrong on purpose fails with wrong_result, its repair passes again,
// its seeds pass; and every variant it writes of the shipped kernels compiles (nvcc included,
// where present). Verdicts come from builds and checks that really ran (STYLE.md).
#include <gtest/gtest.h>

#include <set>

#include "agent/edit.h"
#include "integration/gate_fixture.h"
#include "mock_fields.h"

namespace lathe::mock_test {
namespace {

namespace fs = std::filesystem;

// The gate of the integration tests, without timing: checks decide here, and no test times.
class mock_gate : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-mock-gate-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
    auto tc = gate::detect_toolchain(source_dir() / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    cfg_.tools = *tc;
    cfg_.cache_dir = dir_ / "cache";
    cfg_.tgt = gate::detect_cpu_target();
    cfg_.sandbox.worker_exe = fs::path(LATHE_BINARY_DIR) / "lathe-worker";
    cfg_.sandbox.address_space_bytes = uint64_t{4} << 30;
    cfg_.sandbox.rss_limit_bytes = uint64_t{2} << 30;
    cfg_.call_timeout_s = 20;
    cfg_.time = false;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  task load(const std::string& rel) {
    auto t = load_task(source_dir() / rel);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : task{};
  }

  evaluation eval(const task& t, const kernel_bundle& k) {
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.baseline = bundle(fs::relative(*find_kernel(t, t.baseline), source_dir()).string());
    req.prov = {"llm", "command/mock", false};
    return gate::evaluate(cfg_, req);
  }

  // The mock's reply applied to `b` (blocks mode).
  kernel_bundle answer(const std::vector<std::string>& args, const std::string& prompt,
                       const kernel_bundle& b) {
    test::temp_dir d;
    materialize(b, d.path());
    const auto r = run_mock(args, prompt, d.path());
    EXPECT_EQ(r.status, 0) << r.err;
    auto applied = agent::apply_reply(b, reply_json(r.out)["edits"].get<std::string>());
    EXPECT_TRUE(applied) << (applied ? "" : applied.error().message) << "\n" << r.out;
    return applied ? *applied : b;
  }

  bool compiles(const kernel_bundle& b, std::string& log) {
    auto out = gate::build(b, gate::resolved_isa(b, cfg_.tgt), cfg_.tools, cfg_.cache_dir,
                           gate::build_kind::kernel);
    if (!out) {
      log = out.error().message;
      return false;
    }
    log = out->log;
    return out->ok;
  }

  fs::path dir_;
  gate::gate_config cfg_;
};

TEST_F(mock_gate, the_backward_step_passes_and_the_same_step_made_wrong_fails_with_wrong_result) {
  const task t = load("tasks/softmax");
  const auto expert = bundle("tasks/softmax/kernels/expert");
  const std::string prompt = prompt_for("propose_backward", backward_fields(expert));
  const auto correct = answer({"--seed", "1"}, prompt, expert);
  const evaluation ok = eval(t, correct);
  EXPECT_EQ(ok.result, outcome::ok) << ok.message << "\n" << ok.diagnostics;
  // Only the rate changes: the same step, now wrong, in each documented way. A bound one short
  // leaves the last row with the gate's poison, which the gate names unwritten_output.
  for (const auto& [kind, verdict] :
       std::vector<std::pair<std::string, outcome>>{{"bound", outcome::unwritten_output},
                                                    {"store", outcome::wrong_result},
                                                    {"constant", outcome::wrong_result}}) {
    const auto wrong =
        answer({"--seed", "1", "--wrong-rate", "1", "--wrong-kind", kind}, prompt, expert);
    const evaluation bad = eval(t, wrong);
    EXPECT_EQ(bad.result, verdict) << kind << ": " << to_string(bad.result) << ": " << bad.message;
    if (kind != "bound") continue;
    // The mock's repair of it passes again.
    const auto fixed = answer({}, prompt_for("repair", repair_fields(wrong)), wrong);
    EXPECT_EQ(fixed.sources, correct.sources);
  }
}

TEST_F(mock_gate, seeds_written_from_the_reference_pass_and_a_wrong_seed_fails) {
  for (const char* rel : {"tests/integration/tasks/axpy", "tasks/layernorm"}) {
    const task t = load(rel);
    const std::string ref = test::read_text(source_dir() / rel / t.reference);
    const std::string prompt =
        prompt_for("seed_baseline", seed_fields(ref, "cpu x86-64-v3", "kernel.cpp"));
    kernel_bundle empty;
    empty.manifest.entry = "kernel.cpp";
    empty.manifest.files = {"kernel.cpp"};
    empty.manifest.flags = {"-O3"};
    empty.sources["kernel.cpp"] = "// placeholder\n";
    const auto seed = answer({}, prompt, empty);
    const evaluation e = eval(t, seed);
    EXPECT_EQ(e.result, outcome::ok)
        << rel << ": " << to_string(e.result) << ": " << e.message << "\n"
        << e.diagnostics;
    const auto wrong = answer({"--wrong-rate", "1", "--wrong-kind", "store"}, prompt, empty);
    EXPECT_EQ(eval(t, wrong).result, outcome::wrong_result) << rel;
  }
}

TEST_F(mock_gate, every_variant_the_mock_writes_of_the_cpu_kernels_compiles) {
  std::set<std::string> seen;
  int built = 0;
  for (const char* rel :
       {"tasks/softmax/kernels/naive", "tasks/gemm/kernels/naive", "tasks/layernorm/kernels/naive",
        "tasks/conv2d/kernels/naive", "tasks/transpose/kernels/naive"})
    for (const char* name : {"loop_unroll", "restrict", "omp_parallel", "simd"}) {
      const auto b = bundle(rel);
      test::temp_dir d;
      materialize(b, d.path());
      const auto r = run_mock(
          {}, prompt_for("rederive_forward", forward_fields(b, name, "lathe_launch")), d.path());
      const auto j = reply_json(r.out);
      if (j["edits"].get<std::string>().empty()) continue;
      auto v = agent::apply_reply(b, j["edits"].get<std::string>());
      ASSERT_TRUE(v) << v.error().message;
      if (!seen.insert(v->hash).second) continue;
      std::string log;
      EXPECT_TRUE(compiles(*v, log)) << rel << " + " << name << "\n" << log;
      ++built;
    }
  for (const char* rel :
       {"tasks/softmax/kernels/expert", "tasks/gemm/kernels/expert", "tasks/conv2d/kernels/expert"})
    for (int seed = 0; seed < 2; ++seed) {
      const auto b = bundle(rel);
      const auto v = answer({"--seed", std::to_string(seed)},
                            prompt_for("propose_backward", backward_fields(b)), b);
      if (!seen.insert(v.hash).second) continue;
      std::string log;
      EXPECT_TRUE(compiles(v, log)) << rel << " seed " << seed << "\n" << log;
      ++built;
    }
  EXPECT_GE(built, 15);
}

TEST_F(mock_gate, every_variant_the_mock_writes_of_a_cuda_kernel_compiles) {
  if (cfg_.tools.nvcc.empty()) GTEST_SKIP() << "no nvcc on this machine";
  std::vector<kernel_bundle> variants;
  const auto naive = bundle("tasks/softmax_cuda/kernels/naive");
  for (const char* name : {"loop_unroll", "read_only_load", "launch_bounds", "fast_math"})
    variants.push_back(answer(
        {}, prompt_for("rederive_forward", forward_fields(naive, name, "softmax_naive")), naive));
  // Composed mutations (several changes in one answer, block sizes retuned) compile as well.
  for (int seed = 0; seed < 3; ++seed)
    variants.push_back(answer({"--seed", std::to_string(seed), "--mutation-changes", "3"},
                              prompt_for("mutate", mutate_fields(naive)), naive));
  const auto expert = bundle("tasks/relu_cuda/kernels/expert");
  for (int seed = 0; seed < 3; ++seed)
    variants.push_back(answer({"--seed", std::to_string(seed)},
                              prompt_for("propose_backward", backward_fields(expert)), expert));
  std::set<std::string> seen;
  for (const auto& v : variants) {
    if (!seen.insert(v.hash).second) continue;
    std::string log;
    EXPECT_TRUE(compiles(v, log)) << log;
  }
  EXPECT_GE(seen.size(), 8u);
}

}  // namespace
}  // namespace lathe::mock_test
