#include "report/diff.h"

#include <algorithm>
#include <string_view>

#include "core/lines.h"

namespace lathe::report {

const char* to_string(line_op op) {
  switch (op) {
    case line_op::same: return " ";
    case line_op::removed: return "-";
    case line_op::added: return "+";
  }
  return "?";
}

namespace {

// The edit script of a[lo_a, hi_a) against b[lo_b, hi_b), appended to `ops`.
void align(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, size_t lo_a, size_t hi_a,
           size_t lo_b, size_t hi_b, int64_t max_cells, std::vector<line_op>& ops, bool& whole) {
  const size_t n = hi_a - lo_a, m = hi_b - lo_b;
  if (n == 0 || m == 0 || static_cast<int64_t>((n + 1) * (m + 1)) > max_cells) {
    whole = whole || (n > 0 && m > 0);
    ops.insert(ops.end(), n, line_op::removed);
    ops.insert(ops.end(), m, line_op::added);
    return;
  }
  // len[i][j]: LCS of a[lo_a+i..] and b[lo_b+j..] (suffixes), so the walk below goes forward.
  std::vector<uint32_t> len((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a[lo_a + i] == b[lo_b + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (a[lo_a + i] == b[lo_b + j]) {
      ops.push_back(line_op::same);
      ++i, ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ops.push_back(line_op::removed);
      ++i;
    } else {
      ops.push_back(line_op::added);
      ++j;
    }
  }
  ops.insert(ops.end(), n - i, line_op::removed);
  ops.insert(ops.end(), m - j, line_op::added);
}

}  // namespace

line_diff diff_lines(const std::string& before, const std::string& after, int32_t context, int64_t max_cells) {
  const auto a = split_lines(before), b = split_lines(after);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  line_diff out;
  std::vector<line_op> ops(pre, line_op::same);
  align(a, b, pre, a.size() - suf, pre, b.size() - suf, max_cells, ops, out.whole);
  ops.insert(ops.end(), suf, line_op::same);

  // Lines with their numbers, then hunks: every changed line with `context` lines around it.
  std::vector<diff_line> all;
  int32_t ia = 0, ib = 0;
  for (line_op op : ops) {
    diff_line l;
    l.op = op;
    if (op == line_op::added) {
      l.text = std::string(b[static_cast<size_t>(ib)]);
      l.new_no = ++ib;
      ++out.added;
    } else {
      l.text = std::string(a[static_cast<size_t>(ia)]);
      l.old_no = ++ia;
      if (op == line_op::same) l.new_no = ++ib;
      else ++out.removed;
    }
    all.push_back(std::move(l));
  }
  std::vector<bool> keep(all.size(), false);
  const auto ctx = static_cast<size_t>(std::max(context, 0));
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].op == line_op::same) continue;
    const size_t lo = k >= ctx ? k - ctx : 0, hi = std::min(all.size(), k + ctx + 1);
    for (size_t q = lo; q < hi; ++q) keep[q] = true;
  }
  for (size_t k = 0; k < all.size(); ++k) {
    if (!keep[k]) continue;
    if (k == 0 || !keep[k - 1]) out.hunks.emplace_back();
    out.hunks.back().lines.push_back(all[k]);
  }
  return out;
}

}  // namespace lathe::report
