// lathe synth's input trials in the one sandbox (synth_trials.h, docs/synth.md).
//
// Why not the problem oracle `lathe task show` starts (spec/problem.h): that worker is trusted
// like a task's reference (docs/problems.md) and runs with the user's HOME, files and network.
// Mined code is untrusted, so its trials run where a candidate's record step runs: bubblewrap, no
// network, the system's trees read-only, one writable folder (in TMPDIR), the environment PATH,
// LANG and TMPDIR only, nothing alive afterwards; where the sandbox cannot be set up they do not
// run at all. Inside, python/lathe_synth_trial.py loads each candidate with the same code `task
// show` uses (lathe_problem.py's describe), so a kept problem is one `task show` reads.
#include "cli/synth_trials.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gate/cpu/wire.h"
#include "gate/cpu/files.h"
#include "gate/process.h"
#include "spec/problem.h"
#include "spec/safe_file.h"

namespace lathe::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* mark = "LATHE_SYNTH_TRIAL ";
constexpr uint64_t plan_cap = uint64_t{256} << 20;  // every candidate's source, 8 per module
constexpr uint64_t script_cap = uint64_t{4} << 20;

// The sandbox's writable folder, fresh: the trial script, what it imports, and the plan.
result<void> stage(const fs::path& out, const fs::path& work) {
  std::error_code ec;
  fs::create_directories(work / "lathe", ec);
  if (ec) return fail(errc::io_error, work.string() + ": " + ec.message());
  // lathe_problem.py loads lathe_ops.py, which reads lathe_plumbing.txt, from its own folder.
  const fs::path worker = gate::problem_worker_script();
  for (const fs::path& from :
       {gate::python_script("lathe_synth_trial.py", "LATHE_SYNTH_TRIAL_SCRIPT"), worker,
        worker.parent_path() / "lathe_ops.py", worker.parent_path() / "lathe_plumbing.txt"}) {
    const std::string name = from.filename().string();
    auto text = gate::read_named(from, script_cap);
    if (!text) return tl::unexpected(text.error());
    if (auto w =
            gate::write_beneath(work, fs::path("lathe") / name, *text, gate::write_mode::create);
        !w)
      return w;
  }
  auto plan = gate::read_beneath(out, "plan.json", plan_cap);
  if (!plan) return tl::unexpected(plan.error());
  return gate::write_beneath(work, "plan.json", *plan, gate::write_mode::create);
}

// What the sandbox may read besides the system's trees: the interpreter's own tree (a virtual
// environment's, as named and as resolved), as the compiler's jail allows it (gate/build.cpp).
gate::tool_jail trial_jail(const fs::path& python) {
  gate::tool_jail jail;
  jail.candidate_code = true;
  gate::allow_interpreter(jail, python);
  return jail;
}

// The script's marked lines; `ready` set when torch imported.
std::vector<json> marked_lines(const std::string& output, bool& ready, std::string& no_torch) {
  std::vector<json> modules;
  size_t at = 0;
  while ((at = output.find(mark, at)) != std::string::npos) {
    if (at > 0 && output[at - 1] != '\n') {
      at += 1;
      continue;
    }
    const size_t begin = at + std::char_traits<char>::length(mark);
    const size_t end = output.find('\n', begin);
    const json j = json::parse(
        output.substr(begin, end == std::string::npos ? std::string::npos : end - begin), nullptr,
        false);
    at = end == std::string::npos ? output.size() : end;
    if (!j.is_object()) continue;
    if (j.value("ready", false))
      ready = true;
    else if (j.contains("no_torch"))
      no_torch = j["no_torch"].is_string() ? j["no_torch"].get<std::string>() : "";
    else if (j.contains("id"))
      modules.push_back(j);
  }
  return modules;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() > n ? "…" + s.substr(s.size() - n) : s;
}

}  // namespace

json run_synth_trials(const fs::path& out, const synth_trial_options& o) {
  const auto start = std::chrono::steady_clock::now();
  json result{{"schema", "lathe.synth_trials/1"}, {"modules", json::array()}, {"error", nullptr}};
  // The sandbox's folder: a fresh one in TMPDIR (gate/cpu/files.h), as a record step's. Not one under
  // --out: bubblewrap run by root makes the folders above a bound one 0700, which the tool's own
  // user cannot walk, and Python opens its script by an absolute path.
  const fs::path work = gate::scratch_folder("synth").value_or(fs::path());
  std::string error;
  if (work.empty()) {
    error = "no folder for the trials in TMPDIR: " + std::string(std::strerror(errno));
  } else if (auto staged = stage(out, work); !staged) {
    error = "the trials could not be staged: " + staged.error().message;
  } else {
    std::string tried;
    for (const fs::path& python : gate::python_interpreters()) {
      const gate::tool_jail jail = trial_jail(python);
      char per_trial[32], target[32];
      std::snprintf(per_trial, sizeof per_trial, "%g", o.per_trial_s);
      std::snprintf(target, sizeof target, "%g", std::max(0.0, o.target_ms));
      // A problem past the gate's tensor limit could never be evaluated: refused in the trial.
      const std::vector<std::string> cmd{python.string(),
                                         "-I",
                                         "-B",
                                         "lathe/lathe_synth_trial.py",
                                         "plan.json",
                                         "--timeout",
                                         per_trial,
                                         "--max-tensors",
                                         std::to_string(wire::max_tensors),
                                         "--target-ms",
                                         target};
      const gate::tool_result r = gate::run_tool(cmd, o.timeout_s, work, &jail);
      gate::own_again(work);
      result["jail"] = r.jail;
      if (r.jail.starts_with("not run")) {
        error = "the sandbox cannot be set up (" + r.jail.substr(9) + ")";
        break;
      }
      bool ready = false;
      std::string no_torch;
      std::vector<json> modules = marked_lines(r.output, ready, no_torch);
      if (!ready) {
        tried += (tried.empty() ? "" : "; ") + python.string() + ": " +
                 (no_torch.empty() ? tail(r.output, 300) : "no torch (" + no_torch + ")");
        continue;
      }
      result["python"] = python.string();
      result["modules"] = modules;
      if (r.timed_out)
        error = "the trials passed --timeout " + std::to_string(o.timeout_s) + " s";
      else if (r.exit_code != 0)
        error = "the trial run ended with code " + std::to_string(r.exit_code) + ": " +
                tail(r.output, 300);
      tried.clear();
      break;
    }
    if (!tried.empty()) error = "no Python with torch ran in the sandbox: " + tried;
  }
  if (!work.empty()) (void)gate::remove_tree(work);
  if (!error.empty()) result["error"] = error;
  result["seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)gate::write_beneath(out, "trials.json", result.dump(1) + "\n", gate::write_mode::replace);
  return result;
}

}  // namespace lathe::cli
