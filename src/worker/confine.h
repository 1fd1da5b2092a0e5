// The CPU worker's file system, narrowed before the kernel is loaded: the libraries its object
// links are loaded first (from the object's DT_NEEDED entries, read from the file, not by running
// it), and then a Landlock domain (gate/cpu/landlock.h) allows the object itself, the worker's
// own /proc entry, the CPU topology in /sys and a few devices, and nothing else. A kernel that
// finds dlopen by itself can then open no library it was not linked with (OpenBLAS on a task
// that forbids it), and no file at all.
#pragma once

#include <string>
#include <vector>

namespace lathe::worker {

// DT_NEEDED of the 64-bit ELF shared object open on `fd`; empty when it is not one or malformed
// (the loader then says what is wrong).
std::vector<std::string> needed_libraries(int fd);

// Loads what the object on `object_fd` needs and restricts the process's file accesses.
// Returns the Landlock ABI version applied, or 0 with the reason in `why` (no Landlock here).
int confine_files(int object_fd, std::string& why);

}  // namespace lathe::worker
