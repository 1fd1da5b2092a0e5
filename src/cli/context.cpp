#include "cli/context.h"

#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "gate/host_target.h"

namespace fs = std::filesystem;

namespace lathe::cli {

paths locate() {
  paths p;
  std::error_code ec;
  p.exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  // Installed layout first (bin/../share/lathe), then the source tree this binary was built from.
  for (const fs::path& inc : {p.exe_dir / "../share/lathe/include", fs::path(LATHE_SOURCE_DIR) / "include"})
    if (fs::exists(inc / "lathe/abi.h", ec)) {
      p.include_dir = fs::weakly_canonical(inc, ec);
      break;
    }
  for (const fs::path& t : {p.exe_dir / "../share/lathe/tasks", fs::path(LATHE_SOURCE_DIR) / "tasks"})
    if (fs::is_directory(t, ec)) {
      p.tasks_dir = fs::weakly_canonical(t, ec);
      break;
    }
  return p;
}

result<fs::path> find_task_path(const std::string& arg, const paths& where) {
  std::error_code ec;
  fs::path p(arg);
  if (fs::exists(p, ec)) return p;
  if (p.is_relative() && !arg.empty() && arg.find('/') == std::string::npos &&
      !where.tasks_dir.empty() && fs::exists(where.tasks_dir / arg / "task.toml", ec))
    return where.tasks_dir / arg;
  return fail(errc::not_found, "no task '" + arg + "': not a path, and not a shipped task under " +
                                   (where.tasks_dir.empty() ? std::string("(none found)") : where.tasks_dir.string()));
}

result<context> open_context(const std::optional<fs::path>& workspace_dir, bool measure_ceilings,
                             bool refresh) {
  context c;
  c.where = locate();
  if (c.where.include_dir.empty())
    return fail(errc::not_found, "cannot find lathe/abi.h next to the lathe binary or in its source tree");
  std::error_code ec;
  auto ws = open_workspace(workspace_dir, fs::current_path(ec));
  if (!ws) return tl::unexpected(ws.error());
  c.ws = *ws;
  auto db = store::open(c.ws.db());
  if (!db) return tl::unexpected(db.error());
  c.db.emplace(std::move(*db));
  auto tc = gate::detect_toolchain(c.where.include_dir);
  if (!tc) return tl::unexpected(tc.error());
  c.tools = *tc;
  c.tgt = gate::detect_cpu_target();
  if (measure_ceilings) {
    const std::string key = "ceilings/cpu/" + c.tgt.device + "/" + c.tgt.arch + "/" +
                            std::to_string(c.tgt.cores);
    auto cached = c.db->get_measurement(key);
    if (cached && *cached) {
      auto j = nlohmann::json::parse(**cached, nullptr, false);
      if (!j.is_discarded()) {
        c.tgt.copy_bytes_per_s = j.value("dram_bytes_per_s", 0.0);
        c.tgt.cache_bytes_per_s = j.value("llc_bytes_per_s", 0.0);
        c.tgt.flops_per_s = j.value("flops_per_s", 0.0);
      }
    }
    if (c.tgt.copy_bytes_per_s <= 0 || refresh) {
      // Ceilings only ratchet up: a measurement taken while other work shares the cores reads
      // low (seen here: 37 GFLOP/s under load against ~54 per core alone), and a low ceiling
      // would put the roofline floor above honest kernels.
      gate::cpu_ceilings m = gate::measure_cpu_ceilings(c.tgt);
      c.tgt.copy_bytes_per_s = std::max(c.tgt.copy_bytes_per_s, m.dram_bytes_per_s);
      c.tgt.cache_bytes_per_s = std::max(c.tgt.cache_bytes_per_s, m.llc_bytes_per_s);
      c.tgt.flops_per_s = std::max(c.tgt.flops_per_s, m.flops_per_s);
      nlohmann::json j{{"dram_bytes_per_s", c.tgt.copy_bytes_per_s},
                       {"llc_bytes_per_s", c.tgt.cache_bytes_per_s},
                       {"flops_per_s", c.tgt.flops_per_s}};
      (void)c.db->put_measurement(key, j.dump());
    }
  }
  return c;
}

}  // namespace lathe::cli
