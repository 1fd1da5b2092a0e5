// PyTorch problem files as tasks (spec/problem.h), on CPU PyTorch: KernelBench and KLineage
// formats and a KLineage definition imported, their trials drawn by the Python worker through
// shared memory, and hand-written candidates (correct and wrong) gated against them.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "spec/problem.h"
#include "spec/problem_launch.h"
#include "gate/cpu/bubblewrap.h"
#include "gate/trial.h"
#include "gate_fixture.h"
#include "lathe_cli_json.h"
#include "lathe_cli_run.h"

namespace fs = std::filesystem;

namespace lathe::testing {
namespace {

fs::path problems() { return source_dir() / "tests/problems"; }

class problem_test : public gate_env {
 protected:
  task import(const std::string& file) {
    auto t = load_task(problems() / file);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : task{};
  }
  // The inputs and the fp64 reference of one trial, drawn by the problem's worker.
  gate::trial_data trial(const task& t, const gate::trial_spec& spec) {
    auto l = gate::make_layout(t, t.shapes.front());
    EXPECT_TRUE(l);
    auto o = gate::problem_oracle::shared(t.problem, t.plat);
    EXPECT_TRUE(o) << (o ? "" : o.error().message);
    auto d = gate::make_trial(t, *l, gate::reference::of_problem(*o), spec);
    EXPECT_TRUE(d) << (d ? "" : d.error().message);
    return d ? *d : gate::trial_data{};
  }
  std::vector<float> input_f32(const task& t, const gate::trial_data& d, size_t i) {
    auto l = gate::make_layout(t, t.shapes.front());
    std::vector<float> v(l->inputs[i].elements);
    std::memcpy(v.data(), d.inputs.data() + l->input_offset[i], v.size() * sizeof(float));
    return v;
  }
  void expect_outcome(const task& t, const std::string& cand) {
    const fs::path file = problems() / "candidates" / cand;
    gate::gate_config cfg = cfg_;
    cfg.time = false;
    gate::gate_request req;
    req.t = &t;
    req.candidate = kernel(file);  // no baseline: checks time nothing
    req.prov = {"human", "test", false};
    evaluation e = gate::evaluate(cfg, req);
    EXPECT_EQ(to_string(e.result), expected_outcome(file)) << cand << ": " << e.message;
    EXPECT_NE(e.reference_runtime.find("torch "), std::string::npos) << e.reference_runtime;
    if (gate::find_bubblewrap().usable)  // the problem's code ran in the sandbox, and the record says so
      EXPECT_NE(e.reference_runtime.find("bubblewrap"), std::string::npos) << e.reference_runtime;
  }
};

TEST_F(problem_test, kernelbench_inputs_then_parameters_in_state_dict_order_init_numbers_as_scalars) {
  task t = import("kb_linear_gelu.py");
  EXPECT_EQ(t.name, "kb_linear_gelu");
  EXPECT_EQ(t.problem_format, problem_format::kernelbench);
  ASSERT_EQ(t.inputs.size(), 3u);
  EXPECT_EQ(t.inputs[0].name, "x");
  EXPECT_EQ(t.inputs[1].name, "fc_weight");
  EXPECT_EQ(t.inputs[2].name, "fc_bias");
  ASSERT_EQ(t.inputs[1].shape.size(), 2u);
  EXPECT_EQ(t.inputs[1].shape[0].value, 16);  // nn.Linear(32, 16): weight [16, 32]
  EXPECT_EQ(t.inputs[1].shape[1].value, 32);
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].type, dtype::f32);
  ASSERT_EQ(t.scalars.size(), 2u);
  EXPECT_EQ(t.scalars[0].name, "in_features");
  EXPECT_EQ(t.scalars[0].value, 32);
  EXPECT_EQ(t.scalars[1].value, 16);
  EXPECT_TRUE(t.baseline.empty());   // eager PyTorch: no ABI kernel
  EXPECT_TRUE(t.perturb.scale.empty() && t.perturb.shift.empty());  // none declared, none applied
  EXPECT_NE(t.problem_runtime.find("torch "), std::string::npos);
}

