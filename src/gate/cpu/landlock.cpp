#include "gate/cpu/landlock.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <vector>

namespace lathe::sandbox {
namespace {

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
constexpr uint32_t create_ruleset_version = 1u << 0;
constexpr int rule_path_beneath = 1;
constexpr uint64_t scope_abstract_unix_socket = 1ull << 0, scope_signal = 1ull << 1;

// The ruleset's attributes as ABI 6 knows them; older kernels are given the prefix they know.
struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct __attribute__((packed)) path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

uint64_t handled_fs(int abi) {
  uint64_t fs = landlock_access::all_in_tree;  // ABI 1
  if (abi >= 2) fs |= landlock_access::refer;
  if (abi >= 3) fs |= landlock_access::truncate;
  return fs;
}

}  // namespace

int landlock_abi() {
  const long v = syscall(SYS_landlock_create_ruleset, nullptr, 0, create_ruleset_version);
  return v > 0 ? static_cast<int>(v) : 0;
}

int landlock_restrict(int abi, const landlock_rule* rules, size_t count) {
  if (abi < 1) return ENOSYS;
  const uint64_t handled = handled_fs(abi);
  ruleset_attr attr{handled, 0, abi >= 6 ? scope_signal | scope_abstract_unix_socket : 0};
  const size_t size = abi >= 6 ? sizeof(ruleset_attr) : abi >= 4 ? 16 : 8;
  const long ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) return errno;
  int err = 0;
  for (size_t i = 0; i < count && err == 0; ++i) {
    if (rules[i].fd < 0) continue;
    path_beneath_attr pb{rules[i].access & handled, rules[i].fd};
    if (syscall(SYS_landlock_add_rule, ruleset, rule_path_beneath, &pb, 0) != 0) {
      // A file given tree rights: keep what a file can have (read, write, execute, truncate).
      pb.allowed_access &= landlock_access::execute | landlock_access::write_file |
                           landlock_access::read_file | landlock_access::truncate;
      if (errno != EINVAL || syscall(SYS_landlock_add_rule, ruleset, rule_path_beneath, &pb, 0) != 0)
        err = errno;
    }
  }
  if (err == 0 && syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) err = errno;
  if (err == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) err = errno;
  close(static_cast<int>(ruleset));
  return err;
}

int landlock_restrict_paths(int abi, const landlock_path* paths, size_t count, const landlock_rule* extra,
                            size_t extra_count) {
  std::vector<landlock_rule> rules(extra, extra + extra_count);
  std::vector<int> fds;
  for (size_t i = 0; i < count; ++i) {
    const int fd = open(paths[i].path, O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    fds.push_back(fd);
    rules.push_back({fd, paths[i].access});
  }
  const int err = landlock_restrict(abi, rules.data(), rules.size());
  for (int fd : fds) close(fd);
  return err;
}

}  // namespace lathe::sandbox
