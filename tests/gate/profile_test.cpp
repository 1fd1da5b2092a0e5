// The profile stage without a GPU: reading ncu's raw CSV page (a fixture written by hand after
// the documented layout: ==PROF== lines, a header row, a units row, one row per launch), the
// command lathe runs, where ncu is looked for, the one-line failure report, the worker's
// environment under the profiler, and the lathe.profile/1 JSON.
#include "core/profile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "gate/profile.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

std::string fixture() {
  std::ifstream in(fs::path(LATHE_SOURCE_DIR) / "tests/gate/fixtures/ncu_raw_reduction.csv");
  EXPECT_TRUE(in.good());
  return {std::istreambuf_iterator<char>(in), {}};
}

const profiled_kernel* find(const std::vector<profiled_kernel>& ks, const std::string& name,
                            int64_t grid_x) {
  for (const auto& k : ks)
    if (k.name == name && k.grid[0] == grid_x) return &k;
  return nullptr;
}

class temp_dir {
 public:
  temp_dir() {
    char tmpl[] = "/tmp/lathe-profile-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void make_file(const fs::path& p, bool exec) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "#!/bin/sh\nexit 0\n";
  chmod(p.c_str(), exec ? 0755 : 0644);
}

}  // namespace

TEST(profile_csv, launches_of_one_function_are_averaged) {
  auto ks = gate::parse_ncu_csv(fixture());
  ASSERT_TRUE(ks.has_value()) << ks.error().message;
  // rowsum_vec three times with one configuration; rowsum_tail twice with two grids.
  ASSERT_EQ(ks->size(), 3u);
  const profiled_kernel* vec = find(*ks, "rowsum_vec(const float *, float *, int)", 8192);
  ASSERT_NE(vec, nullptr);
  EXPECT_EQ(vec->launches, 3u);
  EXPECT_EQ(vec->grid, (std::array<int64_t, 3>{8192, 1, 1}));
  EXPECT_EQ(vec->block, (std::array<int64_t, 3>{256, 1, 1}));
  // "152,448", "151,904", "152,640" nanoseconds: thousands separators, base units.
  ASSERT_TRUE(vec->duration_seconds.has_value());
  EXPECT_NEAR(*vec->duration_seconds, (152448 + 151904 + 152640) / 3.0 * 1e-9, 1e-12);
  EXPECT_NEAR(*vec->dram_throughput_pct, (91.42 + 91.80 + 91.12) / 3, 1e-9);
  EXPECT_NEAR(*vec->memory_throughput_pct, (91.87 + 92.03 + 91.70) / 3, 1e-9);
  EXPECT_NEAR(*vec->compute_throughput_pct, (21.35 + 21.41 + 21.29) / 3, 1e-9);
  EXPECT_NEAR(*vec->achieved_occupancy_pct, (88.12 + 88.40 + 87.92) / 3, 1e-9);
  EXPECT_NEAR(*vec->l2_hit_rate_pct, (0.61 + 0.59 + 0.62) / 3, 1e-9);
  EXPECT_NEAR(*vec->cycles_per_issue, (41.32 + 41.10 + 41.54) / 3, 1e-9);
  // Every stall reason of the list, largest first; together about the cycles per issue.
  ASSERT_EQ(vec->stalls.size(), 19u);
  EXPECT_EQ(vec->stalls[0].reason, "long_scoreboard");
  EXPECT_NEAR(vec->stalls[0].cycles_per_issue, 33.12, 1e-9);
  EXPECT_EQ(vec->stalls[1].reason, "wait");
  double sum = 0;
  for (size_t i = 0; i < vec->stalls.size(); ++i) {
    sum += vec->stalls[i].cycles_per_issue;
    if (i > 0) {
      EXPECT_GE(vec->stalls[i - 1].cycles_per_issue, vec->stalls[i].cycles_per_issue);
    }
  }
  EXPECT_NEAR(sum, *vec->cycles_per_issue, 0.1);
  // The raw figures and their units are kept; the device name (text) is not a number.
  EXPECT_EQ(vec->units.at("gpu__time_duration.sum"), "nsecond");
  EXPECT_EQ(vec->units.at("lts__t_sector_hit_rate.pct"), "%");
  EXPECT_NEAR(vec->metrics.at("gpu__time_duration.sum"), (152448 + 151904 + 152640) / 3.0, 1e-6);
  EXPECT_EQ(vec->metrics.count("device__attribute_display_name"), 0u);
}

