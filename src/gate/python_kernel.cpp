#include "gate/python_kernel.h"

#include <cstdlib>
#include <mutex>

#include "gate/process.h"

namespace lathe::gate {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  if (const char* p = std::getenv("LATHE_PYTHON"); p && *p) return {p};
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) out.push_back("/usr/bin/python3");
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    for (size_t i = 0; i <= s.size();) {
      const size_t j = std::min(s.find(':', i), s.size());
      const fs::path c = fs::path(s.substr(i, j - i)) / "python3";
      if (j > i && fs::exists(c, ec) && !(out.size() == 1 && fs::equivalent(c, out[0], ec))) {
        out.push_back(c);
        break;
      }
      i = j + 1;
    }
  }
  return out;
}

}  // namespace

result<python_kernel_runtime> find_python_kernel_runtime() {
  static std::once_flag once;
  static result<python_kernel_runtime> found = fail(errc::not_found, "not looked for");
  std::call_once(once, [] {
    std::string tried;
    for (const fs::path& py : candidates()) {
      tool_result r = run_tool({py.string(), "-B", "-s", "-c",
                                "import sys, torch; print('torch', torch.__version__, "
                                "'(python ' + sys.version.split()[0] + ')')"},
                               120);
      if (r.exit_code == 0 && !r.timed_out) {
        std::string v = r.output;
        while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
        found = python_kernel_runtime{py, v.substr(v.rfind('\n') + 1)};
        return;
      }
      tried += (tried.empty() ? "" : ", ") + py.string();
    }
    found = fail(errc::not_found,
                 "Python kernels need a python3 that imports torch (tried: " +
                     (tried.empty() ? std::string("none found") : tried) +
                     "); set LATHE_PYTHON, or on Debian: apt-get install python3-torch");
  });
  return found;
}

fs::path python_kernel_script() {
  if (const char* p = std::getenv("LATHE_KERNEL_WORKER"); p && *p) return p;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& c : {exe / "../share/lathe/python/lathe_kernel.py",
                            fs::path(LATHE_SOURCE_DIR) / "python/lathe_kernel.py"})
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
  return fs::path(LATHE_SOURCE_DIR) / "python/lathe_kernel.py";
}

result<sandbox_options> python_worker_options(sandbox_options opt) {
  auto rt = find_python_kernel_runtime();
  if (!rt) return tl::unexpected(rt.error());
  const fs::path script = python_kernel_script();
  std::error_code ec;
  if (!fs::exists(script, ec))
    return fail(errc::not_found, "the Python kernel worker is missing: " + script.string() +
                                     " (set LATHE_KERNEL_WORKER)");
  const fs::path lib = opt.worker_exe.parent_path() / "liblathe-confine.so";
  opt.worker_exe = rt->interpreter;
  // -B: no bytecode written; -s: no user site (lathe's HOME is not the worker's); -E: no
  // PYTHON* variables from the environment it is given.
  opt.worker_args = {"-B", "-s", "-E", script.string()};
  if (fs::exists(lib, ec)) {
    opt.worker_args.push_back("--confine");
    opt.worker_args.push_back(lib.string());
  }
  // torch maps gigabytes of address space it never touches; the resident-memory watchdog stays.
  opt.address_space_bytes = 0;
  return opt;
}

}  // namespace lathe::gate
