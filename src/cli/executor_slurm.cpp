#include "cli/executor_slurm.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/context.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/text.h"
#include "gate/slurm.h"

namespace fs = std::filesystem;

namespace lathe::cli {

namespace {

namespace slurm = gate::slurm;

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The request a job answers, as `lathe eval`'s arguments: the task's file, the kernels' files.
fs::path task_argument(const task& t) { return fs::absolute(t.problem.empty() ? t.dir : t.problem); }

evaluation infra(const task& t, const kernel_bundle& c, const std::string& why) {
  evaluation e;
  e.task = t.name;
  e.kernel_hash = c.hash;
  e.kernel_name = c.name;
  e.result = outcome::infra_error;
  e.message = "slurm executor: " + why;
  return e;
}

// The batch script: `lathe eval --json` in an environment of exactly `env` (env -i: not even the
// login environment sbatch loads for a listed --export), its JSON renamed into result.json when
// lathe eval ended with a verdict (exit 0, 1 or 3); its exit code and stderr kept per job.
std::string job_script(const std::vector<std::string>& eval_argv, const std::vector<std::string>& env) {
  std::string cmd = "env -i";
  for (const auto& e : env) cmd += " " + quoted(e);
  for (const auto& a : eval_argv) cmd += " " + quoted(a);
  return "#!/bin/sh\n"
         "# Written by lathe's slurm executor: one evaluation (docs/scale.md \"Slurm\").\n" +
         cmd + " > \"result.$SLURM_JOB_ID.tmp\" 2> \"eval.$SLURM_JOB_ID.err\"\n"
               "rc=$?\n"
               "echo \"$rc\" > \"exit.$SLURM_JOB_ID\"\n"
               "case $rc in 0|1|3) [ -s \"result.$SLURM_JOB_ID.tmp\" ] && mv \"result.$SLURM_JOB_ID.tmp\" result.json ;; esac\n"
               "exit 0\n";
}

std::vector<int64_t> read_jobs(const fs::path& dir) {
  std::vector<int64_t> out;
  std::ifstream in(dir / "jobs");
  for (int64_t id = 0; in >> id;) out.push_back(id);
  return out;
}

std::optional<evaluation> read_result(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "result.json", ec)) return std::nullopt;
  try {
    return nlohmann::json::parse(read_text(dir / "result.json")).get<evaluation>();
  } catch (const std::exception&) {
    return std::nullopt;  // not lathe.eval/1: treated as no result (the job is looked at)
  }
}

// A job that ran to its end without a verdict: what it said (lathe eval's exit code and the end
// of its stderr, else Slurm's output of the job).
std::string why_no_result(const fs::path& dir, int64_t job) {
  const std::string id = std::to_string(job);
  std::string err = read_text(dir / ("eval." + id + ".err"));
  if (err.empty()) err = read_text(dir / ("slurm-" + id + ".out"));
  if (err.size() > 600) err = "…" + err.substr(err.size() - 600);
  const std::string rc = read_text(dir / ("exit." + id));
  return "job " + id + " ran and left no evaluation" +
         (rc.empty() ? std::string(" (its script did not run lathe)") : " (lathe eval exit " + rc.substr(0, rc.find('\n')) + ")") +
         (err.empty() ? std::string() : ": " + err) + "; its files are in " + dir.string();
}

}  // namespace

fs::path submission_ledger(const fs::path& workspace, const std::string& key) {
  return workspace / "runs" / "slurm" / content_hash(key).substr(0, 16);
}

void close_ledger(const fs::path& ledger, const std::string& run) {
  std::error_code ec;
  fs::rename(ledger, fs::path(ledger.string() + ".done-" + run), ec);
}

int32_t slurm_verifier::jobs_submitted() const {
  std::lock_guard<std::mutex> lock(m_);
  return submitted_;
}

evaluation slurm_verifier::check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                                 const provenance&) {
  return run(t, k, baseline, false);
}

evaluation slurm_verifier::compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                                   const provenance&) {
  return run(t, candidate, baseline, true);
}

agent::rules::detections slurm_verifier::features(const task&, const kernel_bundle&) {
  agent::rules::detections d;
  d.notes.push_back("features are not read through the slurm executor: use --executor local");
  return d;
}

result<fs::path> slurm_verifier::object(const task&, const kernel_bundle& k) {
  return fail(errc::unsupported, k.name + ": built objects stay on the cluster's nodes (slurm executor); use --executor local");
}

