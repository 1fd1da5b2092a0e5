// A hand-written classic BPF filter (no libseccomp: one dependency less on the GPU machine).
// Default allow, with a deny list: a kernel legitimately uses memory, threads, futexes, read-only
// opens (OpenMP reads /sys, the loader reads libraries) and the worker's own pipes, and a
// default-deny list would break on every new glibc. What is denied is what can hurt outside the
// worker: the file system, processes, the network, other processes' memory and signals, limits.
#include <cstdint>
#include "worker/seccomp.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

namespace lathe::worker {

namespace {

#if !defined(__x86_64__)
#error "the worker's seccomp filter is written for x86_64"
#endif

// System calls that kill the worker, whatever their arguments.
// clang-format off
constexpr int killed[] = {
    // processes: exec and fork (clone is checked below), tracing, other processes' memory
    __NR_execve, __NR_execveat, __NR_fork, __NR_vfork, __NR_ptrace, __NR_process_vm_readv,
    __NR_process_vm_writev, __NR_tkill, __NR_pidfd_open, __NR_pidfd_send_signal, __NR_pidfd_getfd,
    // slowing down a sibling worker (the baseline's runs under the same uid): priority, I/O
    // priority, its pages moved to another NUMA node or paged out
    __NR_setpriority, __NR_ioprio_set, __NR_migrate_pages, __NR_move_pages, __NR_process_madvise,
    __NR_process_mrelease,
    // a session or process group of its own: the first step of a process that means to outlive
    // lathe or to escape the group lathe signals
    __NR_setsid, __NR_setpgid,
    // network
    __NR_socket, __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_accept, __NR_accept4,
    // the file system: anything that creates, removes, renames or changes a file
    __NR_creat, __NR_open_by_handle_at, __NR_name_to_handle_at, __NR_unlink, __NR_unlinkat,
    __NR_rename, __NR_renameat, __NR_renameat2, __NR_mkdir, __NR_mkdirat, __NR_mknod,
    __NR_mknodat, __NR_rmdir, __NR_truncate, __NR_ftruncate, __NR_fallocate, __NR_chmod,
    __NR_fchmod, __NR_fchmodat, __NR_chown, __NR_fchown, __NR_lchown, __NR_fchownat, __NR_link,
    __NR_linkat, __NR_symlink, __NR_symlinkat, __NR_utime, __NR_utimes, __NR_utimensat,
    __NR_futimesat, __NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, __NR_removexattr,
    __NR_lremovexattr, __NR_fremovexattr,
    // io_uring performs opens and writes that seccomp never sees
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
    // SysV IPC and message queues outlive the process
    __NR_shmget, __NR_msgget, __NR_semget, __NR_mq_open,
    // limits and identity: the kernel must not lift what lathe set
    __NR_setrlimit, __NR_personality, __NR_setuid, __NR_setgid, __NR_setreuid, __NR_setregid,
    __NR_setresuid, __NR_setresgid, __NR_setgroups, __NR_setfsuid, __NR_setfsgid,
    // namespaces, mounts and the machine (privileged anyway, but lathe may run as root without
    // dropping privileges)
    __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot, __NR_unshare, __NR_setns,
    __NR_open_tree, __NR_move_mount, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick,
    __NR_mount_setattr, __NR_reboot, __NR_swapon, __NR_swapoff, __NR_init_module,
    __NR_finit_module, __NR_delete_module, __NR_kexec_load, __NR_kexec_file_load,
    __NR_sethostname, __NR_setdomainname, __NR_acct, __NR_quotactl, __NR_settimeofday,
    __NR_clock_settime, __NR_clock_adjtime, __NR_adjtimex, __NR_bpf, __NR_perf_event_open,
    __NR_keyctl, __NR_add_key, __NR_request_key,
    452,  // fchmodat2 (Linux 6.6; not in every header yet)
};
// clang-format on

// open flags that may write or create. O_TMPFILE needs O_WRONLY or O_RDWR, so it is covered.
constexpr uint32_t write_flags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;

constexpr uint32_t arg_lo(int i) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i);  // little endian
}
constexpr uint32_t arg_hi(int i) {
  return arg_lo(i) + 4;
}

