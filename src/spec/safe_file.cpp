#include "spec/safe_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace fs = std::filesystem;

namespace lathe::gate {

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// Why an open failed, in the words a user needs.
std::string reason(int e) {
  switch (e) {
    case ELOOP: return "a symbolic link (lathe follows no link in a folder a candidate could write)";
    case EXDEV: return "it leads outside its folder";
    case ENOTDIR: return "a component of the path is not a folder (a link to one is not followed)";
    case ENOENT: return "no such file";
    case EEXIST: return "something already has this name (lathe writes through no planted file)";
    default: return std::strerror(e);
  }
}

tl::unexpected<error> fail_at(const fs::path& where, const std::string& why) {
  return fail(errc::io_error, where.string() + ": " + why);
}

// `rel`'s components, "." and empty ones left out; absolute paths and ".." refused (a path
// beneath a folder never climbs out of it, even where it would come back).
result<std::vector<std::string>> components(const fs::path& rel) {
  if (rel.has_root_path()) return fail_at(rel, "not a relative path");
  std::vector<std::string> out;
  for (const auto& part : rel) {
    const std::string s = part.string();
    if (s.empty() || s == ".") continue;
    if (s == "..") return fail_at(rel, "names '..' (a path must stay beneath its folder)");
    out.push_back(s);
  }
  return out;
}

// -1: openat2 is missing (ENOSYS, Linux before 5.6); 1: it works; 0: not tried yet.
std::atomic<int> have_openat2{0};

int open_with_openat2(int dir_fd, const std::string& rel, int flags, mode_t mode) {
#ifdef SYS_openat2
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & O_CREAT) != 0 ? mode : 0;  // openat2 refuses a mode without O_CREAT
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const long fd = syscall(SYS_openat2, dir_fd, rel.c_str(), &how, sizeof how);
    // EAGAIN: a rename raced the lookup (RESOLVE_BENEATH retries are the caller's).
    if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) return static_cast<int>(fd);
  }
  return -1;
#else
  (void)dir_fd, (void)rel, (void)flags, (void)mode;
  errno = ENOSYS;
  return -1;
#endif
}

// One component at a time: every folder opened with O_NOFOLLOW | O_DIRECTORY from the one
// before, the last with O_NOFOLLOW.
int open_by_walk(int dir_fd, const std::vector<std::string>& parts, int flags, mode_t mode) {
  unique_fd cur;
  int at = dir_fd;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const int next = ::openat(at, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return -1;
    cur = unique_fd(next);
    at = next;
  }
  return ::openat(at, parts.back().c_str(), flags, mode);
}

// A name beside the ones a candidate may have planted (write_mode::replace).
std::string fresh_name() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof buf, ".lathe-new-%08x%08x", rd(), rd());
  return buf;
}