TEST(profile_csv, configurations_stay_apart_and_gaps_stay_gaps) {
  auto ks = gate::parse_ncu_csv(fixture());
  ASSERT_TRUE(ks.has_value());
  // A template name with commas inside its quotes, launched with two grids: two entries.
  const std::string tail = "void rowsum_tail<4>(const float *, float *, int, int)";
  const profiled_kernel* small = find(*ks, tail, 64);
  const profiled_kernel* large = find(*ks, tail, 128);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(small->launches, 1u);
  EXPECT_EQ(small->block, (std::array<int64_t, 3>{128, 1, 1}));
  // "n/a" is no figure, not 0.
  EXPECT_FALSE(small->l2_hit_rate_pct.has_value());
  EXPECT_EQ(small->metrics.count("lts__t_sector_hit_rate.pct"), 0u);
  ASSERT_TRUE(large->l2_hit_rate_pct.has_value());
  EXPECT_DOUBLE_EQ(*large->l2_hit_rate_pct, 47.25);
  EXPECT_NEAR(*small->duration_seconds, 4896e-9, 1e-15);
  // Order of first appearance.
  EXPECT_EQ((*ks)[0].name, "rowsum_vec(const float *, float *, int)");
}

TEST(profile_csv, device_from_the_first_launch) {
  gate::ncu_device d = gate::parse_ncu_device(fixture());
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_EQ(d.arch, "sm_90");
  EXPECT_TRUE(gate::parse_ncu_device("no table here").name.empty());
}

TEST(profile_csv, no_table_or_no_launch_is_an_error) {
  const std::string denied =
      "==PROF== Connected to process 1234 (/opt/lathe/build/lathe)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n";
  auto a = gate::parse_ncu_csv(denied);
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message.find("no Nsight Compute table"), std::string::npos)
      << a.error().message;

  const std::string text = fixture();
  // Header and units, but every launch filtered out.
  size_t header = text.find("\"ID\"");
  size_t units_end = text.find('\n', text.find('\n', header) + 1);
  auto b = gate::parse_ncu_csv(text.substr(0, units_end + 1) +
                               "==WARNING== No kernels were profiled.\n");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message.find("profiled no kernel"), std::string::npos) << b.error().message;

  // A header without a units row.
  auto c = gate::parse_ncu_csv(text.substr(header, text.find('\n', header) - header));
  EXPECT_FALSE(c.has_value());
}

