// The command provider: an agent CLI run with a clean environment in a temporary copy of the
// kernel bundle; its stdout is the reply and its file changes come back as edits (docs/edits.md).
#include "llm/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "spec/bundle.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;
using std::string;
using clock_type = std::chrono::steady_clock;

// The markers of docs/edits.md that this file writes (agent/edit.h defines the format; llm/ sits
// below agent/ and cannot include it; command_test parses this output with agent::parse_edits).
constexpr std::string_view whole_marker = "@@@ WHOLE ";
constexpr std::string_view delete_marker = "@@@ DELETE ";
constexpr std::string_view invalid_marker = "@@@ INVALID ";
constexpr std::string_view end_marker = "@@@ END";
// A bundle file's cap (spec/bundle.cpp's loader, agent/edit.h): larger files are not read.
constexpr uint64_t max_file_bytes = uint64_t{16} << 20;
// An agent that leaves more entries than this in a kernel's directory is not editing a kernel.
constexpr size_t max_entries = 10000;

call_failure failure(call_error kind, string message) {
  call_failure f;
  f.kind = kind;
  f.message = std::move(message);
  f.attempts = 1;
  return f;
}

// ---- the working directory -----------------------------------------------------------------

class temp_workdir {
 public:
  temp_workdir() {
    std::error_code ec;
    string tmpl = (fs::temp_directory_path(ec) / "lathe-command-XXXXXX").string();
    if (ec) tmpl = "/tmp/lathe-command-XXXXXX";
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~temp_workdir() {
    if (path_.empty()) return;
    std::error_code ec;
    if (fs::remove_all(path_, ec) != static_cast<std::uintmax_t>(-1) && !ec) return;
    // The agent may have left directories without write permission: give them back, retry.
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
    fs::remove_all(path_, ec);
  }
  temp_workdir(const temp_workdir&) = delete;
  temp_workdir& operator=(const temp_workdir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::optional<string> read_capped(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > max_file_bytes) return std::nullopt;
  }
  return out;
}

bool hidden(const fs::path& rel) {
  for (const auto& part : rel)
    if (part.string().starts_with(".")) return true;
  return false;
}

bool holds_end_marker(const string& text) {
  std::istringstream in(text);
  string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
      line.pop_back();
    if (line == end_marker) return true;
  }
  return false;
}

// The working directory's changes against `before` (path -> contents), as docs/edits.md text.
// New entries that cannot be bundle files (links, binaries, special files) are listed as ignored;
// a bundle file replaced by one of those is an INVALID edit, so applying the reply fails.
string changes_as_edits(const fs::path& dir, const std::map<string, string>& before) {
  string edits, ignored;
  const auto invalid = [&](const string& rel, const string& why) {
    edits.append(invalid_marker).append(rel).append("\n").append(why).append("\n");
    edits.append(end_marker).append("\n");
  };
  const auto ignore = [&](const string& rel, const string& why) {
    ignored += (ignored.empty() ? "" : ", ") + rel + " (" + why + ")";
  };
  // Collected first and sorted: a directory's order is the file system's, and the reply (and so
  // its cassette) must not depend on it.
  std::map<string, fs::file_status> found;
  std::error_code ec;
  bool too_many = false;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path rel_path = it->path().lexically_relative(dir);
    const fs::file_status st = it->symlink_status(ec);
    if (hidden(rel_path)) {  // .git, editor files: never bundle files (load_bundle skips them)
      if (fs::is_directory(st)) it.disable_recursion_pending();
      continue;
    }
    if (found.size() >= max_entries) {
      too_many = true;
      break;
    }
    if (!fs::is_directory(st)) found.emplace(rel_path.generic_string(), st);
  }
  if (ec) invalid(".", "the working directory could not be read: " + ec.message());
  if (too_many)
    invalid(".", "the working directory holds more than " + std::to_string(max_entries) +
                     " files; only the kernel's files belong there");
  for (const auto& [rel, st] : found) {
    const bool existing = before.count(rel) > 0;
    if (fs::is_symlink(st)) {
      existing ? invalid(rel, "replaced by a symbolic link; bundle files are regular files")
               : ignore(rel, "symbolic link");
      continue;
    }
    if (!fs::is_regular_file(st)) {
      existing ? invalid(rel, "replaced by a special file; bundle files are regular files")
               : ignore(rel, "not a regular file");
      continue;
    }
    const auto text = read_capped(dir / rel);
    if (!text) {
      existing ? invalid(rel, "unreadable, or larger than a bundle file may be (16 MiB)")
               : ignore(rel, "unreadable or over 16 MiB");
      continue;
    }
    if (!is_utf8_text(*text)) {
      existing ? invalid(rel, "no longer text (NUL bytes or invalid UTF-8)")
               : ignore(rel, "binary");
      continue;
    }
    if (existing && before.at(rel) == *text) continue;
    if (holds_end_marker(*text)) {
      invalid(rel, "holds a line '@@@ END', which the edit format cannot carry");
      continue;
    }
    edits.append(whole_marker).append(rel).append("\n").append(*text);
    if (!text->empty() && text->back() != '\n') edits.push_back('\n');
    edits.append(end_marker).append("\n");
  }
  if (!too_many && !ec)
    for (const auto& [rel, text] : before)
      if (!found.count(rel)) edits.append(delete_marker).append(rel).append("\n");
  string out;
  if (!ignored.empty()) out += "lathe: ignored in the working directory: " + ignored + "\n";
  if (!edits.empty()) out += "lathe: the agent's changes to its working directory:\n" + edits;
  return out;
}

