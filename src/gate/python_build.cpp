#include "gate/python_build.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <vector>

#include "core/hash.h"
#include "core/text.h"
#include "gate/extension_cache.h"
#include "gate/cpu/files.h"
#include "gate/python_kernel.h"
#include "spec/safe_file.h"

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
  bool built = false;   // false: found in the cache
  bool shared = false;  // found in LATHE_EXTENSION_CACHE (extension_cache.h)
  std::string log;
  std::string refused;
};

// lathe's script beside the candidate's files (a new file: the folder is fresh).
result<void> place_script(const fs::path& folder) {
  const fs::path script = ext_script();
  auto text = read_beneath(script.parent_path(), script.filename(), record_cap);  // lathe's own tree
  if (!text) return tl::unexpected(text.error());
  return write_beneath(folder, "lathe_ext.py", *text, write_mode::create);
}

// One request into ext_root/key: cached when its status says ok, else compiled in a private
// folder that is renamed into place (the first of two racing builds wins, as for kernels).
compiled compile_one(const fs::path& interpreter, const json& request, const fs::path& ext_root,
                     const std::string& key, const tool_jail& jail, const std::string& cuda_arch,
                     const std::optional<fs::path>& shared) {
  compiled c;
  const fs::path dir = ext_root / key;
  std::error_code ec;
  std::string note;
  // Another workspace's build of the same request, copied in (never a link, only what loads).
  if (shared && !fs::exists(fs::symlink_status(dir, ec)) && import_extension(*shared, ext_root, key, note))
    c.shared = true;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    // Read beneath the entry (an earlier build renamed it from a folder a candidate's import ran
    // in): a build.log linked to /proc/self/environ put lathe's environment in the diagnostics.
    auto status = read_beneath(dir, "status", status_cap);
    c.ok = status && status->starts_with("ok");
    auto log = c.ok || !status ? result<std::string>{} : read_beneath(dir, "build.log", log_cap);
    if (c.ok || (log && !log->empty())) {
      c.log = c.ok ? "" : *log;
      if (status->starts_with("refused ")) c.refused = status->substr(8, status->find('\n') - 8);
      return c;
    }
    note = "[lathe] the cached extension " + dir.string() + " is unusable (" +
           (!status ? status.error().message : log ? std::string("an empty log") : log.error().message) + "): rebuilt\n";
    c.ok = false;
    (void)remove_tree(dir);
  }
  const auto work = scratch_folder("ext-build");
  if (!work) {
    c.log = "[lathe] cannot create a build folder in TMPDIR: " + std::string(std::strerror(errno)) + "\n";
    return c;
  }
  const fs::path tmp = ext_root / ("tmp-" + random_suffix());
  fs::create_directories(tmp / "out", ec);
  auto placed = ec ? fail(errc::io_error, ec.message()) : write_beneath(*work, "request.json", request.dump(), write_mode::create);
  if (placed) placed = place_script(*work);
  if (!placed) {
    c.log = "[lathe] cannot prepare " + work->string() + ": " + placed.error().message + "\n";
    (void)remove_tree(*work);
    (void)remove_tree(tmp);
    return c;
  }
  std::vector<std::string> cmd = {interpreter.string(), "-B", "-s", "-E", "-c", run_script,
                                  "compile", "request.json", "out"};
  if (!cuda_arch.empty()) cmd.push_back(cuda_arch);
  tool_result r = run_tool(cmd, extension_timeout_s, *work, &jail);
  own_again(*work);
  c.built = true;
  c.ok = r.exit_code == 0 && !r.timed_out;
  c.log = note + "$ load_inline(name=" + request.value("name", std::string("?")) + ") [" + key + "]\n" +
          r.output + (r.timed_out ? "\n[lathe] killed after " + std::to_string(extension_timeout_s) + " s\n" : "");
  // The extension's own code ran at its import in `work`: its output is copied without
  // following a link it left there (one to a root-only file came back in the diagnostics).
  if (c.ok) {
    auto copied = copy_tree_beneath(*work, "out", tmp, "out", object_cap,
                                    [](const fs::path& rel, entry_kind) { return extension_output(rel); });
    if (!copied) {
      c.ok = false;
      c.refused = "the extension's build left what lathe does not copy: " + copied.error().message;
      c.log += "[lathe] refused: " + c.refused + "\n";
    } else if (!fs::is_regular_file(fs::symlink_status(tmp / "out/lathe-ext.json", ec))) {
      c.ok = false;
      c.log += "[lathe] the extension's build wrote no out/lathe-ext.json\n";
    }
  }
  (void)remove_tree(*work);
  auto written = write_beneath(tmp, "build.log", c.log, write_mode::create);
  const std::string status = c.ok ? "ok\n" : !c.refused.empty() ? "refused " + c.refused + "\n" : "failed\n";
  if (written) written = write_beneath(tmp, "status", status, write_mode::create);
  if (!written) {
    (void)remove_tree(tmp);
    return c;
  }
  fs::rename(tmp, dir, ec);
  if (ec) (void)remove_tree(tmp);  // another build won the race: its result stands
  if (shared && c.ok) export_extension(ext_root, *shared, key);
  return c;
}

