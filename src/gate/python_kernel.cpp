#include "gate/python_kernel.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "gate/problem.h"
#include "gate/process.h"

namespace lathe::gate {

namespace fs = std::filesystem;

result<python_kernel_runtime> find_python_kernel_runtime() {
  static std::once_flag once;
  static result<python_kernel_runtime> found = fail(errc::not_found, "not looked for");
  std::call_once(once, [] {
    std::string tried;
    for (const fs::path& py : python_interpreters()) {
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

python_stage::~python_stage() {
  std::error_code ec;
  if (!dir.empty()) fs::remove_all(dir, ec);
}

result<std::shared_ptr<python_stage>> stage_python_build(const fs::path& object) {
  auto stage = std::make_shared<python_stage>();
  const fs::path from = object.parent_path();
  std::error_code ec;
  if (!fs::exists(from / "model.json", ec) && !fs::exists(from / "extensions.json", ec)) return stage;
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = (tmp && *tmp ? std::string(tmp) : std::string("/tmp")) + "/lathe-python-stage-XXXXXX";
  if (!mkdtemp(tmpl.data())) return fail(errc::io_error, "cannot create " + tmpl + ": " + std::strerror(errno));
  stage->dir = tmpl;
  // Readable to the worker's user (another than lathe's when lathe is root); Landlock confines
  // the worker to these folders, and nothing in them is a secret.
  fs::permissions(stage->dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec, ec);
  const auto copy = [&](const fs::path& a, const fs::path& b) {
    fs::copy_file(a, b, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::permissions(b, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read, ec);
    return !ec;
  };
  if (fs::exists(from / "model.json") && !copy(from / "model.json", stage->dir / "model.json"))
    return fail(errc::io_error, "cannot stage model.json: " + ec.message());
  if (fs::exists(from / "extensions.json")) {
    std::ifstream in(from / "extensions.json");
    nlohmann::json list = nlohmann::json::parse(in, nullptr, false);
    if (!list.is_array()) return fail(errc::io_error, "extensions.json does not parse: rebuild");
    for (size_t i = 0; i < list.size(); ++i) {
      const fs::path src = list[i].value("dir", std::string());
      const fs::path dst = stage->dir / ("ext" + std::to_string(i));
      fs::create_directory(dst, ec);
      fs::permissions(dst, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec |
                               fs::perms::group_read | fs::perms::group_exec, ec);
      for (const auto& f : fs::directory_iterator(src / "out", ec))
        if (f.path().extension() == ".so" || f.path().filename() == "lathe-ext.json")
          if (!copy(f.path(), dst / f.path().filename()))
            return fail(errc::io_error, "cannot stage " + f.path().string() + ": " + ec.message());
      list[i]["dir"] = dst.string();
    }
    std::ofstream(stage->dir / "extensions.json") << list.dump();
    fs::permissions(stage->dir / "extensions.json", fs::perms::owner_read | fs::perms::owner_write |
                                                        fs::perms::group_read | fs::perms::others_read, ec);
  }
  return stage;
}

result<sandbox_options> python_worker_options(sandbox_options opt, const python_stage& stage) {
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
  for (const auto& [flag, file] : {std::pair{"--model", "model.json"}, {"--extensions", "extensions.json"}})
    if (const fs::path f = stage.dir / file; !stage.dir.empty() && fs::exists(f, ec)) {
      opt.worker_args.push_back(flag);
      opt.worker_args.push_back(f.string());
    }
  // torch maps gigabytes of address space it never touches; the resident-memory watchdog stays.
  opt.address_space_bytes = 0;
  return opt;
}

}  // namespace lathe::gate
