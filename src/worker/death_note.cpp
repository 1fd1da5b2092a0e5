#include "worker/death_note.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>

#include "gate/cpu/sandbox.h"
#include "gate/cpu/wire.h"

namespace lathe::worker {

namespace {

// Everything the handler touches is prepared in advance: it runs after the kernel may have
// corrupted the heap, so it only makes system calls on static memory.
int g_reply_fd = -1;
uint64_t g_limit = 0;  // RLIMIT_AS in bytes; 0 = none
wire::reply g_note;
char g_status[4096];
alignas(16) char g_alt_stack[64 * 1024];

uint64_t vm_peak_bytes() {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, g_status, sizeof g_status - 1);
  close(fd);
  if (n <= 0) return 0;
  g_status[n] = 0;
  static const char key[] = "VmPeak:";
  for (ssize_t i = 0; i + 7 < n; ++i) {
    bool match = true;
    for (int k = 0; k < 7 && match; ++k) match = g_status[i + k] == key[k];
    if (!match) continue;
    uint64_t kb = 0;
    for (ssize_t j = i + 7; j < n; ++j) {
      char c = g_status[j];
      if (c >= '0' && c <= '9')
        kb = kb * 10 + static_cast<uint64_t>(c - '0');
      else if (c != ' ' && c != '\t')
        break;
    }
    return kb * 1024;
  }
  return 0;
}

void on_fatal(int sig) {
  if (g_limit && g_reply_fd >= 0 && vm_peak_bytes() >= g_limit / 2) {
    [[maybe_unused]] ssize_t n = write(g_reply_fd, &g_note, sizeof g_note);
  }
  // SA_RESETHAND restored the default action: a fault re-executes and kills, a raised signal
  // is delivered again when the handler returns (it is blocked until then).
  raise(sig);
}

}  // namespace

void install_death_note(int reply_fd) {
  rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
  g_reply_fd = reply_fd;
  g_limit = r.rlim_cur;
  g_note.magic = sandbox::death_note_magic;
  g_note.st = wire::status::kernel_error;
  std::snprintf(g_note.message, sizeof g_note.message,
                "address space exhausted (RLIMIT_AS %llu MiB)",
                static_cast<unsigned long long>(g_limit >> 20));
  stack_t ss{};
  ss.ss_sp = g_alt_stack;
  ss.ss_size = sizeof g_alt_stack;
  sigaltstack(&ss, nullptr);  // a stack overflow must still reach the handler
  struct sigaction sa = {};
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

}  // namespace lathe::worker