// The links beneath `root` (a folder a candidate's code ran in), as paths relative to it; at most
// `depth` folders down.
std::vector<std::string> links_beneath(const fs::path& root, const fs::path& rel, int depth) {
  std::vector<std::string> out;
  auto entries = list_beneath(root, rel);
  if (!entries) return out;
  for (const auto& e : *entries) {
    if (e.kind == entry_kind::link) out.push_back((rel / e.name).generic_string());
    if (e.kind == entry_kind::directory && depth > 0)
      for (auto& l : links_beneath(root, rel / e.name, depth - 1)) out.push_back(std::move(l));
  }
  return out;
}

// The record step's outcome: the requests it recorded, or why there are none.
struct recorded {
  json requests = json::array();
  bool ok = false;
  std::string refused;
};

// lathe_ext.py record, run in a scratch folder on a copy of the candidate: the build folder's
// kernel.py (hashed, and what the worker runs) is out of its reach, and its copy is compared
// with the screened source afterwards.
recorded record_extensions(const fs::path& interpreter, const std::string& model_spec, const std::string& source,
                           const tool_jail& jail, std::string& log) {
  recorded out;
  const auto scratch = scratch_folder("record");
  if (!scratch) {
    log += "[lathe] cannot create a folder for the record step in TMPDIR: " + std::string(std::strerror(errno)) + "\n";
    return out;
  }
  auto placed = write_beneath(*scratch, "kernel.py", source, write_mode::create);
  if (placed && !model_spec.empty()) placed = write_beneath(*scratch, "model.json", model_spec, write_mode::create);
  if (placed) placed = place_script(*scratch);
  if (!placed) {
    log += "[lathe] cannot prepare the record step: " + placed.error().message + "\n";
    (void)remove_tree(*scratch);
    return out;
  }
  const std::vector<std::string> cmd = {interpreter.string(), "-B", "-s", "-E", "-c", run_script,
                                        "record", "kernel.py", model_spec.empty() ? "-" : "model.json",
                                        "requests.json"};
  tool_result r = run_tool(cmd, record_timeout_s, *scratch, &jail);
  own_again(*scratch);
  log += "$ lathe_ext.py record kernel.py\n" + escape_untrusted(r.output);
  auto after = read_beneath(*scratch, "kernel.py", record_cap);
  auto requests = read_beneath(*scratch, "requests.json", record_cap);
  // Nothing lathe's record step does makes a link: one here was planted where lathe reads and
  // writes build files (build.log, status, extensions.json to a root-only file or to lathe.db).
  const std::vector<std::string> links = links_beneath(*scratch, "", 8);
  (void)remove_tree(*scratch);
  if (!after || *after != source) {
    out.refused = "the record step rewrote kernel.py (what would run is not what was screened)";
    return out;
  }
  if (!links.empty()) {
    std::string names;
    for (size_t i = 0; i < links.size() && i < 4; ++i) names += (i ? ", " : "") + links[i];
    out.refused = "the record step planted links in its folder (" + names + "): lathe follows none";
    return out;
  }
  if (r.exit_code != 0 || r.timed_out) return out;
  if (!requests) {
    // A link or a fifo where lathe reads its record is the candidate's doing, not a failure.
    if (requests.error().message.find("no such file") == std::string::npos)
      out.refused = "the record step left requests.json unreadable: " + requests.error().message;
    return out;
  }
  const json parsed = json::parse(*requests, nullptr, false);
  if (!parsed.is_object()) return out;
  out.requests = parsed.value("requests", json::array());
  out.ok = out.requests.is_array();
  return out;
}

}  // namespace

std::string torch_cuda_arch(const std::string& isa) {
  static const std::regex sm(R"(sm_(\d+)(\d)([a-z]?))");
  std::smatch m;
  if (!std::regex_match(isa, m, sm)) return {};
  return m[1].str() + "." + m[2].str() + m[3].str();
}

