// The platform a bare problem file is imported on for `lathe eval PROBLEM KERNEL` (cli/context.h
// problem_platform_of; issue 48, item 1) and eager PyTorch as the baseline of a CUDA problem: a
// Python kernel that asks for the GPU puts the problem there, as a .cu kernel does; one that
// does not stays on the CPU; a CUDA KernelBench problem has its own Model as its eager baseline.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/context.h"
#include "cli/resume.h"
#include "cli/search_language.h"
#include "spec/problem.h"

namespace lathe::cli {
namespace {

namespace fs = std::filesystem;

const fs::path problems = fs::path(LATHE_SOURCE_DIR) / "tests/problems";

TEST(problem_platform, a_kernel_that_asks_for_the_gpu_puts_a_bare_problem_on_cuda) {
  const fs::path swish = fs::path(LATHE_SOURCE_DIR) / "tests/gpu/cuda_swish/candidates";
  EXPECT_EQ(problem_platform_of((swish / "swish_inline_cuda.py").string()), platform::cuda);
  EXPECT_EQ(problem_platform_of((problems / "candidates/scale_relu_ok.cu").string()), platform::cuda);
  // Torch ops only: nothing says CUDA (a task.toml with platform = "cuda" does).
  EXPECT_EQ(problem_platform_of((swish / "swish_torch.py").string()), platform::cpu);
  EXPECT_EQ(problem_platform_of((problems / "modelnew/linear_gelu_inline.py").string()), platform::cpu);
  EXPECT_EQ(problem_platform_of((problems / "no_such_kernel.py").string()), platform::cpu);
}

// --platform (bench, solve, optimize, evolve): the word says it; without it a start kernel does,
// and without either a bare problem stays on the CPU.
TEST(problem_platform, the_platform_word_overrides_what_the_kernel_implies) {
  const std::string cu = (problems / "candidates/scale_relu_ok.cu").string();
  const std::string cpp = (problems / "candidates/scale_relu_ok.cpp").string();
  EXPECT_EQ(problem_platform_word(""), std::nullopt);
  EXPECT_EQ(problem_platform_word("cuda"), platform::cuda);
  EXPECT_EQ(problem_platform_word("cpu"), platform::cpu);
  EXPECT_EQ(problem_platform_word("gpu"), std::nullopt);  // CLI11 refuses it before it gets here
  EXPECT_EQ(problem_platform_for("", ""), std::nullopt);
  EXPECT_EQ(problem_platform_for("", cu), platform::cuda);
  EXPECT_EQ(problem_platform_for("", cpp), platform::cpu);
  EXPECT_EQ(problem_platform_for("cpu", cu), platform::cpu);
  EXPECT_EQ(problem_platform_for("cuda", ""), platform::cuda);
}

// --resume (optimize, evolve): the run goes on on the platform it stored; another one named on the
// command line, or a stored word that is none, is refused with the reason.
TEST(problem_platform, a_resumed_run_keeps_its_stored_platform) {
  EXPECT_EQ(platform_on_resume("", "cuda", "r1"), "");
  EXPECT_EQ(platform_on_resume("cuda", "cuda", "r1"), "");
  EXPECT_EQ(platform_on_resume("cpu", "", "r1"), "");  // a run stored before the platform was
  EXPECT_NE(platform_on_resume("cpu", "cuda", "r1").find("run r1 runs its problem on cuda; --platform cpu conflicts"),
            std::string::npos);
  EXPECT_NE(platform_on_resume("", "gpu", "r1").find("stored the platform 'gpu', which is none of cpu | cuda"),
            std::string::npos);
}

TEST(problem_platform, a_cuda_kernelbench_problem_is_paired_against_its_own_model) {
  // Imported on the CPU here (this machine's torch may have no CUDA), then set on CUDA: the eager
  // baseline depends on the problem's format and Model, not on the platform.
  auto t = gate::import_problem(problems / "kb_scale_relu.py", platform::cpu);
  ASSERT_TRUE(t) << t.error().message;
  t->plat = platform::cuda;
  auto eager = gate::eager_baseline(*t);
  ASSERT_TRUE(eager);
  EXPECT_EQ(eager->name, "eager");
  EXPECT_EQ(eager->manifest.lang, language::python);
  auto sl = pick_search_language(*t, "");
  ASSERT_TRUE(sl) << sl.error().message;
  EXPECT_EQ(sl->lang, candidate_language::modelnew);
  ASSERT_TRUE(sl->eager);
  EXPECT_EQ(sl->eager->hash, eager->hash);
}

}  // namespace
}  // namespace lathe::cli
