#include "gate/build.h"

#include <unistd.h>

#include <cstring>
#include <algorithm>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "core/hash.h"
#include "core/text.h"
#include "gate/cpu/files.h"
#include "gate/process.h"
#include "gate/python_build.h"
#include "gate/python_kernel.h"
#include "spec/safe_file.h"
#include "lathe/abi.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

constexpr double compile_timeout_s = 180;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool is_source(const std::string& path) {
  for (const char* ext : {".cpp", ".cc", ".cxx", ".c", ".cu"})
    if (path.size() > std::strlen(ext) && path.ends_with(ext)) return true;
  return false;
}

// lathe/abi.h and dlpack/dlpack.h into `dir`, as the kernel includes them.
result<void> stage_headers(const toolchain& tc, const fs::path& dir) {
  const fs::path dlpack_dir = tc.dlpack_include.empty() ? fs::path("/usr/include") : tc.dlpack_include;
  const std::pair<fs::path, fs::path> files[] = {
      {tc.include_dir / "lathe/abi.h", dir / "lathe/abi.h"},
      {dlpack_dir / "dlpack/dlpack.h", dir / "dlpack/dlpack.h"}};
  std::error_code ec;
  for (const auto& [from, to] : files) {
    fs::create_directories(to.parent_path(), ec);
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(errc::io_error, "cannot copy " + from.string() + " for the build: " + ec.message());
  }
  return {};
}

// A cached build's files into `out`, read beneath its folder (the candidate's compiler and record
// step wrote in it before lathe renamed it into the cache): false, with why, when one of them is
// a link, not a regular file, larger than its cap, or an object that no longer matches the hash
// its status recorded; the entry is then built again.
bool read_cached(const fs::path& dir, const std::string& object_name, bool cuda, build_output& out, std::string& why) {
  auto status = read_beneath(dir, "status", status_cap);
  if (!status) {
    why = status.error().message;
    return false;
  }
  auto log = read_beneath(dir, "build.log", log_cap);
  if (!log) {
    why = log.error().message;
    return false;
  }
  out.log = *log;
  out.cached = true;
  if (status->starts_with("failed")) return true;
  if (status->starts_with("refused ")) {
    out.refused = first_line(status->substr(8));
    return true;
  }
  auto object = status->starts_with("ok ") ? read_beneath(dir, object_name, object_cap)
                                           : fail(errc::io_error, "its status is neither ok nor failed");
  if (!object) {
    why = object.error().message;
    return false;
  }
  const std::string want = status->substr(3, 32);
  if (content_hash(*object) != want) {
    why = "cached object " + (dir / object_name).string() + " does not match its recorded hash: something wrote over it";
    return false;
  }
  if (cuda) {
    auto ptx = read_beneath(dir, "kernel.ptx", object_cap);
    if (!ptx) {
      why = ptx.error().message;
      return false;
    }
    out.ptx = *ptx;
  }
  out.ok = true;
  out.object = dir / object_name;
  out.object_hash = want;
  out.resources = parse_ptxas_report(out.log);
  return true;
}

}  // namespace

result<toolchain> detect_toolchain(const fs::path& include_dir) {
  toolchain tc;
  tc.include_dir = include_dir;
#ifdef LATHE_DLPACK_INCLUDE
  // abi.h includes dlpack/dlpack.h: kernels need the directory lathe itself was built with
  // (an unpacked package on the GPU machine, /usr/include elsewhere).
  if (std::string(LATHE_DLPACK_INCLUDE) != "/usr/include" &&
      fs::exists(fs::path(LATHE_DLPACK_INCLUDE) / "dlpack/dlpack.h"))
    tc.dlpack_include = LATHE_DLPACK_INCLUDE;
#endif
  auto r = run_tool({tc.cxx, "--version"}, 30);
  if (r.exit_code != 0) return fail(errc::not_found, "no C++ compiler: `g++ --version` failed: " + r.output);
  tc.cxx_version = first_line(r.output);
  for (const char* nvcc : {"/usr/local/cuda/bin/nvcc", "nvcc"}) {
    auto n = run_tool({nvcc, "--version"}, 30);
    if (n.exit_code == 0) {
      tc.nvcc = nvcc;
      // The last line names the release: "Build cuda_13.0.r13.0/compiler.36424714_0".
      std::string out = n.output;
      while (!out.empty() && out.back() == '\n') out.pop_back();
      tc.nvcc_version = out.substr(out.rfind('\n') + 1);
      break;
    }
  }
  return tc;
}