TEST(profile_command, clocks_unlocked_every_process_raw_csv_and_the_metric_list) {
  const std::vector<std::string> app = {"/opt/lathe/lathe", "profile-run", "task", "kernel"};
  auto cmd = gate::ncu_command("/usr/local/cuda/bin/ncu", "sm_90a", app);
  ASSERT_GT(cmd.size(), app.size());
  EXPECT_EQ(cmd.front(), "/usr/local/cuda/bin/ncu");
  auto value_of = [&](const std::string& flag) -> std::string {
    auto it = std::find(cmd.begin(), cmd.end(), flag);
    return it == cmd.end() || it + 1 == cmd.end() ? "<absent>" : *(it + 1);
  };
  EXPECT_EQ(value_of("--clock-control"), "none");
  EXPECT_EQ(value_of("--target-processes"), "all");
  EXPECT_EQ(value_of("--page"), "raw");
  EXPECT_EQ(value_of("--print-units"), "base");
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "--csv"), cmd.end());
  // The program comes last, unchanged.
  EXPECT_TRUE(std::equal(app.begin(), app.end(), cmd.end() - static_cast<long>(app.size())));

  // Exactly the metric list, every named figure in it.
  const std::string metrics = value_of("--metrics");
  std::vector<std::string> asked;
  for (size_t at = 0; at <= metrics.size();) {
    size_t comma = metrics.find(',', at);
    asked.push_back(
        metrics.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    at = comma == std::string::npos ? metrics.size() + 1 : comma + 1;
  }
  std::vector<std::string> listed;
  for (const auto& m : gate::profile_metrics("sm_90a")) listed.push_back(m.name);
  EXPECT_EQ(asked, listed);
  for (const char* m :
       {"sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "lts__t_sector_hit_rate.pct",
        "gpu__time_duration.sum", "smsp__average_warp_latency_per_inst_issued.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio"})
    EXPECT_NE(std::find(asked.begin(), asked.end(), m), asked.end()) << m;
  // No metric twice; the Hopper-only state only for Hopper builds.
  std::vector<std::string> sorted = asked;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& m : gate::profile_metrics("sm_80"))
    EXPECT_EQ(m.name.find("gmma"), std::string::npos) << m.name;

  // No kernel filter: one ncu's matcher reads otherwise profiles nothing (a negative lookahead
  // did, on the H200). lathe's helpers are dropped when the table is read.
  EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--kernel-name"), cmd.end());
  EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "-k"), cmd.end());
}

TEST(profile_csv, lathes_helper_kernels_are_left_out) {
  // The function's own name, however ncu prints the kernel's.
  EXPECT_EQ(gate::kernel_function_name("rowsum_vec(const float *, float *, int)"), "rowsum_vec");
  EXPECT_EQ(gate::kernel_function_name("void rowsum_tail<4>(const float *, float *, int, int)"),
            "rowsum_tail");
  EXPECT_EQ(gate::kernel_function_name("rowsum_vec"), "rowsum_vec");
  EXPECT_EQ(gate::kernel_function_name(
                "void lathe::worker::device_ops::(anonymous namespace)::lathe_pattern_kernel<"
                "unsigned int>(T1 *, T1, unsigned long)"),
            "lathe_pattern_kernel");
  EXPECT_EQ(gate::kernel_function_name("lathe::worker::device_ops::<unnamed>::lathe_fill_kernel("
                                       "lathe::dtype, lathe::rng::element_params, void *, "
                                       "unsigned long)"),
            "lathe_fill_kernel");
  EXPECT_EQ(gate::kernel_function_name("void cutlass::Kernel2<cutlass::gemm::Gemm<(int)4>>("
                                       "cutlass::gemm::Params)"),
            "Kernel2");
  EXPECT_TRUE(gate::is_helper_kernel("lathe_fill_kernel"));
  EXPECT_TRUE(gate::is_helper_kernel(
      "void lathe::worker::device_ops::(anonymous namespace)::lathe_pattern_kernel<unsigned "
      "int>(T1 *, T1, unsigned long)"));
  EXPECT_FALSE(gate::is_helper_kernel("gemm_lathe_tile(float *)"));
  EXPECT_FALSE(gate::is_helper_kernel("void rowsum(lathe_args *)"));
  EXPECT_FALSE(gate::is_helper_kernel("rowsum_vec(const float *, float *, int)"));

  // A table with helpers among the kernel's launches: the kernel's alone come back.
  const std::string text = fixture();
  const size_t header = text.find("\"ID\"");
  const size_t units_end = text.find('\n', text.find('\n', header) + 1);
  const size_t first_row_end = text.find('\n', units_end + 1);
  std::string row = text.substr(units_end + 1, first_row_end - units_end);
  const std::string name = "\"rowsum_vec(const float *, float *, int)\"";
  ASSERT_NE(row.find(name), std::string::npos);
  std::string helper = row;
  helper.replace(helper.find(name), name.size(),
                 "\"void lathe::worker::device_ops::(anonymous namespace)::lathe_pattern_kernel<"
                 "unsigned int>(T1 *, T1, unsigned long)\"");
  auto ks = gate::parse_ncu_csv(text.substr(0, units_end + 1) + helper + row + helper);
  ASSERT_TRUE(ks.has_value()) << ks.error().message;
  ASSERT_EQ(ks->size(), 1u);
  EXPECT_EQ((*ks)[0].name, "rowsum_vec(const float *, float *, int)");
  EXPECT_EQ((*ks)[0].launches, 1u);

  // Helpers alone: nothing of the kernel's was profiled, which is an error.
  auto none = gate::parse_ncu_csv(text.substr(0, units_end + 1) + helper);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("only lathe's own helper kernels"), std::string::npos)
      << none.error().message;
}

