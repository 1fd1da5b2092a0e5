// The structure a rule needs (functions, parameters, loops, calls, CUDA launches) read from the
// tokens of token.h. Like the tokenizer it is not a compiler: it finds syntax (this loop header,
// this pointer parameter), never semantics. Whether a loop carries a dependence or a pointer is
// aligned or aliased is not its business: a rule that needs it records it as "assumed; checked
// by the gate". Anchors, which name the places read here, are in anchor.h.
//
// Loci (DESIGN.md, `feature.locus`): `function` or `function/loop-path`, the path being the
// loops' induction variables from outer to inner (`gemm_kernel/k`, `gemm_kernel/m/k`). A loop
// without a simple induction variable (`while`, `do`, `for (;;)`, a structured binding) is
// `loop<N>`, N its 1-based position among the loops at its level (`relu/loop2`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "source/token.h"

namespace lathe::agent::rules {

// Token indices, half-open: [first, last). Empty when first == last.
struct token_span {
  uint32_t first = 0, last = 0;
  bool empty() const { return first >= last; }
  bool contains(uint32_t i) const { return i >= first && i < last; }
};

// The source text from the first token's first byte to the last token's last byte.
std::string_view span_text(const token_list& tl, token_span s);

struct param {
  token_span tokens;      // the whole parameter, default argument included, no comma
  std::string type;       // the declaration without its name: "const float* __restrict__"
  std::string name;       // "" when unnamed
  bool pointer = false;   // `*` in the declarator, or an array parameter (`float x[]`)
  bool is_const = false;  // the pointee (or, for a non-pointer, the value) is const
  bool restrict = false;  // __restrict__, __restrict or restrict
};

struct function {
  std::string name;                     // as written: "gemm_kernel", "S::run", "operator()"
  std::string anchor;                   // "function:gemm_kernel" (with #N when the name repeats)
  std::vector<std::string> qualifiers;  // in order: "extern \"C\"" (also from an enclosing
                                        // extern "C" block), "static", "inline", "__global__",
                                        // "__launch_bounds__(THREADS, 2)" (with its arguments)…
  std::string result;                   // the return type as written ("void", "float*")
  token_span template_header;           // `template <…>`; empty if none
  uint32_t name_token = 0;
  token_span params_span;  // `(` … `)` inclusive
  std::vector<param> params;
  token_span body;                // `{` … `}` inclusive
  token_span whole;               // first qualifier (or template) … `}`
  branch where = branch::active;  // of the name
  bool is_kernel() const;         // __global__
};

enum class loop_kind : uint8_t { for_loop, while_loop, do_loop };

struct loop {
  loop_kind kind = loop_kind::for_loop;
  uint32_t keyword = 0;  // `for`, `while`, or `do`
  token_span header;     // `(` … `)` inclusive; for `do`, the trailing while's
  token_span body;       // `{` … `}`, or one statement through its `;`
  bool braced = false;
  bool range_for = false;         // for (x : xs)
  std::string induction;          // "k"; "" when there is no simple one
  int32_t parent = -1;            // enclosing loop (index in structure::loops), -1 none
  int32_t function = -1;          // index in structure::functions
  std::vector<uint32_t> pragmas;  // `#pragma` tokens directly before the loop, in order
  std::string locus;              // "gemm_kernel/m/k"
  std::string anchor;             // "loop:row_max/c#2": unique, unlike the locus
  token_span whole;               // keyword … end of body (do: … `;`)
  branch where = branch::active;  // of the keyword
};

struct call {
  std::string name;                   // callee as written without template arguments:
                                      // "__ldg", "std::max", "cp_async_wait"
  std::string anchor;                 // "call:__ldg@gemm_kernel#2"
  uint32_t name_token = 0;            // the last name token (`max` of std::max)
  token_span template_args;           // `<` … `>` when written (`f<4>(x)`); empty if none
  token_span parens;                  // `(` … `)` inclusive
  std::vector<token_span> arguments;  // each argument, commas excluded
  int32_t function = -1, loop = -1;   // enclosing function and innermost loop
  token_span whole;                   // first name token … `)`
  branch where = branch::active;
};

struct launch {
  std::string kernel;                   // "relu_kernel" (qualified if written so)
  std::string anchor;                   // "launch:relu_kernel"
  token_span kernel_span;               // the kernel expression, template arguments included
  token_span config;                    // `<<<` … `>>>` inclusive
  std::vector<token_span> config_args;  // grid, block[, shared bytes[, stream]]
  token_span parens;
  std::vector<token_span> arguments;
  int32_t function = -1, loop = -1;
  token_span whole;
  branch where = branch::active;
};

struct structure {
  std::vector<function> functions;  // in source order
  std::vector<loop> loops;          // in source order (outer before inner)
  std::vector<call> calls;          // in source order
  std::vector<launch> launches;
};

// Reads the structure of tokenized source. Never throws; what it cannot read it skips.
structure analyze(const token_list& tokens);

// The function / innermost loop containing token i (-1 if none).
int32_t function_at(const structure& st, uint32_t i);
int32_t loop_at(const structure& st, uint32_t i);

// The worst branch (active < conditional < inactive) over a span's tokens.
branch worst_branch(const token_list& tl, token_span s);

}  // namespace lathe::agent::rules