TEST_F(problem_test, trials_come_through_shared_memory_seeded_and_the_reference_matches_them) {
  task t = import("kb_scale_relu.py");
  ASSERT_EQ(t.scalars.size(), 1u);
  EXPECT_EQ(t.scalars[0].name, "alpha");
  const auto a = trial(t, {7, 1.0, 0.0});
  const auto b = trial(t, {7, 1.0, 0.0});
  const auto c = trial(t, {8, 1.0, 0.0});
  EXPECT_EQ(a.inputs, b.inputs);  // the problem's seed, not a fresh draw
  EXPECT_NE(a.inputs, c.inputs);
  const std::vector<float> x = input_f32(t, a, 0);
  ASSERT_EQ(a.ref.size(), 1u);
  ASSERT_EQ(a.ref[0].size(), x.size());
  size_t positive = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_DOUBLE_EQ(a.ref[0][i], std::max(0.0, static_cast<double>(x[i])) * 0.5) << i;
    positive += x[i] > 0;
  }
  EXPECT_GT(positive, x.size() / 4);  // randn: about half
}

TEST_F(problem_test, perturbations_apply_only_where_declared) {
  task t = import("kl_rmsnorm.py");
  EXPECT_EQ(t.problem_format, problem_format::klineage);
  EXPECT_EQ(t.perturb.scale, (std::vector<double>{0.01, 100.0}));
  const auto plain = trial(t, {3, 1.0, 0.0});
  const auto scaled = trial(t, {3, 100.0, 0.0});
  const auto x0 = input_f32(t, plain, 0), x1 = input_f32(t, scaled, 0);
  for (size_t i = 0; i < x0.size(); i += 97) EXPECT_FLOAT_EQ(x1[i], x0[i] * 100.0f) << i;
  // The trial sequence: the declared scales only (no shift was declared).
  std::set<double> scales;
  for (uint32_t i = 0; i < 6; ++i) {
    const auto s = gate::trial_for(t, 1, i);
    scales.insert(s.scale);
    EXPECT_EQ(s.shift, 0.0);
  }
  EXPECT_EQ(scales, (std::set<double>{1.0, 0.01, 100.0}));
  // A wrapper's [perturbations] are the task's, whatever the problem file says.
  task w = load(problems() / "scale_relu");
  EXPECT_EQ(w.name, "scale_relu");
  EXPECT_EQ(w.role, task_role::heldout);
  EXPECT_EQ(w.baseline, "naive");
  EXPECT_EQ(w.perturb.scale, (std::vector<double>{4.0}));
  EXPECT_EQ(w.perturb.shift, (std::vector<double>{-1.0}));
}

TEST_F(problem_test, klineage_definition_names_its_outputs) {
  task t = import("kl_softmax.json");
  EXPECT_EQ(t.problem_format, problem_format::klineage_definition);
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].shape[0].value, 8);
  EXPECT_EQ(t.inputs[0].shape[1].value, 100);
  ASSERT_EQ(t.outputs.size(), 1u);
  EXPECT_EQ(t.outputs[0].name, "y");
  const auto d = trial(t, {1, 1.0, 0.0});
  for (size_t r = 0; r < 8; ++r) {
    double s = 0;
    for (size_t c = 0; c < 100; ++c) s += d.ref[0][r * 100 + c];
    EXPECT_NEAR(s, 1.0, 1e-12) << "row " << r;  // computed in float64
  }
}

TEST_F(problem_test, hand_written_candidates_get_their_outcomes) {
  const task relu = import("kb_scale_relu.py");
  for (const char* c : {"scale_relu_ok.cpp", "scale_relu_noalpha.cpp", "scale_relu_half.cpp"})
    expect_outcome(relu, c);
  const task gelu = import("kb_linear_gelu.py");
  for (const char* c : {"linear_gelu_ok.cpp", "linear_gelu_transposed.cpp"}) expect_outcome(gelu, c);
  const task rms = import("kl_rmsnorm.py");
  for (const char* c : {"rmsnorm_ok.cpp", "rmsnorm_big_eps.cpp"}) expect_outcome(rms, c);
  const task sm = import("kl_softmax.json");
  for (const char* c : {"softmax_ok.cpp", "softmax_unnormalized.cpp"}) expect_outcome(sm, c);
}