TEST(profile_tool, ncu_is_found_in_path_then_the_usual_places_newest_first) {
  temp_dir t;
  const fs::path root = t.path() / "root";
  EXPECT_FALSE(gate::find_ncu("", root).has_value());

  // Versioned installs under /opt/nvidia: the newest, numerically (2025.10 > 2025.9).
  make_file(root / "opt/nvidia/nsight-compute/2025.9.0/ncu", true);
  make_file(root / "opt/nvidia/nsight-compute/2025.10.1/ncu", true);
  make_file(root / "opt/nvidia/nsight-compute/2026.1.0/ncu", false);  // not executable
  EXPECT_EQ(gate::find_ncu("", root), root / "opt/nvidia/nsight-compute/2025.10.1/ncu");

  // The toolkit's ncu before those.
  make_file(root / "usr/local/cuda/bin/ncu", true);
  EXPECT_EQ(gate::find_ncu("", root), root / "usr/local/cuda/bin/ncu");

  // PATH before everything; a directory without an executable ncu is passed over.
  make_file(t.path() / "a/ncu", false);
  make_file(t.path() / "b/ncu", true);
  const std::string path = (t.path() / "a").string() + ":" + (t.path() / "b").string();
  EXPECT_EQ(gate::find_ncu(path, root), t.path() / "b/ncu");
  EXPECT_FALSE(gate::find_ncu((t.path() / "a").string(), t.path() / "nothing").has_value());
}

TEST(profile_tool, a_failure_is_reported_in_one_verbatim_line) {
  const std::string perm =
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0. For instructions on enabling permissions "
      "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM";
  EXPECT_EQ(gate::ncu_failure("==PROF== Connected to process 7 (/x/lathe)\n" + perm +
                              "\n==PROF== Disconnected from process 7\n"),
            perm);
  EXPECT_EQ(gate::ncu_failure("==PROF== Connected\nlathe profile-run: no CUDA device on this "
                              "machine (/dev/nvidiactl)\n==WARNING== No kernels were profiled.\n"),
            "lathe profile-run: no CUDA device on this machine (/dev/nvidiactl)");
  // The child's reason, not ncu's summary that the child failed.
  EXPECT_EQ(gate::ncu_failure("lathe profile-run: the worker crashed while running the kernel: "
                              "SIGSEGV\n==ERROR== The application returned an error code (1).\n"),
            "lathe profile-run: the worker crashed while running the kernel: SIGSEGV");
  EXPECT_EQ(gate::ncu_failure("==ERROR== The application returned an error code (1).\n"),
            "==ERROR== The application returned an error code (1).");
  // ncu's own error wins over the child's consequence of it.
  EXPECT_EQ(gate::ncu_failure("lathe profile-run: the worker crashed while running the kernel\n" +
                              perm + "\n==ERROR== The application returned an error code (1).\n"),
            perm);
  EXPECT_EQ(gate::ncu_failure("==PROF== Connected\n==WARNING== No kernels were profiled.\n\n"),
            "==WARNING== No kernels were profiled.");
  EXPECT_EQ(gate::ncu_failure(""), "the profiler printed nothing");
}

