// Looks for secrets and privileges: its own environment, lathe's /proc/<ppid>/environ, its uid,
// its working directory, its open file descriptors and its file-size limit, all written into its
// uint8 output (layout in worker_test.cpp).
#include <dirent.h>
#include <fcntl.h>
#include <lathe/abi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int64_t slurp(const char* path, unsigned char* dst, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -errno;
  int64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, dst + total, cap - static_cast<size_t>(total));
    if (n < 0) {
      total = -errno;
      break;
    }
    if (n == 0) break;
    total += n;
    if (static_cast<size_t>(total) == cap) break;
  }
  close(fd);
  return total;
}

extern "C" int lathe_launch(const lathe_args* a) {
  auto* out = static_cast<unsigned char*>(a->outputs[0].data);
  int64_t* head = reinterpret_cast<int64_t*>(out);
  const char* key = std::getenv("OPENAI_API_KEY");
  head[0] = key ? static_cast<int64_t>(std::strlen(key)) : -1;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(getppid()));
  head[1] = slurp(path, out + 256, 8192 - 256);
  head[2] = getuid();
  head[3] = getgid();
  // Its own environment from `environ` (a non-dumpable process cannot read /proc/self/environ).
  size_t at = 0;
  for (char** e = environ; *e && at < 8000; ++e) {
    size_t len = std::strlen(*e) + 1;
    if (at + len > 8192) break;
    std::memcpy(out + 8192 + at, *e, len);
    at += len;
  }
  head[4] = static_cast<int64_t>(at);
  char cwd[256] = {};
  head[5] = getcwd(cwd, sizeof cwd) && std::strcmp(cwd, "/") == 0;
  uint64_t mask = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      int fd = std::atoi(e->d_name);
      if (e->d_name[0] != '.' && fd != dirfd(d))
        mask |= fd < 63 ? (uint64_t{1} << fd) : (1ull << 63);
    }
    closedir(d);
  }
  head[6] = static_cast<int64_t>(mask);
  rlimit r{};
  getrlimit(RLIMIT_FSIZE, &r);
  head[7] = static_cast<int64_t>(r.rlim_cur);
  return 0;
}
