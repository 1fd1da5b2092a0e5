#include "gate/cpu_slot.h"

#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "gate/device_lock.h"

namespace lathe::gate {

std::vector<uint32_t> allowed_cores() {
  std::vector<uint32_t> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (uint32_t c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  if (out.empty()) out.push_back(0);
  return out;
}

result<std::vector<cpu_slot>> split_cores(const std::vector<uint32_t>& cores, uint32_t n) {
  if (n == 0 || n > cores.size())
    return fail(errc::invalid_argument, std::to_string(n) + " CPU slot(s) asked for, " + std::to_string(cores.size()) +
                                            " core(s) available to lathe: a slot has at least one core of its own");
  std::vector<cpu_slot> out;
  const size_t base = cores.size() / n, extra = cores.size() % n;
  size_t at = 0;
  for (uint32_t k = 0; k < n; ++k) {
    cpu_slot s;
    s.index = k;
    s.count = n;
    const size_t size = base + (k < extra ? 1 : 0);
    s.cores.assign(cores.begin() + static_cast<std::ptrdiff_t>(at), cores.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
    out.push_back(std::move(s));
  }
  return out;
}

std::string slot_lock::core_file(uint32_t core) {
  return device_lock::directory() + "/cpu-core-" + std::to_string(core) + ".lock";
}

result<slot_lock> slot_lock::take(const cpu_slot& s, bool wait, bool& busy) {
  busy = false;
  if (auto dir = device_lock::own_directory(); !dir) return tl::unexpected(dir.error());
  slot_lock held;
  for (uint32_t core : s.cores) {
    const std::string path = core_file(core);
    // A link standing in for the lock file is refused, never followed; the folder is this
    // user's alone anyway.
    auto opened = open_lock_file(path);
    if (!opened) return tl::unexpected(opened.error());
    const int fd = *opened;
    held.fds_.push_back(fd);
    int rc;
    while ((rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) != 0 && errno == EINTR) {
    }
    if (rc != 0 && errno == EWOULDBLOCK) {
      busy = true;
      return slot_lock{};  // what was taken is released with `held`
    }
    if (rc != 0) return fail(errc::io_error, "flock " + path + ": " + std::strerror(errno));
  }
  return held;
}

result<slot_lock> slot_lock::acquire(const cpu_slot& s) {
  bool busy = false;
  return take(s, true, busy);
}

result<std::unique_ptr<slot_lock>> slot_lock::try_acquire(const cpu_slot& s) {
  bool busy = false;
  auto l = take(s, false, busy);
  if (!l) return tl::unexpected(l.error());
  if (busy) return std::unique_ptr<slot_lock>();
  return std::make_unique<slot_lock>(std::move(*l));
}

slot_lock::slot_lock(slot_lock&& o) noexcept : fds_(std::move(o.fds_)) { o.fds_.clear(); }

slot_lock& slot_lock::operator=(slot_lock&& o) noexcept {
  if (this != &o) {
    for (int fd : fds_) close(fd);
    fds_ = std::move(o.fds_);
    o.fds_.clear();
  }
  return *this;
}

slot_lock::~slot_lock() {
  for (int fd : fds_) close(fd);  // closing the last fd releases its flock
}

result<cpu_slot_pool::held_slot> cpu_slot_pool::take() {
  for (;;) {
    {
      std::lock_guard<std::mutex> g(mu_);
      for (size_t k = 0; k < slots_.size(); ++k) {
        if (taken_[k]) continue;
        auto l = slot_lock::try_acquire(slots_[k]);
        if (!l) return tl::unexpected(l.error());
        if (!*l) continue;  // another lathe process holds it
        taken_[k] = true;
        return held_slot(this, slots_[k], std::move(**l));
      }
    }
    // Every slot busy: an evaluation ends in seconds, so a short poll costs nothing measurable
    // (flock cannot wait on the first of several files).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void cpu_slot_pool::give_back(uint32_t index) {
  std::lock_guard<std::mutex> g(mu_);
  taken_[index] = false;
}

cpu_slot_pool::held_slot::~held_slot() {
  if (!pool_) return;
  lock_ = slot_lock{};  // released before the slot is free again in this process
  pool_->give_back(slot_.index);
}

}  // namespace lathe::gate
