// lathe doctor: what this machine offers lathe, and what is missing, in words.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "gate/host_target.h"
#include "gate/process.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

// Whether the compiler can build and link a one-line program with `flags` (OpenMP, OpenBLAS).
bool can_link(const std::vector<std::string>& flags, const std::string& code) {
  char dir[] = "/tmp/lathe-doctor-XXXXXX";
  if (!mkdtemp(dir)) return false;
  const std::string src = std::string(dir) + "/t.cpp";
  if (FILE* f = std::fopen(src.c_str(), "w")) {
    std::fputs(code.c_str(), f);
    std::fclose(f);
  }
  std::vector<std::string> cmd{"g++", src, "-o", std::string(dir) + "/t"};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  bool ok = gate::run_tool(cmd, 60).exit_code == 0;
  std::error_code ec;
  fs::remove_all(dir, ec);
  return ok;
}

int run_doctor(const common_options& common, bool as_json, bool measure, bool refresh) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, measure || refresh, refresh);
  if (!ctx) {
    std::fprintf(stderr, "lathe: %s\n", ctx.error().message.c_str());
    return 2;
  }
  const bool openmp = can_link({"-fopenmp"}, "#include <omp.h>\nint main(){return omp_get_max_threads()<1;}\n");
  const bool openblas = can_link({"-lopenblas"}, "#include <cblas.h>\nint main(){float a=1,b=1,c=0;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1);return c!=1;}\n");
  const bool gpu_node = gate::has_cuda_device();
  const bool root = geteuid() == 0;
  const std::string isolation = root ? "workers drop to user 'nobody' (lathe runs as root)"
                                     : "workers run as this user (run lathe as root for a separate user)";
  if (as_json) {
    json j{{"schema", "lathe.doctor/1"},
           {"compiler", ctx->tools.cxx_version},
           {"nvcc", ctx->tools.nvcc_version},
           {"target", ctx->tgt},
           {"openmp", openmp},
           {"openblas", openblas},
           {"gpu", gpu_node},
           {"isolation", isolation},
           {"workspace", ctx->ws.root.string()},
           {"include_dir", ctx->where.include_dir.string()},
           {"tasks_dir", ctx->where.tasks_dir.string()}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const auto& t = ctx->tgt;
  std::printf("compiler   %s\n", ctx->tools.cxx_version.c_str());
  std::printf("cpu        %s\n", t.device.c_str());
  std::printf("isa        %s (resolved level; kernels are built for it unless their manifest names one)\n", t.arch.c_str());
  std::string caps;
  for (const auto& c : t.capabilities) caps += c + " ";
  std::printf("caps       %s\n", caps.c_str());
  std::printf("cores      %u, last-level cache %llu MiB\n", t.cores,
              static_cast<unsigned long long>(t.llc_bytes >> 20));
  if (t.copy_bytes_per_s > 0)
    std::printf("ceilings   copy %.1f GB/s (DRAM), %.1f GB/s (in LLC), fp32 FMA %.1f GFLOP/s (measured)\n",
                t.copy_bytes_per_s / 1e9, t.cache_bytes_per_s / 1e9, t.flops_per_s / 1e9);
  std::printf("openmp     %s\n", openmp ? "yes (-fopenmp links)" : "NO: install libgomp (g++)");
  std::printf("openblas   %s\n", openblas ? "yes (the gemm and conv2d baselines)" : "NO: install libopenblas-dev");
  std::printf("nvcc       %s\n", ctx->tools.nvcc.empty() ? "not found (CUDA tasks cannot build)" : ctx->tools.nvcc_version.c_str());
  std::printf("gpu        %s\n", gpu_node ? "an NVIDIA device node is present: CUDA tasks are gated through lathe-worker-cuda"
                                          : "no GPU on this machine: CUDA kernels compile but cannot run");
  std::printf("isolation  %s\n", isolation.c_str());
  std::printf("workspace  %s\n", ctx->ws.root.c_str());
  std::printf("tasks      %s\n", ctx->where.tasks_dir.c_str());
  return openmp ? 0 : 1;
}

}  // namespace

void add_doctor(CLI::App& app, const common_options& common, int& exit_code) {
  auto as_json = std::make_shared<bool>(false);
  auto measure = std::make_shared<bool>(true);
  auto refresh = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("doctor", "toolchain, ISA, cores, OpenMP, GPU: what lathe can use here");
  sub->add_flag("--json", *as_json, "print as JSON (schema lathe.doctor/1)");
  sub->add_flag("!--no-measure", *measure, "do not measure bandwidth and FMA peak (when not cached)");
  sub->add_flag("--remeasure", *refresh, "measure the ceilings again (kept: the higher of old and new)");
  sub->callback([as_json, measure, refresh, &common, &exit_code] {
    exit_code = run_doctor(common, *as_json, *measure, *refresh);
  });
}

}  // namespace lathe::cli
