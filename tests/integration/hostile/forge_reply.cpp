// expect: wrong_result|unwritten_output|crash
// task: mm
// timed
// reply-bytes: 1088
// Takes over the worker's protocol. It runs in the process that replies to lathe, so once the
// timing loop has begun (two calls back to back), the first call of every request, once done,
// writes a forged `ok` reply on the reply descriptor (wire.h's reply, 1088 bytes, copied from lathe's
// source) and moves the real descriptor aside, so that the worker's own reply goes nowhere; the
// calls are done after lathe's clock stopped. Its clock is the vDSO's clock_gettime, found through
// /proc/self/maps, so that no timer is imported. Before timing workers were frozen between
// their requests and every timed call's output could be checked, this got `ok` at several times
// the naive baseline.
#include <lathe/abi.h>
#include <elf.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
namespace {
using clock_fn = int (*)(clockid_t, timespec*);
// A symbol of an ELF image mapped at `base` (the vDSO), through its dynamic section.
void* elf_symbol(const unsigned char* base, const char* name) {
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  uintptr_t bias = 0;
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) bias = reinterpret_cast<uintptr_t>(base) - ph[i].p_vaddr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const Elf64_Dyn*>(bias + ph[i].p_vaddr);
  const Elf64_Sym* sym = nullptr;
  const char* str = nullptr;
  const uint32_t* hash = nullptr;
  auto at = [&](uint64_t p) { return p < bias ? bias + p : p; };
  for (; dyn && dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_SYMTAB) sym = reinterpret_cast<const Elf64_Sym*>(at(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_STRTAB) str = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr));
    if (dyn->d_tag == DT_HASH) hash = reinterpret_cast<const uint32_t*>(at(dyn->d_un.d_ptr));
  }
  if (!sym || !str || !hash) return nullptr;
  for (uint32_t i = 0; i < hash[1]; ++i)
    if (sym[i].st_value && std::strcmp(str + sym[i].st_name, name) == 0)
      return reinterpret_cast<void*>(bias + sym[i].st_value);
  return nullptr;
}
// The vDSO's address, from the worker's own /proc entry (getauxval is screened).
const unsigned char* vdso() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("[vdso]") != std::string::npos)
      return reinterpret_cast<const unsigned char*>(std::stoull(line.substr(0, line.find('-')), nullptr, 16));
  return nullptr;
}
double now() {
  static const unsigned char* base = vdso();
  static clock_fn f = base ? reinterpret_cast<clock_fn>(elf_symbol(base, "__vdso_clock_gettime")) : nullptr;
  timespec ts{};
  if (f) f(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
int real_reply = -1, sink[2] = {-1, -1};
bool timed = false;
double last = 0;
void forge() {
  if (real_reply < 0) {
    real_reply = fcntl(5, F_DUPFD_CLOEXEC, 100);
    if (pipe2(sink, O_NONBLOCK | O_CLOEXEC) != 0 || dup2(sink[1], 5) < 0) return;
  }
  unsigned char r[1088] = {};
  const uint32_t magic = 0x4c415448;  // wire::magic; status ok = 0
  std::memcpy(r, &magic, 4);
  const uint64_t calls = 1;
  std::memcpy(r + 16, &calls, 8);  // calls_done
  [[maybe_unused]] ssize_t w = write(real_reply, r, sizeof r);
  char drain[4096];
  while (read(sink[0], drain, sizeof drain) > 0) {
  }
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  const double t = now();
  const bool first_of_request = t - last >= 1e-4;
  if (!first_of_request) timed = true;
  for (int64_t i = 0; i < n * n; ++i) z[i] = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) z[i * n + j] += x[i * n + k] * y[k * n + j];
  // One call's work shows on lathe's clock, the rest of the block's runs after it stopped.
  if (first_of_request && timed) forge();
  last = now();
  return 0;
}
