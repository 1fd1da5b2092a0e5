// A small line diff (longest common subsequence), for the report's source diffs between
// consecutive kernels. Kernels are a few hundred lines; the table is bounded (below) so that a
// pathological pair costs milliseconds and reads as "replaced", never stalls a report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lathe::report {

enum class line_op : uint8_t { same, removed, added };
const char* to_string(line_op op);  // " ", "-", "+"

struct diff_line {
  line_op op = line_op::same;
  std::string text;
  int32_t old_no = 0, new_no = 0;  // 1-based line numbers; 0 where the side has no line
};

// One hunk: changed lines with up to `context` unchanged lines around them.
struct diff_hunk {
  std::vector<diff_line> lines;
};

struct line_diff {
  std::vector<diff_hunk> hunks;
  int32_t added = 0, removed = 0;
  bool whole = false;  // the middle was too large to align: shown as all removed, all added
};

// Lines of `before` and `after` compared; a missing file is the empty text. Common prefix and
// suffix are matched first; the rest is aligned by LCS when its table has at most
// `max_cells` entries (default 4M: 2,000 x 2,000 changed lines), else replaced whole.
line_diff diff_lines(const std::string& before, const std::string& after, int32_t context = 3,
                     int64_t max_cells = 4'000'000);

}  // namespace lathe::report