result<void> write_all(int fd, std::string_view bytes, const fs::path& where) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_at(where, std::string("write failed: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

// An open file's bytes, when it is a regular file no larger than `cap`.
result<std::string> read_regular(int fd, uint64_t cap, const fs::path& where) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail_at(where, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail_at(where, "not a regular file (lathe reads no fifo, device or folder)");
  if (static_cast<uint64_t>(st.st_size) > cap)
    return fail_at(where, std::to_string(st.st_size) + " bytes, more than the " + std::to_string(cap) +
                              " this file may have");
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  char extra[4096];
  while (true) {
    // Past the size fstat saw: the file grew while it was read (its writer is still there).
    char* dst = got < out.size() ? out.data() + got : extra;
    const size_t want = got < out.size() ? out.size() - got : sizeof extra;
    const ssize_t n = ::read(fd, dst, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_at(where, std::string("read failed: ") + std::strerror(errno));
    if (n == 0) break;
    if (dst == extra) {
      if (out.size() + static_cast<size_t>(n) > cap)
        return fail_at(where, "grew past the " + std::to_string(cap) + " bytes this file may have");
      out.append(extra, static_cast<size_t>(n));
    }
    got += static_cast<size_t>(n);
  }
  out.resize(std::min(got, out.size()));
  return out;
}

// An open that failed: the path and why, errno kept for the caller (remove_beneath: a missing
// folder is no failure).
tl::unexpected<error> failed_at(const fs::path& where) {
  const int e = errno;
  auto f = fail_at(where, reason(e));
  errno = e;
  return f;
}

// -1 with errno on failure.
int open_parts(int dir_fd, const std::vector<std::string>& parts, int flags, mode_t mode, resolve how) {
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if (parts.empty()) return ::openat(dir_fd, ".", flags & ~O_NOFOLLOW, mode);
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : "/") + p;
  bool walked = how == resolve::walk || (how == resolve::best && have_openat2.load() < 0);
  int fd = -1;
  if (!walked) {
    fd = open_with_openat2(dir_fd, joined, flags, mode);
    if (fd >= 0) {
      have_openat2.store(1);
    } else if (errno == ENOSYS && how == resolve::best) {
      have_openat2.store(-1);
      walked = true;
    }
  }
  return walked ? open_by_walk(dir_fd, parts, flags, mode) : fd;
}

// `rel` beneath `root`.
result<unique_fd> open_at(const fs::path& root, const fs::path& rel, int flags) {
  auto parts = components(rel);
  if (!parts) return fail_at(root / rel, parts.error().message);
  auto dir = open_root(root);
  if (!dir) return tl::unexpected(dir.error());
  const int fd = open_parts(dir->get(), *parts, flags, 0, resolve::best);
  if (fd < 0) return failed_at(root / rel);
  return unique_fd(fd);
}

// Opened beneath `root` for reading: regular files, with O_NONBLOCK so that a fifo's open does
// not wait for a writer.
result<unique_fd> open_read(const fs::path& root, const fs::path& rel) {
  return open_at(root, rel, O_RDONLY | O_NONBLOCK);
}

// The folder holding `rel` beneath `root`, and `rel`'s last name.
result<std::pair<unique_fd, std::string>> open_parent(const fs::path& root, const fs::path& rel) {
  auto parts = components(rel);
  if (!parts) return tl::unexpected(parts.error());
  if (parts->empty()) return fail_at(root / rel, "names the folder itself, not a file in it");
  fs::path parent;
  for (size_t i = 0; i + 1 < parts->size(); ++i) parent /= (*parts)[i];
  auto pfd = open_at(root, parent, O_RDONLY | O_DIRECTORY);
  if (!pfd) return tl::unexpected(pfd.error());
  return std::pair{std::move(*pfd), parts->back()};
}

result<std::vector<dir_entry>> list_fd(int dir_fd, const fs::path& where) {
  const int copy = ::dup(dir_fd);
  if (copy < 0) return fail_at(where, std::strerror(errno));
  DIR* d = ::fdopendir(copy);
  if (d == nullptr) {
    ::close(copy);
    return fail_at(where, std::strerror(errno));
  }
  std::vector<dir_entry> out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    dir_entry de;
    de.name = name;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      de.kind = S_ISREG(st.st_mode)   ? entry_kind::regular
                : S_ISDIR(st.st_mode) ? entry_kind::directory
                : S_ISLNK(st.st_mode) ? entry_kind::link
                                      : entry_kind::other;
      if (de.kind == entry_kind::regular) de.bytes = static_cast<uint64_t>(st.st_size);
    }
    out.push_back(std::move(de));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const dir_entry& a, const dir_entry& b) { return a.name < b.name; });
  return out;
}

// Everything in the folder `dir_fd` removed, never through a link. A candidate's folder may nest
// deeper than lathe will walk; what is left then stays, and the caller hears so.
result<void> remove_contents(int dir_fd, const fs::path& where, int depth) {
  if (depth > 256) return fail_at(where, "nested more than 256 folders deep; left in place");
  auto entries = list_fd(dir_fd, where);
  if (!entries) return tl::unexpected(entries.error());
  for (const auto& e : *entries) {
    if (e.kind == entry_kind::directory) {
      const int sub = ::openat(dir_fd, e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) return fail_at(where / e.name, reason(errno));
      const unique_fd owner(sub);
      if (auto r = remove_contents(sub, where / e.name, depth + 1); !r) return r;
      if (::unlinkat(dir_fd, e.name.c_str(), AT_REMOVEDIR) != 0) return fail_at(where / e.name, std::strerror(errno));
    } else if (::unlinkat(dir_fd, e.name.c_str(), 0) != 0 && errno != ENOENT) {
      return fail_at(where / e.name, std::strerror(errno));
    }
  }
  return {};
}

}  // namespace

