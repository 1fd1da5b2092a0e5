#include "gate/python_build.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <vector>

#include "core/hash.h"
#include "core/text.h"
#include "gate/files.h"
#include "gate/python_kernel.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::gate {
namespace {

// Recording imports torch and the candidate; an extension's compile includes torch's headers,
// which take tens of seconds of one core (22 s on a 2-core VM for a one-function extension).
constexpr double record_timeout_s = 180;
constexpr double extension_timeout_s = 600;

// The script is read through the jail's working directory: the folders above it (the cache's,
// private to lathe) are not the jailed user's to walk, so `python3 /abs/lathe_ext.py` could not
// open it.
constexpr const char* run_script = "exec(compile(open('lathe_ext.py').read(), 'lathe_ext.py', 'exec'))";

fs::path ext_script() { return python_kernel_script().parent_path() / "lathe_ext.py"; }

struct compiled {
  bool ok = false;
  bool built = false;  // false: found in the cache
  std::string log;
};

// One request into ext_root/key: cached when its status says ok, else compiled in a private
// folder that is renamed into place (the first of two racing builds wins, as for kernels).
compiled compile_one(const fs::path& interpreter, const json& request, const fs::path& ext_root,
                     const std::string& key, const tool_jail& jail) {
  compiled c;
  const fs::path dir = ext_root / key;
  std::error_code ec;
  if (fs::exists(dir / "status", ec)) {
    c.ok = read_file(dir / "status").starts_with("ok");
    c.log = c.ok ? "" : read_file(dir / "build.log");
    if (c.ok || !c.log.empty()) return c;
  }
  // torch's build gives the compiler absolute paths, and the jailed user may not walk the cache's
  // folders (lathe's own, private): it builds in a fresh folder of the temporary directory, and
  // what the worker loads is copied into the cache.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = (tmpdir && *tmpdir ? std::string(tmpdir) : std::string("/tmp")) + "/lathe-ext-build-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    c.log = "[lathe] cannot create " + tmpl + "\n";
    return c;
  }
  const fs::path work = tmpl;
  const fs::path tmp = ext_root / ("tmp-" + random_suffix());
  fs::create_directories(tmp / "out", ec);
  if (ec || !write_file(work / "request.json", request.dump()) ||
      !fs::copy_file(ext_script(), work / "lathe_ext.py", ec)) {
    c.log = "[lathe] cannot prepare " + work.string() + "\n";
    fs::remove_all(work, ec);
    return c;
  }
  const std::vector<std::string> cmd = {interpreter.string(), "-B", "-s", "-E", "-c", run_script,
                                        "compile", "request.json", "out"};
  tool_result r = run_tool(cmd, extension_timeout_s, work, &jail);
  own_again(work);
  c.built = true;
  c.ok = r.exit_code == 0 && !r.timed_out && fs::exists(work / "out/lathe-ext.json", ec);
  c.log = "$ load_inline(name=" + request.value("name", std::string("?")) + ") [" + key + "]\n" +
          r.output + (r.timed_out ? "\n[lathe] killed after " + std::to_string(extension_timeout_s) + " s\n" : "");
  // Only what the worker loads is kept: the module and its record (the objects are large).
  if (c.ok)
    for (const auto& e : fs::directory_iterator(work / "out", ec))
      if (e.path().extension() == ".so" || e.path().filename() == "lathe-ext.json")
        if (!fs::copy_file(e.path(), tmp / "out" / e.path().filename(), ec)) c.ok = false;
  fs::remove_all(work, ec);
  write_file(tmp / "build.log", c.log);
  write_file(tmp / "status", c.ok ? "ok\n" : "failed\n");
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp, ec);  // another build won the race: its result stands
  return c;
}

}  // namespace

bool defines_model_new(const std::string& source) {
  static const std::regex cls(R"((^|\n)class\s+ModelNew\b)");
  return std::regex_search(source, cls);
}

python_build_result build_python_extensions(const fs::path& interpreter, const std::string& runtime,
                                            const std::string& model_spec, const fs::path& dir,
                                            const fs::path& ext_root, const tool_jail& build_jail) {
  // The record step runs the candidate's Python; an extension's build imports its C++: both only
  // in the sandbox, never in a weaker jail (process.h).
  tool_jail jail = build_jail;
  jail.candidate_code = true;
  python_build_result out;
  std::error_code ec;
  if (!model_spec.empty() && !write_file(dir / "model.json", model_spec)) {
    out.log = "[lathe] cannot write model.json\n";
    return out;
  }
  if (!fs::copy_file(ext_script(), dir / "lathe_ext.py", fs::copy_options::overwrite_existing, ec)) {
    out.log = "[lathe] cannot copy " + ext_script().string() + ": " + ec.message() + "\n";
    return out;
  }
  const std::vector<std::string> cmd = {interpreter.string(), "-B", "-s", "-E", "-c", run_script,
                                        "record", "kernel.py", model_spec.empty() ? "-" : "model.json",
                                        "requests.json"};
  tool_result r = run_tool(cmd, record_timeout_s, dir, &jail);
  own_again(dir);
  fs::remove(dir / "lathe_ext.py", ec);
  out.log = "$ lathe_ext.py record kernel.py\n" + escape_untrusted(r.output);
  const json recorded = json::parse(read_file(dir / "requests.json"), nullptr, false);
  fs::remove(dir / "requests.json", ec);
  if (r.exit_code != 0 || r.timed_out || !recorded.is_object()) {
    out.log += "[lathe] recording the candidate's extensions failed\n";
    return out;
  }
  const json& requests = recorded.value("requests", json::array());
  fs::create_directories(ext_root, ec);
  std::vector<std::string> keys;
  std::vector<std::future<compiled>> jobs;
  for (const auto& req : requests) {
    hasher h;
    h.add("lathe-ext/1").add(runtime).add(req.dump());
    keys.push_back(h.hex());
    jobs.push_back(std::async(std::launch::async, [&, req, key = keys.back()] {
      return compile_one(interpreter, req, ext_root, key, jail);
    }));
  }
  json listed = json::array();
  out.ok = true;
  for (size_t i = 0; i < jobs.size(); ++i) {
    compiled c = jobs[i].get();
    out.ok &= c.ok;
    out.compiled += c.built ? 1 : 0;
    out.log += escape_untrusted(c.log);
    listed.push_back({{"request", requests[i]}, {"dir", (ext_root / keys[i]).string()}});
  }
  out.extensions = static_cast<int>(jobs.size());
  out.log += "[lathe] " + std::to_string(out.extensions) + " extension(s), " + std::to_string(out.compiled) +
             " compiled now, the others from " + ext_root.string() + "\n";
  if (out.ok && !write_file(dir / "extensions.json", listed.dump())) {
    out.ok = false;
    out.log += "[lathe] cannot write extensions.json\n";
  }
  return out;
}

}  // namespace lathe::gate
