// PTX text as functions of instructions, for the detectors of detect_ptx.cpp. PTX is read, not
// compiled: comments are dropped first (so `// mma.sync` in a comment is nothing), and each
// `.entry`/`.func` body is split into instructions (inline asm blocks included: nvcc pastes them
// between "begin inline asm" comments, and they run like any other instruction). Internal to
// features/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lathe::agent::rules::detail::ptx {

struct insn {
  std::string op;                     // "ld.global.nc.v4.u32"
  std::vector<std::string> operands;  // top-level comma split: "{%r1, %r2}", "[%rd4+16]"
  int32_t line = 0;                   // 1-based line of the PTX text
  std::string text;                   // the instruction as written, for evidence
};

struct function {
  std::string name;  // short name (short_function_name of the symbol)
  std::vector<insn> body;
  std::vector<std::pair<std::string, int32_t>> directives;  // ".maxntid 128, 1, 1", line
};

// The operands of an instruction split at top-level commas, each trimmed.
std::vector<std::string> split_operands(std::string_view s);

// The functions of `ptx` that have a body, in the order of the text (a prototype has none).
std::vector<function> parse_ptx(std::string_view ptx);

}  // namespace lathe::agent::rules::detail::ptx
