// The child that ncu wraps (`lathe profile-run`): the kernel in a CUDA worker, started the way
// the gate starts one, called a few times on one trial's inputs. Nothing is timed and nothing is
// checked here: ncu replays each launch many times to read its counters, and the figures it
// reports are the profile. Built on the gate's public pieces only (build, trial, worker).
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "core/hash.h"
#include "gate/cpu/sandbox.h"
#include "gate/device_lock.h"
#include "gate/host_target.h"
#include "gate/profile.h"
#include "gate/reference.h"
#include "spec/task_file.h"
#include "gate/trial.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

// The worker's end as one line a user can act on (the gate has a fuller mapping onto outcomes;
// a profile has no outcome, only success or a reason).
std::string describe(const worker_result& r, const std::string& when) {
  std::string what;
  switch (r.end) {
    case worker_end::timeout:
      what = "timed out";
      break;
    case worker_end::crashed:
      what = "crashed";
      break;
    case worker_end::exited:
      what = "exited";
      break;
    case worker_end::forbidden:
      what = "made a forbidden system call";
      break;
    case worker_end::memory_limit:
      what = "exceeded its memory limit";
      break;
    case worker_end::protocol:
      what = "broke the protocol";
      break;
    case worker_end::replied:
      break;
  }
  std::string s = "the worker " + what + " while " + when;
  if (r.end == worker_end::replied) {
    s = "the worker refused " + when + " (status " +
        std::to_string(static_cast<int32_t>(r.reply.st)) + ", code " +
        std::to_string(r.reply.code) + ")";
    if (r.reply.message[0])
      s += ": " + std::string(r.reply.message, strnlen(r.reply.message, sizeof r.reply.message));
  } else if (!r.detail.empty()) {
    s += ": " + r.detail;
  }
  return s;
}


// ---- diagnostics (profile_run_config::diagnostic) --------------------------------------------
// What decides whether ncu's library reaches the worker and reports back: who runs, what
// environment and descriptors were inherited from ncu, what the worker got, whether ncu's
// libraries are mapped into it, how it ended. Read from /proc (lathe runs as root on the GPU
// machine; without privileges a non-dumpable worker's files are unreadable, which is said).

using note_fn = std::function<void(const std::string&)>;

// A /proc file whole (their stat size is 0, so read to the end).
std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void note_fds(const note_fn& note, const std::string& who, const std::string& pid) {
  const std::string dir = "/proc/" + pid + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) {
    note(who + ": open descriptors: cannot read " + dir + ": " + std::strerror(errno));
    return;
  }
  std::vector<std::pair<int, std::string>> fds;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[512];
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    std::string text = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
    const int fd = std::atoi(e->d_name);
    if (pid == "self") {
      const int flags = fcntl(fd, F_GETFD);
      if (flags >= 0 && !(flags & FD_CLOEXEC)) text += " (inherited by children)";
    }
    fds.emplace_back(fd, text);
  }
  closedir(d);
  std::sort(fds.begin(), fds.end());
  std::string line = who + ": open descriptors:";
  for (const auto& [fd, text] : fds) line += " " + std::to_string(fd) + "=" + text + ";";
  note(line);
}

void note_status(const note_fn& note, const std::string& who, pid_t pid) {
  auto status = slurp("/proc/" + std::to_string(pid) + "/status");
  if (!status) {
    note(who + ": cannot read /proc/" + std::to_string(pid) + "/status");
    return;
  }
  std::istringstream in(*status);
  std::string line, out;
  while (std::getline(in, line))
    for (const char* key : {"Uid:", "Gid:", "NoNewPrivs:", "Seccomp:"})
      if (line.starts_with(key)) out += " " + line + ";";
  note(who + ":" + out);
}

