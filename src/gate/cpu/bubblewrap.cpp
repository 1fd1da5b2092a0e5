#include "gate/cpu/bubblewrap.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

// Runs argv (absolute argv[0]) with an empty environment; its exit code and what it printed.
std::pair<int, std::string> run_quietly(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-1, std::strerror(errno)};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* no_env[] = {nullptr};
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {-1, std::strerror(errno)};
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execve(args[0], args.data(), no_env);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && out.size() < 4096) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

std::vector<fs::path> bwrap_candidates() {
  std::vector<fs::path> c;
  if (const char* e = std::getenv("LATHE_BWRAP"); e && *e) c.emplace_back(e);
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t at = 0; at <= p.size();) {
      const size_t end = std::min(p.find(':', at), p.size());
      if (end > at) c.push_back(fs::path(p.substr(at, end - at)) / "bwrap");
      at = end + 1;
    }
  }
  c.emplace_back("/usr/bin/bwrap");
  // deps/ of the checkout the running binary was built in (build/lathe, build/tests/x/y_test).
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; !ec && up < 5 && !dir.empty(); ++up, dir = dir.parent_path())
    c.push_back(dir / "deps/usr/bin/bwrap");
  return c;
}

bubblewrap_tool probe() {
  bubblewrap_tool bw;
  std::error_code ec;
  for (const auto& c : bwrap_candidates())
    if (access(c.c_str(), X_OK) == 0 && fs::is_regular_file(c, ec)) {
      bw.bwrap = c;
      break;
    }
  if (bw.bwrap.empty()) {
    bw.why = "bubblewrap is not installed: install the Debian/Ubuntu package 'bubblewrap' "
             "(scripts/install-deps does it) or name its binary in LATHE_BWRAP";
    return bw;
  }
  if (geteuid() == 0) {
    for (const char* s : {"/usr/bin/setpriv", "/bin/setpriv"})
      if (access(s, X_OK) == 0) {
        bw.setpriv = s;
        break;
      }
    if (bw.setpriv.empty()) {
      bw.why = "util-linux's setpriv is missing (it drops a sandboxed tool to a user of its own)";
      return bw;
    }
  }
  auto [code, out] = run_quietly({bw.bwrap.string(), "--version"});
  bw.version = code == 0 ? out.substr(0, out.find('\n')) : "bubblewrap (version unknown)";
  // A real sandbox around /bin/true: a kernel without unprivileged user namespaces, or a
  // security module that forbids them (Ubuntu 24.04's AppArmor for a bwrap outside /usr/bin),
  // fails here rather than in the middle of a build.
  sandbox_spec spec;
  spec.read_trees = {"/usr", "/bin", "/lib", "/lib64"};
  spec.work = fs::temp_directory_path();
  spec.uid = geteuid() == 0 ? 65534 : 0;
  std::tie(code, out) = run_quietly(sandbox_command(bw, spec, {"/bin/true"}));
  if (code != 0) {
    bw.why = bw.version + " at " + bw.bwrap.string() + " cannot set up a sandbox here (exit " +
             std::to_string(code) + "): " + out.substr(0, out.find('\n'));
    return bw;
  }
  bw.usable = true;
  return bw;
}

}  // namespace

const bubblewrap_tool& find_bubblewrap() {
  static std::once_flag once;
  static bubblewrap_tool found;
  std::call_once(once, [] { found = probe(); });
  return found;
}

