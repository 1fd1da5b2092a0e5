#include "worker/confine.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <iterator>

#include "gate/cpu/landlock.h"

namespace lathe::worker {
namespace {

template <class T>
bool read_at(int fd, uint64_t off, T& out) {
  return pread(fd, &out, sizeof out, static_cast<off_t>(off)) == static_cast<ssize_t>(sizeof out);
}

}  // namespace

std::vector<std::string> needed_libraries(int fd) {
  std::vector<std::string> out;
  Elf64_Ehdr eh{};
  if (!read_at(fd, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 64)
    return out;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  for (int i = 0; i < eh.e_phnum; ++i)
    if (!read_at(fd, eh.e_phoff + uint64_t{sizeof(Elf64_Phdr)} * i, ph[i])) return {};
  // File offset of a virtual address, through the PT_LOAD segment that maps it.
  auto file_offset = [&](uint64_t vaddr, uint64_t& off) {
    for (const auto& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) {
        off = p.p_offset + (vaddr - p.p_vaddr);
        return true;
      }
    return false;
  };
  for (const auto& p : ph) {
    if (p.p_type != PT_DYNAMIC || p.p_filesz > (1u << 20)) continue;
    std::vector<uint64_t> names;
    uint64_t strtab = 0, strsz = 0;
    for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= p.p_filesz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d{};
      if (!read_at(fd, p.p_offset + at, d) || d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) names.push_back(d.d_un.d_val);
      if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
      if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    }
    uint64_t base = 0;
    if (!file_offset(strtab, base)) return {};
    for (uint64_t n : names) {
      if (n >= strsz) continue;
      char name[256] = {};
      const ssize_t got = pread(fd, name, sizeof name - 1, static_cast<off_t>(base + n));
      if (got > 0 && std::memchr(name, 0, static_cast<size_t>(got))) out.emplace_back(name);
    }
  }
  return out;
}

int confine_files(int object_fd, std::string& why) {
  const int abi = sandbox::landlock_abi();
  if (abi < 1) {
    why = "this kernel has no Landlock";
    return 0;
  }
  // Trusted libraries (the system's, or ones the task allows the kernel to link): loaded now,
  // while they may still be opened; the object's own load then finds them by name.
  for (const std::string& lib : needed_libraries(object_fd)) dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  using namespace sandbox::landlock_access;
  // OpenMP and std::thread ask /sys how many CPUs are online; a kernel may read its own /proc
  // entry (its limits, its maps), /dev/null and the random devices.
  const sandbox::landlock_path paths[] = {
      {"/proc/self", read_file | read_dir},  {"/sys/devices/system/cpu", read_file | read_dir},
      {"/dev/null", read_file | write_file}, {"/dev/zero", read_file},
      {"/dev/urandom", read_file},           {"/dev/random", read_file},
      {"/etc/ld.so.cache", read_file},
  };
  const sandbox::landlock_rule object{object_fd, read_file};
  const int err = sandbox::landlock_restrict_paths(abi, paths, std::size(paths), &object, 1);
  if (err != 0) {
    why = std::string("Landlock refused the domain: ") + std::strerror(err);
    return 0;
  }
  return abi;
}

}  // namespace lathe::worker
