// Landlock (Linux 5.13+): an allow-list of file accesses that a process puts on itself, without
// privileges, kept across exec and inherited by every child. The gate uses it twice: the
// compiler of a candidate's sources may read only the bundle and the system's headers and tools
// (a bare `#include MACRO`, a `%:include`, a spliced directive or an `.incbin` read any file the
// compiler could: the task's reference, other kernels, secrets), and a CPU worker may open no
// file beyond what its kernel was linked with (a kernel that found dlopen in libc's symbol table
// opened OpenBLAS on a task that forbids it).
//
// Raw system calls only: landlock_restrict may run in a forked child before exec.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lathe::sandbox {

// Access rights (linux/landlock.h; older headers lack the later ones).
namespace landlock_access {
constexpr uint64_t execute = 1ull << 0, write_file = 1ull << 1, read_file = 1ull << 2,
                   read_dir = 1ull << 3, remove_dir = 1ull << 4, remove_file = 1ull << 5,
                   make_char = 1ull << 6, make_dir = 1ull << 7, make_reg = 1ull << 8,
                   make_sock = 1ull << 9, make_fifo = 1ull << 10, make_block = 1ull << 11,
                   make_sym = 1ull << 12, refer = 1ull << 13, truncate = 1ull << 14;
// Reading a tree: its files, its directories, running its programs.
constexpr uint64_t read_tree = execute | read_file | read_dir;
// Everything in a tree (a build directory): read, write, create, remove.
constexpr uint64_t all_in_tree = (1ull << 13) - 1;
}  // namespace landlock_access

// The ABI version of the running kernel's Landlock, 0 when it has none (or it is disabled).
int landlock_abi();

struct landlock_rule {
  int fd = -1;           // an O_PATH descriptor of a directory (the tree beneath) or of a file
  uint64_t access = 0;   // landlock_access bits; file rules take only file rights
};

// Restricts the calling thread, and every process it becomes or starts, to `rules`: every file
// access right the ABI knows is handled, so what no rule grants is refused (EACCES). From ABI 6
// on, signals to processes outside the domain are refused too. Sets PR_SET_NO_NEW_PRIVS, which
// Landlock needs without CAP_SYS_ADMIN. Returns 0, or the errno of the step that failed.
int landlock_restrict(int abi, const landlock_rule* rules, size_t count);

struct landlock_path {
  const char* path;
  uint64_t access;
};
// landlock_restrict over `paths` (each opened O_PATH here and closed after; one that does not
// exist is skipped) and the caller's own `extra` rules. Opens files: not for a forked child
// before exec (process.cpp builds its rules before forking).
int landlock_restrict_paths(int abi, const landlock_path* paths, size_t count, const landlock_rule* extra,
                            size_t extra_count);

}  // namespace lathe::sandbox