std::vector<std::string> sandbox_command(const bubblewrap_tool& bw, const sandbox_spec& spec,
                                         const std::vector<std::string>& command) {
  std::vector<std::string> a = {bw.bwrap.string(),
                                // Every namespace but the user's (which only an unprivileged
                                // lathe needs, below): no network, no other process, no IPC.
                                "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                                // Dies with lathe's thread that started it; no terminal to
                                // inject keystrokes into (TIOCSTI).
                                "--die-with-parent", "--new-session"};
  if (!spec.gpu) a.insert(a.begin() + 1, {"--unshare-pid", "--unshare-ipc"});
  const bool root = geteuid() == 0;
  if (!root) a.push_back("--unshare-user");
  std::vector<fs::path> bound, made, linked;
  auto within_bound = [&](const fs::path& p) {
    for (const auto& b : bound) {
      auto [e, _] = std::mismatch(b.begin(), b.end(), p.begin(), p.end());
      if (e == b.end()) return true;
    }
    return false;
  };
  // The folders above a bind that is not at the root (a venv in /opt/torch/.venv): bubblewrap
  // run by root makes them 0700, which the tool's own user cannot walk (on the H100 machine a
  // ModelNew's record step could not import torch, bench/results/gpu-modelnew-2026-12-06).
  auto make_above = [&](const fs::path& t) {
    fs::path above;
    for (auto it = t.begin(); it != t.end() && std::next(it) != t.end(); ++it) {
      above /= *it;
      if (above == "/" || within_bound(above) || std::find(made.begin(), made.end(), above) != made.end())
        continue;
      if (std::find(linked.begin(), linked.end(), above) != linked.end()) break;  // made as a link
      a.insert(a.end(), {"--perms", "0755", "--dir", above.string()});
      made.push_back(above);
    }
  };
  // A /dev of two devices, as lathe's older jail allowed: /dev/null and /dev/urandom (bound as
  // devices: a read-only bind is also nodev, and torch could not open it).
  // Not bubblewrap's --dev, whose /dev/zero let `#include </dev/zero>` (through a macro) grow a
  // compiler to its memory limit (32 s, against a refusal in milliseconds).
  a.insert(a.end(), {"--proc", "/proc", "--tmpfs", "/dev", "--dev-bind", "/dev/null", "/dev/null",
                     "--dev-bind", "/dev/urandom", "/dev/urandom", "--symlink", "/proc/self/fd", "/dev/fd",
                     "--tmpfs", "/tmp"});
  // All of the above before the trees: a tree or file beneath /tmp (a checkout cloned there, its
  // python/ folder) is bound onto the private /tmp, not hidden by it (every problem failed to
  // start from a clone in /tmp).
  std::error_code ec;
  for (const auto& t : spec.read_trees) {
    if (t.empty() || within_bound(t)) continue;
    if (fs::is_symlink(t, ec)) {  // /bin -> usr/bin on a merged-/usr system: the same link
      a.insert(a.end(), {"--symlink", fs::read_symlink(t, ec).string(), t.string()});
      linked.push_back(t);
      continue;
    }
    make_above(t);
    a.insert(a.end(), {"--ro-bind-try", t.string(), t.string()});
    bound.push_back(t);
  }
  // The CPU topology (OpenMP's and torch's thread counts read it); nothing else of /sys.
  if (!spec.gpu) a.insert(a.end(), {"--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"});
  if (spec.gpu) {
    // The driver's nodes (nvidiactl, nvidia-uvm, nvidia0…, nvidia-caps), its shared memory, and
    // the PCI tree it reads in /sys.
    for (const auto& e : fs::directory_iterator("/dev", ec))
      if (e.path().filename().string().starts_with("nvidia"))
        a.insert(a.end(), {"--dev-bind", e.path().string(), e.path().string()});
    a.insert(a.end(), {"--dev-bind-try", "/dev/shm", "/dev/shm", "--ro-bind-try", "/sys", "/sys"});
  }
  for (const auto& [from, to] : spec.read_files) {
    make_above(to);
    a.insert(a.end(), {"--ro-bind", from.string(), to.string()});
  }
  a.insert(a.end(), {"--bind", spec.work.string(), spec.work.string(), "--chdir", spec.work.string()});
  a.push_back("--clearenv");
  for (const auto& [k, v] : spec.env) a.insert(a.end(), {"--setenv", k, v});
  if (root && spec.uid != 0) {
    // bubblewrap run by root keeps the tool root (a user namespace would map its user back to
    // root outside): the tool starts with only the right to change its user, and setpriv gives
    // that up at once for a user of its own, with no_new_privs.
    a.insert(a.end(), {"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", bw.setpriv.string(),
                       "--reuid=" + std::to_string(spec.uid), "--regid=" + std::to_string(spec.uid),
                       "--clear-groups", "--no-new-privs", "--"});
  } else {
    a.push_back("--");
  }
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::vector<fs::path> interpreter_trees(const fs::path& interpreter) {
  std::error_code ec;
  std::vector<fs::path> trees{fs::absolute(interpreter, ec).parent_path().parent_path()};
  const fs::path real = fs::canonical(interpreter, ec);
  if (!ec) trees.push_back(real.parent_path().parent_path());
  return trees;
}

std::string sandbox_summary(const bubblewrap_tool& bw, const sandbox_spec& spec) {
  return bw.version + (spec.gpu ? ": own mount, network and UTS namespaces (the host's PID and IPC, for CUDA); no network; "
                                 : ": own mount, PID, network, IPC and UTS namespaces; no network; ") +
         (geteuid() == 0 && spec.uid != 0 ? "a user of its own" : "this user, in a user namespace") +
         "; writes only " + spec.work.string();
}

}  // namespace lathe::gate