// ---- the process ---------------------------------------------------------------------------

std::optional<string> resolve(const string& cmd) {
  if (cmd.find('/') != string::npos) {
    std::error_code ec;
    return fs::absolute(cmd, ec).string();  // absolute: the child starts in another directory
  }
  const char* path = getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  string d;
  while (std::getline(dirs, d, ':')) {
    const fs::path p = fs::path(d.empty() ? "." : d) / cmd;
    std::error_code ec;
    if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec))
      return fs::absolute(p, ec).string();
  }
  return std::nullopt;
}

struct fd_guard {
  int fd = -1;
  ~fd_guard() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// SIGPIPE from writing the prompt to a command that closed its stdin is thread-directed: block
// it in this thread for the call, and consume a pending one, instead of changing the process's
// disposition behind the caller's back.
class sigpipe_blocker {
 public:
  sigpipe_blocker() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~sigpipe_blocker() {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1 && sigismember(&old_, SIGPIPE) != 1) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
};

struct process_result {
  int exit_code = -1;  // 128 + signal when killed by one
  string out, err_tail;
  bool timed_out = false, cancelled = false, too_long = false;
  string start_error;
};

// Has `pid` exited? Leaves it unreaped (a zombie keeps its process group id from being reused
// until the group has been killed).
bool exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// The child between fork and exec: the pipes as its stdin, stdout and stderr, then the command.
[[noreturn]] void exec_child(int in, int out, int err, const fs::path& cwd, char* const* args, char* const* envp) {
  setpgid(0, 0);  // its own process group: a timeout kills the agent's children too
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  // What the agent may not inherit: lathe's other descriptors (the store, locks, a worker's
  // pipes), a way to gain privileges (setuid programs), core files holding its memory. lathe
  // itself is not dumpable (cli/main.cpp), so the agent cannot read /proc/<lathe>/environ.
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
    for (int fd = 3; fd < 4096; ++fd) close(fd);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (chdir(cwd.c_str()) != 0) _exit(126);
  execve(args[0], args, envp);
  dprintf(2, "cannot run %s: %s\n", args[0], strerror(errno));
  _exit(127);
}

// Writes `input` to the command and reads its stdout and stderr until both close or `stop_now`
// says the call is over.
template <class stop_fn>
void pump(pid_t pid, const string& input, uint64_t max_out, fd_guard& in_w, fd_guard& out_r, fd_guard& err_r,
          process_result& r, const stop_fn& stop_now) {
  size_t written = 0;
  bool group_killed = false;
  char buf[65536];
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    if (stop_now()) break;
    // Once the command has exited, what it started goes too: a background child holding the
    // pipes open would otherwise keep the call waiting until the timeout.
    if (!group_killed && exited(pid)) {
      kill(-pid, SIGKILL);
      group_killed = true;
    }
    pollfd fds[3];
    nfds_t n = 0;
    for (const auto& [fd, ev] :
         {std::pair{in_w.fd, short{POLLOUT}}, std::pair{out_r.fd, short{POLLIN}},
          std::pair{err_r.fd, short{POLLIN}}})
      if (fd >= 0) fds[n++] = pollfd{fd, ev, 0};
    if (poll(fds, n, 50) < 0 && errno != EINTR) break;
    for (nfds_t k = 0; k < n; ++k) {
      if (fds[k].revents == 0) continue;
      if (fds[k].fd == in_w.fd) {
        const ssize_t w = write(in_w.fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size())
          in_w.reset();  // done, or the command closed its stdin (EPIPE): it read what it wanted
        continue;
      }
      const bool is_out = fds[k].fd == out_r.fd;
      const ssize_t got = read(fds[k].fd, buf, sizeof buf);
      if (got > 0) {
        if (is_out) {
          r.out.append(buf, static_cast<size_t>(got));
          if (r.out.size() > max_out) r.too_long = true;
        } else {
          r.err_tail.append(buf, static_cast<size_t>(got));
          if (r.err_tail.size() > 16384) r.err_tail.erase(0, r.err_tail.size() - 8192);
        }
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        (is_out ? out_r : err_r).reset();
      }
    }
  }
}

