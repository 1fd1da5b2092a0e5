#include "spec/problem_launch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "gate/cpu/bubblewrap.h"
#include "gate/cpu/sandbox.h"
#include "gate/cpu/files.h"
#include "spec/problem.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

std::string errno_text(int e) { return std::strerror(e); }

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) close(fd);
  }
};

// The folders of a colon-separated variable (PYTHONPATH, LD_LIBRARY_PATH) that exist.
std::vector<fs::path> listed_folders(const char* value) {
  std::vector<fs::path> out;
  std::error_code ec;
  std::string s = value ? value : "";
  for (size_t at = 0; at <= s.size();) {
    const size_t end = std::min(s.find(':', at), s.size());
    const fs::path d = s.substr(at, end - at);
    if (d.is_absolute() && fs::is_directory(d, ec)) out.push_back(fs::canonical(d, ec));
    at = end + 1;
  }
  return out;
}

// What the oracle may see of lathe's environment: enough to find its interpreter, torch and the
// GPU; no API keys. HOME and TMPDIR are its own folder.
std::vector<std::pair<std::string, std::string>> oracle_environment(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> env{
      {"LANG", "C.UTF-8"}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONUNBUFFERED", "1"},
      {"HOME", folder.string()}, {"TMPDIR", folder.string()},
      // Its user has no passwd entry: Python's getpass.getuser() (torch's profiler on CUDA asks)
      // reads these first instead of failing on getpwuid (the H100, 2026-12-07).
      {"USER", "lathe-problem"}, {"LOGNAME", "lathe-problem"},
      {"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  for (const char* k : {"LD_LIBRARY_PATH", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "CUDA_HOME"})
    if (const char* v = std::getenv(k)) env.emplace_back(k, v);
  return env;
}

// The problem's bytes copied into the oracle's folder, readable by its user.
result<fs::path> copy_problem(const fs::path& problem, const fs::path& folder) {
  std::ifstream in(problem, std::ios::binary);
  if (!in) return fail(errc::not_found, problem.string() + ": cannot read: " + errno_text(errno));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path copy = folder / problem.filename();
  const int fd = open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errc::io_error, copy.string() + ": " + errno_text(errno));
  fd_guard g{fd};
  fchmod(fd, 0644);  // whatever the umask: the oracle's user reads it
  for (size_t off = 0; off < bytes.size();) {
    const ssize_t k = write(fd, bytes.data() + off, bytes.size() - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return fail(errc::io_error, copy.string() + ": " + errno_text(errno));
    off += static_cast<size_t>(k);
  }
  return copy;
}

// argv and envp as the child reads them: pointers into strings that live as long as this.
struct exec_strings {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, env;
  void seal() {
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) env.push_back(e.data());
    env.push_back(nullptr);
  }
};

// Forks `plan` on lathe's spawner thread and waits for its exec: the pid, or the step that failed.
result<pid_t> fork_and_await(sandbox::child_plan& plan, const std::string& exe) {
  fd_guard devnull{open("/dev/null", O_RDWR | O_CLOEXEC)};
  if (devnull.fd < 0) return fail(errc::io_error, "/dev/null: " + errno_text(errno));
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) return fail(errc::io_error, "pipe: " + errno_text(errno));
  fd_guard err_r{err[0]}, err_w{err[1]};
  plan.devnull = devnull.fd;
  plan.error_fd = err_w.fd;
  const pid_t pid = sandbox::fork_worker(plan);
  if (pid < 0) return fail(errc::io_error, "fork: " + errno_text(-pid));
  close(err_w.fd);
  err_w.fd = -1;
  if (auto failed = sandbox::await_exec(pid, err_r.fd))
    return fail(errc::io_error, "could not start the problem's process (" + exe + "): " + failed->what);
  return pid;
}

}  // namespace