// Which of Nsight Compute's libraries (and CUDA's) the worker has mapped: the injection reached
// it when libcuda-injection / libTreeLauncher* / libnvperf* appear.
void note_maps(const note_fn& note, pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  auto maps = slurp(path);
  if (!maps || maps->empty()) {
    note("worker: cannot read " + path + ": " + std::strerror(errno) +
         " (the worker is not dumpable; only root reads it)");
    return;
  }
  std::set<std::string> libs;
  std::istringstream in(*maps);
  std::string line;
  while (std::getline(in, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash);
    std::string lower = file;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : {"inject", "treelauncher", "nvperf", "cupti", "interceptor", "nsight",
                             "libcuda.so", "libcudart"})
      if (lower.find(word) != std::string::npos) libs.insert(file);
  }
  std::string text;
  for (const auto& l : libs) text += " " + l + ";";
  note("worker: profiler and CUDA libraries mapped:" + (text.empty() ? " none" : text));
}

// After a polite quit: wait for the worker to exit by itself (ncu's library sends what it has
// at exit), without reaping it: the worker object reaps it, and a pid reaped here could be
// reused before that object's destructor signals it.
void wait_for_exit(const note_fn& note, pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    siginfo_t si{};
    if (waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
      note("worker: waitid: " + std::string(std::strerror(errno)));
      return;
    }
    if (si.si_pid != 0) {
      if (si.si_code == CLD_EXITED)
        note("worker: exited with status " + std::to_string(si.si_status) + " after quit");
      else
        note("worker: ended by signal " + std::to_string(si.si_status) + " after quit");
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      note("worker: still running " + std::to_string(static_cast<int64_t>(timeout_s)) +
           " s after quit; killed");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool secret_like(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

const shape_set* profile_shape(const task& t, const std::string& name) {
  if (name.empty()) return &timing_shape(t);
  for (const auto& s : t.shapes)
    if (s.name == name) return &s;
  return nullptr;
}


std::vector<std::string> profiler_environment(const char* const* envp) {
  std::vector<std::string> names;
  for (const char* const* e = envp; e && *e; ++e) {
    std::string_view kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string name(kv.substr(0, eq));
    // ncu's own variables (its injection library and the process tree's launch tokens: NV_TPS_*,
    // CUDA_INJECTION64_PATH, LD_PRELOAD…) pass even when named like a token; anything else named
    // like a secret does not: profile-run started by hand would otherwise hand the user's keys to
    // the kernel. (Under `lathe profile`, ncu starts with PATH and LANG only: the rest is ncu's.)
    bool ncu_own = name == "LD_PRELOAD" || name == "LD_LIBRARY_PATH" || name == "TMPDIR";
    for (const char* prefix : {"NV", "NSIGHT", "NSYS", "CUDA_", "CUPTI", "TPS_", "TREE"})
      ncu_own = ncu_own || name.starts_with(prefix);
    if (!ncu_own && secret_like(name)) continue;
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

result<profile_objects> build_for_profile(const profile_run_config& cfg) {
  if (!cfg.t) return fail(errc::internal, "build_for_profile: no task");
  if (cfg.kernel.manifest.lang != language::cuda || cfg.t->plat != platform::cuda)
    return fail(errc::unsupported, "profiling reads a CUDA device's counters: '" + cfg.t->name +
                                       "' is not a CUDA task with a CUDA kernel");
  if (cfg.tools.nvcc.empty())
    return fail(errc::not_found, "no nvcc: CUDA kernels cannot be built here");
  // Builds take the CPU's lock shared, like the gate's, so that they never run while a CPU
  // kernel is timed.
  auto lock = device_lock::acquire("cpu", device_lock::mode::shared);
  if (!lock) return tl::unexpected(lock.error());
  profile_objects o;
  auto k = build(cfg.kernel, resolved_isa(cfg.kernel, cfg.host), cfg.tools, cfg.cache_dir,
                 build_kind::kernel);
  if (!k) return tl::unexpected(k.error());
  if (!k->ok) return fail(errc::invalid_argument, "the kernel does not compile:\n" + k->log);
  o.kernel = *k;
  auto r = build(reference_bundle(*cfg.t, cfg.t->reference, language::cpp), cfg.host.arch, cfg.tools, cfg.cache_dir,
                 build_kind::reference);
  if (!r) return tl::unexpected(r.error());
  if (!r->ok)
    return fail(errc::invalid_argument,
                "the task's reference does not compile (a task problem):\n" + r->log);
  o.reference = *r;
  return o;
}

namespace {

// Who runs the profile and with what: the process, its environment (what the worker is given
// and what it is not) and its descriptors (--diagnostic).
void note_profile_run(const profile_run_config& cfg, const std::vector<std::string>& passed, const note_fn& note) {
  note("profile-run: pid " + std::to_string(getpid()) + ", uid " + std::to_string(getuid()) +
       ", euid " + std::to_string(geteuid()) + "; the worker runs as " +
       (cfg.trust_kernel || geteuid() != 0 ? "this user"
        : cfg.sandbox.user.empty() ? "a user of its own" : "'" + cfg.sandbox.user + "'"));
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    const bool kept = std::binary_search(passed.begin(), passed.end(), name);
    note("profile-run: env " + (kept ? kv : name + " (withheld from the worker)"));
  }
  note_fds(note, "profile-run", "self");
}

// The worker's sandbox under the profiler.
sandbox_options profiler_worker_options(const profile_run_config& cfg, const std::vector<std::string>& passed,
                                        const note_fn& note) {
  sandbox_options opt = cfg.sandbox;
  // The CUDA worker, as the gate starts it (gate.cpp start_worker): beside lathe-worker, and no
  // RLIMIT_AS (CUDA reserves a huge virtual address space; PROTOCOL.md).
  opt.worker_exe = opt.worker_exe.parent_path() / "lathe-worker-cuda";
  opt.address_space_bytes = 0;
  // ncu lives in the worker too: its injection library comes in through the environment, talks
  // to the ncu front end over sockets and shared memory during every launch, and keeps copies of
  // device memory for replay. The system-call filter would kill it at the first launch, and the
  // resident-memory watchdog needs room for the copies.
  opt.seccomp = false;
  opt.open_files = cuda_open_files;
  opt.private_proc = false;  // ncu's launcher and its injected library find each other there
  opt.own_namespaces = false;
  opt.rss_limit_bytes = std::max<uint64_t>(opt.rss_limit_bytes, uint64_t{16} << 30);
  for (const auto& name : passed) opt.env_allow.push_back(name);
  if (cfg.trust_kernel) opt.drop_privileges = false;
  // And the rest of what ncu's library needs in the worker (sandbox.h, profiler_allowances):
  // temporary files, its messages on the output ncu reads, the descriptors ncu handed down,
  // exec through libc where its tree launcher hooks it, and ncu's values of PATH and HOME.
  // This process starts one worker and exits, so the process-wide setting stays here.
  sandbox::profiler_allowances allow;
  allow.file_size = RLIM_INFINITY;
  allow.keep_stdout_stderr = true;
  allow.keep_inherited_fds = true;
  allow.exec_through_libc = true;
  allow.inherited_env_wins = true;
  sandbox::allow_for_profiler(allow);
  if (cfg.diagnostic)
    for (const auto& kv : sandbox::worker_environment(opt.env_allow, opt.threads))
      note("worker: env " + kv);
  return opt;
}

}  // namespace

result<void> profile_run(const profile_run_config& cfg) {
  auto progress = [&](const std::string& s) {
    if (cfg.progress) cfg.progress(s);
  };
  const task& t = *cfg.t;
  const shape_set* shapes = profile_shape(t, cfg.shape_set);
  if (!shapes)
    return fail(errc::invalid_argument,
                "task '" + t.name + "' has no shape set '" + cfg.shape_set + "'");
  if (!has_cuda_device())
    return fail(errc::unsupported, "no CUDA device on this machine (/dev/nvidiactl)");
  const note_fn note = [&](const std::string& s) {
    if (cfg.diagnostic) cfg.diagnostic(s);
  };
  const std::vector<std::string> passed = profiler_environment(environ);
  if (cfg.diagnostic) note_profile_run(cfg, passed, note);

  progress("build");
  auto objects = build_for_profile(cfg);
  if (!objects) return tl::unexpected(objects.error());
  auto ref = reference::load(objects->reference.object);
  if (!ref) return tl::unexpected(ref.error());

  // One trial's inputs, drawn as the gate draws them (a fixed seed: profiles of two kernels on
  // one task see the same data), with poisoned outputs; the reference outputs are not used.
  progress("inputs for shape set '" + shapes->name + "'");
  auto l = make_layout(t, *shapes);
  if (!l) return tl::unexpected(l.error());
  auto d = make_trial(t, *l, *ref, trial_for(t, 1, 0));
  if (!d) return tl::unexpected(d.error());
  auto region = shared_region::create(l->slot_bytes);
  if (!region) return tl::unexpected(region.error());
  stage_inputs(t, *l, *d, region->data());

  const sandbox_options opt = profiler_worker_options(cfg, passed, note);

  const int object_fd = open(objects->kernel.object.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (object_fd < 0) return fail(errc::io_error, "cannot open " + objects->kernel.object.string());
  auto w = worker::spawn(opt, *region, object_fd);
  close(object_fd);
  if (!w) return tl::unexpected(w.error());
  note("worker: pid " + std::to_string(w->pid()) + ", " + opt.worker_exe.string() +
       (opt.drop_privileges && geteuid() == 0
            ? (opt.user.empty() ? std::string(" as a user of its own") : " as '" + opt.user + "'")
            : std::string()));

  // The device's lock, exclusive: a profile replays every launch dozens of times and would
  // disturb a timing in another lathe process (the probe and the CUDA timings take "cuda<N>").
  auto lock = device_lock::acquire("cuda0", device_lock::mode::exclusive);
  if (!lock) return tl::unexpected(lock.error());

  progress("load");
  if (worker_result r = w->load(cfg.call_timeout_s); !r.ok())
    return fail(errc::invalid_argument, describe(r, "loading the kernel"));
  if (cfg.diagnostic) {  // CUDA is initialized now: ncu's library is in, or it never will be
    note_status(note, "worker", w->pid());
    note_maps(note, w->pid());
    note_fds(note, "worker", std::to_string(w->pid()));
  }
  if (worker_result r = w->setup(setup_command(t, *l, 1), cfg.call_timeout_s); !r.ok())
    return fail(errc::invalid_argument, describe(r, "setting up shape set '" + shapes->name + "'"));
  if (worker_result r = w->transfer(wire::op::upload, 0, 1, cfg.call_timeout_s); !r.ok())
    return fail(errc::invalid_argument, describe(r, "copying the inputs to the device"));
  progress(std::to_string(cfg.launches) + " launches under the profiler");
  const double run_timeout = cfg.call_timeout_s * std::max<uint32_t>(cfg.launches, 1);
  if (worker_result r = w->run(0, 1, cfg.launches, run_timeout); !r.ok())
    return fail(errc::invalid_argument, describe(r, "running the kernel"));
  if (cfg.diagnostic) note_fds(note, "worker after the launches", std::to_string(w->pid()));

  // A polite quit, then time to exit: ncu's library in the worker may still hold results that
  // it sends when the process ends, and a SIGKILL (the worker object's end) would lose them.
  progress("quit");
  wire::command quit;
  quit.kind = wire::op::quit;
  if (worker_result r = w->request(quit, cfg.call_timeout_s); !r.ok()) {
    note(describe(r, "quitting"));  // the launches ran: what ncu got, it reports
  } else {
    wait_for_exit(note, w->pid(), std::min(cfg.call_timeout_s, 120.0));
  }
  return {};
}

}  // namespace lathe::gate
