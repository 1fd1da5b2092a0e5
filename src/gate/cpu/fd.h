// File descriptors on lathe's side of a worker: closed once, owned during spawn, written whole.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <utility>

namespace lathe::gate::detail {

inline void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Owns a descriptor during spawn, so that every early return closes what was opened.
struct unique_fd {
  int fd = -1;
  unique_fd() = default;
  explicit unique_fd(int f) : fd(f) {}
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { close_fd(fd); }
  int release() { return std::exchange(fd, -1); }
};

inline bool write_all(int fd, const void* data, size_t bytes) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace lathe::gate::detail
