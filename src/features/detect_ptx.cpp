// Detectors on the PTX of a CUDA build (docs/rules.md "Detectors"). PTX is read, not compiled
// (ptx_parse.h splits it into functions of instructions, comments dropped and inline asm kept),
// and the detectors look at opcodes, operands and, for smem_tiling, warp_reduce and fast_math, at
// short def-use chains.
#include <cxxabi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "features/detect.h"
#include "features/detect_util.h"
#include "features/ptx_parse.h"

namespace lathe::agent::rules {
namespace {

using detail::trim;
using detail::ptx::function;
using detail::ptx::insn;
using detail::ptx::parse_ptx;
using detail::ptx::split_operands;

std::vector<std::string> registers_in(std::string_view operand) {
  static const std::regex reg(R"(%[A-Za-z_][A-Za-z0-9_]*)");
  std::vector<std::string> out;
  for (std::cregex_iterator it(operand.data(), operand.data() + operand.size(), reg), end;
       it != end; ++it)
    out.push_back(it->str());
  return out;
}

std::string op_base(std::string_view op) {
  return std::string(op.substr(0, op.find('.')));
}

bool has_part(std::string_view op, std::string_view part) {
  size_t start = 0;
  while (start <= op.size()) {
    const size_t end = std::min(op.find('.', start), op.size());
    if (op.substr(start, end - start) == part) return true;
    start = end + 1;
  }
  return false;
}

// State spaces may carry a scope: `.shared::cta`, `.shared::cluster`.
bool has_space(std::string_view op, std::string_view space) {
  size_t start = 0;
  while (start <= op.size()) {
    const size_t end = std::min(op.find('.', start), op.size());
    const std::string_view part = op.substr(start, end - start);
    if (part == space || (part.starts_with(space) && part.substr(space.size()).starts_with("::")))
      return true;
    start = end + 1;
  }
  return false;
}

// Instructions whose first operand is not a destination.
bool writes_first_operand(const insn& in) {
  static const std::set<std::string> none = {"st",    "cp",     "bar",      "barrier", "red",
                                             "bra",   "ret",    "exit",     "call",    "prefetch",
                                             "fence", "membar", "stmatrix", "trap"};
  return !none.count(op_base(in.op)) && !in.operands.empty();
}

// Def-use index of one function's registers (PTX from nvcc is nearly SSA; a register that is
// written twice, on two paths, has both definitions listed).
struct dataflow {
  std::map<std::string, std::vector<size_t>> defs, uses;
  explicit dataflow(const function& f) {
    for (size_t i = 0; i < f.body.size(); ++i) {
      const insn& in = f.body[i];
      for (size_t o = 0; o < in.operands.size(); ++o) {
        const bool dest = o == 0 && writes_first_operand(in);
        for (const auto& r : registers_in(in.operands[o])) (dest ? defs : uses)[r].push_back(i);
      }
    }
  }
};

// Data movement that keeps a loaded value a loaded value: conversions, moves, bit shuffles and
// selects. Arithmetic (add, fma, shfl) makes it a computed value.
bool moves_data(std::string_view op) {
  static const std::set<std::string> movers = {"mov",  "cvt", "shl", "shr",  "and", "or",
                                               "prmt", "bfe", "bfi", "selp", "cvt"};
  return movers.count(op_base(op)) > 0;
}

bool is_global_load(std::string_view op) {
  const std::string b = op_base(op);
  return (b == "ld" || b == "ldu") && has_space(op, "global");
}

// Whether `reg` holds a value loaded from global memory on every path that defines it: each
// definition is a global load, a constant (the zero of an edge tile) or a move / conversion of
// such values, within `depth` steps, and at least one is a load (`saw_load`). A running maximum
// seeded from a loaded element is also defined by max.f32 on the other path: not a staged load.
bool only_global(const function& f, const dataflow& df, const std::string& reg, int depth,
                 bool& saw_load) {
  if (reg.starts_with("%p")) return true;  // a select's predicate chooses, it supplies no value
  auto it = df.defs.find(reg);
  if (it == df.defs.end()) return false;  // %tid, a parameter: not a load
  for (size_t i : it->second) {
    const insn& d = f.body[i];
    if (is_global_load(d.op)) {
      saw_load = true;
      continue;
    }
    if (!moves_data(d.op) || depth == 0) return false;
    for (size_t o = 1; o < d.operands.size(); ++o)
      for (const auto& r : registers_in(d.operands[o]))
        if (!only_global(f, df, r, depth - 1, saw_load)) return false;
  }
  return true;
}

bool from_global(const function& f, const dataflow& df, const std::string& reg, int depth) {
  bool saw_load = false;
  return only_global(f, df, reg, depth, saw_load) && saw_load;
}

// Whether the value in `reg` reaches a reducing operation (add, max, min, fma) through moves.
bool feeds_reduction(const function& f, const dataflow& df, const std::string& reg, int depth) {
  auto it = df.uses.find(reg);
  if (it == df.uses.end()) return false;
  for (size_t i : it->second) {
    const insn& u = f.body[i];
    const std::string b = op_base(u.op);
    if (b == "add" || b == "max" || b == "min" || b == "fma") return true;
    if (depth > 0 && (b == "mov" || b == "cvt") && !u.operands.empty())
      for (const auto& r : registers_in(u.operands[0]))
        if (feeds_reduction(f, df, r, depth - 1)) return true;
  }
  return false;
}

// Whether `reg` is x * log2(e) (0f3FB8AA3B): __expf's whole range reduction. The accurate expf
// also ends in ex2.approx, but after an fma chain with a floor (fma.rm) that keeps its error
// within 2 ulp; that is not fast math.
bool scaled_by_log2e(const function& f, const dataflow& df, const std::string& reg, int depth) {
  auto it = df.defs.find(reg);
  if (it == df.defs.end()) return false;
  for (size_t i : it->second) {
    const insn& d = f.body[i];
    if (op_base(d.op) == "mul") {
      for (size_t o = 1; o < d.operands.size(); ++o) {
        if (d.operands[o] == "0f3FB8AA3B") return true;
        for (const auto& r : registers_in(d.operands[o])) {
          auto c = df.defs.find(r);
          if (c == df.defs.end()) continue;
          for (size_t j : c->second)
            if (op_base(f.body[j].op) == "mov" && f.body[j].operands.size() == 2 &&
                f.body[j].operands[1] == "0f3FB8AA3B")
              return true;
        }
      }
    }
    if (depth > 0 && op_base(d.op) == "mov" && d.operands.size() == 2)
      for (const auto& r : registers_in(d.operands[1]))
        if (scaled_by_log2e(f, df, r, depth - 1)) return true;
  }
  return false;
}

// Whether the shared address in `reg` is computed from a bit field of a value: a `shr` or `bfe`
// within `depth` steps of address arithmetic (the digit of a radix pass: `(key >> shift) & mask`,
// scaled to a counter's offset and added to the histogram's base).
bool digit_address(const function& f, const dataflow& df, const std::string& reg, int depth) {
  auto it = df.defs.find(reg);
  if (it == df.defs.end()) return false;
  for (size_t i : it->second) {
    const insn& d = f.body[i];
    const std::string b = op_base(d.op);
    if (b == "shr" || b == "bfe") return true;
    static const std::set<std::string> arithmetic = {"add", "shl", "and", "mul", "mad", "cvt",
                                                     "mov", "selp", "or", "cvta"};
    if (depth == 0 || !arithmetic.count(b)) continue;
    for (size_t o = 1; o < d.operands.size(); ++o)
      for (const auto& r : registers_in(d.operands[o]))
        if (digit_address(f, df, r, depth - 1)) return true;
  }
  return false;
}

std::string evidence(const insn& in) {
  return "ptx:" + std::to_string(in.line) + ": " + in.text;
}

int32_t element_bits(std::string_view op) {
  const std::string_view t = op.substr(op.rfind('.') + 1);
  if (t.size() < 2) return 0;
  int32_t bits = 0;
  for (char c : t.substr(1)) {
    if (c < '0' || c > '9') break;
    bits = bits * 10 + (c - '0');
  }
  if (t.find("x2") != std::string_view::npos) bits *= 2;  // f16x2, bf16x2
  return bits;
}

std::string mma_shape(std::string_view op) {
  static const std::regex shape(R"(m\d+n\d+k\d+)");
  std::cmatch m;
  return std::regex_search(op.data(), op.data() + op.size(), m, shape) ? m.str() : std::string();
}

int64_t immediate(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  bool any = false;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + (c - '0');
    any = true;
  }
  return any ? v : -1;
}

// launch_bounds: the PTX of __launch_bounds__(T, B) is `.maxntid T, 1, 1` / `.minnctapersm B`.
void detect_launch_bounds(const function& f, detail::detection_set& set) {
  std::map<std::string, std::string> bounds;
  std::string bounds_evidence;
  for (const auto& [text, line] : f.directives) {
    const bool threads = text.starts_with(".maxntid"), blocks = text.starts_with(".minnctapersm");
    if (!threads && !blocks) continue;
    if (bounds_evidence.empty()) bounds_evidence = "ptx:" + std::to_string(line) + ": " + text;
    if (threads) {
      int64_t n = 1;
      for (const auto& d : split_operands(std::string_view(text).substr(8)))
        n *= std::max<int64_t>(immediate(d), 1);
      bounds["threads"] = std::to_string(n);
    } else {
      bounds["min_blocks"] = std::to_string(immediate(std::string_view(text).substr(13)));
    }
  }
  if (!bounds.empty()) set.add("launch_bounds", f.name, bounds_evidence).what.params = bounds;
}

// One pass over a function's instructions, in order: each instruction's own detections as it
// comes (the set keeps them in order of first evidence), and what the detections of the whole
// function (cp_async_pipeline, smem_tiling) gather on the way.
struct function_scan {
  const function& f;
  const dataflow df;
  const std::string& fn;
  detail::detection_set& set;