result<oracle_process> launch_oracle(const fs::path& python, const fs::path& problem, platform p,
                                     const int (&fds)[4]) {
  std::error_code ec;
  const auto folder = scratch_folder("problem");
  if (!folder) return fail(errc::io_error, "a folder for the problem's process: " + errno_text(errno));
  oracle_process o;
  o.folder = *folder;
  auto copy = copy_problem(problem, o.folder);
  if (!copy) {
    remove_oracle_folder(o.folder);
    return tl::unexpected(copy.error());
  }
  const fs::path script = problem_worker_script();
  const fs::path seen_at = fs::absolute(problem, ec).lexically_normal();
  const bool root = geteuid() == 0;
  const bubblewrap_tool& bw = find_bubblewrap();
  const auto env = oracle_environment(o.folder);

  exec_strings ex;
  sandbox::child_plan plan;
  plan.parent = getpid();
  plan.open_files = p == platform::cuda ? 4096 : 1024;  // python, torch's libraries, the driver
  // Files in its own folder only (the sandbox's one writable place, removed when it ends): on
  // CUDA, torch's op recording needs tempfile's directory, which Python finds by writing a probe
  // ("No usable temporary directory" under RLIMIT_FSIZE 0, the H100).
  plan.file_size = rlim_t{1} << 30;
  // The problem as it is called (messages and traces name it), at its own path in the sandbox.
  std::vector<std::string> command{python.string(), "-B", "-s", script.string(), seen_at.string(),
                                   "--device", p == platform::cuda ? "cuda" : "cpu", "--fds"};
  if (bw.usable) {
    sandbox_spec spec;
    spec.read_trees = {"/usr", "/lib", "/lib64", "/bin", "/etc"};
    for (auto& t : interpreter_trees(python)) spec.read_trees.push_back(std::move(t));
    spec.read_trees.push_back(fs::canonical(script, ec).parent_path());
    for (const char* var : {"PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_HOME"})
      for (auto& d : listed_folders(std::getenv(var))) spec.read_trees.push_back(std::move(d));
    spec.read_files = {{*copy, seen_at}};
    spec.work = o.folder;
    spec.env = env;
    spec.gpu = p == platform::cuda;
    spec.uid = root ? sandbox::own_uid_base : 0;  // the real number is written in the child
    ex.argv_s = sandbox_command(bw, spec, command);
    ex.env_s = {"PATH=/usr/bin:/bin", "LANG=C"};
    o.sandbox = sandbox_summary(bw, spec);
    plan.exe = bw.bwrap.c_str();
  } else {
    // No bubblewrap: as root a user of its own with its own /proc (and network and IPC on the
    // CPU); otherwise lathe's user. Said with every evaluation.
    command[4] = copy->string();
    ex.argv_s = command;
    for (const auto& [k, v] : env) ex.env_s.push_back(k + "=" + v);
    plan.drop = root;
    plan.private_proc = true;
    plan.own_namespaces = p != platform::cuda;
    plan.nproc = 4096;
    o.sandbox = std::string("not in the sandbox (") + bw.why + "): " +
                (root ? "a user of its own" : "lathe's user") + ", an environment of its own";
  }
  ex.seal();
  plan.argv = ex.argv.data();
  plan.envp = ex.env.data();
  if (plan.exe == nullptr) plan.exe = ex.argv[0];
  plan.own_uid = root;
  plan.uid = sandbox::own_uid_base;
  plan.gid = sandbox::own_uid_base;
  if (bw.usable && root) {
    int n = 0;
    for (size_t i = 0; i + 1 < ex.argv.size() && n < 2; ++i)
      if (ex.argv_s[i].starts_with("--reuid=") || ex.argv_s[i].starts_with("--regid=")) {
        ex.argv_s[i].resize(8 + 16, '\0');
        ex.argv[i] = ex.argv_s[i].data();
        plan.uid_args[n++] = ex.argv[i];
      }
  }
  plan.own_dir = root ? o.folder.c_str() : nullptr;
  for (int i = 0; i < 4; ++i) plan.fds[i] = fds[i];
  const auto pid = fork_and_await(plan, ex.argv_s[0]);
  if (!pid) {
    remove_oracle_folder(o.folder);
    return tl::unexpected(pid.error());
  }
  o.pid = *pid;
  return o;
}

void remove_oracle_folder(const fs::path& folder) {
  if (folder.empty()) return;
  std::error_code ec;
  fs::remove_all(folder, ec);  // links inside are removed, never followed
}

}  // namespace lathe::gate
