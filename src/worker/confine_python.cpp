// liblathe-confine.so: the isolation of lathe-worker for the Python kernel worker
// (python/lathe_kernel.py), which loads it with ctypes after importing torch and before any
// kernel code runs. The same seccomp filter as lathe-worker's (seccomp.cpp); a Landlock domain
// that lets the interpreter read the system's trees (torch imports modules lazily) and the
// kernel's source and the folders of its built extensions (a ModelNew's, python/lathe_ext.py),
// and write nothing but /dev/null.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "gate/cpu/landlock.h"
#include "worker/seccomp.h"

namespace {

void say(char* why, size_t n, const std::string& s) {
  if (why && n > 0) std::snprintf(why, n, "%s", s.c_str());
}

}  // namespace

extern "C" {

// The Landlock ABI the domain was made with; 0 when there is none, with the reason in `why`.
__attribute__((visibility("default"))) int lathe_confine_python(int source_fd, const char* const* read_dirs,
                                                                int num_dirs, char* why, size_t why_bytes) {
  using namespace lathe::sandbox;
  using namespace lathe::sandbox::landlock_access;
  using path_rule = lathe::sandbox::landlock_path;
  const int abi = landlock_abi();
  if (abi < 1) {
    say(why, why_bytes, "this kernel has no Landlock");
    return 0;
  }
  // No /tmp, /home, /root, /work, no lathe workspace: what a kernel could read there is another
  // kernel's, the task's reference or a secret.
  const path_rule paths[] = {
      {"/usr", read_tree},           {"/lib", read_tree},
      {"/lib64", read_tree},         {"/etc", read_file | read_dir},
      {"/proc/self", read_file | read_dir}, {"/sys/devices/system/cpu", read_file | read_dir},
      {"/dev/null", read_file | write_file}, {"/dev/zero", read_file},
      {"/dev/urandom", read_file},   {"/dev/random", read_file},
  };
  // The kernel's source and the extensions' folders: every one must be there.
  std::vector<landlock_rule> own{{source_fd, read_file}};
  std::vector<int> fds;
  for (int i = 0; i < num_dirs; ++i) {
    const int fd = open(read_dirs[i], O_PATH | O_CLOEXEC);
    if (fd < 0) {
      say(why, why_bytes, std::string("cannot open ") + read_dirs[i] + ": " + std::strerror(errno));
      for (int f : fds) close(f);
      return -1;
    }
    fds.push_back(fd);
    own.push_back({fd, read_tree});
  }
  const int err = landlock_restrict_paths(abi, paths, std::size(paths), own.data(), own.size());
  for (int fd : fds) close(fd);
  if (err != 0) {
    say(why, why_bytes, std::string("Landlock refused the domain: ") + std::strerror(err));
    return 0;
  }
  return abi;
}

// 0 when lathe-worker's filter is installed (every thread), else -1 with the reason in `why`;
// `guarded_fd` (>= 0) is kept in place by it (worker/seccomp.h): the record of torch operations.
__attribute__((visibility("default"))) int lathe_install_seccomp_guarding(int guarded_fd, char* why,
                                                                          size_t why_bytes) {
  const std::string e = lathe::worker::install_seccomp(guarded_fd);
  if (e.empty()) return 0;
  say(why, why_bytes, e);
  return -1;
}

}  // extern "C"
