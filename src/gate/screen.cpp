#include "gate/screen.h"

#include <regex>
#include <set>
#include <sstream>

#include "gate/process.h"

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
};

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
    std::istringstream raw(text);
    std::istringstream in(strip(text));
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
    if (role == screen_role::candidate)
      for (const auto& v : vendors)
        if (sym.rfind(v.symbol_prefix, 0) == 0 && !allowed(t, v.library))
          out.push_back({"vendor library", "symbol " + sym,
                         std::string("delegates to ") + v.library + ", which the task forbids"});
  }
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

std::string describe(const std::vector<finding>& f) {
  std::string s;
  for (const auto& x : f) s += x.where + ": " + x.what + ": " + x.detail + "\n";
  return s;
}

}  // namespace lathe::gate