result<unique_fd> open_beneath(int dir_fd, const fs::path& rel, int flags, mode_t mode, resolve how) {
  auto parts = components(rel);
  if (!parts) return tl::unexpected(parts.error());
  const int fd = open_parts(dir_fd, *parts, flags, mode, how);
  if (fd < 0) return failed_at(rel);
  return unique_fd(fd);
}

result<unique_fd> open_root(const fs::path& root) {
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    auto f = fail_at(root, std::string("cannot open the folder: ") + std::strerror(e));
    errno = e;
    return f;
  }
  return unique_fd(fd);
}

result<std::string> read_beneath(const fs::path& root, const fs::path& rel, uint64_t max_bytes) {
  auto fd = open_read(root, rel);
  if (!fd) return tl::unexpected(fd.error());
  return read_regular(fd->get(), max_bytes, root / rel);
}

result<std::string> read_named(const fs::path& file, uint64_t max_bytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return failed_at(file);
  const unique_fd owner(fd);
  return read_regular(fd, max_bytes, file);
}

result<void> write_beneath(const fs::path& root, const fs::path& rel, std::string_view bytes, write_mode mode,
                           mode_t perms) {
  auto parent = open_parent(root, rel);
  if (!parent) return tl::unexpected(parent.error());
  const auto& [pfd, leaf] = *parent;
  const fs::path where = root / rel;
  // O_EXCL never follows a link, dangling or not: the name must be free.
  const std::string name = mode == write_mode::create ? leaf : fresh_name();
  const int fd = ::openat(pfd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perms);
  if (fd < 0) return fail_at(where, reason(errno));
  {
    const unique_fd owner(fd);
    auto w = write_all(fd, bytes, where);
    if (!w || ::fchmod(fd, perms) != 0) {
      ::unlinkat(pfd.get(), name.c_str(), 0);
      return w ? fail_at(where, std::strerror(errno)) : w;
    }
  }
  // rename replaces the entry (a planted link included) instead of writing where it points.
  if (mode == write_mode::replace && ::renameat(pfd.get(), name.c_str(), pfd.get(), leaf.c_str()) != 0) {
    const int e = errno;
    ::unlinkat(pfd.get(), name.c_str(), 0);
    return fail_at(where, std::string("cannot replace it: ") + std::strerror(e));
  }
  return {};
}