TEST_F(problem_test, the_absolute_tolerance_scales_with_the_outputs_magnitude) {
  task t = import("kl_row_sum.py");
  ASSERT_TRUE(t.compare.tol.atol);
  // RMS of a sum of 4096 unit normals is 64: atol = fp32 rtol (1e-4) x 64, within sampling error.
  EXPECT_GT(*t.compare.tol.atol, 1e-4 * 64 * 0.8);
  EXPECT_LT(*t.compare.tol.atol, 1e-4 * 64 * 1.2);
  EXPECT_FALSE(t.compare.tol.rtol);  // the dtype's
  for (const char* c : {"row_sum_f32.cpp", "row_sum_skip_tail.cpp"}) expect_outcome(t, c);
  // Small outputs keep the dtype's atol: softmax rows of 100 sum to 1 (RMS about 0.01), and
  // 1e-4 x 0.01 is below the fp32 default (1e-5), which stays.
  task sm = import("kl_softmax.json");
  EXPECT_FALSE(sm.compare.tol.atol);
}

TEST_F(problem_test, topk_indices_are_checked_against_the_input_not_torch) {
  // LATHE_COMPARISON = "topk": torch.topk's values per row as multisets, its int64 indices
  // checked against x. The inputs tie everywhere, so the right candidate's tie-breaking differs
  // from torch's; one that names a tied column twice is refused.
  task t = import("kb_topk.py");
  EXPECT_EQ(t.compare.kind, comparison_kind::topk);
  ASSERT_EQ(t.outputs.size(), 2u);
  EXPECT_EQ(t.outputs[1].type, dtype::i64);
  for (const char* c : {"topk_ok.cpp", "topk_dup_index.cpp"}) expect_outcome(t, c);
}

TEST_F(problem_test, problems_that_cannot_be_imported_say_why) {
  auto bad = load_task(problems() / "kb_bad_init.py");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("mode"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("neither a number nor a tuple"), std::string::npos);
  auto raises = load_task(problems() / "kl_raises.py");
  ASSERT_FALSE(raises);
  EXPECT_NE(raises.error().message.find("broken on purpose"), std::string::npos) << raises.error().message;
}

// A lathe killed with SIGKILL never removes its oracle's folder; the next oracle start removes
// such a folder once its process is gone (spec/problem_launch.h reclaim_oracle_folders), and
// leaves the folders of a lathe that still runs.
TEST_F(problem_test, the_next_oracle_start_reclaims_a_dead_lathes_folder_not_a_live_ones) {
  char tmpl[] = "/tmp/lathe-oracle-tmp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path tmp = tmpl;
  fs::permissions(tmp, fs::perms::all, fs::perm_options::add);  // as /tmp: the oracle's own user makes its folder below
  const pid_t child = fork();
  if (child == 0) _exit(0);
  const auto child_start = gate::process_start(child);  // a zombie until reaped: still there
  ASSERT_TRUE(child_start);
  int st = 0;
  waitpid(child, &st, 0);
  const fs::path dead = tmp / (gate::oracle_folder_prefix(child, *child_start) + "Ab12cD");
  const fs::path live = tmp / (gate::oracle_folder_prefix(getpid(), *gate::process_start(getpid())) + "Ef34gH");
  for (const auto& f : {dead, live}) {
    fs::create_directories(f);
    std::ofstream(f / "torch_probe.tmp") << "left";
  }
  const fs::path problem = tmp / "kb_scale_relu_copy.py";  // a path no oracle of this process has
  fs::copy_file(problems() / "kb_scale_relu.py", problem);
  const char* was = std::getenv("TMPDIR");
  const std::string saved = was ? was : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  auto t = load_task(problem);
  if (was) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(fs::exists(dead)) << "a dead lathe's oracle folder survived the next oracle start";
  EXPECT_TRUE(fs::exists(live / "torch_probe.tmp")) << "a live lathe's oracle folder was removed";
  std::error_code ec;
  fs::remove_all(tmp, ec);  // the new oracle's folder too: that oracle is not asked again
}

