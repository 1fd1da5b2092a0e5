// The worker's sandbox as set up by lathe between fork and exec: file descriptors, environment,
// resource limits, privilege drop. Everything is prepared before fork (a `child_plan` of plain
// pointers and numbers) because a fork of a multithreaded lathe may only make async-signal-safe
// calls until exec: no allocation, no getpwnam, no locks.
//
// The seccomp filter is not here: the worker installs it on itself (src/worker/seccomp.cpp),
// because it must come after the dynamic loader has mapped the worker's own libraries.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lathe::sandbox {

// A reply whose magic is this one is a "death note": the worker's fatal-signal handler found its
// address space (nearly) exhausted just before dying. It comes from untrusted code, so it can only
// turn one failure into another (crashed -> memory_limit), never into success.
constexpr uint32_t death_note_magic = 0x4c41544d;  // "LATM"

// Worker command line: seccomp on or off (sandbox_options.seccomp).
constexpr const char* seccomp_on_arg = "--seccomp";
constexpr const char* seccomp_off_arg = "--no-seccomp";

struct child_plan {
  const char* exe = nullptr;
  int exe_fd = -1;  // the worker binary opened by lathe: exec'd through the fd, so `nobody` needs
                    // no search permission on the directories above it (a clone under /root)
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int fds[4] = {-1, -1, -1, -1};  // become 3, 4, 5, 6 (wire.h): region, commands, replies, object
  int record_fd = -1;             // becomes 9 (wire.h record_fd) when set: the op record's write end
  int devnull = -1;               // becomes 0, 1 and 2: the worker prints nothing anywhere
  int error_fd = -1;              // close-on-exec pipe: a child_failure when exec is not reached
  bool drop = false;              // switch to uid/gid (lathe is root)
  uid_t uid = 0;                  // with own_uid: the base, the child's pid added
  gid_t gid = 0;
  // A user of its own: uid = gid = uid + the child's pid, unique among living workers, named in no
  // passwd file. The process limit counts per user: with one user for all workers, a kernel that
  // took every thread starved the baseline's pool and every other worker on the machine.
  bool own_uid = false;
  // The worker's own /proc (when dropping): a private mount namespace with procfs mounted
  // hidepid=2, so that it sees no process of another user: not lathe, not the baseline's
  // workers, whose /proc/<pid>/stat told a kernel when the baseline ran.
  bool private_proc = false;
  // With private_proc: also a network, IPC and UTS namespace of its own (a loopback that is down,
  // no SysV or POSIX IPC object of another process, its own host name): what bubblewrap gives a
  // sandboxed tool (bubblewrap.h), under the seccomp filter that blocks sockets and SysV IPC
  // while kernel code runs, so that a worker run without that filter (a profile, a trusted
  // oracle) or a gap in it still reaches nothing.
  bool own_namespaces = false;
  // The child is bubblewrap, which changes to the user itself inside its namespaces (setpriv):
  // with own_uid and without drop, the child's user (uid + its pid) is written into these argv
  // strings after their first 8 characters ("--reuid=", "--regid="; room for 10 digits).
  // `own_dir` (its writable folder), when set, is given to the child's own user either way.
  char* uid_args[2] = {nullptr, nullptr};
  const char* own_dir = nullptr;
  pid_t parent = 0;  // lathe's pid: the child checks it is still its parent after PDEATHSIG
  rlim_t address_space = RLIM_INFINITY;
  rlim_t cpu_seconds = RLIM_INFINITY;
  rlim_t nproc = RLIM_INFINITY;  // only when dropping: a per-user count, meaningless for root
  // A CPU slot's cores (gate/cpu_slot.h): with pin, the child's affinity is set to them before
  // exec, so the worker and every thread it starts run there. The candidate may narrow or widen
  // its own mask afterwards (its own business); it cannot reach a slot's lock, which lathe holds.
  bool pin = false;
  cpu_set_t cores{};
  // Descriptors: pipes filled to an inherited limit of 20,000 held ~490 MiB of kernel memory that
  // no watchdog sees; a few dozen suffice for a kernel (CUDA's driver needs a few hundred).
  rlim_t open_files = 64;
  // RLIMIT_FSIZE: 0, no byte into any regular file (a worker); a problem's oracle writes in its
  // own folder (Python's tempfile probes it by writing; torch on CUDA asks for it).
  rlim_t file_size = 0;
};