// A tiny assembler: jumps name labels, resolved to the 8-bit relative offsets of classic BPF.
class assembler {
 public:
  enum label : int {
    next = -1,
    allow,
    kill,
    enosys,
    clone,
    open1,
    open2,
    prlimit,
    self,
    self_or_0,
    fcntl,
    ioctl,
    prctl,
    guard_arg0,
    guard_arg1,
    guard_range,
    count
  };

  void load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void ret(uint32_t value) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, value)); }
  void jump(uint16_t op, uint32_t k, label yes, label no) {
    fixups_.push_back({code_.size(), yes, no});
    code_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
  }
  void place(label l) { at_[l] = static_cast<int>(code_.size()); }

  // Empty on success.
  std::string finish(std::vector<sock_filter>& out) {
    for (const fixup& f : fixups_) {
      int jt = offset(f.at, f.yes), jf = offset(f.at, f.no);
      if (jt < 0 || jt > 255 || jf < 0 || jf > 255) return "seccomp program: jump out of range";
      code_[f.at].jt = static_cast<uint8_t>(jt);
      code_[f.at].jf = static_cast<uint8_t>(jf);
    }
    out = code_;
    return {};
  }

 private:
  struct fixup {
    size_t at;
    label yes, no;
  };
  int offset(size_t at, label l) const { return l == next ? 0 : at_[l] - static_cast<int>(at) - 1; }
  std::vector<sock_filter> code_;
  std::vector<fixup> fixups_;
  int at_[count] = {};
};

}  // namespace