// A problem's code is not trusted (`lathe synth` mines modules from trees nobody reviewed): its
// process runs in the one sandbox. The problem below looks around while it is imported and
// reports what it found as its init numbers; the test also checks what it could not leave behind.
TEST_F(problem_test, a_hostile_problem_runs_in_the_sandbox_and_reaches_nothing_of_lathes) {
  if (!gate::find_bubblewrap().usable) GTEST_SKIP() << gate::find_bubblewrap().why;
  char tmpl[] = "/tmp/lathe-hostile-problem-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const fs::path secret = dir / "secret.txt", outside = dir / "written.txt", file = dir / "kb_nosy.py";
  { std::ofstream(secret) << "the root-only secret\n"; }
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  setenv("LATHE_TEST_SECRET", "sk-not-for-problems", 1);
  std::ofstream(file) << "import os, socket, torch\n"
                         "def seen():\n"
                         "    def tried(f):\n"
                         "        try:\n"
                         "            f()\n"
                         "            return 1\n"
                         "        except Exception:\n"
                         "            return 0\n"
                         "    return [tried(lambda: open('" << secret.string() << "').read()),\n"
                         "            tried(lambda: open('" << outside.string() << "', 'w').write('x')),\n"
                         "            int('LATHE_TEST_SECRET' in os.environ),\n"
                         "            tried(lambda: socket.create_connection(('127.0.0.1', " << ntohs(addr.sin_port) << "), timeout=2)),\n"
                         "            int(os.path.exists('/proc/" << getpid() << "')),\n"
                         "            int(__file__ == '" << file.string() << "')]\n"
                         "SEEN = seen()\n"
                         "class Model(torch.nn.Module):\n"
                         "    def __init__(self, secret, wrote, env, network, lathe, own_path):\n"
                         "        super().__init__()\n"
                         "    def forward(self, x):\n"
                         "        return x * 2\n"
                         "def get_inputs():\n"
                         "    return [torch.randn(4)]\n"
                         "def get_init_inputs():\n"
                         "    return SEEN\n";
  auto t = load_task(file);
  unsetenv("LATHE_TEST_SECRET");
  close(listener);
  ASSERT_TRUE(t) << t.error().message;
  std::map<std::string, double> seen;
  for (const auto& s : t->scalars) seen[s.name] = s.value;
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen["secret"], 0) << "read a root-only file";
  EXPECT_EQ(seen["wrote"], 0) << "wrote beside the problem";
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_EQ(seen["env"], 0) << "saw lathe's environment";
  EXPECT_EQ(seen["network"], 0) << "reached a listener on the host's loopback";
  EXPECT_EQ(seen["lathe"], 0) << "saw lathe's process";
  EXPECT_EQ(seen["own_path"], 1) << "the problem is seen at its own path";
  auto o = gate::problem_oracle::shared(file, platform::cpu);
  ASSERT_TRUE(o);
  EXPECT_NE((*o)->sandbox().find("bubblewrap"), std::string::npos) << (*o)->sandbox();
  fs::remove_all(dir);
}

// A bare problem given a Python kernel that asks for the GPU (inline CUDA) is imported on CUDA, as
// for a .cu kernel (cli problem_platform_of, issue 48): without a device, said plainly at import.
TEST(problem_cli, a_python_kernel_that_asks_for_the_gpu_imports_a_bare_problem_on_cuda) {
  if (fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "a device here: tests/gpu/modelnew_gpu_test runs it";
  const fs::path swish = source_dir() / "tests/gpu/cuda_swish";
  auto r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (swish / "swish.py").string() + " " +
                     (swish / "candidates/swish_inline_cuda.py").string() + " --no-time");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("sees no CUDA device: a CUDA problem"), std::string::npos) << r.err;
  // A torch-only ModelNew asks for nothing: the same bare problem runs on the CPU.
  r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (swish / "swish.py").string() + " " +
                (swish / "candidates/swish_wrong.py").string() + " --no-time --seeds 3");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("wrong_result"), std::string::npos) << r.out;
  // A torch-only ModelNew that only names torch.cuda (as torch.nn's rnn.py does, which lathe synth
  // inlines into its RNN problem) is taken for a GPU kernel; --platform cpu runs the bare problem
  // on the CPU whatever the kernel names.
  const fs::path named = "/tmp/lathe-problem-cli-names-cuda.py";
  {
    std::ifstream in(swish / "candidates/swish_torch.py");
    std::ofstream out(named);
    out << in.rdbuf() << "\n\nON_GPU = torch.cuda.is_available  # named, never called\n";
  }
  r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (swish / "swish.py").string() + " " +
                named.string() + " --no-time");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--platform cpu runs a bare problem file on the CPU"), std::string::npos) << r.err;
  r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (swish / "swish.py").string() + " " +
                named.string() + " --platform cpu --no-time");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  fs::remove(named);
  fs::remove_all("/tmp/lathe-problem-cli-ws");
}

