#include "gate/screen.h"
#include "gate/python_build.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

#include "spec/problem.h"
#include "gate/process.h"

#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace lathe::gate {
namespace {

struct banned {
  const char* name;
  const char* what;
};

// Names a kernel has no business calling. Exit and abort are left to the worker, which reports
// them as what they are (a crash with the exit code or signal).
const banned banned_calls[] = {
    {"system", "process creation"},      {"popen", "process creation"},
    {"fork", "process creation"},        {"vfork", "process creation"},
    {"execve", "process creation"},      {"execv", "process creation"},
    {"execvp", "process creation"},      {"execl", "process creation"},
    {"execlp", "process creation"},      {"execle", "process creation"},
    {"posix_spawn", "process creation"}, {"posix_spawnp", "process creation"},
    {"getenv", "environment access"},    {"secure_getenv", "environment access"},
    {"environ", "environment access"},   {"__environ", "environment access"},
    {"dlopen", "dynamic loading"},       {"dlsym", "dynamic loading"},
    {"dlmopen", "dynamic loading"},      {"syscall", "raw system call"},
    {"fopen", "file access"},            {"fopen64", "file access"},
    {"freopen", "file access"},          {"open", "file access"},
    {"open64", "file access"},           {"openat", "file access"},
    {"creat", "file access"},            {"unlink", "file access"},
    {"rename", "file access"},           {"mkdir", "file access"},
    {"socket", "network access"},        {"connect", "network access"},
    {"ptrace", "process control"},       {"kill", "process control"},
    {"clock_gettime", "timer access"},   {"gettimeofday", "timer access"},
    {"clock", "timer access"},           {"time", "timer access"},
    {"times", "timer access"},           {"getrusage", "timer access"},
    {"clock_getres", "timer access"},    {"timespec_get", "timer access"},
    {"ftime", "timer access"},
    // std::chrono's clocks, by their mangled names (a kernel has no business timing itself)
    {"_ZNSt6chrono3_V212steady_clock3nowEv", "timer access"},
    {"_ZNSt6chrono3_V212system_clock3nowEv", "timer access"},
    // the loader's and the kernel's tables, where a kernel finds dlopen, dlsym or the vDSO's
    // clock without importing them
    {"dl_iterate_phdr", "dynamic loading"}, {"dladdr", "dynamic loading"},
    {"dladdr1", "dynamic loading"},      {"dlinfo", "dynamic loading"},
    {"dlvsym", "dynamic loading"},       {"_dl_find_object", "dynamic loading"},
    {"getauxval", "dynamic loading"},
    {"setrlimit", "limit change"},       {"prlimit", "limit change"},
    {"mprotect", "memory protection change"},
    {"lathe_reference", "calling the reference"},
    // CUDA: lathe_launch only enqueues work on the given stream (abi.h), so that it can be
    // captured in a graph and timed: no allocation, no synchronization, no side streams, no
    // host-device copies, no persistent-L2 tricks.
    {"cudaMalloc", "CUDA ABI violation (allocation)"},
    {"cudaMallocManaged", "CUDA ABI violation (allocation)"},
    {"cudaMallocHost", "CUDA ABI violation (allocation)"},
    {"cudaMallocAsync", "CUDA ABI violation (allocation)"},
    {"cudaFree", "CUDA ABI violation (allocation)"},
    {"cudaDeviceSynchronize", "CUDA ABI violation (synchronization)"},
    {"cudaStreamSynchronize", "CUDA ABI violation (synchronization)"},
    {"cudaEventSynchronize", "CUDA ABI violation (synchronization)"},
    {"cudaMemcpy", "CUDA ABI violation (host-device copy)"},
    {"cudaStreamCreate", "CUDA ABI violation (side stream)"},
    {"cudaStreamCreateWithFlags", "CUDA ABI violation (side stream)"},
    {"cudaStreamCreateWithPriority", "CUDA ABI violation (side stream)"},
    {"cudaEventElapsedTime", "timer access"},
    {"cudaDeviceSetLimit", "CUDA ABI violation (persistent L2)"},
    {"cudaStreamSetAttribute", "CUDA ABI violation (persistent L2)"},
    {"cudaCtxResetPersistingL2Cache", "CUDA ABI violation (persistent L2)"},
    {"cudaDeviceReset", "CUDA ABI violation (device reset)"},
    // Other processes' device memory: a legacy IPC handle of another worker's exported buffer
    // can be forged from a kernel's own by swapping the pid (seen on the H200), so no kernel may
    // touch IPC at all; lathe's own workers export only to the trusted oracle.
    {"cudaIpcGetMemHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaIpcOpenMemHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaIpcCloseMemHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaIpcGetEventHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaIpcOpenEventHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaMemPoolImportPointer", "CUDA IPC (other processes' device memory)"},
    {"cudaMemPoolImportFromShareableHandle", "CUDA IPC (other processes' device memory)"},
    {"cudaMemPoolExportToShareableHandle", "CUDA IPC (other processes' device memory)"},
    {"cuIpcGetMemHandle", "CUDA IPC (other processes' device memory)"},
    {"cuIpcOpenMemHandle", "CUDA IPC (other processes' device memory)"},
    {"cuIpcOpenMemHandle_v2", "CUDA IPC (other processes' device memory)"},
    {"cuMemImportFromShareableHandle", "CUDA IPC (other processes' device memory)"},
    {"cuMemExportToShareableHandle", "CUDA IPC (other processes' device memory)"},
    // The driver API by name: every function of libcuda (cuCtxSetLimit, cuStreamSetAttribute,
    // cuMemAlloc…) without importing its symbol, the way dlsym would.
    {"cudaGetDriverEntryPoint", "dynamic loading"},
    {"cudaGetDriverEntryPointByVersion", "dynamic loading"},
    {"cuGetProcAddress", "dynamic loading"},
    {"cuGetProcAddress_v2", "dynamic loading"},
};

// Names whose mere use is the violation (a call is not needed: they are passed as values).
// The per-thread and legacy default streams need no creation, so banning cudaStreamCreate*
// alone leaves them open as side streams: the worker's stream is non-blocking, so work on them is
// ordered with nothing the timer records on args->stream. An access-policy window or persisting
// access property (by stream attribute, launch attribute or graph-node attribute) keeps data in
// L2 across calls.
const banned banned_names[] = {
    // The CPU's counters, read by intrinsics that are no calls (the object screen also looks for
    // the instructions): a kernel that reads them tells timed calls from checked ones.
    {"__rdtsc", "timer access"},
    {"__rdtscp", "timer access"},
    {"_rdtsc", "timer access"},
    {"__builtin_ia32_rdtsc", "timer access"},
    {"__builtin_ia32_rdtscp", "timer access"},
    {"__builtin_ia32_rdpmc", "timer access"},
    {"__rdpmc", "timer access"},
    {"_rdpmc", "timer access"},
    {"__builtin_readcyclecounter", "timer access"},
    {"steady_clock", "timer access"},
    {"system_clock", "timer access"},
    {"high_resolution_clock", "timer access"},
    {"cudaStreamLegacy", "CUDA ABI violation (default stream)"},
    {"cudaStreamPerThread", "CUDA ABI violation (default stream)"},
    {"CU_STREAM_LEGACY", "CUDA ABI violation (default stream)"},
    {"CU_STREAM_PER_THREAD", "CUDA ABI violation (default stream)"},
    {"cudaAccessPropertyPersisting", "CUDA ABI violation (persistent L2)"},
    {"CU_ACCESS_PROPERTY_PERSISTING", "CUDA ABI violation (persistent L2)"},
    {"cudaStreamAttributeAccessPolicyWindow", "CUDA ABI violation (persistent L2)"},
    {"cudaLaunchAttributeAccessPolicyWindow", "CUDA ABI violation (persistent L2)"},
    {"cudaKernelNodeAttributeAccessPolicyWindow", "CUDA ABI violation (persistent L2)"},
    {"CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW", "CUDA ABI violation (persistent L2)"},
    {"cudaLimitPersistingL2CacheSize", "CUDA ABI violation (persistent L2)"},
    {"CU_LIMIT_PERSISTING_L2_CACHE_SIZE", "CUDA ABI violation (persistent L2)"},
};

// The driver API (libcuda) a candidate may import when its task allows the library "cuda": the
// tensor-map encoders a TMA kernel needs on the host, and error strings. Every other cu* function
// (cuCtxSetLimit, cuStreamSetAttribute, cuMemAlloc…) would reach what the runtime names above
// are refused for, under another name.
const char* driver_api_allowed[] = {"cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col",
                                    "cuGetErrorString", "cuGetErrorName"};

bool driver_api_symbol(const std::string& sym) {
  return sym.size() > 2 && sym[0] == 'c' && sym[1] == 'u' && std::isupper(static_cast<unsigned char>(sym[2]));
}

// Vendor libraries: a candidate may not delegate the operator to them unless the task allows.
struct vendor {
  const char* library;        // name used in allow_libraries
  const char* symbol_prefix;  // undefined symbols that betray it
  const char* soname_prefix;  // NEEDED entries that betray it
};
const vendor vendors[] = {
    {"openblas", "cblas_", "libopenblas"}, {"openblas", "openblas_", "libopenblas"},
    {"blas", "sgemm_", "libblas"},         {"blas", "dgemm_", "libblas"},
    {"cublas", "cublas", "libcublas"},     {"cudnn", "cudnn", "libcudnn"},
    {"mkl", "mkl_", "libmkl"},             {"torch", "_ZN2at", "libtorch"},
    {"torch", "_ZN3c10", "libc10"},
};

const char* low_precision_tokens[] = {"_Float16", "__bf16", "__fp16", "_mm256_cvtps_ph",
                                      "_mm512_cvtne2ps_pbh", "_mm512_cvtneps_pbh"};

bool allowed(const task& t, const std::string& lib) {
  for (const auto& a : t.allow_libraries)
    if (a == lib) return true;
  return false;
}

// Comments and string/char literals blanked (line breaks kept, so line numbers stay right).
std::string strip(const std::string& s) {
  std::string o = s;
  enum { code, line_c, block_c, str, chr } st = code;
  for (size_t i = 0; i < o.size(); ++i) {
    char c = o[i], n = i + 1 < o.size() ? o[i + 1] : '\0';
    switch (st) {
      case code:
        if (c == '/' && n == '/') st = line_c, o[i] = ' ';
        else if (c == '/' && n == '*') st = block_c, o[i] = ' ', o[++i] = ' ';
        else if (c == '"') st = str;
        else if (c == '\'') st = chr;
        break;
      case line_c: if (c == '\n') st = code; else o[i] = ' '; break;
      case block_c:
        if (c == '*' && n == '/') st = code, o[i] = ' ', o[++i] = ' ';
        else if (c != '\n') o[i] = ' ';
        break;
      case str:
      case chr:
        if (c == '\\') { o[i] = ' '; if (i + 1 < o.size() && o[i + 1] != '\n') o[++i] = ' '; }
        else if (c == (st == str ? '"' : '\'')) st = code;
        else if (c != '\n') o[i] = ' ';
        break;
    }
  }
  return o;
}

// Kernel launches `k<<<grid, block[, smem[, stream]]>>>` on the default stream: two or three
// configuration arguments, or a literal null stream. The worker's stream is non-blocking: such a
// launch runs unordered with the timed stream, so its time escapes the timer's events while its
// results still reach the checks, which synchronize with it. LLM-written kernels often omit the
// stream. One argument is a macro (`<<<GRID_>>>`), whose expansion is not visible here, nor is a
// stream variable that happens to be null: the second line is at run time (the worker
// synchronizes the whole device at the end of a timed block, and timing.cpp compares lathe's
// clock with the stream's events).
void screen_launches(const std::string& path, const std::string& code, std::vector<finding>& out) {
  static const std::regex null_stream(
      R"(^\(*(?:\(cudaStream_t\)|(?:static_cast|reinterpret_cast)<cudaStream_t>|cudaStream_t)?[({]*(?:0+[xX]?0*[uUlL]*|nullptr|NULL)?[)}]*$)");
  for (size_t p = code.find("<<<"); p != std::string::npos; p = code.find("<<<", p + 3)) {
    const size_t q = code.find(">>>", p + 3);
    if (q == std::string::npos) break;
    std::vector<std::string> args(1);
    int depth = 0;
    for (size_t i = p + 3; i < q; ++i) {
      const char c = code[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (c == ',' && depth == 0) args.emplace_back();
      else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') args.back() += c;
    }
    const bool defaulted = args.size() == 2 || args.size() == 3;
    if (!defaulted && !(args.size() == 4 && std::regex_match(args[3], null_stream))) continue;
    const auto line = 1 + std::count(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(p), '\n');
    out.push_back({"CUDA ABI violation (default stream)", path + ":" + std::to_string(line),
                   std::string(defaulted ? "a launch without a stream argument"
                                         : "a launch on the null stream") +
                       " runs on the default stream, which the timer does not see: pass "
                       "static_cast<cudaStream_t>(args->stream) as the fourth launch parameter"});
  }
}

bool flag_ok(const std::string& f, const task& t, std::string& why) {
  static const std::regex ok(R"(-O[0-3s]|-O|-g|-f[a-z0-9][a-z0-9_=.-]*|-m[a-z0-9][a-z0-9_=.,-]*|-std=[a-z0-9+]+|-W(?![lap],)[a-z0-9=,_-]*|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|-U[A-Za-z_][A-Za-z0-9_]*|--use_fast_math|-lineinfo|-Xptxas=-v|--extended-lambda|--expt-relaxed-constexpr)");
  if (!std::regex_match(f, ok)) { why = "not an allowed compiler flag"; return false; }
  for (const char* bad : {"-fplugin", "-fprofile", "-fdump", "-fsanitize", "-frecord", "-fdebug-prefix-map"})
    if (f.rfind(bad, 0) == 0) { why = "driver or output side effect"; return false; }
  if (f.rfind("-march", 0) == 0 || f.rfind("-mtune=native", 0) == 0 || f == "-mcpu=native") {
    why = "the ISA comes from the manifest's `isa` (a cached artifact must never be -march=native)";
    return false;
  }
  if (!t.allow_fast_math && (f == "-ffast-math" || f == "-Ofast" || f == "--use_fast_math" ||
                             f == "-funsafe-math-optimizations" || f == "-ffinite-math-only")) {
    why = "precision below the task's contract (the task does not allow fast math)";
    return false;
  }
  return true;
}

// The host code of the built object, disassembled: the instructions that read the CPU's clocks
// or enter the kernel directly, however the source spelled them (token pasting, macros) or
// wherever they came from. CUDA objects hold their device code as data; only host code shows.
void screen_instructions(const std::filesystem::path& object, std::vector<finding>& out) {
  auto dis = run_tool({"objdump", "-d", "--no-show-raw-insn", "--no-addresses", object.string()}, 120);
  if (dis.exit_code != 0) {
    out.push_back({"unreadable object", object.filename().string(), "objdump failed: " + dis.output.substr(0, 300)});
    return;
  }
  static const std::regex insn(R"(^\s*(rdtscp?|rdpmc|syscall|sysenter)\b|^\s*int\s+\$0x80\b)");
  std::istringstream in(dis.output);
  std::string function;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == ':' && line.find('<') != std::string::npos) function = line;
    std::smatch m;
    if (!std::regex_search(line, m, insn)) continue;
    const std::string op = m[1].matched ? m[1].str() : "int $0x80";
    const bool timer = op.rfind("rd", 0) == 0;
    out.push_back({timer ? "timer access" : "raw system call", "instruction " + op,
                   "the object's code executes " + op + (function.empty() ? "" : " in " + function)});
    return;
  }
}

}  // namespace

