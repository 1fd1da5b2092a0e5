// The language a search writes (cli/search_language.h, issue 44 item 1): modelnew by default on a
// bare KernelBench problem, starting from and paired against its own Model; c-abi on a task with
// a baseline kernel; every other ask refused with the reason.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/search_language.h"
#include "spec/problem.h"
#include "spec/task_file.h"

namespace lathe::cli {
namespace {

task problem(const char* name) {
  auto t = gate::import_problem(std::filesystem::path(LATHE_SOURCE_DIR) / "tests/problems" / name, platform::cpu);
  if (!t) ADD_FAILURE() << t.error().message;
  return t ? *t : task{};
}

task shipped(const char* name) {
  auto t = load_task(std::filesystem::path(LATHE_SOURCE_DIR) / "tasks" / name / "task.toml");
  if (!t) ADD_FAILURE() << t.error().message;
  return t ? *t : task{};
}

TEST(search_language, a_bare_kernelbench_problem_searches_in_modelnew_from_its_own_model) {
  const task t = problem("kb_scale_relu.py");
  auto sl = pick_search_language(t, "");
  ASSERT_TRUE(sl) << sl.error().message;
  EXPECT_EQ(sl->lang, candidate_language::modelnew);
  ASSERT_TRUE(sl->eager);
  EXPECT_EQ(sl->eager->name, "eager");
  EXPECT_EQ(language_of(*sl->eager), candidate_language::modelnew);
  auto asked = pick_search_language(t, "modelnew");
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->eager->hash, sl->eager->hash);
  // Asked for the C ABI, the search writes lathe_launch kernels (the proposer seeds one).
  auto abi = pick_search_language(t, "c-abi");
  ASSERT_TRUE(abi);
  EXPECT_EQ(abi->lang, candidate_language::c_abi);
  EXPECT_FALSE(abi->eager);
  // A start kernel in another language than the search's is refused, naming both.
  kernel_bundle cpp;
  cpp.name = "naive";
  cpp.manifest.lang = language::cpp;
  auto same = check_start_language(cpp, *sl);
  ASSERT_FALSE(same);
  EXPECT_NE(same.error().message.find("written in c-abi, the search in modelnew"), std::string::npos)
      << same.error().message;
  EXPECT_TRUE(check_start_language(*sl->eager, *sl));
  // A C-ABI search checks nothing: it takes the starts it took before.
  EXPECT_TRUE(check_start_language(*sl->eager, *abi));
  EXPECT_TRUE(check_start_language(cpp, *abi));
}

TEST(search_language, a_task_with_a_baseline_kernel_searches_in_c_abi) {
  const task t = shipped("softmax");
  auto sl = pick_search_language(t, "");
  ASSERT_TRUE(sl) << sl.error().message;
  EXPECT_EQ(sl->lang, candidate_language::c_abi);
  EXPECT_FALSE(sl->eager);
  auto modelnew = pick_search_language(t, "modelnew");
  ASSERT_FALSE(modelnew);
  EXPECT_NE(modelnew.error().message.find("not a KernelBench problem"), std::string::npos) << modelnew.error().message;
}

TEST(search_language, other_asks_are_refused_with_the_reason) {
  const task t = problem("kb_scale_relu.py");
  auto python = pick_search_language(t, "python");
  ASSERT_FALSE(python);
  EXPECT_NE(python.error().message.find("C-ABI kernels or ModelNew files"), std::string::npos);
  auto typo = pick_search_language(t, "ModelNew");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("expected c-abi or modelnew"), std::string::npos);
  // A KLineage-format problem has no Model to start from: c-abi by default, modelnew refused.
  const task kl = problem("kl_row_sum.py");
  auto d = pick_search_language(kl, "");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->lang, candidate_language::c_abi);
  EXPECT_FALSE(pick_search_language(kl, "modelnew"));
}

}  // namespace
}  // namespace lathe::cli
