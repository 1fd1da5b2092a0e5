// lathe-worker: runs one untrusted kernel for lathe (src/gate/cpu/worker.h is the other side).
// fds: 3 = shared region, 4 = commands, 5 = replies, 6 = the kernel object (wire.h); 0, 1 and 2
// are /dev/null. One reply per command; EOF on the command pipe ends the worker. It prints
// nothing: lathe's stdout may carry JSON, and failures travel in replies.
#include <cstdint>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "gate/cpu/sandbox.h"
#include "gate/cpu/wire.h"
#include "worker/death_note.h"
#include "worker/kernel_host.h"
#include "worker/seccomp.h"
#ifdef LATHE_WORKER_CUDA
#include "worker/cuda_device.h"
#endif

namespace {

using namespace lathe;

// 1 = a whole command, 0 = EOF (lathe is gone or done), -1 = a broken pipe or a torn command.
int read_command(wire::command& c) {
  auto* p = reinterpret_cast<char*>(&c);
  size_t got = 0;
  while (got < sizeof c) {
    ssize_t n = read(wire::command_fd, p + got, sizeof c - got);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && got == 0) return 0;
    if (n <= 0) return -1;
    got += static_cast<size_t>(n);
  }
  return 1;
}

bool send(const wire::reply& r) {
  auto* p = reinterpret_cast<const char*>(&r);
  for (size_t done = 0; done < sizeof r;) {
    ssize_t n = write(wire::reply_fd, p + done, sizeof r - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

wire::reply refuse(wire::status st, const char* what, const char* why) {
  wire::reply r;
  r.st = st;
  std::snprintf(r.message, sizeof r.message, "%s%s", what, why);
  return r;
}

struct worker_state {
  bool seccomp = true;     // lathe's choice (argv)
  bool sandboxed = false;  // the filter is installed
  const char* region_error = nullptr;
  const char* region_why = "";
#ifdef LATHE_WORKER_CUDA
  worker::cuda_device device;
  bool cuda_ready = false;
  uint64_t region_bytes = 0;
#endif
};

wire::reply answer(const wire::command& c, worker_state& s, worker::kernel_host& host) {
  if (c.magic != wire::magic) return refuse(wire::status::bad_command, "bad command magic", "");
  if (s.region_error) return refuse(wire::status::bad_command, s.region_error, s.region_why);
  switch (c.kind) {
    case wire::op::load: {
      // The filter goes on before dlopen: the object's constructors and lathe_init are kernel
      // code too, and the loader itself only needs read-only opens and mmap.
#ifdef LATHE_WORKER_CUDA
      // The context first: creating it opens /dev/nvidia* read-write, which the filter forbids.
      if (!s.cuda_ready) {
        std::string e = s.device.init();
        if (!e.empty()) return refuse(wire::status::device_error, "no CUDA device: ", e.c_str());
        // The device mirror of the whole region, and its IPC handle, before any kernel code.
        e = s.device.reserve(s.region_bytes, c.share != 0);
        if (!e.empty()) return refuse(wire::status::device_error, "device memory: ", e.c_str());
        s.cuda_ready = true;
        host.attach(&s.device);
      }
#endif
      if (s.seccomp && !s.sandboxed) {
        std::string e = worker::install_seccomp();
        if (!e.empty())
          return refuse(wire::status::init_failed, "sandbox not installed: ", e.c_str());
        s.sandboxed = true;
      }
      return host.load(c);
    }
    case wire::op::setup:
      return host.setup(c);
    case wire::op::run:
      return host.run(c);
    case wire::op::run_table:
      return host.run_table(c);
    case wire::op::upload:
    case wire::op::download:
      return host.transfer(c);
    case wire::op::fill:
    case wire::op::poison:
    case wire::op::share:
    case wire::op::reference:
    case wire::op::attach:
    case wire::op::compare:
    case wire::op::fetch_ref:
    case wire::op::stage:
    case wire::op::bench:
#ifdef LATHE_WORKER_CUDA
      return host.device_op(c);
#else
      return refuse(wire::status::bad_command, "this worker has no device (not lathe-worker-cuda)", "");
#endif
    case wire::op::quit:
      return wire::reply{};
  }
  return refuse(wire::status::bad_command, "unknown command", "");
}

}  // namespace

int main(int argc, char** argv) {
  // Seccomp is on unless lathe says otherwise: a worker started by hand is still a sandbox.
  worker_state s;
  // Seccomp is on unless lathe says otherwise: a worker started by hand is still a sandbox.
  s.seccomp = !(argc > 1 && std::strcmp(argv[1], sandbox::seccomp_off_arg) == 0);
  // Not dumpable: another worker under the same uid (the baseline's, or an earlier candidate's
  // lingering thread) must not read this one's memory or region through /proc/<pid>/mem.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  worker::install_death_note(wire::reply_fd);

  struct stat st {};
  uint8_t* region = nullptr;
  uint64_t region_bytes = 0;
  if (fstat(wire::region_fd, &st) != 0 || st.st_size <= 0) {
    s.region_error = "no shared region on fd 3";
  } else {
    region_bytes = static_cast<uint64_t>(st.st_size);
    void* p = mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, wire::region_fd, 0);
    if (p == MAP_FAILED) {
      s.region_error = "cannot map the shared region: ";
      s.region_why = std::strerror(errno);
    } else {
      region = static_cast<uint8_t*>(p);
    }
  }

#ifdef LATHE_WORKER_CUDA
  s.region_bytes = region_bytes;
#endif
  worker::kernel_host host(region, region_bytes);
#ifndef LATHE_WORKER_CUDA
  host.confine(s.seccomp);
#endif
  for (;;) {
    wire::command c;
    int got = read_command(c);
    if (got == 0) return 0;
    if (got < 0) return 2;
    wire::reply r;
    try {
      r = answer(c, s, host);
    } catch (const std::exception& e) {  // bad_alloc on absurd setup sizes, say
      r = refuse(wire::status::bad_command, "the worker failed: ", e.what());
    }
    if (!send(r)) return 2;
    if (c.magic == wire::magic && c.kind == wire::op::quit) return 0;
  }
}
