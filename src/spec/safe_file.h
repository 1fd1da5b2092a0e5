// Files in a folder a candidate could have written (a build folder its compiler or record step
// ran in, an extension's output, a cache entry renamed from such a folder, a KernelBench samples
// folder): opened beneath that folder without following any link, regular files only, each read
// capped (PROTOCOL.md, "lathe never follows a candidate's link"; issue 42). lathe ran as root
// and wrote build.log through a planted link over a root-only file and over the workspace's
// lathe.db, and read a root-only file, /etc/shadow and /proc/self/environ (its API keys) back into
// the diagnostics, all with streams that follow links.
//
// Each call takes `root`, a folder lathe made or was told about (it is opened as named, links
// included), and `rel`, a relative path beneath it whose every component is resolved without
// following links: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or,
// on a kernel without openat2 (before Linux 5.6), openat with O_NOFOLLOW one component at a
// time. `rel` may not be absolute or name "..". A failure is said by the result, with the path
// and why (a link, not a regular file, larger than the cap).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace lathe::gate {

// A file descriptor closed with its owner.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd();
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

// Caps of the files lathe reads back from build folders (each a worst case with room to spare):
// a status line; a build log (a compiler's output is kept to its first MiB by run_tool, and a
// ModelNew's log adds one per extension); a JSON record (requests.json holds the extensions'
// sources, which a bundle keeps under 64 MiB); an object or a module (the jailed tools may write
// files up to 1 GiB, tool_jail::file_size).
constexpr uint64_t status_cap = 4096;
constexpr uint64_t log_cap = uint64_t{16} << 20;
constexpr uint64_t record_cap = uint64_t{64} << 20;
constexpr uint64_t object_cap = uint64_t{1} << 30;

// How a path beneath a folder is resolved: the best the kernel offers, or one way (tests).
enum class resolve : uint8_t { best, openat2, walk };

// `rel` opened beneath the directory `dir_fd` with open(2)'s `flags` (O_CLOEXEC and O_NOFOLLOW
// always added); no component may be a link. An empty `rel` or "." is the directory itself.
result<unique_fd> open_beneath(int dir_fd, const std::filesystem::path& rel, int flags, mode_t mode = 0,
                               resolve how = resolve::best);

// The folder lathe names, opened (as named: its own path may hold links, e.g. TMPDIR's).
result<unique_fd> open_root(const std::filesystem::path& root);

// A regular file's bytes, refused when larger than `max_bytes`.
result<std::string> read_beneath(const std::filesystem::path& root, const std::filesystem::path& rel,
                                 uint64_t max_bytes);

// A file the user named (a problem file, a task's reference): links followed, since the path is
// theirs, but a regular file only (a fifo would block, /dev/zero would never end) and capped.
result<std::string> read_named(const std::filesystem::path& file, uint64_t max_bytes);

enum class write_mode : uint8_t {
  create,   // a new file: fails when anything (a link included) has the name
  replace,  // written under a fresh name, then renamed over whatever has the name (a link is
            // replaced, never written through)
};
result<void> write_beneath(const std::filesystem::path& root, const std::filesystem::path& rel,
                           std::string_view bytes, write_mode mode, mode_t perms = 0644);

// The folders of `rel` beneath `root` made where missing (an existing one that is a link fails).
result<void> create_dirs_beneath(const std::filesystem::path& root, const std::filesystem::path& rel,
                                 mode_t perms = 0755);

// One regular file copied into a new file (write_mode::create) beneath `to_root`.
result<void> copy_beneath(const std::filesystem::path& from_root, const std::filesystem::path& from_rel,
                          const std::filesystem::path& to_root, const std::filesystem::path& to_rel,
                          uint64_t max_bytes, mode_t perms = 0644);

enum class entry_kind : uint8_t { regular, directory, link, other };
struct dir_entry {
  std::string name;
  entry_kind kind = entry_kind::other;
  uint64_t bytes = 0;  // regular files
};
// The entries of a folder beneath `root` ("." and ".." left out), sorted by name, links as links.
result<std::vector<dir_entry>> list_beneath(const std::filesystem::path& root, const std::filesystem::path& rel);

// The regular files and folders of `from_rel` beneath `from_root` that `keep` accepts (every one
// without `keep`; it sees each entry's path relative to `from_rel`) copied into a new folder
// `to_rel` beneath `to_root`. A kept entry that is a link or not a regular file or folder fails
// the copy (and names it): it is never followed. Returns the bytes copied; more than
// `max_total_bytes` fails.
result<uint64_t> copy_tree_beneath(const std::filesystem::path& from_root, const std::filesystem::path& from_rel,
                                   const std::filesystem::path& to_root, const std::filesystem::path& to_rel,
                                   uint64_t max_total_bytes,
                                   const std::function<bool(const std::filesystem::path&, entry_kind)>& keep = {});

// `rel` beneath `root` removed: a file or a link (the link itself), or a folder with everything
// in it, never following a link. Missing is success.
result<void> remove_beneath(const std::filesystem::path& root, const std::filesystem::path& rel);

// A folder a candidate wrote in, removed (remove_beneath from its parent): unlike
// std::filesystem::remove_all, a folder swapped for a link while it runs is not followed.
result<void> remove_tree(const std::filesystem::path& dir);

}  // namespace lathe::gate