result<void> create_dirs_beneath(const fs::path& root, const fs::path& rel, mode_t perms) {
  auto parts = components(rel);
  if (!parts) return tl::unexpected(parts.error());
  auto dir = open_root(root);
  if (!dir) return tl::unexpected(dir.error());
  unique_fd cur = std::move(*dir);
  fs::path done = root;
  for (const auto& p : *parts) {
    done /= p;
    if (::mkdirat(cur.get(), p.c_str(), perms) != 0 && errno != EEXIST) return fail_at(done, std::strerror(errno));
    const int next = ::openat(cur.get(), p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return fail_at(done, reason(errno));
    cur = unique_fd(next);
  }
  return {};
}

result<void> copy_beneath(const fs::path& from_root, const fs::path& from_rel, const fs::path& to_root,
                          const fs::path& to_rel, uint64_t max_bytes, mode_t perms) {
  auto in = open_read(from_root, from_rel);
  if (!in) return tl::unexpected(in.error());
  auto bytes = read_regular(in->get(), max_bytes, from_root / from_rel);
  if (!bytes) return tl::unexpected(bytes.error());
  return write_beneath(to_root, to_rel, *bytes, write_mode::create, perms);
}

result<std::vector<dir_entry>> list_beneath(const fs::path& root, const fs::path& rel) {
  auto fd = open_at(root, rel, O_RDONLY | O_DIRECTORY);
  if (!fd) return tl::unexpected(fd.error());
  return list_fd(fd->get(), root / rel);
}

namespace {

result<void> copy_tree_at(const fs::path& from_root, const fs::path& from_rel, const fs::path& to_root,
                          const fs::path& to_rel, const fs::path& inner, uint64_t cap, uint64_t& total,
                          const std::function<bool(const fs::path&, entry_kind)>& keep, int depth) {
  if (depth > 64) return fail_at(from_root / from_rel / inner, "nested more than 64 folders deep");
  if (auto made = create_dirs_beneath(to_root, to_rel / inner); !made) return made;
  auto entries = list_beneath(from_root, from_rel / inner);
  if (!entries) return tl::unexpected(entries.error());
  for (const auto& e : *entries) {
    const fs::path rel = inner / e.name;
    if (keep && !keep(rel, e.kind)) continue;
    const fs::path where = from_root / from_rel / rel;
    if (e.kind == entry_kind::link) return fail_at(where, "a symbolic link; lathe copies no link a candidate made");
    if (e.kind == entry_kind::other) return fail_at(where, "not a regular file or folder; lathe copies none");
    if (e.kind == entry_kind::directory) {
      if (auto r = copy_tree_at(from_root, from_rel, to_root, to_rel, rel, cap, total, keep, depth + 1); !r) return r;
      continue;
    }
    if (total + e.bytes > cap)
      return fail_at(where, "copying it would pass the " + std::to_string(cap) + " bytes this folder may have");
    auto in = open_read(from_root, from_rel / rel);
    if (!in) return tl::unexpected(in.error());
    auto bytes = read_regular(in->get(), cap - total, where);
    if (!bytes) return tl::unexpected(bytes.error());
    total += bytes->size();
    struct stat st {};
    const mode_t perms = ::fstat(in->get(), &st) == 0 ? (st.st_mode & 0755) | 0600 : 0644;
    if (auto w = write_beneath(to_root, to_rel / rel, *bytes, write_mode::create, perms); !w) return w;
  }
  return {};
}

}  // namespace

result<uint64_t> copy_tree_beneath(const fs::path& from_root, const fs::path& from_rel, const fs::path& to_root,
                                   const fs::path& to_rel, uint64_t max_total_bytes,
                                   const std::function<bool(const fs::path&, entry_kind)>& keep) {
  uint64_t total = 0;
  if (auto r = copy_tree_at(from_root, from_rel, to_root, to_rel, {}, max_total_bytes, total, keep, 0); !r)
    return tl::unexpected(r.error());
  return total;
}

result<void> remove_beneath(const fs::path& root, const fs::path& rel) {
  errno = 0;
  auto parent = open_parent(root, rel);
  if (!parent) {
    if (errno == ENOENT) return {};  // a folder on the way is missing: nothing to remove
    return tl::unexpected(parent.error());
  }
  const auto& [pfd, leaf] = *parent;
  struct stat st {};
  if (::fstatat(pfd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? result<void>{} : fail_at(root / rel, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(pfd.get(), leaf.c_str(), 0) != 0 && errno != ENOENT) return fail_at(root / rel, std::strerror(errno));
    return {};
  }
  const int sub = ::openat(pfd.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0) return fail_at(root / rel, reason(errno));
  {
    const unique_fd owner(sub);
    if (auto r = remove_contents(sub, root / rel, 0); !r) return r;
  }
  if (::unlinkat(pfd.get(), leaf.c_str(), AT_REMOVEDIR) != 0) return fail_at(root / rel, std::strerror(errno));
  return {};
}

result<void> remove_tree(const fs::path& dir) {
  fs::path d = dir.lexically_normal();
  if (d.filename().empty()) d = d.parent_path();
  if (d.filename().empty() || d.filename() == "." || d.filename() == "..")
    return fail_at(dir, "not a folder lathe may remove");
  return remove_beneath(d.parent_path().empty() ? fs::path(".") : d.parent_path(), d.filename());
}

}  // namespace lathe::gate
