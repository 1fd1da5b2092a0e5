#include "gate/python_kernel.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "spec/problem.h"
#include "gate/process.h"
#include "gate/python_build.h"
#include "gate/screen.h"
#include "spec/safe_file.h"

namespace lathe::gate {

namespace fs = std::filesystem;

std::string language_misfit(language lang, platform p) {
  if (lang == language::python) return {};
  if ((lang == language::cuda) == (p == platform::cuda)) return {};
  return std::string("a ") + to_string(lang) + " kernel for a " + to_string(p) + " task";
}

result<python_kernel_runtime> find_python_kernel_runtime() {
  static std::once_flag once;
  static result<python_kernel_runtime> found = fail(errc::not_found, "not looked for");
  std::call_once(once, [] {
    std::string tried;
    for (const fs::path& py : python_interpreters()) {
      tool_result r = run_tool({py.string(), "-B", "-s", "-c",
                                "import os, sys, torch; print('lathe-torch-root:' + os.path.realpath("
                                "os.path.dirname(os.path.dirname(torch.__file__)))); print('torch', "
                                "torch.__version__, '(python ' + sys.version.split()[0] + ')')"},
                               120);
      if (r.exit_code == 0 && !r.timed_out) {
        std::string v = r.output;
        while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
        python_kernel_runtime rt{py, v.substr(v.rfind('\n') + 1), {}};
        const std::string mark = "lathe-torch-root:";
        if (const auto at = v.rfind(mark); at != std::string::npos) {
          const auto end = v.find('\n', at);
          rt.torch_root = v.substr(at + mark.size(), end == std::string::npos ? std::string::npos : end - at - mark.size());
        }
        found = rt;
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

fs::path python_kernel_script() { return python_script("lathe_kernel.py", "LATHE_KERNEL_WORKER"); }

python_stage::~python_stage() {
  std::error_code ec;
  if (!dir.empty()) fs::remove_all(dir, ec);
}

result<std::shared_ptr<python_stage>> stage_python_build(const fs::path& object) {
  auto stage = std::make_shared<python_stage>();
  // The build's folder (renamed into the cache) held the candidate's compile step: its files are
  // read beneath it, never through a link (safe_file.h).
  const fs::path from = object.parent_path();
  std::error_code ec;
  const auto absent = [&](const char* name) {
    return fs::symlink_status(from / name, ec).type() == fs::file_type::not_found;
  };
  if (absent("model.json") && absent("extensions.json")) return stage;
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = (tmp && *tmp ? std::string(tmp) : std::string("/tmp")) + "/lathe-python-stage-XXXXXX";
  if (!mkdtemp(tmpl.data())) return fail(errc::io_error, "cannot create " + tmpl + ": " + std::strerror(errno));
  stage->dir = tmpl;
  // Readable to the worker's user (another than lathe's when lathe is root); Landlock confines
  // the worker to these folders, and nothing in them is a secret.
  const auto readable = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec;
  const auto read_only = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  fs::permissions(stage->dir, readable, ec);
  if (!absent("model.json")) {
    auto staged = copy_beneath(from, "model.json", stage->dir, "model.json", record_cap, 0444);
    if (!staged) return fail(errc::io_error, "cannot stage model.json: " + staged.error().message);
  }
  if (!absent("extensions.json")) {
    auto text = read_beneath(from, "extensions.json", record_cap);
    if (!text) return fail(errc::io_error, "cannot stage extensions.json: " + text.error().message);
    nlohmann::json list = nlohmann::json::parse(*text, nullptr, false);
    if (!list.is_array()) return fail(errc::io_error, "extensions.json does not parse: rebuild");
    // Only the extension cache beside this build (CACHE/torch-ext/<key>) is staged from.
    const fs::path ext_root = (from.parent_path() / "torch-ext").lexically_normal();
    for (size_t i = 0; i < list.size(); ++i) {
      const fs::path src = fs::path(list[i].value("dir", std::string())).lexically_normal();
      if (src.parent_path() != ext_root || src.filename().empty() || src.filename() == "..")
        return fail(errc::io_error, "extensions.json names " + src.string() + ", outside " + ext_root.string());
      const std::string dst = "ext" + std::to_string(i);
      auto copied = copy_tree_beneath(src, "out", stage->dir, dst, object_cap,
                                      [](const fs::path& rel, entry_kind) { return extension_output(rel); });
      if (!copied) return fail(errc::io_error, "cannot stage an extension: " + copied.error().message);
      // Only lathe wrote in the stage, and it copied no link: permissions by path are safe here.
      fs::permissions(stage->dir / dst, readable, ec);
      for (const auto& f : fs::directory_iterator(stage->dir / dst, ec)) fs::permissions(f.path(), read_only, ec);
      list[i]["dir"] = (stage->dir / dst).string();
    }
    if (auto w = write_beneath(stage->dir, "extensions.json", list.dump(), write_mode::create, 0644); !w)
      return fail(errc::io_error, "cannot stage extensions.json: " + w.error().message);
  }
  return stage;
}

std::vector<std::string> staged_dispatcher_bypass(const python_stage& stage) {
  std::vector<std::string> out;
  std::error_code ec;
  if (stage.dir.empty()) return out;
  for (size_t i = 0;; ++i) {  // ext0, ext1, ... as stage_python_build names them
    const std::string name = "ext" + std::to_string(i);
    if (!fs::is_directory(fs::symlink_status(stage.dir / name, ec))) break;
    for (const auto& f : fs::directory_iterator(stage.dir / name, ec))
      if (f.path().extension() == ".so" && fs::is_regular_file(fs::symlink_status(f.path(), ec)))
        for (const auto& sym : dispatcher_bypass(f.path())) out.push_back(name + ": " + sym);
  }
  return out;
}

result<sandbox_options> python_worker_options(sandbox_options opt, const python_stage& stage, platform p) {
  auto rt = find_python_kernel_runtime();
  if (!rt) return tl::unexpected(rt.error());
  const fs::path script = python_kernel_script();
  std::error_code ec;
  if (!fs::exists(script, ec))
    return fail(errc::not_found, "the Python kernel worker is missing: " + script.string() +
                                     " (set LATHE_KERNEL_WORKER)");
  const fs::path lib = opt.worker_exe.parent_path() / "liblathe-confine.so";
  const fs::path worker_dir = opt.worker_exe.parent_path();
  opt.worker_exe = rt->interpreter;
  // -B: no bytecode written; -s: no user site (lathe's HOME is not the worker's); -E: no
  // PYTHON* variables from the environment it is given.
  opt.worker_args = {"-B", "-s", "-E", script.string()};
  if (fs::exists(lib, ec)) {
    opt.worker_args.push_back("--confine");
    opt.worker_args.push_back(lib.string());
  }
  // The record of a candidate's torch ops written from torch's dispatcher (worker/torch_op_hook.cpp);
  // used with --op-record. Built only where the worker's torch has its headers: without it, the
  // worker says that a dispatch mode was its only observer.
  if (const fs::path hook = worker_dir / "liblathe-torch-hook.so"; fs::exists(hook, ec)) {
    opt.worker_args.push_back("--op-hook");
    opt.worker_args.push_back(hook.string());
  }
  for (const auto& [flag, file] : {std::pair{"--model", "model.json"}, {"--extensions", "extensions.json"}})
    if (const fs::path f = stage.dir / file; !stage.dir.empty() && fs::exists(f, ec)) {
      opt.worker_args.push_back(flag);
      opt.worker_args.push_back(f.string());
    }
  if (p == platform::cuda) {
    opt.worker_args.push_back("--device");
    opt.worker_args.push_back("cuda");
  }
  // torch maps gigabytes of address space it never touches; the resident-memory watchdog stays.
  opt.address_space_bytes = 0;
  return opt;
}

result<sandbox_options> with_torch_policy(sandbox_options opt, torch_compute mode, const python_stage& stage) {
  if (mode == torch_compute::allowed) return opt;
  static const fs::path list = python_kernel_script().parent_path() / "lathe_plumbing.txt";
  static const result<std::set<std::string, std::less<>>> plumbing = read_plumbing(list);
  if (!plumbing)
    return fail(errc::not_found, plumbing.error().message + ": the list of torch operations that compute "
                                 "nothing, which a Python kernel's policy is judged with");
  op_policy p;
  p.mode = mode;
  p.plumbing = *plumbing;
  if (mode == torch_compute::fallback && !stage.dir.empty()) {
    // Written by lathe into the stage from the trusted problem worker's record (spec/problem.h).
    auto text = read_beneath(stage.dir, "model.json", record_cap);
    if (!text) return fail(errc::io_error, "cannot read the staged model.json: " + text.error().message);
    const nlohmann::json spec = nlohmann::json::parse(*text, nullptr, false);
    if (spec.is_object() && spec.contains("ops") && spec["ops"].is_array())
      for (const auto& op : spec["ops"])
        if (op.is_string()) p.refused.insert(op.get<std::string>());
  }
  // As the worker decides (python/lathe_kernel.py Observer): a reference that computes nothing
  // with torch has no fallback to refuse.
  if (mode == torch_compute::fallback && p.refused.empty()) return opt;
  opt.worker_args.push_back("--torch-compute");
  opt.worker_args.push_back(to_string(mode));
  opt.worker_args.push_back("--op-record");
  opt.ops = std::move(p);
  return opt;
}

}  // namespace lathe::gate