  bool global_to_shared = false, shared_read = false, barrier = false;
  std::string tiling_evidence;
  int32_t commits = 0, commits_before_wait = -1, max_wait = -1;
  bool after_commit = false, overlap = false;  // work between a commit and the next wait
  const insn* first_cp_async = nullptr;
  const insn* first_wait = nullptr;

  function_scan(const function& f, detail::detection_set& set)
      : f(f), df(f), fn(f.name), set(set) {}

  void run() {
    for (const insn& in : f.body) {
      const std::string base = op_base(in.op);
      opcode_detections(in, base);
      cp_async_groups(in);
      note_overlap(in, base);
      global_vector_access(in, base);
      smem_tiling_parts(in, base);
      fast_math(in, base);
    }
    report_cp_async_pipeline();
    report_smem_tiling();
  }

  // Instructions that are a feature by their opcode: matrix units, TMA, warp reductions, register
  // reallocation, and the counting atomics of a radix pass.
  void opcode_detections(const insn& in, const std::string& base) {
    const std::string& op = in.op;
    if (op.starts_with("mma.sync") || op.starts_with("wmma.mma")) {
      auto& d = set.add("mma_sync", fn, evidence(in));
      if (auto s = mma_shape(op); !s.empty()) detail::add_param_item(d, "shape", s);
    } else if (op.starts_with("wgmma.mma_async")) {
      auto& d = set.add("wgmma", fn, evidence(in));
      if (auto s = mma_shape(op); !s.empty()) detail::add_param_item(d, "shape", s);
      shared_read = true;  // wgmma reads its B operand (and maybe A) from shared memory
    } else if (op.starts_with("cp.async.bulk.tensor")) {
      set.add("tma", fn, evidence(in));
      if (has_space(op, "shared") && has_space(op, "global") && in.operands.size() >= 2 &&
          in.operands[0].find('[') != std::string::npos) {
        global_to_shared = true;
        if (tiling_evidence.empty()) tiling_evidence = evidence(in);
      }
    } else if (op.starts_with("ldmatrix")) {
      set.add("ldmatrix", fn, evidence(in));
      shared_read = true;
    } else if (op.starts_with("shfl.sync.bfly") || op.starts_with("shfl.sync.down")) {
      if (!in.operands.empty()) {
        const auto regs = registers_in(in.operands[0]);
        if (!regs.empty() && feeds_reduction(f, df, regs[0], 3))
          set.add("warp_reduce", fn, evidence(in));
      }
    } else if (op.starts_with("redux.sync")) {
      set.add("warp_reduce", fn, evidence(in));
    } else if (op.starts_with("setmaxnreg")) {
      // Registers moved between warpgroups at run time: only warpgroups with different roles
      // (a producer that needs few, consumers that need many) have a reason to.
      set.add("warp_specialization", fn, evidence(in));
    } else if ((base == "atom" || base == "red") && has_space(op, "shared") &&
               has_part(op, "add")) {
      // radix_select: a count of one added to a shared counter picked by a digit of a value.
      const size_t addr = base == "atom" ? 1 : 0;
      if (in.operands.size() == addr + 2 && trim(in.operands[addr + 1]) == "1")
        for (const auto& r : registers_in(in.operands[addr]))
          if (digit_address(f, df, r, 5)) {
            set.add("radix_select", fn, evidence(in));
            break;
          }
    }
  }