std::vector<kernel_resources> parse_ptxas_report(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<kernel_resources> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().function = m[1];
      continue;
    }
    if (out.empty()) continue;
    kernel_resources& k = out.back();
    if (std::regex_search(line, m, frame)) {
      k.stack_bytes = std::stoll(m[1]);
      k.spill_stores = std::stoll(m[2]);
      k.spill_loads = std::stoll(m[3]);
    }
    if (std::regex_search(line, m, regs)) k.registers = std::stoi(m[1]);
    if (std::regex_search(line, m, smem)) k.shared_bytes = std::stoll(m[1]);
  }
  return out;
}

std::vector<std::string> compile_command(const kernel_bundle& b, const std::string& isa,
                                         const toolchain& tc, build_kind kind,
                                         const fs::path& src_dir, const fs::path& out) {
  std::vector<std::string> cmd;
  const bool cuda = b.manifest.lang == language::cuda;
  if (cuda) {
    cmd = {tc.nvcc.empty() ? "nvcc" : tc.nvcc, "-shared", "-Xcompiler", "-fPIC", "-cudart",
           "shared", "-std=c++17"};
    if (!isa.empty()) {
      std::string sm = isa.starts_with("sm_") ? isa.substr(3) : isa;
      cmd.push_back("-gencode=arch=compute_" + sm + ",code=sm_" + sm);
    }
    // The resource report (registers, shared memory, spills, stack) goes into the log, the
    // intermediate PTX into keep/ (one compile, not two).
    cmd.push_back("-Xptxas=-v");
    cmd.push_back("-keep");
    cmd.push_back("-keep-dir");
    cmd.push_back((out.parent_path() / "keep").string());
  } else {
    cmd = {tc.cxx, "-shared", "-fPIC", "-std=c++20"};
    if (!isa.empty()) cmd.push_back("-march=" + isa);
  }
  if (kind == build_kind::reference) {
    // Trusted code: references of large problems may use every core (OpenMP); a GPU reference
    // (CUDA) uses the device instead.
    cmd.push_back("-O3");
    if (!cuda) cmd.push_back("-fopenmp");
  } else {
    for (const auto& f : b.manifest.flags) cmd.push_back(f);
  }
  for (const auto& [k, v] : b.manifest.defines) cmd.push_back("-D" + k + (v.empty() ? "" : "=" + v));
  cmd.push_back("-I" + src_dir.string());
  cmd.push_back("-I" + tc.include_dir.string());
  if (!tc.dlpack_include.empty()) cmd.push_back("-I" + tc.dlpack_include.string());
  for (const auto& [path, text] : b.sources)
    if (is_source(path)) cmd.push_back((src_dir / path).string());
  cmd.push_back("-o");
  cmd.push_back(out.string());
  for (const auto& lib : b.manifest.libraries) cmd.push_back("-l" + lib);
  return cmd;
}