std::vector<finding> screen_sources(const kernel_bundle& b, const task& t, screen_role role) {
  std::vector<finding> out;
  for (const auto& f : b.manifest.flags) {
    std::string why;
    if (!flag_ok(f, t, why)) out.push_back({"compiler flag", "flag " + f, why});
  }
  for (const auto& lib : b.manifest.libraries)
    if (role == screen_role::candidate && !allowed(t, lib))
      out.push_back({"vendor library", "library " + lib,
                     "the task does not allow candidates to link '" + lib + "'"});

  static const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]*)[>"])");
  static const std::regex ident(R"([A-Za-z_][A-Za-z0-9_]*)");
  const bool low_precision_ok = [&] {
    for (const auto& o : t.outputs)
      if (o.type == dtype::f16 || o.type == dtype::bf16) return true;
    return false;
  }();
  for (const auto& [path, text] : b.sources) {
    if (path.ends_with(".py")) {
      for (auto& f : screen_python_binding(path, text, t, role)) out.push_back(std::move(f));
      continue;
    }
    const std::string code = strip(text);
    if (path.ends_with(".cu") || path.ends_with(".cuh")) screen_launches(path, code, out);
    std::istringstream raw(text);
    std::istringstream in(code);
    std::string line, raw_line;
    for (int no = 1; std::getline(in, line) && std::getline(raw, raw_line); ++no) {
      const std::string where = path + ":" + std::to_string(no);
      std::smatch m;
      if (std::regex_search(raw_line, m, include)) {
        const std::string inc = m[1];
        if (!inc.empty() && (inc[0] == '/' || inc.find("..") != std::string::npos))
          out.push_back({"file access", where, "#include of a path outside the bundle: " + inc});
        continue;
      }
      for (auto it = std::sregex_iterator(line.begin(), line.end(), ident);
           it != std::sregex_iterator(); ++it) {
        const std::string id = it->str();
        if (id == "asm" || id == "__asm__" || id == "__asm") {
          // In CUDA sources inline assembly is PTX (mma.sync, ldmatrix, cp.async), which cannot
          // make a system call; an x86 system-call instruction in the string is still refused.
          // Elsewhere any inline assembly is.
          const bool cuda = path.ends_with(".cu") || path.ends_with(".cuh");
          const bool x86_syscall = raw_line.find("syscall") != std::string::npos ||
                                   raw_line.find("sysenter") != std::string::npos ||
                                   raw_line.find("int $0x80") != std::string::npos ||
                                   raw_line.find("int 0x80") != std::string::npos;
          if (!cuda || x86_syscall)
            out.push_back({"inline assembly", where,
                           cuda ? "a system-call instruction in inline assembly"
                                : "inline assembly can make raw system calls"});
        }
        for (const auto& bn : banned_names)
          if (id == bn.name) out.push_back({bn.what, where, std::string("uses ") + bn.name});
        for (const auto& bc : banned_calls)
          if (id == bc.name) {
            // `time` and `clock` are common variable names: only a call counts.
            const size_t after = static_cast<size_t>(it->position() + it->length());
            const bool call = line.find_first_not_of(" \t", after) != std::string::npos &&
                              line[line.find_first_not_of(" \t", after)] == '(';
            if (call || id == "environ" || id == "__environ")
              out.push_back({bc.what, where, std::string("uses ") + bc.name});
          }
        if (!low_precision_ok)
          for (const char* tok : low_precision_tokens)
            if (id == tok)
              out.push_back({"precision below the task's contract", where,
                             "uses " + id + "; the task's outputs are not half precision"});
      }
    }
  }
  return out;
}

