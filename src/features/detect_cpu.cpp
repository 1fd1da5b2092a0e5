// Detectors on the disassembly of a C++ kernel's .so (docs/rules.md "Detectors"): `objdump -d -C
// --no-show-raw-insn`, AT&T syntax, read function by function in .text. What counts is what the
// CPU executes: packed arithmetic (not moves, shuffles or the xor that zeroes a register, which
// scalar code uses too) for simd, calls into the OpenMP runtime for omp_parallel.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "features/detect.h"
#include "features/detect_util.h"
#include "gate/process.h"
#include "core/lines.h"

namespace lathe::agent::rules {
namespace {

using detail::trim;

struct cpu_insn {
  std::string address;   // "13d0"
  std::string mnemonic;  // "vfmadd231ps"
  std::string operands;  // "%ymm1,%ymm2,%ymm0"
};

// Startup and teardown code the linker adds to every .so: not the kernel's.
bool runtime_stub(std::string_view name) {
  static const std::set<std::string_view> stubs = {"_init",
                                                   "_fini",
                                                   "_start",
                                                   "deregister_tm_clones",
                                                   "register_tm_clones",
                                                   "__do_global_dtors_aux",
                                                   "frame_dummy"};
  return stubs.count(name) > 0 || name.find("@plt") != std::string_view::npos;
}

// Packed arithmetic: the operation runs on every lane of a vector register. Scalar forms (`ss`,
// `sd`) use the same registers but one lane; data movement, shuffles, logic and compares are left
// out because scalar code uses them too (vxorps zeroes a scalar accumulator, vmovups copies).
bool packed_arithmetic(std::string_view m) {
  if (m.size() > 1 && m.front() == 'v') m.remove_prefix(1);
  static const char* const fp[] = {"add",   "sub",   "mul",    "div",    "max",   "min",
                                   "sqrt",  "rsqrt", "rcp",    "hadd",   "hsub",  "dp",
                                   "fmadd", "fmsub", "fnmadd", "fnmsub", "round", "rndscale"};
  if (m.ends_with("ps") || m.ends_with("pd") || m.ends_with("ph")) {
    for (const char* p : fp)
      if (m.starts_with(p)) return true;
    return false;
  }
  static const char* const integer[] = {"padd",  "psub",  "pmul",    "pmadd",  "pmax",
                                        "pmin",  "pavg",  "pabs",    "psad",   "phadd",
                                        "phsub", "psign", "pdpbusd", "pdpwssd"};
  for (const char* p : integer)
    if (m.starts_with(p)) return true;
  return false;
}

bool fma_instruction(std::string_view m) {
  return m.starts_with("vfmadd") || m.starts_with("vfmsub") || m.starts_with("vfnmadd") ||
         m.starts_with("vfnmsub");
}

int32_t register_width(std::string_view operands) {
  if (operands.find("%zmm") != std::string_view::npos) return 512;
  if (operands.find("%ymm") != std::string_view::npos) return 256;
  if (operands.find("%xmm") != std::string_view::npos) return 128;
  return 0;
}

// The OpenMP runtime entry that starts a team: libgomp's GOMP_parallel* (GCC), libomp's
// __kmpc_fork_call (Clang, ICX).
bool starts_team(std::string_view target) {
  return target.starts_with("GOMP_parallel") || target.starts_with("GOMP_teams") ||
         target.starts_with("__kmpc_fork_call") || target.starts_with("__kmpc_fork_teams");
}

// The schedule a libgomp loop entry names: GOMP_loop_nonmonotonic_dynamic_start -> dynamic.
std::string schedule_of(std::string_view target) {
  size_t p = target.find("loop_");
  if (!target.starts_with("GOMP_") || p == std::string_view::npos) return {};
  std::string_view rest = target.substr(p + 5);
  for (std::string_view skip : {"maybe_nonmonotonic_", "nonmonotonic_", "ull_", "doacross_"})
    if (rest.starts_with(skip)) rest.remove_prefix(skip.size());
  for (std::string_view kind : {"static", "dynamic", "guided", "runtime", "auto"})
    if (rest.starts_with(kind)) return std::string(kind);
  return {};
}

// The callee of `call 1080 <GOMP_parallel@plt>`: "GOMP_parallel".
std::string call_target(const cpu_insn& in) {
  const size_t lt = in.operands.find('<'), gt = in.operands.rfind('>');
  if (lt == std::string::npos || gt == std::string::npos || gt < lt) return {};
  std::string t = in.operands.substr(lt + 1, gt - lt - 1);
  if (auto at = t.find('@'); at != std::string::npos) t.erase(at);
  if (auto plus = t.find('+'); plus != std::string::npos) t.erase(plus);
  return t;
}

std::string evidence(const cpu_insn& in) {
  return "disassembly 0x" + in.address + ": " + in.mnemonic + " " + in.operands;
}

struct locus_stats {
  std::map<int32_t, int32_t> packed_by_width;  // width -> count
  std::map<int32_t, cpu_insn> first_by_width;
  int32_t fma_packed = 0, fma_scalar = 0;
  std::string fma_example;
  std::vector<cpu_insn> team_calls;
  std::set<std::string> schedules;
  size_t order = 0;  // first appearance, for a stable output order
};

}  // namespace

std::vector<detection> detect_disassembly(std::string_view text) {
  std::map<std::string, locus_stats> by_locus;
  std::string section, locus;
  bool skip = true;
  for (std::string_view raw : lathe::split_lines(text, carriage_return::dropped)) {
    if (raw.starts_with("Disassembly of section ")) {
      section = std::string(trim(raw.substr(23)));
      if (!section.empty() && section.back() == ':') section.pop_back();
      skip = true;
      continue;
    }
    // A function header: "0000000000001160 <micro_6x16(long, float const*)>:".
    if (!raw.empty() && raw.front() != ' ' && raw.ends_with(">:")) {
      const size_t lt = raw.find('<');
      if (lt == std::string_view::npos) continue;
      const std::string_view symbol = raw.substr(lt + 1, raw.size() - lt - 3);
      skip = !(section == ".text" || section.starts_with(".text.")) || runtime_stub(symbol);
      locus = short_function_name(symbol);
      if (!skip && !by_locus.count(locus)) by_locus[locus].order = by_locus.size();
      continue;
    }
    if (skip) continue;
    // An instruction: "    13d0:\tvdivps %ymm1,%ymm4,%ymm0".
    const size_t colon = raw.find(':');
    const size_t tab = raw.find('\t');
    if (colon == std::string_view::npos || tab == std::string_view::npos || tab < colon) continue;
    cpu_insn in;
    in.address = std::string(trim(raw.substr(0, colon)));
    std::string_view body = trim(raw.substr(tab + 1));
    // Prefixes are not the operation: `notrack jmp`, `lock add`, `rep stos`, `bnd jmp`.
    for (;;) {
      const size_t sp = body.find_first_of(" \t");
      const std::string_view word = body.substr(0, sp);
      if (sp != std::string_view::npos &&
          (word == "notrack" || word == "lock" || word == "rep" || word == "repz" ||
           word == "repnz" || word == "bnd" || word == "data16" || word == "cs" || word == "ds"))
        body = trim(body.substr(sp));
      else
        break;
    }
    const size_t sp = body.find_first_of(" \t");
    in.mnemonic = std::string(body.substr(0, sp));
    if (sp != std::string_view::npos) in.operands = std::string(trim(body.substr(sp)));
    if (auto hash = in.operands.find(" #"); hash != std::string::npos)
      in.operands = std::string(trim(std::string_view(in.operands).substr(0, hash)));
    locus_stats& st = by_locus[locus];

    if (packed_arithmetic(in.mnemonic)) {
      const int32_t w = register_width(in.operands);
      if (w > 0) {
        if (!st.packed_by_width[w]++) st.first_by_width[w] = in;
        if (fma_instruction(in.mnemonic)) {
          ++st.fma_packed;
          if (st.fma_example.empty()) st.fma_example = in.mnemonic;
        }
      }
    } else if (fma_instruction(in.mnemonic)) {
      ++st.fma_scalar;
    }
    if (in.mnemonic == "call" || in.mnemonic == "jmp") {
      const std::string target = call_target(in);
      if (starts_team(target)) st.team_calls.push_back(in);
      if (auto s = schedule_of(target); !s.empty()) st.schedules.insert(s);
    }
  }

  std::vector<std::pair<std::string, const locus_stats*>> ordered;
  for (const auto& [name, st] : by_locus) ordered.emplace_back(name, &st);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second->order < b.second->order; });

  detail::detection_set set(detection_method::disassembly);
  for (const auto& [name, stp] : ordered) {
    const locus_stats& st = *stp;
    if (!st.packed_by_width.empty()) {
      const int32_t width = st.packed_by_width.rbegin()->first;
      std::string ev = evidence(st.first_by_width.at(width)) + " (packed arithmetic:";
      for (auto it = st.packed_by_width.rbegin(); it != st.packed_by_width.rend(); ++it)
        ev.append(" ")
            .append(std::to_string(it->second))
            .append(" at ")
            .append(std::to_string(it->first))
            .append(" bits");
      ev += ")";
      // FMA is noted, not a feature of its own: with an ISA that has it (x86-64-v3) GCC contracts
      // a * b + c into it by default, so it says which ISA was targeted, not what the kernel does.
      if (st.fma_packed > 0)
        ev += "; fma: " + std::to_string(st.fma_packed) + " packed (" + st.fma_example + ")";
      auto& d = set.add("simd", name, std::move(ev));
      d.what.params["width"] = std::to_string(width);
    }
    for (const cpu_insn& call : st.team_calls) {
      auto& d = set.add("omp_parallel", name, evidence(call));
      for (const auto& s : st.schedules) detail::add_param_item(d, "schedule", s);
    }
  }
  return set.take();
}

disassembly_result disassemble(const std::filesystem::path& object) {
  // objdump is found on PATH (binutils is a dependency); its absence is reported, never faked.
  std::string objdump;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::filesystem::path dir(std::string(rest.substr(0, colon)));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      std::error_code ec;
      const auto candidate = dir / "objdump";
      if (!dir.empty() && std::filesystem::is_regular_file(candidate, ec) &&
          access(candidate.c_str(), X_OK) == 0) {
        objdump = candidate.string();
        break;
      }
    }
  }
  if (objdump.empty()) return {false, "objdump missing"};
  // 60 s: a kernel .so disassembles in well under a second; the limit only guards a hang.
  gate::tool_result r =
      gate::run_tool({objdump, "-d", "-C", "--no-show-raw-insn", object.string()}, 60.0);
  if (r.timed_out) return {false, "objdump timed out on " + object.string()};
  if (r.exit_code != 0)
    return {false, "objdump failed on " + object.string() + ": " + std::string(trim(r.output))};
  return {true, std::move(r.output)};
}

}  // namespace lathe::agent::rules
