// How a candidate kernel is written and called (DESIGN.md "candidate language"): a closed set,
// stored as its text. Every language goes through the same gate; what differs is what the search
// asks a proposer to write and what it starts from.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/kernel.h"

namespace lathe {

enum class candidate_language : uint8_t {
  c_abi,     // a C++/CUDA bundle exporting lathe_launch (include/lathe/abi.h)
  python,    // a Python file with launch(inputs, outputs, scalars) on torch tensors
  modelnew,  // a KernelBench ModelNew for a problem file (docs/python-kernels.md)
};

std::string_view to_string(candidate_language l);
std::optional<candidate_language> parse_candidate_language(std::string_view name);

// The language a bundle is written in: C++ and CUDA bundles speak the C ABI; a Python entry that
// defines `class ModelNew` at its top level is a ModelNew, any other a Python kernel.
candidate_language language_of(const kernel_bundle& k);

}  // namespace lathe