std::vector<finding> screen_object(const std::filesystem::path& object, const task& t,
                                   screen_role role) {
  std::vector<finding> out;
  auto nm = run_tool({"nm", "-D", "--undefined-only", object.string()}, 60);
  if (nm.exit_code != 0) {
    out.push_back({"unreadable object", object.filename().string(), "nm failed: " + nm.output});
    return out;
  }
  std::set<std::string> symbols;
  std::istringstream in(nm.output);
  for (std::string line; std::getline(in, line);) {
    auto sp = line.find_last_of(' ');
    std::string sym = line.substr(sp == std::string::npos ? 0 : sp + 1);
    sym = sym.substr(0, sym.find('@'));  // strip symbol versions (getenv@GLIBC_2.2.5)
    if (!sym.empty()) symbols.insert(sym);
  }
  for (const auto& sym : symbols) {
    for (const auto& bc : banned_calls)
      if (sym == bc.name || sym == std::string("__") + bc.name + "_chk")
        out.push_back({bc.what, "symbol " + sym, std::string("the object imports ") + sym});
    if (role == screen_role::candidate && driver_api_symbol(sym) &&
        std::find(std::begin(driver_api_allowed), std::end(driver_api_allowed), sym) == std::end(driver_api_allowed))
      out.push_back({"driver API", "symbol " + sym,
                     "the object imports " + sym + ": a candidate may call only the tensor-map encoders and "
                     "error strings of the driver API"});
    if (role == screen_role::candidate)
      for (const auto& v : vendors)
        if (sym.rfind(v.symbol_prefix, 0) == 0 && !allowed(t, v.library))
          out.push_back({"vendor library", "symbol " + sym,
                         std::string("delegates to ") + v.library + ", which the task forbids"});
  }
  if (role == screen_role::candidate) screen_instructions(object, out);
  if (role == screen_role::candidate) {
    auto re = run_tool({"readelf", "-d", object.string()}, 60);
    static const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
    for (auto it = std::sregex_iterator(re.output.begin(), re.output.end(), needed);
         it != std::sregex_iterator(); ++it) {
      const std::string so = (*it)[1];
      for (const auto& v : vendors)
        if (so.rfind(v.soname_prefix, 0) == 0 && !allowed(t, v.library))
          out.push_back({"vendor library", "links " + so,
                         std::string("links ") + v.library + ", which the task forbids"});
    }
  }
  return out;
}