// What the child writes on error_fd when a step before exec fails.
struct child_failure {
  int32_t stage = 0;
  int32_t error = 0;  // errno
};
const char* stage_name(int32_t stage);

// Runs in the child after fork: never returns (exec or _exit(127)). The worker gets
// PR_SET_PDEATHSIG(SIGKILL): it dies with the lathe thread that forked it, whatever it does
// (a worker that called setsid() and slept outlived `kill -9` of lathe).
[[noreturn]] void exec_child(const child_plan& plan);

// Forks `plan`'s child on lathe's spawner thread, a thread that lives as long as the process:
// PR_SET_PDEATHSIG fires when the *thread* that forked a child ends, and workers are also started
// from short-lived threads (std::async). Returns the child's pid, or -errno.
pid_t fork_worker(const child_plan& plan);

// Why a child forked with `error_fd` (child_plan::error_fd, its write end closed by lathe after
// the fork) never reached exec.
struct start_failure {
  std::string what;   // "<stage>: <errno's text>", or "no report from the child"
  int32_t error = 0;  // the failed step's errno; 0 when the child said nothing
};
// Waits for that child's exec: EOF on the close-on-exec pipe means exec succeeded (nothing
// returned); a child_failure record, or a short read, means it did not, and the child is reaped.
// One wait for every process started in the sandbox (a worker, a problem's oracle).
std::optional<start_failure> await_exec(pid_t pid, int error_fd);

// The first uid of the workers' own users (child_plan::own_uid): far above any system or human
// account (Debian gives those below 60000 and 65534), and below 2^31 with any pid added.
constexpr uid_t own_uid_base = 0x50000000;

// glibc's malloc thresholds in every worker (GLIBC_TUNABLES): mmap above 32 MiB (the largest
// the tunable takes), never give the heap's top back below 1 GiB (sandbox.cpp says why).
inline constexpr const char* malloc_tunables =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824";

// The worker's whole environment ("NAME=value"): allow-listed names copied from lathe's, then
// the thread settings (threads == 0: every CPU lathe may run on), the malloc thresholds, PATH
// and HOME. Under a
// profiler (profiler_allowances.inherited_env_wins), an allow-listed name that lathe has wins
// over the sandbox's own value of it.
std::vector<std::string> worker_environment(const std::vector<std::string>& allow,
                                            uint32_t threads);

// ---- a worker under a profiler ------------------------------------------------------------------
// `lathe profile-run` runs under Nsight Compute, whose library must live in the worker too: it
// comes in through LD_PRELOAD / CUDA_INJECTION64_PATH, hooks the exec family to follow children,
// talks to the ncu front end through inherited descriptors, sockets and temporary files, and
// prints its ==PROF== / ==ERROR== lines on the worker's stdout and stderr. Each field relaxes one
// part of the sandbox for that; all off (the default) is the sandbox the gate uses.
//
// Process-wide, because the worker's start (gate/cpu/worker.cpp) builds the child_plan from
// sandbox_options and exec_child runs after fork, where only plain data may be read. Set only by
// the profile-run child (gate/profile_run.cpp), a process that starts one worker and exits;
// never in a process that gates.
struct profiler_allowances {
  rlim_t file_size = 0;             // RLIMIT_FSIZE; 0 = no byte into any regular file
  bool keep_stdout_stderr = false;  // 1 and 2 stay lathe's instead of /dev/null
  bool keep_inherited_fds = false;  // descriptors above 8 without close-on-exec stay open
  bool exec_through_libc = false;   // execve() through the PLT (an LD_PRELOAD hook sees it)
  bool inherited_env_wins = false;  // see worker_environment
};
void allow_for_profiler(const profiler_allowances& a);
const profiler_allowances& allowed_for_profiler();

// CPUs in lathe's affinity mask (what `nproc` prints).
uint32_t online_cpus();

// RLIMIT_NPROC for a worker with `threads` threads running as an unprivileged user: enough for
// its thread pool, not enough for a fork bomb (the count is per user, shared by all workers).
rlim_t nproc_limit(uint32_t threads);

}  // namespace lathe::sandbox