bool extension_output(const fs::path& rel) {
  return rel.has_filename() && rel.parent_path().empty() &&
         (rel.extension() == ".so" || rel.filename() == "lathe-ext.json");
}

bool defines_model_new(const std::string& source) {
  static const std::regex cls(R"((^|\n)class\s+ModelNew\b)");
  return std::regex_search(source, cls);
}

bool defines_launch(const std::string& source) {
  static const std::regex launch(
      R"((^|\n)(def\s+launch\b|launch\s*[:=]|from\s+\S+\s+import\s+[^\n]*\blaunch\b|import\s+[^\n]*\bas\s+launch\b))");
  return std::regex_search(source, launch);
}

bool names_cuda(const std::string& source) {
  static const std::regex cuda(
      R"(\bcuda_sources\s*=|(^|\n)\s*(import|from)\s+triton\b|\.cuda\s*\(|\bdevice\s*=\s*['"]cuda|\btorch\.cuda\.)");
  return std::regex_search(source, cuda);
}

bool model_new_candidate(const std::string& source, const std::string& problem_model) {
  return !problem_model.empty() && defines_model_new(source) && !defines_launch(source);
}

python_build_result build_python_extensions(const fs::path& interpreter, const std::string& runtime,
                                            const std::string& model_spec, const std::string& source,
                                            const fs::path& dir, const fs::path& ext_root, const tool_jail& build_jail,
                                            const std::string& cuda_arch) {
  // The record step runs the candidate's Python; an extension's build imports its C++: both only
  // in the sandbox, never in a weaker jail (process.h).
  tool_jail jail = build_jail;
  jail.candidate_code = true;
  python_build_result out;
  std::error_code ec;
  std::string log;
  const recorded rec = record_extensions(interpreter, model_spec, source, jail, log);
  out.log = log;
  out.refused = rec.refused;
  if (!rec.ok) {
    out.log += rec.refused.empty() ? "[lathe] recording the candidate's extensions failed\n"
                                   : "[lathe] refused: " + rec.refused + "\n";
    return out;
  }
  const json& requests = rec.requests;
  fs::create_directories(ext_root, ec);
  std::string unshared;
  const std::optional<fs::path> shared = shared_extension_cache(&unshared);
  if (!unshared.empty()) out.log += "[lathe] " + unshared + "\n";
  std::vector<std::string> keys;
  std::vector<std::future<compiled>> jobs;
  for (const auto& req : requests) {
    hasher h;
    h.add("lathe-ext/1").add(runtime).add(req.dump());
    if (!cuda_arch.empty()) h.add("cuda-arch").add(cuda_arch);
    keys.push_back(h.hex());
    jobs.push_back(std::async(std::launch::async, [&, req, key = keys.back()] {
      return compile_one(interpreter, req, ext_root, key, jail, cuda_arch, shared);
    }));
  }
  json listed = json::array();
  out.ok = true;
  int from_shared = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    compiled c = jobs[i].get();
    out.ok &= c.ok;
    out.compiled += c.built ? 1 : 0;
    from_shared += c.shared ? 1 : 0;
    out.log += escape_untrusted(c.log);
    if (out.refused.empty()) out.refused = c.refused;
    listed.push_back({{"request", requests[i]}, {"dir", (ext_root / keys[i]).string()}});
  }
  out.extensions = static_cast<int>(jobs.size());
  out.log += "[lathe] " + std::to_string(out.extensions) + " extension(s), " + std::to_string(out.compiled) +
             " compiled now, the others from " + ext_root.string() +
             (from_shared ? " (" + std::to_string(from_shared) + " copied from LATHE_EXTENSION_CACHE " + shared->string() + ")" : "") +
             "\n";
  // The build folder held the candidate's compile step: written beneath it, replacing whatever
  // has these names (a planted link to lathe.db was written through).
  for (const auto& [name, text] : {std::pair<const char*, std::string>{"model.json", model_spec},
                                   {"extensions.json", listed.dump()}}) {
    if (!out.ok || (text.empty() && std::string(name) == "model.json")) continue;
    if (auto w = write_beneath(dir, name, text, write_mode::replace); !w) {
      out.ok = false;
      out.log += "[lathe] cannot write " + std::string(name) + ": " + w.error().message + "\n";
    }
  }
  return out;
}

}  // namespace lathe::gate