namespace {

// The bundle's sources under `tmp`/src and lathe's headers under `tmp`/inc. A fresh folder,
// nothing of the candidate's has run in it yet; written beneath it all the same, so that a source
// named through a link or ".." cannot land elsewhere. The compiler is jailed (process.h): it
// works in `tmp`, with paths relative to it, and reads nothing else but the system's trees, so
// the headers a kernel includes from lathe (abi.h and DLPack's) are copied in beside its sources.
result<void> stage_sources(const kernel_bundle& b, const toolchain& tc, const fs::path& tmp) {
  for (const auto& [path, text] : b.sources) {
    const fs::path rel = fs::path("src") / path;
    auto w = create_dirs_beneath(tmp, rel.parent_path());
    if (w) w = write_beneath(tmp, rel, text, write_mode::create);
    if (!w) return fail(errc::io_error, "cannot write the bundle's " + path + ": " + w.error().message);
  }
  return stage_headers(tc, tmp / "inc");
}

// What the compiler may read besides the system's trees: the CUDA toolkit where it is installed
// (/usr/local/cuda is under /usr; /opt/cuda is not); an interpreter outside /usr (a virtual
// environment): its tree, as named (the venv, which holds its packages) and as resolved (its
// base's binary).
tool_jail compile_jail(const toolchain& tc, bool cuda, const std::string& interpreter,
                       const fs::path& torch_root) {
  tool_jail jail;
  if (cuda && !tc.nvcc.empty()) {
    std::error_code cec;
    const fs::path nvcc = fs::canonical(tc.nvcc.find('/') == std::string::npos
                                            ? fs::path("/usr/local/cuda/bin/nvcc") : fs::path(tc.nvcc), cec);
    if (!cec) jail.read_trees.push_back(nvcc.parent_path().parent_path());
  }
  if (!interpreter.empty()) {
    allow_interpreter(jail, interpreter);
    // torch itself where it lies outside both (a .pth or a link leading elsewhere), as the
    // worker's Landlock allows it (python/lathe_kernel.py interpreter_trees). Not what broke the
    // H100 machine's venv: that was the folders above the bind (bubblewrap.cpp).
    if (!torch_root.empty() && torch_root.is_absolute()) jail.read_trees.push_back(torch_root);
  }
  return jail;
}

// Keeps the PTX beside the object (the other intermediates are large and of no use) and reads
// ptxas's resource report from the log.
void keep_ptx(const fs::path& tmp, build_output& out) {
  auto listed = list_beneath(tmp, "keep");
  std::vector<std::string> ptx_files;
  if (listed)
    for (const auto& e : *listed)
      if (e.kind == entry_kind::regular && fs::path(e.name).extension() == ".ptx") ptx_files.push_back(e.name);
  for (const auto& f : ptx_files) {
    auto text = read_beneath(tmp / "keep", f, object_cap);
    out.ptx += "// " + f + "\n" + (text ? *text : "// [lathe] unread: " + text.error().message + "\n");
  }
  (void)write_beneath(tmp, "kernel.ptx", out.ptx, write_mode::replace);
  (void)remove_beneath(tmp, "keep");
  out.resources = parse_ptxas_report(out.log);
}

// The build's log and status written, then `tmp` renamed into the cache as `dir`; a build that
// cannot be written is never cached (a later one tries again); one that lost the race to
// another process returns the winner's result.
build_output store_build(const fs::path& tmp, const fs::path& dir, const std::string& object_name, bool cuda,
                         build_output out) {
  std::error_code ec;
  if (!out.refused.empty()) out.log += "[lathe] refused: " + out.refused + "\n";
  const std::string status = out.ok                  ? "ok " + out.object_hash + "\n"
                             : !out.refused.empty() ? "refused " + out.refused + "\n"
                                                    : "failed\n";
  auto written = write_beneath(tmp, "build.log", out.log, write_mode::replace);
  if (written) written = write_beneath(tmp, "status", status, write_mode::replace);
  (void)remove_beneath(tmp, "src");
  if (!written) {  // never cached: a later build tries again
    (void)remove_tree(tmp);
    out.log += "[lathe] not cached: " + written.error().message + "\n";
    if (out.ok) out.object.clear();
    out.ok = false;
    return out;
  }
  fs::rename(tmp, dir, ec);
  if (ec) {  // another process won the race: use its result
    (void)remove_tree(tmp);
    build_output theirs;
    theirs.key = out.key;
    std::string why;
    if (read_cached(dir, object_name, cuda, theirs, why)) {
      theirs.cached = false;
      theirs.seconds = out.seconds;
      return theirs;
    }
    out.ok = false;
    out.log += "[lathe] another build of this kernel won the race and its result is unusable: " + why + "\n";
    return out;
  }
  if (out.ok) out.object = dir / object_name;
  return out;
}

}  // namespace

