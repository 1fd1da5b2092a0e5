// The shared-memory region of a timing or check stage (gate/cpu/worker.h): a sealed memfd mapped in
// lathe and inherited by the workers.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "gate/cpu/worker.h"
#include "gate/cpu/worker_end.h"

namespace lathe::gate {

using namespace detail;

result<shared_region> shared_region::create(uint64_t bytes) {
  if (bytes == 0) return fail(errc::invalid_argument, "shared region: size 0");
  int fd = memfd_create("lathe-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return fail(errc::io_error, "memfd_create: " + errno_text(errno));
  auto fail_closing = [fd](std::string what) {
    close(fd);
    return fail(errc::io_error, std::move(what));
  };
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    return fail_closing("shared region of " + mib(bytes) + ": " + errno_text(errno));
  // A worker holds this fd read/write: without the seals it could ftruncate it to 0, and lathe's
  // next access to its own mapping would die of SIGBUS.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return fail_closing("sealing the shared region: " + errno_text(errno));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail_closing("mapping the shared region of " + mib(bytes) + ": " + errno_text(errno));
  shared_region r;
  r.fd_ = fd;
  r.data_ = static_cast<uint8_t*>(p);
  r.size_ = bytes;
  return r;
}

void shared_region::populate() const {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
  if (data_ && size_) madvise(data_, size_ / 4096 * 4096, MADV_POPULATE_WRITE);  // best effort
}

shared_region::shared_region(shared_region&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

shared_region& shared_region::operator=(shared_region&& o) noexcept {
  shared_region old(std::move(o));  // takes o's region; ours goes with `old`
  std::swap(fd_, old.fd_);
  std::swap(data_, old.data_);
  std::swap(size_, old.size_);
  return *this;
}

shared_region::~shared_region() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace lathe::gate