  // cp.async copies (not the bulk tensor ones, counted above) and their groups.
  void cp_async_groups(const insn& in) {
    const std::string& op = in.op;
    if (op == "cp.async.commit_group" || op == "cp.async.bulk.commit_group") {
      ++commits;
      after_commit = true;
    } else if (op == "cp.async.wait_group" || op == "cp.async.bulk.wait_group" ||
               op == "cp.async.bulk.wait_group.read") {
      after_commit = false;
      if (commits_before_wait < 0) commits_before_wait = commits;
      if (!in.operands.empty()) max_wait = std::max<int32_t>(max_wait, immediate(in.operands[0]));
      if (!first_wait) first_wait = &in;
    } else if (op == "cp.async.wait_all") {
      after_commit = false;
      if (commits_before_wait < 0) commits_before_wait = commits;
      max_wait = std::max(max_wait, 0);
      if (!first_wait) first_wait = &in;
    } else if (op.starts_with("cp.async.") && !op.starts_with("cp.async.bulk.tensor") &&
               !op.starts_with("cp.async.mbarrier") && has_space(op, "shared") &&
               has_space(op, "global")) {
      if (!first_cp_async) first_cp_async = &in;
      global_to_shared = true;
      if (tiling_evidence.empty()) tiling_evidence = evidence(in);
      // A 16-byte cp.async moves 8 bf16 or 4 float at once: a 128-bit access of global memory.
      if (in.operands.size() >= 3) {
        const int64_t bytes = immediate(in.operands[2]);
        if (bytes >= 8)
          detail::keep_max_param(set.add("vector_access", fn, evidence(in)), "width", bytes * 8);
      }
    }
  }