result<build_output> build(const kernel_bundle& b, const std::string& isa, const toolchain& tc,
                           const fs::path& cache_dir, build_kind kind, const std::string& python_model) {
  const bool python = b.manifest.lang == language::python;
  const bool cuda = b.manifest.lang == language::cuda;
  result<python_kernel_runtime> rt = python ? find_python_kernel_runtime() : python_kernel_runtime{};
  if (!rt) return tl::unexpected(rt.error());
  const std::string& entry_source = python ? b.sources.at(b.manifest.entry) : std::string();
  const bool model_new = python && model_new_candidate(entry_source, python_model);
  hasher h;
  h.add("lathe-build/1").add(b.hash).add(isa).add(tc.cxx_version).add(tc.nvcc_version);
  h.add(std::to_string(LATHE_ABI_VERSION)).add(kind == build_kind::reference ? "ref" : "kernel");
  // A ModelNew's build constructs it from the problem's Model and compiles its extensions
  // against this interpreter's torch.
  if (model_new) h.add("model-new/1").add(python_model).add(rt->version);
  build_output out;
  std::string note;  // what the cache found, shown before the compiler's log
  out.key = h.hex();
  const fs::path dir = cache_dir / out.key;
  // A Python kernel's "object" is its entry source, syntax-checked (python_kernel.h).
  const std::string object_name = python ? "kernel.py" : "kernel.so";
  std::error_code ec;

  if (fs::exists(fs::symlink_status(dir, ec))) {
    std::string why;
    if (read_cached(dir, object_name, cuda, out, why)) return out;
    note = "[lathe] the cached build " + dir.string() + " is unusable (" + why + "): rebuilt\n";
    out = build_output{};
    out.key = h.hex();
    (void)remove_tree(dir);
  }

  fs::create_directories(cache_dir, ec);
  const fs::path tmp = cache_dir / ("tmp-" + random_suffix());
  fs::create_directories(tmp / "src", ec);
  if (cuda) fs::create_directories(tmp / "keep", ec);
  if (ec) return fail(errc::io_error, "cannot create " + (tmp / "src").string() + ": " + ec.message());
  if (auto staged = stage_sources(b, tc, tmp); !staged) return tl::unexpected(staged.error());
  toolchain jailed = tc;
  jailed.include_dir = "inc";
  jailed.dlpack_include.clear();
  std::vector<std::string> cmd;
  if (python) {
    // The entry only: the worker runs one file, read through its descriptor.
    if (auto w = write_beneath(tmp, "kernel.py", entry_source, write_mode::create); !w)
      return fail(errc::io_error, "cannot write kernel.py: " + w.error().message);
    cmd = {rt->interpreter.string(), "-B", "-s", "-E", "-c",
           "import sys; compile(open(sys.argv[1], 'rb').read(), sys.argv[2], 'exec')", "kernel.py",
           b.manifest.entry};
  } else {
    cmd = compile_command(b, isa, jailed, kind, "src", "kernel.so");
  }
  std::string line;
  for (const auto& a : cmd) line += (line.empty() ? "" : " ") + a;
  // A ModelNew on a CUDA task compiles its inline CUDA with nvcc: its toolkit is readable too.
  const tool_jail jail = compile_jail(tc, cuda || (python && !torch_cuda_arch(isa).empty()),
                                      python ? cmd.front() : std::string(), python ? rt->torch_root : fs::path());
  tool_result r = run_tool(cmd, compile_timeout_s, tmp, &jail);
  own_again(tmp);
  out.seconds = r.seconds;
  // The log came from a candidate's sources (an #error, a file name): escaped before anyone
  // reads it (core/text.h).
  out.log = escape_untrusted(note + "$ " + line + "\n" + r.output) + "[lathe] compiler " + r.jail + "\n";
  if (r.timed_out) out.log += "\n[lathe] compiler killed after " + std::to_string(compile_timeout_s) + " s\n";
  out.ok = r.exit_code == 0 && !r.timed_out;
  // From here on `tmp` holds what the compiler (steered by the candidate's flags and sources)
  // left: every file is read and written beneath it, never through a link (safe_file.h).
  if (out.ok && model_new) {
    const python_build_result pb = build_python_extensions(rt->interpreter, rt->version, python_model,
                                                           entry_source, tmp, cache_dir / "torch-ext", jail,
                                                           torch_cuda_arch(isa));
    out.log += pb.log;
    out.ok = pb.ok;
    out.refused = pb.refused;
  }
  if (out.ok) {
    auto built = read_beneath(tmp, object_name, object_cap);
    if (!built) {
      out.ok = false;
      const auto kind = fs::symlink_status(tmp / object_name, ec).type();
      if (kind == fs::file_type::not_found) out.log += "[lathe] the build wrote no " + object_name + "\n";
      else out.refused = "the build left " + object_name + " unusable: " + built.error().message;
    } else if (python && *built != entry_source) {
      // The screen read the bundle's source; the worker would run this file.
      out.ok = false;
      out.refused = "kernel.py changed during its build: what would run is not what was screened";
    } else {
      out.object_hash = content_hash(*built);
    }
  }
  if (cuda) keep_ptx(tmp, out);
  return store_build(tmp, dir, object_name, cuda, std::move(out));
}

std::string resolved_isa(const kernel_bundle& b, const target& host) {
  if (!b.manifest.isa.empty()) return b.manifest.isa;
  // A CUDA bundle that names no architecture is built for the reference machine's (an H200).
  return b.manifest.lang == language::cuda ? "sm_90a" : host.arch;
}

kernel_bundle reference_bundle(const task& t, const fs::path& file, language lang) {
  kernel_bundle rb;
  rb.name = lang == language::cuda ? "gpu reference" : "reference";
  rb.manifest.lang = lang;
  rb.manifest.entry = file.filename().string();
  rb.manifest.files = {rb.manifest.entry};
  std::ifstream in(t.dir / file, std::ios::binary);
  rb.sources[rb.manifest.entry] = std::string(std::istreambuf_iterator<char>(in), {});
  rb.manifest.flags = {"-O3"};
  rb.hash = content_hash(rb.name + "\n" + rb.sources[rb.manifest.entry]);
  return rb;
}

}  // namespace lathe::gate