TEST(problem_cli, eval_decides_against_a_wrapped_baseline_and_times_eager_pytorch_in_comparability) {
  const fs::path dir = problems();
  unsetenv("LATHE_LOCK_DIR");  // the fixture's, removed with its directory
  // Wrapped: a baseline kernel, so decision mode gives a paired ratio.
  auto r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (dir / "scale_relu").string() + " " +
                     (dir / "candidates/scale_relu_ok.cpp").string() + " --quick --json");
  // The candidate is the baseline's loop: a ratio near 1, which a 1 us kernel on this VM may
  // also call unstable (the A/A control's verdict), never wrong.
  nlohmann::json j = parse_json(r);
  ASSERT_TRUE(j.contains("paired")) << r.out << r.err;
  EXPECT_TRUE(j["outcome"] == "ok" || j["outcome"] == "unstable") << j["outcome"];
  EXPECT_EQ(r.code, j["outcome"] == "ok" ? 0 : 3);  // eval's exit for a series that did not decide
  EXPECT_GT(j["paired"]["ratio"].get<double>(), 0.5);
  EXPECT_LT(j["paired"]["ratio"].get<double>(), 2.0);
  EXPECT_NE(j.value("reference_runtime", std::string()).find("torch"), std::string::npos);
  // Bare problem file, KernelBench protocol: the eager problem is timed live beside the candidate.
  r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (dir / "kb_scale_relu.py").string() + " " +
                (dir / "candidates/scale_relu_ok.cpp").string() +
                " --mode kernelbench --trials 20 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  j = parse_json(r);
  ASSERT_TRUE(j.contains("comparability")) << r.out;
  EXPECT_EQ(j["comparability"]["trials"], 20);
  EXPECT_GT(j["comparability"].value("eager_mean_seconds", 0.0), 0.0);
  EXPECT_GT(j["comparability"].value("speedup_vs_eager", 0.0), 0.0);
  // Bare problem in decision mode: paired against eager PyTorch (the problem's Model in a Python
  // worker), and says so; a wrong kernel stops at its checks.
  r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (dir / "kb_scale_relu.py").string() + " " +
                (dir / "candidates/scale_relu_noalpha.cpp").string() + " ");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("wrong_result"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("no baseline kernel"), std::string::npos) << r.err;
  // A .cu kernel asks for CUDA PyTorch; without a GPU, that is said plainly.
  if (!fs::exists("/dev/nvidiactl")) {
    r = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (dir / "kb_scale_relu.py").string() + " " +
                  (dir / "candidates/scale_relu_ok.cu").string());
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("sees no CUDA device"), std::string::npos) << r.err;
  }
  // No Python with torch: a clear error, not a crash.
  setenv("LATHE_PYTHON", "/bin/false", 1);
  auto none = run_lathe("--workspace /tmp/lathe-problem-cli-ws eval " + (dir / "kb_scale_relu.py").string() + " " +
                        (dir / "candidates/scale_relu_ok.cpp").string() + " ");
  unsetenv("LATHE_PYTHON");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("problem worker exited"), std::string::npos) << none.err;
  fs::remove_all("/tmp/lathe-problem-cli-ws");
}

}  // namespace
}  // namespace lathe::testing
