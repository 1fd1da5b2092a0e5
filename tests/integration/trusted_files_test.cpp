// Files lathe reads, writes and copies in folders a candidate could have written (issue 42: the
// record step, extension builds, the build cache, KernelBench samples). As root, lathe wrote its
// build files through links a record step planted (over a root-only file, over lathe.db), copied
// an extension's links to a root-only file into the worker's stage, read a cached build.log that
// linked to /proc/self/environ into the diagnostics, ran the record step for any Python kernel
// with an unused `class ModelNew` line, ran the rewrite of kernel.py its record step made instead
// of the file it screened, and read and ran a KernelBench sample that was a link. The hostile
// candidates are in tests/problems/hostile; those with `@TARGET@` get the test's own file. The
// checks time nothing (`unit`); two of them compile a torch extension (tens of seconds).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "core/outcome.h"
#include "gate_fixture.h"
#include "lathe_cli_json.h"
#include "lathe_cli_run.h"

namespace fs = std::filesystem;

namespace lathe::testing {
namespace {

fs::path hostile() { return source_dir() / "tests/problems/hostile"; }
fs::path problems() { return source_dir() / "tests/problems"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

const std::string secret_line = "root-only secret line 7f3a9c\n";

class trusted_files : public gate_env {
 protected:
  void SetUp() override {
    gate_env::SetUp();
    // Root's, mode 0600: the jailed steps (a user of their own) may not read it.
    root_only_ = dir_ / "root-only";
    put(root_only_, secret_line);
    fs::permissions(root_only_, fs::perms::owner_read | fs::perms::owner_write);
  }

  // tests/problems/hostile/`name` with @TARGET@ replaced, written into the test's folder.
  fs::path with_target(const std::string& name, const fs::path& target) {
    const std::string text = std::regex_replace(slurp(hostile() / name), std::regex("@TARGET@"), target.string());
    const fs::path out = dir_ / "candidates" / name;
    put(out, text);
    return out;
  }

  evaluation check(const task& t, const kernel_bundle& k, bool refuse_torch_fallback = false) {
    gate::gate_config cfg = cfg_;
    cfg.time = false;
    cfg.call_timeout_s = 10;  // torch's first calls
    cfg.refuse_torch_fallback = refuse_torch_fallback;
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.prov = {"human", "test", false};
    return gate::evaluate(cfg, req);
  }

  // `lathe` with the test's workspace.
  std::string ws() const { return "--workspace '" + (dir_ / "ws").string() + "' "; }

  fs::path root_only_;
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The record step plants build.log, status and extensions.json as links to a root-only file:
// the file is untouched, and the candidate is refused for it.
TEST_F(trusted_files, record_step_links_to_a_root_only_file_are_not_written_through) {
  const task t = load(problems() / "kb_linear_gelu.py");
  const evaluation e = check(t, kernel(with_target("record_plants_links.py", root_only_)));
  EXPECT_EQ(slurp(root_only_), secret_line);
  EXPECT_NE(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_TRUE(has(e.message, "link")) << e.message;
  EXPECT_FALSE(has(e.message + e.diagnostics, "7f3a9c"));
}

// The same links to the workspace's lathe.db, through `lathe eval`: the store is still a
// database afterwards (it was replaced by the 36 bytes of a status line, and every later command
// exited 2).
TEST_F(trusted_files, record_step_links_to_the_workspace_database_are_not_written_through) {
  unsetenv("LATHE_LOCK_DIR");
  ASSERT_EQ(run_lathe(ws() + "runs list").code, 0);  // creates the workspace and its store
  const fs::path db = dir_ / "ws/.lathe/lathe.db";
  ASSERT_TRUE(fs::exists(db));
  const fs::path candidate = with_target("record_plants_links.py", db);
  const run_result r = run_lathe(ws() + "eval '" + (problems() / "kb_linear_gelu.py").string() + "' '" +
                                 candidate.string() + "' --no-time --json");
  const nlohmann::json j = parse_json(r);
  EXPECT_NE(j.value("outcome", ""), "ok") << r.out << r.err;
  EXPECT_EQ(slurp(db).substr(0, 16), std::string("SQLite format 3\0", 16));
  const run_result after = run_lathe(ws() + "runs list");
  EXPECT_EQ(after.code, 0) << after.err;
}

// An extension's import leaves links to a root-only file in its output folder: nothing of the
// file reaches the evaluation (the candidate raises whatever it finds staged as its message).
TEST_F(trusted_files, links_in_an_extension_output_are_not_copied) {
  const task t = load(problems() / "kb_linear_gelu.py");
  const evaluation e = check(t, kernel(with_target("extension_links_secret.py", root_only_)));
  EXPECT_FALSE(has(e.message + e.diagnostics, "7f3a9c")) << e.message;
  EXPECT_NE(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_EQ(slurp(root_only_), secret_line);
}

// A build.log in the cache that is a link to /proc/self/environ: lathe's own environment (an API
// key here) appears nowhere, neither in the output nor in the store. First a C++ kernel that does
// not compile (its failure is cached), then a ModelNew whose extension does not (cached twice:
// the kernel's build and the extension's).
TEST_F(trusted_files, a_cached_build_log_linked_to_environ_leaks_nothing) {
  unsetenv("LATHE_LOCK_DIR");
  const fs::path broken = dir_ / "candidates/broken.cpp";
  put(broken, "#include <lathe/abi.h>\nextern \"C\" int lathe_launch(const lathe_args*) { return nope; }\n");
  const std::vector<std::pair<std::string, fs::path>> cases = {
      {(source_dir() / "tests/integration/tasks/axpy").string(), broken},
      {(problems() / "kb_linear_gelu.py").string(), problems() / "modelnew/linear_gelu_broken_cpp.py"}};
  for (const auto& [task_arg, kernel_file] : cases) {
    const std::string cmd = ws() + "eval '" + task_arg + "' '" + kernel_file.string() + "' --no-time --json";
    const run_result first = run_lathe(cmd);
    ASSERT_EQ(parse_json(first).value("outcome", ""), "compile_error") << first.out << first.err;
    int linked = 0;
    for (auto it = fs::recursive_directory_iterator(dir_ / "ws/.lathe/cache"); it != fs::recursive_directory_iterator(); ++it)
      if (it->path().filename() == "build.log" && fs::is_regular_file(it->symlink_status())) {
        fs::remove(it->path());
        fs::create_symlink("/proc/self/environ", it->path());
        ++linked;
      }
    ASSERT_GT(linked, 0);
    setenv("OPENAI_API_KEY", "sk-environ-secret-5b1e", 1);  // in lathe's /proc/self/environ
    const run_result again = run_lathe(cmd);
    unsetenv("OPENAI_API_KEY");
    EXPECT_EQ(parse_json(again).value("outcome", ""), "compile_error") << again.out << again.err;
    EXPECT_FALSE(has(again.out + again.err, "sk-environ-secret")) << again.out;
    EXPECT_FALSE(has(slurp(dir_ / "ws/.lathe/lathe.db"), "sk-environ-secret"));
  }
}

// A launch() kernel with an unused `class ModelNew` line, on a task that is no problem: built
// without the record step (which ran the file's code at build time).
TEST_F(trusted_files, an_unused_model_new_line_runs_no_record_step) {
  const task t = load(source_dir() / "tests/integration/tasks/scale_relu_torch");
  const evaluation e = check(t, kernel(hostile() / "unused_model_new.py"));
  EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  EXPECT_FALSE(has(e.diagnostics, "lathe_ext.py record")) << e.diagnostics;
  EXPECT_FALSE(has(e.diagnostics, "imported at build time")) << e.diagnostics;
}

// The record step rewrites kernel.py into a torch fallback: with --refuse-torch-fallback, the
// rewrite would have run unscreened (ok); it is refused for what it did.
TEST_F(trusted_files, a_record_step_that_rewrites_kernel_py_is_refused) {
  const task t = load(problems() / "kb_linear_gelu.py");
  const evaluation e = check(t, kernel(hostile() / "record_rewrites_kernel.py"), true);
  EXPECT_EQ(e.result, outcome::forbidden) << e.message << "\n" << e.diagnostics;
  EXPECT_TRUE(has(e.message, "rewrote kernel.py")) << e.message;
}

// A KernelBench sample that is a link to a root-only file (holding a correct ModelNew and a
// secret): refused with its reason, not read, not run; the file's contents appear nowhere.
TEST_F(trusted_files, a_kernelbench_sample_that_is_a_link_is_refused) {
  unsetenv("LATHE_LOCK_DIR");
  const fs::path kb = problems() / "kernelbench";
  const fs::path level = dir_ / "level1", samples = dir_ / "samples";
  put(level / "1_Leaky_ReLU.py", slurp(kb / "level1/1_Leaky_ReLU.py"));
  put(root_only_, "# " + secret_line + slurp(kb / "samples/level_1_problem_1_sample_0_kernel.py"));
  fs::permissions(root_only_, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directories(samples);
  fs::create_symlink(root_only_, samples / "level_1_problem_1_sample_0_kernel.py");
  put(samples / "level_1_problem_1_sample_1_kernel.py", slurp(kb / "samples/level_1_problem_1_sample_0_kernel.py"));
  const fs::path results = dir_ / "eval_results.json";
  const run_result r = run_lathe(ws() + "bench '" + level.string() + "' --candidates '" + samples.string() +
                                 "' --check-only --kernelbench-json '" + results.string() + "' --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json j = parse_json(r);
  ASSERT_EQ(j["samples"].size(), 2u) << j.dump();
  const nlohmann::json& linked = j["samples"][0]["summary"]["tasks"][0];
  EXPECT_EQ(linked.value("outcome", ""), "forbidden") << linked.dump();
  EXPECT_TRUE(has(linked.dump(), "symbolic link")) << linked.dump();
  EXPECT_EQ(j["samples"][1]["summary"]["tasks"][0].value("status", ""), "correct") << j.dump();
  EXPECT_FALSE(has(r.out + r.err + slurp(results), "7f3a9c"));
}

}  // namespace
}  // namespace lathe::testing