// Long: the filter is one BPF program, written top to bottom in the order the kernel runs it
// (architecture, then each rule and its jump targets); split, its jumps would cross functions.
std::string install_seccomp(int guarded_fd) {
  using A = assembler;
  A a;
  const uint32_t pid = static_cast<uint32_t>(getpid());

  // Another architecture's numbers (int 0x80 from 64-bit code) or the x32 ABI would bypass a
  // list written for x86_64 numbers.
  a.load(offsetof(seccomp_data, arch));
  a.jump(BPF_JEQ, AUDIT_ARCH_X86_64, A::next, A::kill);
  a.load(offsetof(seccomp_data, nr));
  a.jump(BPF_JGE, __X32_SYSCALL_BIT, A::kill, A::next);
  for (int nr : killed) a.jump(BPF_JEQ, static_cast<uint32_t>(nr), A::kill, A::next);
  a.jump(BPF_JEQ, __NR_clone, A::clone, A::next);
  // clone3 and openat2 take their flags in a struct that BPF cannot read: ENOSYS makes glibc
  // fall back to clone (for threads), whose flags are checked.
  a.jump(BPF_JEQ, __NR_clone3, A::enosys, A::next);
  a.jump(BPF_JEQ, __NR_openat2, A::enosys, A::next);
  a.jump(BPF_JEQ, __NR_open, A::open1, A::next);
  a.jump(BPF_JEQ, __NR_openat, A::open2, A::next);
  a.jump(BPF_JEQ, __NR_prlimit64, A::prlimit, A::next);
  // Signals only to itself: abort() and raise() use tgkill(own pid); kill(0) would reach
  // lathe's process group, and another worker of the same uid could be the baseline's.
  for (int nr : {__NR_kill, __NR_tgkill, __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo})
    a.jump(BPF_JEQ, static_cast<uint32_t>(nr), A::self, A::next);
  // Scheduling only for itself: SCHED_IDLE or a one-core affinity would slow the baseline.
  for (int nr :
       {__NR_sched_setaffinity, __NR_sched_setscheduler, __NR_sched_setparam, __NR_sched_setattr})
    a.jump(BPF_JEQ, static_cast<uint32_t>(nr), A::self_or_0, A::next);
  // F_SETOWN / F_SETSIG and their ioctls make the kernel send a chosen signal to a chosen
  // process on I/O: a kill() that the checks above never see.
  a.jump(BPF_JEQ, __NR_fcntl, A::fcntl, A::next);
  a.jump(BPF_JEQ, __NR_ioctl, A::ioctl, A::next);
  a.jump(BPF_JEQ, __NR_prctl, A::prctl, A::next);
  if (guarded_fd >= 0) {
    a.jump(BPF_JEQ, __NR_close, A::guard_arg0, A::next);
    a.jump(BPF_JEQ, __NR_dup2, A::guard_arg1, A::next);
    a.jump(BPF_JEQ, __NR_dup3, A::guard_arg1, A::next);
    a.jump(BPF_JEQ, __NR_close_range, A::guard_range, A::next);
  }
  a.ret(SECCOMP_RET_ALLOW);

  if (guarded_fd >= 0) {
    const auto fd = static_cast<uint32_t>(guarded_fd);  // an int: the kernel reads the low half
    a.place(A::guard_arg0);  // close(fd)
    a.load(arg_lo(0));
    a.jump(BPF_JEQ, fd, A::kill, A::allow);
    a.place(A::guard_arg1);  // dup2(old, fd), dup3(old, fd, flags)
    a.load(arg_lo(1));
    a.jump(BPF_JEQ, fd, A::kill, A::allow);
    a.place(A::guard_range);  // close_range(first, last, flags) with first <= fd <= last
    a.load(arg_lo(0));
    a.jump(BPF_JGT, fd, A::allow, A::next);
    a.load(arg_lo(1));
    a.jump(BPF_JGE, fd, A::kill, A::allow);
  }

  // F_SETPIPE_SZ grows a pipe to 1 MiB of kernel memory that no limit of the worker counts.
  a.place(A::fcntl);
  a.load(arg_lo(1));
  a.jump(BPF_JEQ, F_SETOWN, A::kill, A::next);
  a.jump(BPF_JEQ, F_SETSIG, A::kill, A::next);
  a.jump(BPF_JEQ, F_SETPIPE_SZ, A::kill, A::next);
  a.jump(BPF_JEQ, F_SETOWN_EX, A::kill, A::allow);
  // The parent-death signal lathe set (a worker must die with lathe), dumpability (another
  // worker could read its memory), a ptracer, a subreaper: each undoes part of the sandbox.
  a.place(A::prctl);
  a.load(arg_lo(0));
  a.jump(BPF_JEQ, PR_SET_PDEATHSIG, A::kill, A::next);
  a.jump(BPF_JEQ, PR_SET_DUMPABLE, A::kill, A::next);
  a.jump(BPF_JEQ, PR_SET_PTRACER, A::kill, A::next);
  a.jump(BPF_JEQ, PR_SET_CHILD_SUBREAPER, A::kill, A::allow);
  a.place(A::ioctl);
  a.load(arg_lo(1));
  a.jump(BPF_JEQ, FIOSETOWN, A::kill, A::next);
  a.jump(BPF_JEQ, SIOCSPGRP, A::kill, A::allow);
  a.place(A::self_or_0);
  a.load(arg_lo(0));
  a.jump(BPF_JEQ, 0, A::allow, A::self);
  a.place(A::clone);  // threads (OpenMP, std::thread) yes, processes no
  a.load(arg_lo(0));
  a.jump(BPF_JSET, CLONE_THREAD, A::allow, A::kill);
  a.place(A::open1);  // open(path, flags, mode)
  a.load(arg_lo(1));
  a.jump(BPF_JSET, write_flags, A::kill, A::allow);
  a.place(A::open2);  // openat(dirfd, path, flags, mode)
  a.load(arg_lo(2));
  a.jump(BPF_JSET, write_flags, A::kill, A::allow);
  a.place(A::prlimit);  // reading a limit (glibc's getrlimit) is fine; setting one is not
  a.load(arg_lo(2));
  a.jump(BPF_JEQ, 0, A::next, A::kill);
  a.load(arg_hi(2));
  a.jump(BPF_JEQ, 0, A::allow, A::kill);
  a.place(A::self);  // pid_t is 32 bits: the kernel ignores the upper half, so does this check
  a.load(arg_lo(0));
  a.jump(BPF_JEQ, pid, A::allow, A::kill);
  a.place(A::enosys);
  a.ret(SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
  a.place(A::allow);
  a.ret(SECCOMP_RET_ALLOW);
  a.place(A::kill);
  a.ret(SECCOMP_RET_KILL_PROCESS);

  std::vector<sock_filter> code;
  if (std::string e = a.finish(code); !e.empty()) return e;
  sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno);
  // TSYNC: threads that already exist (a library's pool) get the filter too.
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (rc < 0) return std::string("seccomp: ") + std::strerror(errno);
  if (rc > 0) return "seccomp: thread " + std::to_string(rc) + " could not be synchronized";
  return {};
}

}  // namespace lathe::worker
