#include "gate/slurm.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

extern char** environ;

namespace lathe::gate::slurm {

namespace {

struct job_state_name {
  job_state s;
  const char* word;  // squeue's %T
};
constexpr std::array<job_state_name, 25> job_state_names = {{
    {job_state::pending, "PENDING"},         {job_state::configuring, "CONFIGURING"},
    {job_state::running, "RUNNING"},         {job_state::completing, "COMPLETING"},
    {job_state::suspended, "SUSPENDED"},     {job_state::stopped, "STOPPED"},
    {job_state::requeued, "REQUEUED"},       {job_state::requeue_hold, "REQUEUE_HOLD"},
    {job_state::requeue_fed, "REQUEUE_FED"}, {job_state::resizing, "RESIZING"},
    {job_state::signaling, "SIGNALING"},     {job_state::stage_out, "STAGE_OUT"},
    {job_state::resv_del_hold, "RESV_DEL_HOLD"}, {job_state::special_exit, "SPECIAL_EXIT"},
    {job_state::completed, "COMPLETED"},     {job_state::failed, "FAILED"},
    {job_state::cancelled, "CANCELLED"},     {job_state::timeout, "TIMEOUT"},
    {job_state::preempted, "PREEMPTED"},     {job_state::node_fail, "NODE_FAIL"},
    {job_state::boot_fail, "BOOT_FAIL"},     {job_state::deadline, "DEADLINE"},
    {job_state::out_of_memory, "OUT_OF_MEMORY"}, {job_state::revoked, "REVOKED"},
    {job_state::unknown, "UNKNOWN"},
}};

struct command_result {
  int exit_code = -1;  // -1: could not start
  std::string output;  // stdout and stderr
};

// Runs a Slurm command with an environment of its own: PATH to find it, SLURM_CONF to find the
// cluster, HOME and LANG=C (English, parseable messages); never the submitter's API keys, which
// sbatch would otherwise hand to the job (its --export default is ALL).
command_result run_command(const std::vector<std::string>& argv) {
  std::vector<std::string> env = {"LANG=C"};
  for (const char* name : {"PATH", "HOME", "SLURM_CONF"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int fds[2];
  command_result out;
  if (pipe2(fds, O_CLOEXEC) != 0) return out;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    out.output = argv[0] + ": " + std::strerror(spawned);
    return out;
  }
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = read(fds[0], buf.data(), buf.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.output.size() < (1u << 20)) out.output.append(buf.data(), static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

const char* to_string(job_state s) {
  for (const auto& n : job_state_names)
    if (n.s == s) return n.word;
  return "UNKNOWN";
}

std::optional<job_state> parse_job_state(std::string_view word) {
  for (const auto& n : job_state_names)
    if (word == n.word) return n.s;
  return std::nullopt;
}

job_fate fate_of(job_state s) {
  switch (s) {
    case job_state::completed:
    case job_state::failed:  // the batch script's own failure: its files say what happened
      return job_fate::ran;
    case job_state::cancelled:
    case job_state::timeout:
    case job_state::preempted:
    case job_state::node_fail:
    case job_state::boot_fail:
    case job_state::deadline:
    case job_state::out_of_memory:
    case job_state::revoked:
    case job_state::unknown:
      return job_fate::lost;
    default:
      return job_fate::waiting;
  }
}

const char* to_string(job_fate f) {
  switch (f) {
    case job_fate::waiting: return "waiting";
    case job_fate::ran: return "ran";
    case job_fate::lost: return "lost";
  }
  return "?";
}

std::vector<std::string> sbatch_argv(const job_request& r) {
  std::vector<std::string> a = {"--parsable", "--job-name=" + r.name, "--chdir=" + r.dir.string(),
                                "--output=" + (r.dir / "slurm-%j.out").string(), "--ntasks=1"};
  if (r.gpu) a.push_back("--gres=gpu:1");
  if (!r.partition.empty()) a.push_back("--partition=" + r.partition);
  if (!r.time_limit.empty()) a.push_back("--time=" + r.time_limit);
  std::string list;
  for (const auto& e : r.environment) list += (list.empty() ? "" : ",") + e;
  // An explicit list (never ALL): the job sees these and Slurm's own SLURM_* variables.
  a.push_back("--export=" + list);
  for (const auto& x : r.sbatch_args) a.push_back(x);
  a.push_back(r.script.string());
  return a;
}

result<int64_t> submit(const job_request& r) {
  std::vector<std::string> argv = {"sbatch"};
  for (auto& a : sbatch_argv(r)) argv.push_back(std::move(a));
  const command_result got = run_command(argv);
  // --parsable: "<id>" or "<id>;<cluster>".
  char* end = nullptr;
  const long long id = std::strtoll(got.output.c_str(), &end, 10);
  if (got.exit_code != 0 || id <= 0)
    return fail(errc::io_error, "sbatch refused the job: " + first_line(got.output) +
                                    " (is SLURM_CONF or /etc/slurm/slurm.conf the cluster you mean?)");
  return static_cast<int64_t>(id);
}

result<std::map<int64_t, job_state>> states(const std::vector<int64_t>& jobs) {
  std::map<int64_t, job_state> out;
  if (jobs.empty()) return out;
  std::string ids;
  for (int64_t j : jobs) {
    ids += (ids.empty() ? "" : ",") + std::to_string(j);
    out[j] = job_state::unknown;
  }
  const command_result got = run_command({"squeue", "-h", "--states=all", "-j", ids, "-o", "%i %T"});
  // squeue exits 1 with "Invalid job id specified" when none of the ids is known any more.
  if (got.exit_code != 0 && got.output.find("Invalid job id") == std::string::npos)
    return fail(errc::io_error, "squeue failed: " + first_line(got.output));
  std::istringstream lines(got.output);
  std::string id, word;
  while (lines >> id >> word) {
    char* end = nullptr;
    const long long j = std::strtoll(id.c_str(), &end, 10);
    if (auto s = parse_job_state(word); s && out.count(j)) out[j] = *s;
  }
  return out;
}

result<void> cancel(int64_t job) {
  const command_result got = run_command({"scancel", std::to_string(job)});
  if (got.exit_code != 0) return fail(errc::io_error, "scancel " + std::to_string(job) + ": " + first_line(got.output));
  return {};
}

std::vector<std::string> job_environment(const std::map<std::string, std::string>& submitter) {
  std::vector<std::string> out = {"LANG=C"};
  for (const char* name : {"PATH", "HOME", "TMPDIR", "LATHE_EXTENSION_CACHE", "LATHE_LOCK_DIR"}) {
    const auto it = submitter.find(name);
    if (it != submitter.end() && it->second.find(',') == std::string::npos) out.push_back(it->first + "=" + it->second);
  }
  return out;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (const auto eq = kv.find('='); eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

std::string unavailable() {
  const command_result got = run_command({"squeue", "-h", "-o", "%i"});
  if (got.exit_code == -1)
    return "squeue is not on PATH: install Slurm's client commands (Debian: slurm-client), or use --executor local";
  if (got.exit_code != 0)
    return "squeue cannot reach a Slurm controller (" + first_line(got.output) +
           "): set SLURM_CONF to the cluster's slurm.conf (scripts/slurm-local env DIR for the test cluster)";
  return "";
}

}  // namespace lathe::gate::slurm
