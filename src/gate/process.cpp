#include "gate/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "gate/cpu/bubblewrap.h"
#include "gate/cpu/landlock.h"
#include "gate/cpu/sandbox.h"
#include "gate/step_cgroup.h"

namespace lathe::gate {
namespace {

// What the jailed child needs, prepared before fork: after it, only raw system calls.
struct jail_plan {
  bool on = false;
  int abi = 0;
  std::vector<sandbox::landlock_rule> rules;
  std::vector<int> fds;
  rlim_t address_space = RLIM_INFINITY, file_size = RLIM_INFINITY, cpu = RLIM_INFINITY;
  bool drop = false;
  pid_t parent = 0;
  // In bubblewrap (bubblewrap.h): Landlock is left out (a Landlock domain forbids the mounts
  // bubblewrap makes; its mount namespace shows the same trees), and the user's number, known
  // only in the child (own_uid_base + its pid), is written into these arguments' buffers there.
  bool bwrap = false;
  std::vector<std::string> bwrap_argv;
  std::vector<size_t> uid_args;  // indices of "--reuid=", "--regid=" in bwrap_argv
  std::vector<std::string> cgroup_procs;  // the step's cgroup (step_cgroup.h), joined first
  ~jail_plan() {
    for (int fd : fds) close(fd);
  }
  void allow(const std::filesystem::path& p, uint64_t access) {
    const int fd = open(p.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return;  // a tree this machine lacks (/lib64 on some)
    fds.push_back(fd);
    rules.push_back({fd, access});
  }
};

// The tools' PATH: the CUDA toolkit first, then the system's.
constexpr const char* tool_path = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin";

std::string find_in_path(const std::string& name, const std::string& path) {
  for (size_t at = 0; at <= path.size();) {
    const size_t end = std::min(path.find(':', at), path.size());
    const std::string c = path.substr(at, end - at) + "/" + name;
    if (end > at && access(c.c_str(), X_OK) == 0) return c;
    at = end + 1;
  }
  return {};
}

bool set_limit(int resource, rlim_t v) {
  rlimit r{v, v};
  return setrlimit(resource, &r) == 0;
}

// In the child, before exec. Failing any step ends the child with 125 and a line on its output.
void enter_jail(const jail_plan& j) {
  auto die = [](const char* what) {
    dprintf(1, "[lathe] the tool's jail: %s: %s\n", what, std::strerror(errno));
    _exit(125);
  };
  if (!join_step_cgroup(j.cgroup_procs)) die("joining the step's cgroup");
  if (!set_limit(RLIMIT_AS, j.address_space) || !set_limit(RLIMIT_FSIZE, j.file_size) ||
      !set_limit(RLIMIT_CORE, 0) || !set_limit(RLIMIT_CPU, j.cpu) || !set_limit(RLIMIT_NOFILE, 1024))
    die("limits");
  if (j.drop) {
    // A user of its own, as the workers: the directory it works in becomes its own, and nothing
    // else of root's is readable to it.
    const uid_t uid = sandbox::own_uid_base + static_cast<uid_t>(syscall(SYS_getpid));
    if (!set_limit(RLIMIT_NPROC, 512)) die("limits");
    syscall(SYS_fchownat, AT_FDCWD, ".", uid, uid, 0);
    syscall(SYS_fchownat, AT_FDCWD, "keep", uid, uid, 0);
    if (j.bwrap) {
      // setpriv drops to it inside the sandbox: its number into "--reuid=" and "--regid=".
      char digits[16];
      int n = 0;
      for (uid_t v = uid; v > 0 || n == 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
      for (size_t i : j.uid_args) {
        char* a = const_cast<char*>(j.bwrap_argv[i].c_str());
        char* d = a + 8;  // after "--reuid=" / "--regid="
        for (int k = n - 1; k >= 0; --k) *d++ = digits[k];
        *d = '\0';
      }
    } else if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, uid, uid, uid) != 0 ||
               syscall(SYS_setresuid, uid, uid, uid) != 0) {
      die("changing user");
    }
  }
  if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
      (j.parent > 0 && syscall(SYS_getppid) != j.parent))
    die("binding to lathe");
  if (j.bwrap) return;
  if (j.abi > 0) {
    if (const int e = sandbox::landlock_restrict(j.abi, j.rules.data(), j.rules.size()); e != 0) {
      errno = e;
      die("Landlock");
    }
  } else if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    die("no_new_privs");
  }
}