// Long: one request's life in one place: its result read back, a queued job waited for, a lost
// one submitted again within the bound, each exit said in its message.
evaluation slurm_verifier::run(const task& t, const kernel_bundle& c, const kernel_bundle& b, bool time) {
  if (c.origin.empty() || b.origin.empty())
    return infra(t, c, "'" + (c.origin.empty() ? c.name : b.name) + "' is not a file a job can read (made in "
                       "memory, e.g. eager PyTorch's baseline); evaluate it with --executor local");
  std::vector<std::string> argv = {s_.lathe.string(), "--workspace", s_.workspace.string(), "eval",
                                   task_argument(t).string(), fs::absolute(c.origin).string(),
                                   "--baseline", fs::absolute(b.origin).string(), "--json"};
  if (!time) argv.push_back("--no-time");
  for (const auto& f : s_.eval_flags) argv.push_back(f);
  std::string key;
  for (const auto& a : argv) key += a + "\n";
  key = content_hash(key + c.hash + "\n" + b.hash);
  fs::path dir;
  {
    // The n-th time this process asks the same request (an `unstable` asked again) is the n-th
    // folder: a resumed submitter asks in the same order and finds each.
    std::lock_guard<std::mutex> lock(m_);
    dir = s_.ledger / (key.substr(0, 16) + "-" + std::to_string(asked_[key]++));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return infra(t, c, "cannot create " + dir.string() + ": " + ec.message());
  {
    std::ofstream out(dir / "job.sh", std::ios::trunc);
    out << job_script(argv, slurm::job_environment(slurm::current_environment()));
    if (!out) return infra(t, c, "cannot write " + (dir / "job.sh").string());
  }
  const auto poll = std::chrono::milliseconds(static_cast<int64_t>(s_.settings.poll_seconds * 1000));
  auto squeue_failing_since = std::chrono::steady_clock::time_point{};
  std::string last_lost;
  for (;;) {
    if (auto done = read_result(dir)) return *done;
    const std::vector<int64_t> jobs = read_jobs(dir);
    if (!jobs.empty()) {
      auto st = slurm::states({jobs.back()});
      if (!st) {
        // The controller unreachable is no reason to submit again; ten minutes of it is the end.
        const auto now = std::chrono::steady_clock::now();
        if (squeue_failing_since == std::chrono::steady_clock::time_point{}) squeue_failing_since = now;
        if (now - squeue_failing_since > std::chrono::minutes(10)) return infra(t, c, st.error().message);
        std::this_thread::sleep_for(poll);
        continue;
      }
      squeue_failing_since = {};
      const slurm::job_state state = st->at(jobs.back());
      const slurm::job_fate fate = slurm::fate_of(state);
      if (fate == slurm::job_fate::waiting) {
        std::this_thread::sleep_for(poll);
        continue;
      }
      if (auto done = read_result(dir)) return *done;  // it ended between the two reads
      if (fate == slurm::job_fate::ran) return infra(t, c, why_no_result(dir, jobs.back()));
      last_lost = slurm::to_string(state);
      if (static_cast<int32_t>(jobs.size()) > s_.settings.resubmits)
        return infra(t, c, cat("Slurm ended its ", std::to_string(jobs.size()), " jobs before their end (the last ", last_lost,
                               "); not the kernel's failure. Their files are in ", dir.string()));
    }
    slurm::job_request req;
    req.name = "lathe-" + t.name;
    req.script = dir / "job.sh";
    req.dir = dir;
    req.gpu = t.plat == platform::cuda;
    req.partition = s_.settings.partition;
    req.time_limit = s_.settings.time_limit;
    req.sbatch_args = s_.settings.sbatch_args;
    req.environment = slurm::job_environment(slurm::current_environment());
    auto id = slurm::submit(req);
    if (!id) return infra(t, c, id.error().message);
    {
      std::ofstream out(dir / "jobs", std::ios::app);
      out << *id << "\n";
      std::lock_guard<std::mutex> lock(m_);
      ++submitted_;
    }
    std::fprintf(stderr, "slurm: job %lld: %s %s%s\n", static_cast<long long>(*id), t.name.c_str(), c.name.c_str(),
                 last_lost.empty() ? "" : (" (again: the last job was " + last_lost + ")").c_str());
  }
}

const char* to_string(executor_kind k) { return k == executor_kind::slurm ? "slurm" : "local"; }

std::vector<std::string> eval_flags(const gate::gate_settings& s) {
  std::vector<std::string> out = {"--max-time", number_text("%g", s.max_time)};
  if (s.quick) out.push_back("--quick");
  if (s.refuse_torch_fallback) out.push_back("--refuse-torch-fallback");
  return out;
}

result<std::unique_ptr<slurm_verifier>> open_slurm_executor(const context& ctx, const executor_choice& c, const std::string& key,
                                           std::vector<std::string> flags) {
  if (const std::string why = slurm::unavailable(); !why.empty()) return fail(errc::unsupported, "--executor slurm: " + why);
  std::error_code ec;
  slurm_submission s;
  s.lathe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(errc::io_error, "--executor slurm: cannot read this lathe's path: " + ec.message());
  s.workspace = fs::absolute(ctx.ws.root);
  s.ledger = submission_ledger(s.workspace, key);
  s.eval_flags = std::move(flags);
  s.settings = c.slurm;
  return std::make_unique<slurm_verifier>(std::move(s));
}

}  // namespace lathe::cli
