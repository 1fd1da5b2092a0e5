// What the catalog's handlers share (catalog.cpp, catalog_loops.cpp, catalog_qualifiers.cpp):
// text splices, pragma lines, loop shapes and the `change` constructor. Internal to the catalog.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catalog.h"
#include "source.h"

namespace lathe::mock::detail {

// Replace [begin, end) with `with`; splices of one change never overlap.
struct splice {
  size_t begin, end;
  std::string with;
};
std::string apply_splices(std::string text, std::vector<splice> s);

std::string where(const std::string& path, const source_view& v, size_t offset);  // "k.cu:12"
bool has_flag(const mock_bundle& b, std::string_view f);

struct pragma_line {
  size_t line;
  std::string body;  // after "#pragma", trimmed
};
std::vector<pragma_line> pragmas(const source_view& v);
// The whole line (and its '\n'), with any backslash-continued lines after it.
splice delete_line(const source_view& v, size_t l);

const function_span* enclosing(const std::vector<function_span>& fns, size_t offset);
// The first loop starting after `offset`.
const loop_span* next_loop(const std::vector<loop_span>& ls, size_t offset);
std::string locus_of(const function_span& f, const loop_span* l);
// A pragma already sits on the line before the loop.
bool pragma_before(const source_view& v, const loop_span& l);
// `i < n`, `i <= n`, step `++i`, `i++` or `i += k`, i declared in the header: a loop OpenMP
// accepts as is.
bool canonical(const loop_span& l);
// Scalars declared outside the loop that its body assigns, with the operators used. A body that
// returns, breaks or jumps is reported under the key "<control>".
std::map<std::string, std::set<std::string>> outer_writes(const source_view& v, const loop_span& l);

change make(const char* feature, const char* verb, const std::string& path, const function_span& f,
            const loop_span* l, std::string what, std::string text);
std::string loop_words(const loop_span* l);  // "the loop over u"

using handler = void (*)(const mock_bundle&, const std::string&, const source_view&,
                         const std::vector<function_span>&, std::vector<change>&);

// catalog_loops.cpp
void remove_unroll(const mock_bundle&, const std::string&, const source_view&,
                   const std::vector<function_span>&, std::vector<change>&);
void add_unroll(const mock_bundle&, const std::string&, const source_view&,
                const std::vector<function_span>&, std::vector<change>&);
void remove_parallel(const mock_bundle&, const std::string&, const source_view&,
                     const std::vector<function_span>&, std::vector<change>&);
void add_parallel(const mock_bundle&, const std::string&, const source_view&,
                  const std::vector<function_span>&, std::vector<change>&);
void remove_simd(const mock_bundle&, const std::string&, const source_view&,
                 const std::vector<function_span>&, std::vector<change>&);
void add_simd(const mock_bundle&, const std::string&, const source_view&,
              const std::vector<function_span>&, std::vector<change>&);
// catalog_qualifiers.cpp
void remove_restrict(const mock_bundle&, const std::string&, const source_view&,
                     const std::vector<function_span>&, std::vector<change>&);
void add_restrict(const mock_bundle&, const std::string&, const source_view&,
                  const std::vector<function_span>&, std::vector<change>&);
void remove_ldg(const mock_bundle&, const std::string&, const source_view&,
                const std::vector<function_span>&, std::vector<change>&);
void add_ldg(const mock_bundle&, const std::string&, const source_view&,
             const std::vector<function_span>&, std::vector<change>&);
void remove_bounds(const mock_bundle&, const std::string&, const source_view&,
                   const std::vector<function_span>&, std::vector<change>&);
void add_bounds(const mock_bundle&, const std::string&, const source_view&,
                const std::vector<function_span>&, std::vector<change>&);
void remove_fast(const mock_bundle&, const std::string&, const source_view&,
                 const std::vector<function_span>&, std::vector<change>&);
void add_fast(const mock_bundle&, const std::string&, const source_view&,
              const std::vector<function_span>&, std::vector<change>&);

}  // namespace lathe::mock::detail