// The jail of one tool run (`jp`, what the child enters; `r.jail`, what it says): bubblewrap
// where it works, else Landlock and a user of its own. False when the tool must not run at all.
bool plan_jail(const tool_jail& jail, double timeout_s, const std::filesystem::path& cwd,
               std::vector<std::string>& command, jail_plan& jp, tool_result& r) {
  using namespace sandbox::landlock_access;
  jp.on = true;
  jp.address_space = jail.address_space;
  jp.file_size = jail.file_size;
  jp.cpu = static_cast<rlim_t>(timeout_s) + 5;
  jp.drop = jail.drop && geteuid() == 0;
  jp.parent = getpid();
  const bubblewrap_tool& bw = find_bubblewrap();
  if (bw.usable) {
    sandbox_spec spec;
    spec.read_trees = jail.read_trees;
    spec.work = cwd.empty() ? std::filesystem::current_path() : std::filesystem::absolute(cwd);
    spec.env = {{"PATH", tool_path}, {"LANG", "C"}, {"TMPDIR", "."}};
    spec.uid = jp.drop ? sandbox::own_uid_base : 0;  // the real number is written in the child
    // The tool by its absolute path: bubblewrap looks it up in its own (empty) environment.
    if (command.front().find('/') == std::string::npos) {
      const std::string found = find_in_path(command.front(), tool_path);
      if (!found.empty()) command.front() = found;
    }
    jp.bwrap = true;
    jp.bwrap_argv = sandbox_command(bw, spec, command);
    for (size_t i = 0; i < jp.bwrap_argv.size(); ++i)
      if (jp.bwrap_argv[i].starts_with("--reuid=") || jp.bwrap_argv[i].starts_with("--regid=")) {
        jp.bwrap_argv[i].resize(8 + 16, '0');  // room for any uid's digits, written in the child
        jp.uid_args.push_back(i);
      }
    r.jail = sandbox_summary(bw, spec);
  } else if (jail.candidate_code) {
    // What runs a candidate's own code (a record step, an extension's import) is never run in
    // the weaker jail below: it reached the network and left processes behind.
    r.output = "[lathe] the sandbox cannot be set up, so the candidate's code was not run: " + bw.why + "\n";
    r.jail = "not run: " + bw.why;
    return false;
  } else {
    jp.abi = sandbox::landlock_abi();
    for (const auto& t : jail.read_trees) jp.allow(t, read_tree);
    jp.allow(cwd, all_in_tree | (jp.abi >= 2 ? refer : 0) | (jp.abi >= 3 ? truncate : 0));
    jp.allow("/dev/null", read_file | write_file);
    jp.allow("/dev/urandom", read_file);
    r.jail = (jp.abi > 0 ? "files: Landlock ABI " + std::to_string(jp.abi)
                         : std::string("files: not confined (this kernel has no Landlock)")) +
             (jp.drop ? "; a user of its own" : "; this user") + "; no sandbox (" + bw.why + ")";
  }
  return true;
}

// The tool's output until it closes its pipe, kept up to 1 MiB; past `timeout_s` from `start`
// its process group is killed.
void read_output(int fd, pid_t pid, double timeout_s, std::chrono::steady_clock::time_point start,
                 tool_result& r) {
  char buf[4096];
  bool open_pipe = true;
  while (open_pipe) {
    const double left = timeout_s - std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() - start).count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (pr < 0 && errno != EINTR) break;
    if (pr <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (r.output.size() < (1u << 20)) r.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      open_pipe = false;
    }
  }
}

}  // namespace

tool_result run_tool(const std::vector<std::string>& argv, double timeout_s,
                     const std::filesystem::path& cwd, const tool_jail* jail) {
  tool_result r;
  const auto start = std::chrono::steady_clock::now();
  jail_plan jp;
  std::vector<std::string> command = argv;
  std::optional<step_cgroup> group;
  if (jail && !plan_jail(*jail, timeout_s, cwd, command, jp, r)) return r;
  if (jail) {
    group.emplace(step_cgroup::make({jail->step_memory, jail->step_processes}));
    jp.cgroup_procs = group->procs_files();
    r.jail += "; " + group->summary();
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> args;
  // Into jp's own strings when in bubblewrap: the child writes the user's number into them.
  for (const auto& a : jp.bwrap ? jp.bwrap_argv : command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string path_var = std::string("PATH=") + tool_path;
  const char* env[] = {path_var.c_str(), "LANG=C", jail ? "TMPDIR=." : nullptr, nullptr};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    r.output = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);  // so a timeout kills the compiler's children too
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    if (jp.on) enter_jail(jp);
    execvpe(args[0], args.data(), const_cast<char* const*>(env));
    dprintf(1, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  read_output(fds[0], pid, timeout_s, start, r);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (group && group->active()) r.output += group->memory_verdict();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// A jailed tool ran as a user of its own, which owns what it wrote: the cache is root's again.
void allow_interpreter(tool_jail& jail, const std::filesystem::path& interpreter) {
  for (auto& t : interpreter_trees(interpreter)) jail.read_trees.push_back(std::move(t));
}

void own_again(const std::filesystem::path& dir) {
  if (geteuid() != 0) return;
  std::error_code ec;
  lchown(dir.c_str(), 0, 0);
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    lchown(it->path().c_str(), 0, 0);
}

}  // namespace lathe::gate