TEST(profile_tool, the_worker_gets_the_profilers_environment_but_no_secrets) {
  const char* env[] = {"LD_PRELOAD=/opt/nvidia/nsight-compute/2025.1.1/libInjection.so",
                       "CUDA_INJECTION64_PATH=/opt/nvidia/nsight-compute/libcuda-injection.so",
                       "NV_TPS_LAUNCH_TOKEN=abc123",
                       "NVTX_INJECTION64_PATH=/opt/nvidia/x.so",
                       "NSIGHT_LAUNCH_AUTH=x",
                       "TMPDIR=/tmp/ncu",
                       "PATH=/usr/bin",
                       "LANG=C",
                       "OPENAI_API_KEY=sk-secret",
                       "GITHUB_TOKEN=ghp_secret",
                       "MY_PASSWORD=x",
                       "malformed",
                       nullptr};
  auto names = gate::profiler_environment(env);
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("LD_PRELOAD"));
  EXPECT_TRUE(has("CUDA_INJECTION64_PATH"));
  EXPECT_TRUE(has("NV_TPS_LAUNCH_TOKEN"));  // the profiler's own, even named like a token
  EXPECT_TRUE(has("NVTX_INJECTION64_PATH"));
  EXPECT_TRUE(has("NSIGHT_LAUNCH_AUTH"));
  EXPECT_TRUE(has("TMPDIR"));
  EXPECT_TRUE(has("LANG"));
  EXPECT_FALSE(has("OPENAI_API_KEY"));
  EXPECT_FALSE(has("GITHUB_TOKEN"));
  EXPECT_FALSE(has("MY_PASSWORD"));
  EXPECT_FALSE(has("malformed"));
}

TEST(profile_json, round_trip_keeps_figures_and_gaps) {
  auto ks = gate::parse_ncu_csv(fixture());
  ASSERT_TRUE(ks.has_value());
  profile p;
  p.id = 7;
  p.created_at = "2026-01-02T03:04:05.678Z";
  p.task = "reduction_cuda";
  p.kernel_hash = "0123456789abcdef0123456789abcdef";
  p.kernel_name = "expert";
  p.shape_set = "main";
  p.tgt.plat = platform::cuda;
  p.tgt.arch = "sm_90a";
  p.tgt.device = "NVIDIA H200";
  p.tool_version = "2025.1.1.0 (build 35528883) (public-release)";
  p.command = gate::ncu_command("ncu", "sm_90a", {"lathe", "profile-run"});
  p.launches = 3;
  p.kernels = *ks;
  p.raw_csv = fixture();
  json j = p;
  for (const char* key :
       {"id", "created_at", "task", "kernel_hash", "kernel_name", "shape_set", "target",
        "toolchain", "tool", "tool_version", "command", "launches", "kernels", "raw_csv"})
    EXPECT_TRUE(j.contains(key)) << key;
  const json& k0 = j["kernels"][0];
  for (const char* key :
       {"name", "grid", "block", "launches", "duration_seconds", "compute_throughput_pct",
        "memory_throughput_pct", "dram_throughput_pct", "achieved_occupancy_pct", "l2_hit_rate_pct",
        "cycles_per_issue", "stalls", "metrics", "units"})
    EXPECT_TRUE(k0.contains(key)) << key;
  EXPECT_TRUE(j["kernels"][1]["l2_hit_rate_pct"].is_null());
  profile back = j.get<profile>();
  EXPECT_EQ(json(back), j);
  EXPECT_FALSE(back.kernels[1].l2_hit_rate_pct.has_value());
  EXPECT_EQ(back.kernels[0].stalls, p.kernels[0].stalls);
}