  // Compute while copies are in flight: what makes cp.async a pipeline rather than an
  // asynchronous memcpy that is waited for at once.
  void note_overlap(const insn& in, const std::string& base) {
    const std::string& op = in.op;
    if (after_commit && (base == "fma" || base == "mma" || base == "wgmma" || base == "ldmatrix" ||
                         ((base == "add" || base == "mul") && has_part(op, "f32")) ||
                         (base == "ld" && has_space(op, "shared"))))
      overlap = true;
  }

  // Global vector loads and stores: `ld.global[.nc|.cs|.L2::…].v4.u32`.
  void global_vector_access(const insn& in, const std::string& base) {
    const std::string& op = in.op;
    if ((base == "ld" || base == "st" || base == "ldu") && has_space(op, "global")) {
      int32_t lanes = has_part(op, "v2") ? 2 : has_part(op, "v4") ? 4 : has_part(op, "v8") ? 8 : 1;
      if (lanes > 1)
        detail::keep_max_param(set.add("vector_access", fn, evidence(in)), "width",
                               int64_t(lanes) * element_bits(op));
      if (base == "ld" && has_part(op, "nc")) set.add("read_only_load", fn, evidence(in));
    }
  }

  // smem_tiling's three parts (report_smem_tiling says what they make).
  void smem_tiling_parts(const insn& in, const std::string& base) {
    const std::string& op = in.op;
    if ((base == "ld" && has_space(op, "shared"))) shared_read = true;
    if (base == "st" && has_space(op, "shared") && in.operands.size() >= 2) {
      for (size_t o = 1; o < in.operands.size() && !global_to_shared; ++o)
        for (const auto& r : registers_in(in.operands[o]))
          if (from_global(f, df, r, 4)) {
            global_to_shared = true;
            tiling_evidence = evidence(in);
            break;
          }
    }
    if (op.starts_with("bar.sync") || op.starts_with("barrier.sync") ||
        op.starts_with("barrier.cta.sync") || op.starts_with("bar.cta.sync") ||
        op.starts_with("mbarrier.try_wait") || op.starts_with("mbarrier.test_wait"))
      barrier = true;
  }

