// expect: forbidden
// task: mm
// timed
// Calls OpenBLAS on a task that forbids it, without importing it or dlopen: dl_iterate_phdr
// finds libc's image, whose GNU hash table gives dlopen and dlsym; OpenBLAS is opened at run
// time and its sgemm computes the product. Nothing in the object named a library, so it got
// `ok` at far more than the naive baseline (112x on the red team's gemm). dl_iterate_phdr is now
// refused by the screen, and a library opened at run time is found in the worker's mappings.
#include <lathe/abi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
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
int visit(dl_phdr_info* info, size_t, void*) {
  if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libc.so")) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      auto* dyn = reinterpret_cast<const Elf64_Dyn*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      found_open = lookup(info->dlpi_addr, dyn, "dlopen");
      found_sym = lookup(info->dlpi_addr, dyn, "dlsym");
    }
  return 1;
}
sgemm_fn sgemm() {
  static sgemm_fn f = [] {
    dl_iterate_phdr(visit, nullptr);
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
