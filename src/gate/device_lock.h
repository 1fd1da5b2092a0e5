// One timing at a time per device across all lathe processes, and no builds while timing on
// CPU (PROTOCOL.md): builds take the device's lock shared, timing takes it exclusive. flock(2)
// on a file in a root-only (or user-only) directory, so candidate code cannot hold it.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace lathe::gate {

// A lock file of lathe's (a device's, a CPU core's: gate/cpu_slot.h) opened for flock, created
// 0600 where missing: never through a link (O_NOFOLLOW: a link planted at `path` is refused and
// its target never created; PROTOCOL.md: lathe never follows a link it did not make), and only a
// regular file owned by this user. The descriptor (close-on-exec), or what stands there instead.
result<int> open_lock_file(const std::string& path);

class device_lock {
 public:
  enum class mode { shared, exclusive };
  // Blocks until the lock is held. `device` names it ("cpu", "cuda0").
  static result<device_lock> acquire(const std::string& device, mode m);
  // Each lock in order ("cpu" before "cuda0", as every holder takes them, so that none waits in
  // a cycle); all held, or none with the first failure.
  static result<std::vector<device_lock>> acquire_all(std::initializer_list<std::pair<const char*, mode>> locks);
  device_lock() = default;
  device_lock(device_lock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  device_lock& operator=(device_lock&& o) noexcept;
  ~device_lock();
  // The lock directory: $LATHE_LOCK_DIR, else /tmp/lathe-locks-<uid>.
  static std::string directory();
  // The same, made where missing and checked: owned by this user, mode 0700 (candidate code, run
  // as a user of its own, can neither hold a lock nor plant a file there). The machine's CPU
  // ceilings are kept there too (cli/context.cpp).
  static result<std::string> own_directory();

 private:
  int fd_ = -1;
};

}  // namespace lathe::gate