  // fast_math: approximate instructions that only fast intrinsics or --use_fast_math produce.
  void fast_math(const insn& in, const std::string& base) {
    const std::string& op = in.op;
    if (base == "div" && (has_part(op, "approx") || has_part(op, "full"))) {
      set.add("fast_math", fn, evidence(in));
    } else if ((base == "rsqrt" || base == "sin" || base == "cos" || base == "tanh") &&
               has_part(op, "approx") && has_part(op, "f32")) {
      set.add("fast_math", fn, evidence(in));
    } else if (base == "ex2" && has_part(op, "approx") && in.operands.size() >= 2) {
      for (const auto& r : registers_in(in.operands[1]))
        if (scaled_by_log2e(f, df, r, 2)) set.add("fast_math", fn, evidence(in));
    } else if ((base == "add" || base == "mul" || base == "sub" || base == "fma") &&
               has_part(op, "ftz") && has_part(op, "f32")) {
      // -ftz=true (part of --use_fast_math): ordinary f32 arithmetic flushes denormals.
      set.add("fast_math", fn, evidence(in));
    }
  }

  // cp_async_pipeline: copies, committed groups and a wait that leaves groups in flight
  // (wait_group N >= 1), or a wait_group 0 that is reached only after compute was issued behind a
  // commit (double buffering); `copy; commit; wait_group 0` is a copy waited for at once. Stages:
  // `wait_group N` lets N groups stay in flight beside the one waited for (N + 1 buffers at
  // least); the groups committed before the first wait (the prologue, unrolled by nvcc) fill all
  // but one buffer in the usual multistage loop (prologue + 1). The larger of the two is
  // reported; both are in the evidence.
  void report_cp_async_pipeline() {
    if (first_cp_async && commits > 0 && first_wait && max_wait >= 0 &&
        (max_wait >= 1 || overlap)) {
      const int32_t by_wait = max_wait + 1;
      const int32_t by_prologue = std::max(commits_before_wait, 0) + 1;
      const int32_t stages = std::max({by_wait, by_prologue, 2});
      {
        auto& d = set.add("cp_async_pipeline", fn, evidence(*first_cp_async));
        d.what.params["stages"] = std::to_string(stages);
        d.evidence += "; " + evidence(*first_wait) + "; wait_group " + std::to_string(max_wait) +
                      " -> at least " + std::to_string(by_wait) + " stages, " +
                      std::to_string(commits_before_wait) +
                      " groups committed before the first wait";
      }
    }
  }

  // smem_tiling: global data written to shared memory (a shared store of a value that is a global
  // load passed only through moves and conversions, or a cp.async / TMA copy), read back from
  // shared memory (ld.shared, ldmatrix, wgmma) and a block barrier between. Partial sums of a
  // block reduction are arithmetic results, so a reduction through shared memory is not a tile.
  void report_smem_tiling() {
    if (global_to_shared && shared_read && barrier) set.add("smem_tiling", fn, tiling_evidence);
  }
};

void detect_function(const function& f, detail::detection_set& set) {
  detect_launch_bounds(f, set);
  function_scan(f, set).run();
}

}  // namespace

std::string short_function_name(std::string_view symbol) {
  std::string s(symbol);
  if (s.starts_with("_Z")) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> d(
        abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status), std::free);
    if (status == 0 && d) s = d.get();
  }
  if (auto c = s.find(" [clone"); c != std::string::npos) s.erase(c);
  while (s.ends_with(" const")) s.erase(s.size() - 6);
  // The parameter list: the parenthesized group that ends the signature.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s.erase(i);
        break;
      }
    }
  }
  // Template arguments of the function itself.
  if (!s.empty() && s.back() == '>') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == '>') ++depth;
      if (s[i] == '<' && --depth == 0) {
        s.erase(i);
        break;
      }
    }
  }
  // Qualifiers and a return type: what follows the last `::` or space outside brackets.
  int depth = 0;
  size_t cut = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ' ') cut = i + 1;
    if (depth == 0 && c == ':' && i + 1 < s.size() && s[i + 1] == ':') cut = i + 2;
  }
  s = s.substr(cut);
  // GCC's outlined and cloned bodies belong to the function they came from.
  for (const char* suffix : {"._omp_fn.", ".constprop.", ".isra.", ".part.", ".cold", ".lto_priv."})
    if (auto p = s.find(suffix); p != std::string::npos && p > 0) s.erase(p);
  return s;
}

std::vector<detection> detect_ptx(std::string_view ptx) {
  detail::detection_set set(detection_method::ptx);
  for (const function& f : parse_ptx(ptx)) detect_function(f, set);
  return set.take();
}

}  // namespace lathe::agent::rules
