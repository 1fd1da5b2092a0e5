#include "gate/step_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace lathe::gate {
namespace {

constexpr const char* root = "/sys/fs/cgroup";

bool write_text(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool make_dir(const std::string& path) { return mkdir(path.c_str(), 0755) == 0 || errno == EEXIST; }

// "oom_kill N" in a memory.events (v2) or memory.oom_control (v1, kernel 4.13 on).
long oom_kills(const std::string& text) {
  const size_t at = text.find("oom_kill ");
  return at == std::string::npos ? 0 : std::atol(text.c_str() + at + 9);
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GiB", static_cast<double>(bytes) / (1u << 30));
  return buf;
}

}  // namespace

bool join_step_cgroup(const std::vector<std::string>& procs_files) {
  for (const auto& f : procs_files) {
    const int fd = open(f.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = write(fd, "0", 1) == 1;  // "0": the writing process itself
    close(fd);
    if (!ok) return false;
  }
  return true;
}

step_cgroup step_cgroup::make(const step_limits& limits) {
  step_cgroup g;
  static std::atomic<uint64_t> counter{0};
  const std::string name = "step-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  if (geteuid() != 0) {
    g.summary_ = "no cgroup (lathe is not root): rlimits only";
    return g;
  }
  struct stat st {};
  g.v2_ = stat((std::string(root) + "/cgroup.controllers").c_str(), &st) == 0;
  if (g.v2_) {
    // The controllers must be on in every parent's subtree_control down to the step's group.
    const std::string parent = std::string(root) + "/lathe";
    if (!make_dir(parent)) {
      g.summary_ = std::string("no cgroup (cannot create ") + parent + ": " + std::strerror(errno) + ")";
      return g;
    }
    write_text(std::string(root) + "/cgroup.subtree_control", "+memory +pids");
    write_text(parent + "/cgroup.subtree_control", "+memory +pids");
    const std::string dir = parent + "/" + name;
    if (!make_dir(dir)) {
      g.summary_ = "no cgroup (cannot create " + dir + ": " + std::strerror(errno) + ")";
      return g;
    }
    g.dirs_.push_back(dir);
    g.procs_.push_back(dir + "/cgroup.procs");
    g.memory_events_ = dir + "/memory.events";
    const bool mem = !limits.memory_bytes || write_text(dir + "/memory.max", std::to_string(limits.memory_bytes));
    const bool pids = !limits.processes || write_text(dir + "/pids.max", std::to_string(limits.processes));
    g.summary_ = "cgroup v2: " + (mem ? "memory " + gib(limits.memory_bytes) : std::string("no memory controller")) +
                 ", " + (pids ? std::to_string(limits.processes) + " processes" : std::string("no pids controller"));
    return g;
  }
  // v1: one hierarchy per controller; each one present is used.
  std::string said;
  for (const char* controller : {"memory", "pids"}) {
    const std::string base = std::string(root) + "/" + controller;
    if (stat((base + "/cgroup.procs").c_str(), &st) != 0) continue;
    const std::string dir = base + "/lathe/" + name;
    if (!make_dir(base + "/lathe") || !make_dir(dir)) continue;
    bool ok;
    if (std::strcmp(controller, "memory") == 0) {
      ok = !limits.memory_bytes || write_text(dir + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes));
      g.memory_events_ = dir + "/memory.oom_control";
      if (ok) said += (said.empty() ? "" : ", ") + ("memory " + gib(limits.memory_bytes));
    } else {
      ok = !limits.processes || write_text(dir + "/pids.max", std::to_string(limits.processes));
      if (ok) said += (said.empty() ? "" : ", ") + (std::to_string(limits.processes) + " processes");
    }
    g.dirs_.push_back(dir);
    g.procs_.push_back(dir + "/cgroup.procs");
  }
  g.summary_ = g.dirs_.empty() ? "no cgroup (no memory or pids hierarchy under /sys/fs/cgroup)" : "cgroup v1: " + said;
  return g;
}

step_cgroup::step_cgroup(step_cgroup&& o) noexcept
    : dirs_(std::move(o.dirs_)),
      procs_(std::move(o.procs_)),
      memory_events_(std::move(o.memory_events_)),
      v2_(o.v2_),
      summary_(std::move(o.summary_)) {
  o.dirs_.clear();
}

std::string step_cgroup::memory_verdict() const {
  if (memory_events_.empty() || oom_kills(read_text(memory_events_)) == 0) return {};
  return "[lathe] the step went over its memory limit (" + summary_ + "): the kernel killed a process of it\n";
}

step_cgroup::~step_cgroup() {
  if (dirs_.empty()) return;
  // Whatever is left (the sandbox's PID namespace has ended it already, normally) is killed,
  // then the groups removed; a group is removable only once its last process has gone.
  for (const auto& d : dirs_) {
    if (v2_ && write_text(d + "/cgroup.kill", "1")) continue;
    std::istringstream pids(read_text(d + "/cgroup.procs"));
    for (pid_t p; pids >> p;) kill(p, SIGKILL);
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    bool all = true;
    for (const auto& d : dirs_) all &= rmdir(d.c_str()) == 0 || errno == ENOENT;
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace lathe::gate