std::vector<std::string> dispatcher_bypass(const std::filesystem::path& object) {
  auto nm = run_tool({"nm", "-D", "-C", "--undefined-only", object.string()}, 60);
  if (nm.exit_code != 0) return {"(nm could not read " + object.filename().string() + ")"};
  static const char* const around[] = {"at::cpu::", "at::native::", "at::compositeexplicitautograd::",
                                       "at::compositeimplicitautograd::",
                                       "at::compositeexplicitautogradnonfunctional::"};
  std::vector<std::string> out;
  std::istringstream in(nm.output);
  for (std::string line; std::getline(in, line);) {
    // "                 U at::cpu::gelu(at::Tensor const&, c10::basic_string_view<char>)"
    const size_t u = line.find(" U ");
    if (u == std::string::npos) continue;
    std::string sym = line.substr(u + 3);
    sym = sym.substr(0, sym.find('@'));
    const bool torch_kernel = std::any_of(std::begin(around), std::end(around),
                                          [&](const char* ns) { return sym.rfind(ns, 0) == 0; });
    const bool blas = std::any_of(std::begin(vendors), std::end(vendors), [&](const vendor& v) {
      return std::string(v.library) != "torch" && std::string(v.library) != "cublas" &&
             std::string(v.library) != "cudnn" && sym.rfind(v.symbol_prefix, 0) == 0;
    });
    if (torch_kernel || blas) out.push_back(sym.substr(0, sym.find('(')));
  }
  return out;
}

