#include "lineage/screening.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "core/lines.h"
#include "core/text.h"
#include "gate/process.h"

namespace lathe::lineages {
namespace {

// The names each library goes by in `allow_libraries` (gate/screen.cpp uses the same words), so
// that a task allowing "cublas" allows cuBLASLt too, as the gate's screen does.
struct library_rule {
  const char* library;
  std::vector<std::string> symbol_prefixes;  // mangled (nm -D) or demangled (nm -C)
  std::vector<std::string> soname_prefixes;
};

const std::vector<library_rule>& rules() {
  static const std::vector<library_rule> r = {
      {"openblas", {"cblas_", "openblas_", "gotoblas"}, {"libopenblas"}},
      {"mkl", {"mkl_", "MKL_"}, {"libmkl"}},
      {"cublas", {"cublasLt", "cublas"}, {"libcublasLt", "libcublas"}},
      {"cudnn", {"cudnn"}, {"libcudnn"}},
      {"torch",
       {"_ZN2at", "_ZN3c10", "_ZN5torch", "at::", "c10::", "torch::"},
       {"libtorch", "libc10"}},
      // The reference BLAS and its C interface; ATLAS's libcblas too.
      {"blas", {}, {"libblas", "libcblas", "libatlas"}},
  };
  return r;
}

// Fortran BLAS entry points (sgemm_, dgemv_, …): a kernel has no reason to define or import
// them unless it is a BLAS or calls one.
bool fortran_blas(const std::string& s) {
  static const std::regex re(R"([sdcz](gemm|gemv|symm|syrk|syr2k|trmm|trsm|axpy|dot|scal|ger|gbmv|trmv|trsv)_)");
  return std::regex_match(s, re);
}

bool allowed(const task& t, const std::string& library) {
  return std::find(t.allow_libraries.begin(), t.allow_libraries.end(), library) !=
         t.allow_libraries.end();
}

std::vector<std::string> lines_of(const std::string& text) {
  const auto lines = split_lines(text);
  return std::vector<std::string>(lines.begin(), lines.end());
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

struct collector {
  const task& t;
  screening& out;
  std::set<std::string> seen;  // what|name|where, once each
  void add(const std::string& what, const std::string& name, const std::string& where,
           const std::string& library) {
    if (!seen.insert(what + "|" + name + "|" + where).second) return;
    delegation_finding f{what, name, where, allowed(t, library)};
    out.findings.push_back(std::move(f));
  }
};

bool run_ok(const gate::tool_result& r, const std::string& tool, screening& out) {
  if (r.exit_code == 0 && !r.timed_out) return true;
  out.complete = false;
  std::string why = r.exit_code == -1 ? "could not start" : r.timed_out ? "timed out" : "failed";
  std::string first = r.output.substr(0, r.output.find('\n'));
  out.notes.push_back(cat(tool, " ", why, first.empty() ? "" : ": ", first));
  return false;
}

}  // namespace

std::string library_of_symbol(const std::string& symbol) {
  for (const auto& r : rules())
    for (const auto& p : r.symbol_prefixes)
      if (symbol.rfind(p, 0) == 0) return r.library;
  if (fortran_blas(symbol)) return "blas";
  return "";
}

std::string library_of_soname(const std::string& soname) {
  for (const auto& r : rules())
    for (const auto& p : r.soname_prefixes)
      if (soname.rfind(p, 0) == 0) return r.library;
  return "";
}

bool screening::refused() const {
  if (!complete) return true;
  return std::any_of(findings.begin(), findings.end(),
                     [](const delegation_finding& f) { return !f.allowed; });
}

std::string screening::describe() const {
  std::vector<std::string> parts;
  for (const auto& f : findings)
    if (!f.allowed) parts.push_back(cat(f.what, " ", f.name, " (", f.where, ")"));
  for (const auto& n : notes) parts.push_back(n);
  return join(parts, "; ");
}

screening screen_delegation(const std::filesystem::path& object, const task& t) {
  screening out;
  collector c{t, out, {}};
  const std::string obj = object.string();

  // Imported symbols: what the object calls in another shared object.
  const auto undefined = gate::run_tool({"nm", "-D", "--undefined-only", obj}, 60);
  if (run_ok(undefined, "nm -D --undefined-only", out))
    for (const auto& line : lines_of(undefined.output)) {
      std::string sym = trim(line);
      if (const auto sp = sym.find_last_of(' '); sp != std::string::npos) sym = sym.substr(sp + 1);
      sym = sym.substr(0, sym.find('@'));  // symbol versions: cblas_sgemm@OPENBLAS_0.3
      if (const std::string lib = library_of_symbol(sym); !lib.empty())
        c.add("symbol", sym, "nm -D (undefined)", lib);
    }

  // Defined symbols, demangled: a library compiled or linked into the object itself.
  const auto defined = gate::run_tool({"nm", "-C", "--defined-only", obj}, 60);
  if (run_ok(defined, "nm -C --defined-only", out))
    for (const auto& line : lines_of(defined.output)) {
      // "0000000000001139 T cblas_sgemm" / "… T at::native::foo(…)": the name is after the type.
      std::istringstream in(line);
      std::string addr, type;
      in >> addr >> type;
      std::string name;
      std::getline(in, name);
      name = trim(name);
      if (name.empty() || type.empty() || type == "U" || type == "w" || type == "v") continue;
      if (const std::string lib = library_of_symbol(name); !lib.empty())
        c.add("symbol", name.substr(0, name.find('(')), "nm -C (defined)", lib);
    }

  // Shared libraries, transitively: a library the kernel loads through another one counts.
  const auto ldd = gate::run_tool({"ldd", obj}, 60);
  if (run_ok(ldd, "ldd", out))
    for (const auto& line : lines_of(ldd.output)) {
      const std::string l = trim(line);
      const std::string soname = l.substr(0, l.find_first_of(" \t"));
      if (const std::string lib = library_of_soname(soname); !lib.empty())
        c.add("library", soname, "ldd", lib);
      if (l.find("not found") != std::string::npos)
        out.notes.push_back("ldd: " + soname + " not found (the object cannot load it here)");
    }
  return out;
}

}  // namespace lathe::lineages
