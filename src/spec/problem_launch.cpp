#include "spec/problem_launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <vector>

#include "gate/cpu/bubblewrap.h"
#include "gate/cpu/sandbox.h"
#include "gate/cpu/files.h"
#include "spec/problem.h"
#include "spec/safe_file.h"

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

// What an oracle folder's name says of its lathe process (scratch_folder puts it between
// "lathe-" and the random part).
std::string owner_tag(pid_t pid, uint64_t start) {
  return "problem-" + std::to_string(pid) + "-" + std::to_string(start);
}

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
  (void)reclaim_oracle_folders(scratch_root());
  const auto folder = scratch_folder(owner_tag(getpid(), process_start(getpid()).value_or(0)).c_str());
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
  (void)remove_tree(folder);  // links inside are removed, never followed
}

std::optional<uint64_t> process_start(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields count from
  // the last ')'; starttime is field 22, the 20th after it.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 0; i < 20; ++i)
    if (!(fields >> field)) return std::nullopt;
  uint64_t start = 0;
  const auto [end, err] = std::from_chars(field.data(), field.data() + field.size(), start);
  if (err != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return start;
}

std::string oracle_folder_prefix(pid_t pid, uint64_t start) { return "lathe-" + owner_tag(pid, start) + "-"; }

namespace {

// "<pid>-<start>-" at the front of `rest` (an oracle folder's name after "lathe-problem-").
std::optional<std::pair<pid_t, uint64_t>> folder_owner(std::string_view rest) {
  int64_t pid = 0;
  uint64_t start = 0;
  auto [p, e1] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
  if (e1 != std::errc() || pid <= 0 || p == rest.data() + rest.size() || *p != '-') return std::nullopt;
  auto [q, e2] = std::from_chars(p + 1, rest.data() + rest.size(), start);
  if (e2 != std::errc() || q == rest.data() + rest.size() || *q != '-') return std::nullopt;
  return std::pair{static_cast<pid_t>(pid), start};
}

}  // namespace

int32_t reclaim_oracle_folders(const fs::path& dir) {
  constexpr std::string_view stem = "lathe-problem-";
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d))
      if (std::string_view(e->d_name).starts_with(stem)) names.emplace_back(e->d_name);
    closedir(d);
  }
  int32_t removed = 0;
  if (!process_start(getpid())) return removed;  // no /proc to read: no owner can be told alive
  for (const std::string& name : names) {
    const auto owner = folder_owner(std::string_view(name).substr(stem.size()));
    if (!owner) continue;  // not named for its process: whose it is cannot be told
    if (const auto now = process_start(owner->first); now && *now == owner->second) continue;  // alive
    struct stat st {};
    if (lstat((dir / name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    const bool mine = st.st_uid == geteuid() || (geteuid() == 0 && st.st_uid >= sandbox::own_uid_base);
    if (mine && remove_tree(dir / name)) ++removed;
  }
  return removed;
}

}  // namespace lathe::gate