std::vector<finding> screen_ptx(const std::string& ptx) {
  // mov.u64 %rd1, %globaltimer; / mov.u32 %r1, %clock; / mov.u64 %rd2, %clock64; (and _lo/_hi)
  static const std::regex timer(R"(%(globaltimer(_lo|_hi)?|clock64|clock)\b)");
  std::smatch m;
  if (!std::regex_search(ptx, m, timer)) return {};
  const auto line = 1 + std::count(ptx.begin(), ptx.begin() + m.position(0), '\n');
  return {{"timer access", "ptx line " + std::to_string(line),
           "device code reads %" + m[1].str() + " (a clock tells timed calls from checked ones)"}};
}

std::vector<finding> screen_mappings(const std::vector<std::string>& mapped, const task& t) {
  std::vector<finding> out;
  for (const auto& path : mapped) {
    const std::string name = std::filesystem::path(path).filename().string();
    for (const auto& v : vendors)
      if (name.rfind(v.soname_prefix, 0) == 0 && !allowed(t, v.library)) {
        out.push_back({"vendor library", "mapped " + path,
                       std::string("opened ") + v.library + " at run time, which the task forbids"});
        break;
      }
  }
  return out;
}

std::vector<finding> screen_python_binding(const std::string& name, const std::string& text,
                                           const task& t, screen_role role) {
  std::vector<finding> out;
  const std::string rel = "python binding";
  char tmpl[] = "/tmp/lathe-binding-XXXXXX.py";
  const int fd = mkstemps(tmpl, 3);
  if (fd < 0) return {{rel, name, "cannot screen: no temporary file"}};
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  bool fp32 = false, low = false;
  for (const auto* list : {&t.inputs, &t.outputs})
    for (const auto& x : *list) {
      fp32 |= x.type == dtype::f32;
      low |= x.type == dtype::f16 || x.type == dtype::bf16;
    }
  std::vector<std::string> argv{"python3", "-I", "-B",
                                (problem_worker_script().parent_path() / "lathe_screen.py").string(),
                                tmpl};
  // A ModelNew on a KernelBench problem may call PyTorch, as KernelBench's candidates may.
  const bool torch_allowed =
      role == screen_role::baseline || model_new_candidate(text, t.problem_model) ||
      std::find(t.allow_libraries.begin(), t.allow_libraries.end(), "torch") != t.allow_libraries.end();
  if (torch_allowed) argv.push_back("--allow-torch-ops");
  // A ModelNew's calls of the reference's own ops (KernelBench's torch fallback).
  if (t.problem_format == problem_format::kernelbench && model_new_candidate(text, t.problem_model) &&
      role == screen_role::candidate) {
    argv.push_back("--reference");
    argv.push_back(t.problem.string());
  }
  // fp32 contract: the task's floats are fp32, or there is no task to say otherwise.
  if ((fp32 && !low) || (t.inputs.empty() && t.outputs.empty())) argv.push_back("--fp32");
  const tool_result r = written ? run_tool(argv, 30) : tool_result{};
  ::unlink(tmpl);
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  if (r.exit_code != 0 || !j.is_object())
    return {{rel, name, "cannot screen (python3 " + std::to_string(r.exit_code) + "): " + r.output.substr(0, 300)}};
  if (!j.value("ok", false))
    return {{rel, name, j.value("error", std::string("does not parse"))}};
  for (const auto& f : j["findings"]) {
    const std::string rule = f.value("rule", std::string());
    const std::string what = rule == "fallback"         ? "python fallback"
                             : rule == "torch_fallback" ? "torch fallback"
                             : rule == "torch_op"       ? "torch compute op"
                             : rule == "precision" ? "precision downgrade"
                                                   : "python binding";
    out.push_back({what, name + ":" + std::to_string(f.value("line", 0)), f.value("detail", std::string())});
  }
  return out;
}

std::string describe(const std::vector<finding>& f) {
  std::string s;
  for (const auto& x : f) s += x.where + ": " + x.what + ": " + x.detail + "\n";
  return s;
}

}  // namespace lathe::gate
