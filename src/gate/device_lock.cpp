#include "gate/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace lathe::gate {

std::string device_lock::directory() {
  if (const char* d = std::getenv("LATHE_LOCK_DIR"); d && *d) return d;
  return "/tmp/lathe-locks-" + std::to_string(getuid());
}

result<std::string> device_lock::own_directory() {
  const std::string dir = directory();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(errc::io_error, "cannot create lock directory " + dir + ": " + std::strerror(errno));
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || st.st_uid != getuid() || (st.st_mode & 0077) != 0)
    return fail(errc::io_error, "lock directory " + dir +
                                    " must be owned by this user with mode 0700 (it is not)");
  return dir;
}

result<int> open_lock_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ELOOP)
    return fail(errc::io_error, path + " is a symbolic link, not a lock file: not followed (remove it)");
  if (fd < 0) return fail(errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
    close(fd);
    return fail(errc::io_error, path + " is not a regular file of this user's: not used as a lock");
  }
  return fd;
}

result<device_lock> device_lock::acquire(const std::string& device, mode m) {
  auto dir = own_directory();
  if (!dir) return tl::unexpected(dir.error());
  const std::string path = *dir + "/" + device + ".lock";
  auto fd = open_lock_file(path);
  if (!fd) return tl::unexpected(fd.error());
  device_lock l;
  l.fd_ = *fd;
  while (flock(l.fd_, m == mode::exclusive ? LOCK_EX : LOCK_SH) != 0) {
    if (errno != EINTR) return fail(errc::io_error, "flock " + path + ": " + std::strerror(errno));
  }
  return l;
}

result<std::vector<device_lock>> device_lock::acquire_all(std::initializer_list<std::pair<const char*, mode>> locks) {
  std::vector<device_lock> held;
  for (const auto& [device, m] : locks) {
    auto l = acquire(device, m);
    if (!l) return tl::unexpected(l.error());
    held.push_back(std::move(*l));
  }
  return held;
}

device_lock& device_lock::operator=(device_lock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

device_lock::~device_lock() {
  if (fd_ >= 0) close(fd_);  // closing the last fd releases the flock
}

}  // namespace lathe::gate
