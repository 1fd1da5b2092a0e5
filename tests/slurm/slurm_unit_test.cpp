// gate/slurm.h's pure parts (issue 46 item 2): Slurm's job states read and judged, the sbatch
// argument list, and the environment a job gets (never the submitter's API keys).
#include <gtest/gtest.h>

#include <algorithm>

#include "gate/slurm.h"

namespace lathe::gate::slurm {
namespace {

TEST(slurm_states, every_word_squeue_prints_reads_back_and_unknown_words_do_not) {
  for (const char* w : {"PENDING", "RUNNING", "COMPLETING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                        "PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED", "SUSPENDED"}) {
    auto s = parse_job_state(w);
    ASSERT_TRUE(s) << w;
    EXPECT_STREQ(to_string(*s), w);
  }
  EXPECT_FALSE(parse_job_state("running"));
  EXPECT_FALSE(parse_job_state("LAUNCHED"));
}

TEST(slurm_states, slurm_ending_a_job_early_is_lost_never_ran) {
  // Submitted again, never the kernel's failure.
  for (auto s : {job_state::cancelled, job_state::timeout, job_state::preempted, job_state::node_fail,
                 job_state::boot_fail, job_state::deadline, job_state::out_of_memory, job_state::unknown})
    EXPECT_EQ(fate_of(s), job_fate::lost) << to_string(s);
  // Ran to its end: its files say how the evaluation went.
  EXPECT_EQ(fate_of(job_state::completed), job_fate::ran);
  EXPECT_EQ(fate_of(job_state::failed), job_fate::ran);
  // Still Slurm's: waited for.
  for (auto s : {job_state::pending, job_state::running, job_state::completing, job_state::suspended,
                 job_state::requeued, job_state::configuring})
    EXPECT_EQ(fate_of(s), job_fate::waiting) << to_string(s);
}

TEST(slurm_submit, gpu_jobs_ask_for_one_gpu_and_the_environment_is_an_explicit_list) {
  job_request r;
  r.name = "lathe-gemm";
  r.script = "/w/job.sh";
  r.dir = "/w";
  r.environment = {"LANG=C", "PATH=/usr/bin"};
  auto a = sbatch_argv(r);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--gres=gpu:1"), 0);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--export=LANG=C,PATH=/usr/bin"), 1);
  EXPECT_EQ(a.back(), "/w/job.sh");
  r.gpu = true;
  r.partition = "h100";
  r.time_limit = "30:00";
  r.sbatch_args = {"--account=x"};
  a = sbatch_argv(r);
  for (const char* want : {"--gres=gpu:1", "--partition=h100", "--time=30:00", "--account=x", "--chdir=/w"})
    EXPECT_EQ(std::count(a.begin(), a.end(), want), 1) << want;
  for (const auto& x : a) EXPECT_NE(x, "--export=ALL");
}

TEST(slurm_submit, a_job_gets_no_api_key_nor_anything_outside_the_list) {
  const std::map<std::string, std::string> submitter = {
      {"PATH", "/usr/bin:/bin"}, {"HOME", "/home/u"}, {"OPENAI_API_KEY", "sk-secret"},
      {"ANTHROPIC_API_KEY", "sk-ant"}, {"GITHUB_TOKEN", "ghp"}, {"LATHE_EXTENSION_CACHE", "/c"},
      {"LATHE_LOCK_DIR", "/l,with-comma"}};
  const auto env = job_environment(submitter);
  const std::vector<std::string> want = {"LANG=C", "PATH=/usr/bin:/bin", "HOME=/home/u", "LATHE_EXTENSION_CACHE=/c"};
  EXPECT_EQ(env, want);  // a value with a comma would split sbatch's list: left out
}

}  // namespace
}  // namespace lathe::gate::slurm
