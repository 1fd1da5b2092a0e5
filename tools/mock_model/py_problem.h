// Just enough of a KernelBench problem file (Python) for the mock's ModelNew answers
// (docs/proposer.md, "The mock model"): the problem's own code with any ModelNew taken out, the
// Model's constructor as written, its attributes, and the statements of its forward. A textual
// reading of top-level blocks by indentation, not a Python parser: it reads the problems lathe
// ships and the files the mock writes itself, and says why where it cannot.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

namespace lathe::mock {

// Where the mock's own ModelNew section starts in a file it wrote: a repair or a later mutation
// finds the problem above it.
inline constexpr std::string_view modelnew_marker = "# lathe-mock-model: fused ModelNew";

enum class attribute_kind : uint8_t {
  linear,  // self.fc = nn.Linear(...)
  module,  // any other nn./torch. value (a layer, a parameter, a tensor)
  value,   // anything else: a number or a constructor argument (a scalar for the extension)
};

struct py_problem {
  std::string code;       // the file without its ModelNew (and without the mock's section)
  std::string after;      // top-level code that followed a removed ModelNew, kept as it was
  std::string init_text;  // Model.__init__ as written (def and body, class-body indentation),
                          // "" when the Model has none
  std::map<std::string, attribute_kind> attributes;  // self.<name> = ... in __init__
  std::string input;                      // forward's tensor parameter ("x")
  std::vector<std::string> forward_body;  // forward's statements, one logical line each
                                          // (continuations joined, comments and docstring dropped)
};

tl::expected<py_problem, std::string> read_problem(std::string_view file);

}  // namespace lathe::mock
