// expect: forbidden|launch_error
// task: mm
// timed
// dlopen_phdr.cpp without dl_iterate_phdr or any name the screen knows: libc's image is found by
// walking down from the address of one of its functions (qsort) to its ELF header, and its GNU
// hash table gives dlopen and dlsym; OpenBLAS is then opened at run time, on a task that forbids
// it. It got `ok` at far more than the naive baseline. The worker may now open only the files its
// object links (a Landlock domain), so the open fails (`launch_error`); where Landlock is missing,
// the library is found in the worker's mappings (`forbidden`).
#include <lathe/abi.h>
#include <dlfcn.h>
#include <elf.h>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
namespace {
using open_fn = void* (*)(const char*, int);
using sym_fn = void* (*)(void*, const char*);
using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<unsigned char>(*s);
  return h;
}
// A symbol of a loaded image from its dynamic section (GNU hash table).
void* lookup(uintptr_t bias, const Elf64_Dyn* dyn, const char* name) {
  const Elf64_Sym* sym = nullptr;
  const char* str = nullptr;
  const uint32_t* gh = nullptr;
  auto at = [&](uint64_t p) { return p < bias ? bias + p : p; };
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_SYMTAB) sym = reinterpret_cast<const Elf64_Sym*>(at(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_STRTAB) str = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_GNU_HASH) gh = reinterpret_cast<const uint32_t*>(at(dyn->d_un.d_ptr));
  }
  if (!sym || !str || !gh) return nullptr;
  const uint32_t nb = gh[0], off = gh[1], bloom = gh[2];
  const uint32_t* buckets = reinterpret_cast<const uint32_t*>(reinterpret_cast<const uint64_t*>(gh + 4) + bloom);
  const uint32_t* chain = buckets + nb;
  const uint32_t h = gnu_hash(name);
  for (uint32_t i = buckets[h % nb]; i >= off; ++i) {
    if ((chain[i - off] | 1) == (h | 1) && std::strcmp(str + sym[i].st_name, name) == 0)
      return reinterpret_cast<void*>(bias + sym[i].st_value);
    if (chain[i - off] & 1) break;
  }
  return nullptr;
}
void* found_open = nullptr;
void* found_sym = nullptr;
void find_libc() {
  uintptr_t p = reinterpret_cast<uintptr_t>(&qsort) & ~uintptr_t{4095};
  while (std::memcmp(reinterpret_cast<const void*>(p), ELFMAG, SELFMAG) != 0) p -= 4096;
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(p);
  auto* ph = reinterpret_cast<const Elf64_Phdr*>(p + eh->e_phoff);
  uintptr_t bias = p;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) bias = p - ph[i].p_vaddr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) {
      auto* dyn = reinterpret_cast<const Elf64_Dyn*>(bias + ph[i].p_vaddr);
      found_open = lookup(bias, dyn, "dlopen");
      found_sym = lookup(bias, dyn, "dlsym");
    }
}
sgemm_fn sgemm() {
  static sgemm_fn f = [] {
    find_libc();
    if (!found_open || !found_sym) return static_cast<sgemm_fn>(nullptr);
    void* h = reinterpret_cast<open_fn>(found_open)("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    return h ? reinterpret_cast<sgemm_fn>(reinterpret_cast<sym_fn>(found_sym)(h, "cblas_sgemm")) : nullptr;
  }();
  return f;
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const int n = static_cast<int>(a->inputs[0].shape[0]);
  sgemm_fn f = sgemm();
  if (!f) {
    std::snprintf(a->error, a->error_bytes, "OpenBLAS could not be opened at run time");
    return 1;
  }
  f(101, 111, 111, n, n, n, 1.0f, static_cast<const float*>(a->inputs[0].data), n,
    static_cast<const float*>(a->inputs[1].data), n, 0.0f, static_cast<float*>(a->outputs[0].data), n);
  return 0;
}
