// expect: forbidden|launch_error
// task: mm_cuda
// The CUDA analogue of dlopen_hidden.cpp: cuBLAS opened at run time on a task that forbids it.
// dlopen and dlsym come from libc's own symbol table (found by walking down from qsort to libc's
// ELF header), so the object imports neither and links no vendor library; cuBLAS's sgemm then
// computes the product on the timed stream.
#include <lathe/abi.h>
#include <dlfcn.h>
#include <elf.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
namespace {
using open_fn = void* (*)(const char*, int);
using sym_fn = void* (*)(void*, const char*);
using create_fn = int (*)(void**);
using stream_fn = int (*)(void*, cudaStream_t);
using sgemm_fn = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*,
                         int, const float*, float*, int);
uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + static_cast<unsigned char>(*s);
  return h;
}
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
struct blas {
  void* handle = nullptr;
  stream_fn set_stream = nullptr;
  sgemm_fn sgemm = nullptr;
};
blas open_blas() {
  blas b;
  uintptr_t p = reinterpret_cast<uintptr_t>(&qsort) & ~uintptr_t{4095};
  while (std::memcmp(reinterpret_cast<const void*>(p), ELFMAG, SELFMAG) != 0) p -= 4096;
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(p);
  auto* ph = reinterpret_cast<const Elf64_Phdr*>(p + eh->e_phoff);
  uintptr_t bias = p;
  void *o = nullptr, *s = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) bias = p - ph[i].p_vaddr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) {
      auto* dyn = reinterpret_cast<const Elf64_Dyn*>(bias + ph[i].p_vaddr);
      o = lookup(bias, dyn, "dlopen");
      s = lookup(bias, dyn, "dlsym");
    }
  if (!o || !s) return b;
  void* lib = nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
    if ((lib = reinterpret_cast<open_fn>(o)(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) return b;
  auto get = [&](const char* n) { return reinterpret_cast<sym_fn>(s)(lib, n); };
  auto create = reinterpret_cast<create_fn>(get("cublasCreate_v2"));
  b.set_stream = reinterpret_cast<stream_fn>(get("cublasSetStream_v2"));
  b.sgemm = reinterpret_cast<sgemm_fn>(get("cublasSgemm_v2"));
  if (!create || !b.set_stream || !b.sgemm || create(&b.handle) != 0) b.handle = nullptr;
  return b;
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* args) {
  static blas b = open_blas();
  if (!b.handle) {
    std::snprintf(args->error, args->error_bytes, "cuBLAS could not be opened at run time");
    return 1;
  }
  const int n = static_cast<int>(args->inputs[0].shape[0]);
  const float one = 1, zero = 0;
  b.set_stream(b.handle, static_cast<cudaStream_t>(args->stream));
  // Row-major C = A B is column-major C^T = B^T A^T: B and A swapped.
  return b.sgemm(b.handle, 0, 0, n, n, n, &one, static_cast<const float*>(args->inputs[1].data), n,
                 static_cast<const float*>(args->inputs[0].data), n, &zero,
                 static_cast<float*>(args->outputs[0].data), n) == 0 ? 0 : 1;
}
