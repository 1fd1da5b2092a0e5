// Feature detection by source patterns, one per registry name: what the mock's audit answers
// and what its card abstraction compares. Patterns look at code only (comments and string
// contents are blanked), so a cited line always holds code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernel_io.h"

namespace lathe::mock {

struct hit {
  std::string path;
  size_t line = 0;       // 1-based
  std::string function;  // the enclosing function ("" at file scope)
};

// Lines where `feature` shows in `b`, in path and line order (empty: absent). A name without
// a pattern never shows.
std::vector<hit> detect(const mock_bundle& b, std::string_view feature);

// The registry names present in `b`.
std::vector<std::string> present_features(const mock_bundle& b);

}  // namespace lathe::mock
