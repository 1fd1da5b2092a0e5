// Anchors: short strings that name a place in a kernel and resolve to a token range of the
// structure read by structure.h (which this header includes, with token.h, so that one include
// gives a rule the whole front end). Loci and the loop paths in anchors are described there.
//
// Anchor grammar (docs/rules.md, "Front end"):
//
//   anchor   := "function:" FUNC
//             | "loop:"     FUNC "/" PATH
//             | "param:"    FUNC "/" NAME
//             | "call:"     NAME "@" SCOPE [ "#" N ]     N-th call of NAME in SCOPE (1-based)
//             | "launch:"   NAME [ "@" SCOPE ] [ "#" N ] N-th launch of kernel NAME
//             | "pragma:"   WORDS "@" FUNC "/" PATH      a `#pragma` directly before that loop
//   FUNC     := NAME [ "#" N ]          N-th definition of NAME in the file (overloads, #if twins)
//   PATH     := SEG ( "/" SEG )*
//   SEG      := IDENT [ "#" N ]         the loop with that induction variable (N-th of its level)
//             | "loop" N                the N-th loop of its level
//   SCOPE    := FUNC [ "/" PATH ]
//   WORDS    := the pragma's first words, "_" for a blank: `unroll`, `omp_parallel`
//
// In `call:` and `launch:` the last `#N` always counts calls/launches: `call:f@g#1#2` is the
// 2nd call of f in the first g. A NAME in `call:` without `::` also matches qualified callees
// (`max` matches `std::max`). Resolution fails, with the candidates listed, when an anchor names
// nothing or more than one thing; it reports (does not refuse) a target that lies in a
// conditional or inactive `#if` branch: the caller decides.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "source/structure.h"
#include "source/token.h"
#include "core/error.h"

namespace lathe::agent::rules {

enum class anchor_kind : uint8_t { function, loop, param, call, launch, pragma };

struct anchor_target {
  anchor_kind kind = anchor_kind::function;
  token_span span;                // function: `whole`; loop: `whole`; param: its tokens; call,
                                  // launch: `whole`; pragma: the directive token
  int32_t index = -1;             // into functions / loops / calls / launches; param: its position
  int32_t function = -1;          // the function it lies in
  std::string locus;              // "gemm_kernel" or "gemm_kernel/k"
  branch where = branch::active;  // of its head (name, keyword, pragma): is it compiled?
  branch contains = branch::active;  // worst over the span: does it contain #if branches?
};

// Resolves an anchor. Errors: invalid_argument (bad syntax; ambiguous, with the candidates'
// anchors listed), not_found (with what exists there).
result<anchor_target> resolve(const token_list& tl, const structure& st, std::string_view anchor);

const char* to_string(branch b);
const char* to_string(anchor_kind k);

}  // namespace lathe::agent::rules