process_result run_process(const std::vector<string>& argv, const std::vector<string>& env,
                           const string& input, const fs::path& cwd, double timeout_s,
                           uint64_t max_out, const cancel_token* cancel) {
  process_result r;
  int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
  const bool piped =
      pipe2(in_p, O_CLOEXEC) == 0 && pipe2(out_p, O_CLOEXEC) == 0 && pipe2(err_p, O_CLOEXEC) == 0;
  fd_guard in_r{in_p[0]}, in_w{in_p[1]}, out_r{out_p[0]}, out_w{out_p[1]}, err_r{err_p[0]},
      err_w{err_p[1]};
  if (!piped) {
    r.start_error = string("pipe: ") + strerror(errno);
    return r;
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  sigpipe_blocker no_sigpipe;
  const auto start = clock_type::now();
  const pid_t pid = fork();
  if (pid < 0) {
    r.start_error = string("fork: ") + strerror(errno);
    return r;
  }
  if (pid == 0) exec_child(in_p[0], out_p[1], err_p[1], cwd, args.data(), envp.data());
  setpgid(pid, pid);  // also here, so that kill(-pid) works before the child got to it
  in_r.reset();
  out_w.reset();
  err_w.reset();
  fcntl(in_w.fd, F_SETFL, O_NONBLOCK);
  if (input.empty()) in_w.reset();

  const auto kill_group = [&] {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  };
  const auto stop_now = [&] {
    const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
    if (elapsed >= timeout_s) r.timed_out = true;
    if (cancel && cancel->cancelled.load()) r.cancelled = true;
    return r.timed_out || r.cancelled || r.too_long;
  };
  pump(pid, input, max_out, in_w, out_r, err_r, r, stop_now);
  in_w.reset();
  // Its output is closed (or the call is over): wait for the exit within the same deadline.
  while (!exited(pid)) {
    if (stop_now()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (r.timed_out || r.cancelled || r.too_long) kill_group();
  // Whatever the agent started and left behind must not keep writing while its files are read.
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

string tail(const string& s, size_t n) {
  return s.size() <= n ? s : "…" + s.substr(s.size() - n);
}

}  // namespace

bool is_utf8_text(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static constexpr uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_of[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

std::string command_prompt(const request& r) {
  string out;
  if (!r.system.empty()) out += r.system + "\n\n";
  if (r.messages.size() == 1) return out + r.messages.front().content;
  for (const auto& m : r.messages) out += "### " + m.role + "\n" + m.content + "\n\n";
  return out;
}

command_provider::command_provider(command_config config) : config_(std::move(config)) {}

std::string command_provider::name() const {
  return "command/" + config_.name;
}

call_result command_provider::call(const request& r, const cancel_token* cancel) {
  return run(r, nullptr, cancel);
}

call_result command_provider::call_in(const request& r, const kernel_bundle& bundle,
                                      const cancel_token* cancel) {
  return run(r, &bundle, cancel);
}

call_result command_provider::run(const request& r, const kernel_bundle* bundle,
                                  const cancel_token* cancel) {
  if (config_.argv.empty())
    return tl::unexpected(failure(call_error::bad_request, name() + ": no command configured"));
  auto exe = resolve(config_.argv.front());
  if (!exe)
    return tl::unexpected(failure(call_error::bad_request,
                                  name() + ": '" + config_.argv.front() + "' not found in PATH"));
  temp_workdir dir;
  if (dir.path().empty())
    return tl::unexpected(
        failure(call_error::bad_request, name() + ": cannot create a temporary working directory"));
  std::map<string, string> before;
  if (bundle) {
    if (auto w = write_bundle(*bundle, dir.path()); !w)
      return tl::unexpected(failure(call_error::bad_request,
                                    name() + ": cannot copy the kernel: " + w.error().message));
    // The manifest is compared like a source: an agent that edits it (its flags, its `isa`) gets
    // a WHOLE kernel.toml edit, which apply refuses with the hint to print a FLAGS block or an
    // '@@@ ISA level' line instead (agent/edit.cpp); lathe never rewrites the manifest from it.
    before["kernel.toml"] = read_capped(dir.path() / "kernel.toml").value_or("");
    for (const auto& [rel, text] : bundle->sources) before[rel] = text;
  }
  std::vector<string> env;
  for (const auto& var : config_.env)
    if (const char* v = getenv(var.c_str())) env.push_back(var + "=" + v);
  std::vector<string> argv = config_.argv;
  argv.front() = *exe;

  const auto start = clock_type::now();
  process_result p = run_process(argv, env, command_prompt(r), dir.path(), config_.timeout_seconds,
                                 config_.max_reply_bytes, cancel);
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  const string err = p.err_tail.empty() ? "" : "; stderr: " + tail(p.err_tail, 2000);
  if (!p.start_error.empty())
    return tl::unexpected(failure(call_error::bad_request, name() + ": " + p.start_error));
  if (p.cancelled) return tl::unexpected(failure(call_error::cancelled, name() + ": cancelled"));
  if (p.timed_out)
    return tl::unexpected(failure(
        call_error::timeout,
        name() + ": no exit within " + std::to_string(config_.timeout_seconds) + " s" + err));
  if (p.too_long)
    return tl::unexpected(failure(
        call_error::malformed,
        name() + ": more than " + std::to_string(config_.max_reply_bytes) + " bytes on stdout"));
  if (p.exit_code == 127 || p.exit_code == 126)
    return tl::unexpected(
        failure(call_error::bad_request,
                name() + ": could not run (status " + std::to_string(p.exit_code) + ")" + err));
  if (p.exit_code != 0)
    return tl::unexpected(failure(
        call_error::server, name() + ": exited with status " + std::to_string(p.exit_code) + err));
  if (!is_utf8_text(p.out))
    return tl::unexpected(failure(call_error::malformed,
                                  name() + ": its reply is not text (NUL bytes or invalid UTF-8)"));

  response resp;
  resp.text = std::move(p.out);
  const string changes = changes_as_edits(dir.path(), before);
  if (!changes.empty()) {
    if (!resp.text.empty() && resp.text.back() != '\n') resp.text.push_back('\n');
    resp.text += "\n" + changes;
  }
  resp.finish = finish_reason::stop;
  resp.latency_seconds = seconds;
  resp.model = config_.name;
  return resp;
}

}  // namespace lathe::llm
