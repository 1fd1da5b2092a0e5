// The catalog's pragma mechanisms on loops: loop_unroll, omp_parallel, simd.
#include <algorithm>
#include <regex>

#include "catalog_detail.h"

namespace lathe::mock::detail {
namespace {

bool is_unroll(const std::string& p) {
  return p.starts_with("unroll") || std::regex_search(p, std::regex(R"(^GCC\s+unroll\b)"));
}

bool constant_bound(const loop_span& l) {
  static const std::regex re(R"(^\s*\w+\s*(<|<=)\s*([0-9]+|[A-Z][A-Z0-9_]*)\s*$)");
  return std::regex_match(l.cond, re);
}

bool omp_left(const mock_bundle& b, const std::string& path, const std::string& new_text) {
  for (const auto& [p, text] : b.files) {
    const source_view v(p == path ? new_text : text);
    for (const auto& pr : pragmas(v))
      if (pr.body.starts_with("omp")) return true;
    if (std::regex_search(v.code(), std::regex(R"(\bomp_\w+\s*\()"))) return true;
  }
  return false;
}

void remove_omp(const mock_bundle& b, const std::string& path, const source_view& v,
                const std::vector<function_span>& fns, std::vector<change>& out,
                const char* feature, const std::regex& which) {
  for (const auto& p : pragmas(v)) {
    if (!std::regex_search(p.body, which)) continue;
    const auto* f = enclosing(fns, v.line_start(p.line));
    if (!f) continue;
    const auto ls = loops(v, *f);
    const auto* l = next_loop(ls, v.line_start(p.line));
    change c = make(feature, "remove", path, *f, l,
                    "deleted `#pragma " + p.body + "` before " + loop_words(l) + " in " + f->name +
                        " (" + path + ":" + std::to_string(p.line + 1) + ")",
                    apply_splices(v.text(), {delete_line(v, p.line)}));
    // Without any OpenMP left, -fopenmp only links the runtime for nothing.
    if (std::string_view(feature) == "omp_parallel" && has_flag(b, "-fopenmp") &&
        !omp_left(b, path, c.text)) {
      c.flags.push_back({false, "-fopenmp"});
      c.what += "; dropped -fopenmp (no OpenMP left)";
    }
    out.push_back(std::move(c));
  }
}

}  // namespace

// ---- loop_unroll ------------------------------------------------------------------------------

void remove_unroll(const mock_bundle&, const std::string& path, const source_view& v,
                   const std::vector<function_span>& fns, std::vector<change>& out) {
  for (const auto& p : pragmas(v)) {
    if (!is_unroll(p.body)) continue;
    const auto* f = enclosing(fns, v.line_start(p.line));
    if (!f) continue;
    const auto ls = loops(v, *f);
    const auto* l = next_loop(ls, v.line_start(p.line));
    out.push_back(make("loop_unroll", "remove", path, *f, l,
                       "deleted `#pragma " + p.body + "` before " + loop_words(l) + " in " +
                           f->name + " (" + path + ":" + std::to_string(p.line + 1) + ")",
                       apply_splices(v.text(), {delete_line(v, p.line)})));
  }
}

void add_unroll(const mock_bundle& b, const std::string& path, const source_view& v,
                const std::vector<function_span>& fns, std::vector<change>& out) {
  for (const auto& f : fns) {
    if (abi_helper(v, f) || (b.cuda && !f.global && !f.device)) continue;
    for (const auto& l : loops(v, f)) {
      if (!l.innermost || !l.own_line || !l.statement_start || !canonical(l) || pragma_before(v, l))
        continue;
      // nvcc unrolls a loop with a constant trip count completely; a runtime one by a factor.
      const std::string pragma = b.cuda
                                     ? (constant_bound(l) ? "#pragma unroll" : "#pragma unroll 4")
                                     : "#pragma GCC unroll 4";
      const size_t line = v.line_of(l.at);
      out.push_back(make("loop_unroll", "add", path, f, &l,
                         "inserted `" + pragma + "` before " + loop_words(&l) + " in " + f.name +
                             " (" + where(path, v, l.at) + ")",
                         apply_splices(v.text(), {{v.line_start(line), v.line_start(line),
                                                   v.indent_of(line) + pragma + "\n"}})));
    }
  }
}

// ---- OpenMP: omp_parallel, simd ---------------------------------------------------------------

void remove_parallel(const mock_bundle& b, const std::string& path, const source_view& v,
                     const std::vector<function_span>& fns, std::vector<change>& out) {
  static const std::regex re(R"(^omp\s+parallel\b)");
  remove_omp(b, path, v, fns, out, "omp_parallel", re);
}

void remove_simd(const mock_bundle& b, const std::string& path, const source_view& v,
                 const std::vector<function_span>& fns, std::vector<change>& out) {
  static const std::regex re(R"(^omp\s+simd\b)");
  remove_omp(b, path, v, fns, out, "simd", re);
}

void add_parallel(const mock_bundle& b, const std::string& path, const source_view& v,
                  const std::vector<function_span>& fns, std::vector<change>& out) {
  if (b.cuda) return;
  for (const auto& f : fns) {
    if (f.name != "lathe_launch") continue;
    for (const auto& l : loops(v, f)) {
      if (l.depth != 0 || !l.own_line || !l.statement_start || !canonical(l) || pragma_before(v, l))
        continue;
      // Iterations must be independent: no scalar from outside written in the body.
      if (!outer_writes(v, l).empty()) continue;
      const size_t line = v.line_of(l.at);
      change c = make(
          "omp_parallel", "add", path, f, &l,
          "inserted `#pragma omp parallel for schedule(static)` before " + loop_words(&l) + " in " +
              f.name + " (" + where(path, v, l.at) + ")",
          apply_splices(v.text(),
                        {{v.line_start(line), v.line_start(line),
                          v.indent_of(line) + "#pragma omp parallel for schedule(static)\n"}}));
      if (b.flags_known && !has_flag(b, "-fopenmp")) {
        c.flags.push_back({true, "-fopenmp"});
        c.what += "; added -fopenmp";
      }
      out.push_back(std::move(c));
    }
  }
}

void add_simd(const mock_bundle& b, const std::string& path, const source_view& v,
              const std::vector<function_span>& fns, std::vector<change>& out) {
  if (b.cuda) return;
  for (const auto& f : fns) {
    if (abi_helper(v, f)) continue;
    for (const auto& l : loops(v, f)) {
      if (!l.innermost || !l.own_line || !l.statement_start || !canonical(l) || pragma_before(v, l))
        continue;
      // Sums become reductions; any other write to an outer scalar (a running max by `if`)
      // would race between lanes, so such a loop is left alone.
      std::vector<std::string> sums;
      bool ok = true;
      for (const auto& [name, ops] : outer_writes(v, l)) {
        if (ops.size() == 1 && *ops.begin() == "+=" && name != "<control>")
          sums.push_back(name);
        else
          ok = false;
      }
      if (!ok) continue;
      std::string pragma = "#pragma omp simd";
      if (!sums.empty()) {
        pragma += " reduction(+:";
        for (size_t i = 0; i < sums.size(); ++i) pragma += (i ? "," : "") + sums[i];
        pragma += ")";
      }
      const size_t line = v.line_of(l.at);
      change c = make("simd", "add", path, f, &l,
                      "inserted `" + pragma + "` before " + loop_words(&l) + " in " + f.name +
                          " (" + where(path, v, l.at) + ")",
                      apply_splices(v.text(), {{v.line_start(line), v.line_start(line),
                                                v.indent_of(line) + pragma + "\n"}}));
      if (b.flags_known && !has_flag(b, "-fopenmp") && !has_flag(b, "-fopenmp-simd")) {
        c.flags.push_back({true, "-fopenmp-simd"});
        c.what += "; added -fopenmp-simd";
      }
      out.push_back(std::move(c));
    }
  }
}

}  // namespace lathe::mock::detail
