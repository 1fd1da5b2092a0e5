#include "diff_edits.h"

#include <algorithm>

namespace lathe::mock {
namespace {

using lines = std::vector<std::string>;

// Lines with their '\n' (the last one may lack it), so that joining gives the text back.
lines split_keep(const std::string& text) {
  lines out;
  size_t b = 0;
  while (b < text.size()) {
    auto e = text.find('\n', b);
    e = e == std::string::npos ? text.size() : e + 1;
    out.push_back(text.substr(b, e - b));
    b = e;
  }
  return out;
}

std::string join(const lines& l, size_t b, size_t e) {
  std::string out;
  for (size_t i = b; i < e; ++i) out += l[i];
  return out;
}

struct hunk {
  size_t old_begin, old_end;  // replaced lines of the old text
  lines with;                 // what they become
};

// Longest common subsequence of lines between the common prefix and suffix: the files are
// kernels (hundreds of lines) and the changes few, so the quadratic table stays small.
std::vector<hunk> diff(const lines& a, const lines& b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<uint32_t> t((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return t[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  std::vector<hunk> out;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[pre + i] == b[pre + j]) {
      ++i;
      ++j;
      continue;
    }
    hunk h{pre + i, pre + i, {}};
    while ((i < n || j < m) && !(i < n && j < m && a[pre + i] == b[pre + j])) {
      if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j)))
        h.with.push_back(b[pre + j++]);
      else
        ++i;
    }
    h.old_end = pre + i;
    out.push_back(std::move(h));
  }
  return out;
}

size_t occurrences(const lines& text, const lines& needle) {
  if (needle.empty() || needle.size() > text.size()) return 0;
  size_t count = 0;
  for (size_t s = 0; s + needle.size() <= text.size(); ++s)
    if (std::equal(needle.begin(), needle.end(), text.begin() + static_cast<std::ptrdiff_t>(s)))
      ++count;
  return count;
}

// The last line may lack its '\n'; apply() matches it as if it had one.
std::string with_newline(std::string s) {
  if (!s.empty() && s.back() != '\n') s.push_back('\n');
  return s;
}

agent::file_edit blocks_for(const std::string& path, const std::string& before,
                            const std::string& after) {
  agent::file_edit fe;
  fe.path = path;
  fe.kind = agent::file_edit_kind::blocks;
  lines cur = split_keep(before);
  const lines target = split_keep(after);
  // A file without a final newline compares as if it had one (apply()'s rule); the edit then
  // keeps it lacking one.
  lines a = cur, b = target;
  if (!a.empty()) a.back() = with_newline(a.back());
  if (!b.empty()) b.back() = with_newline(b.back());
  cur = a;
  long delta = 0;  // lines added minus removed by the blocks so far
  for (const hunk& h : diff(a, b)) {
    const size_t begin = static_cast<size_t>(static_cast<long>(h.old_begin) + delta);
    const size_t len = h.old_end - h.old_begin;
    size_t before_ctx = 0, after_ctx = 0;
    // Grow the context (after first, then before) until SEARCH is non-empty and unique.
    for (int turn = 0;; ++turn) {
      lines search(cur.begin() + static_cast<std::ptrdiff_t>(begin - before_ctx),
                   cur.begin() + static_cast<std::ptrdiff_t>(begin + len + after_ctx));
      if (!search.empty() && occurrences(cur, search) == 1) break;
      const bool can_after = begin + len + after_ctx < cur.size();
      const bool can_before = before_ctx < begin;
      if (!can_after && !can_before) break;
      if ((turn % 2 == 0 && can_after) || !can_before)
        ++after_ctx;
      else
        ++before_ctx;
    }
    const size_t from = begin - before_ctx, to = begin + len + after_ctx;
    agent::search_replace sr;
    sr.search = join(cur, from, to);
    lines replaced(cur.begin() + static_cast<std::ptrdiff_t>(from),
                   cur.begin() + static_cast<std::ptrdiff_t>(begin));
    replaced.insert(replaced.end(), h.with.begin(), h.with.end());
    replaced.insert(replaced.end(), cur.begin() + static_cast<std::ptrdiff_t>(begin + len),
                    cur.begin() + static_cast<std::ptrdiff_t>(to));
    sr.replace = join(replaced, 0, replaced.size());
    fe.blocks.push_back(sr);
    cur.erase(cur.begin() + static_cast<std::ptrdiff_t>(from),
              cur.begin() + static_cast<std::ptrdiff_t>(to));
    cur.insert(cur.begin() + static_cast<std::ptrdiff_t>(from), replaced.begin(), replaced.end());
    delta += static_cast<long>(h.with.size()) - static_cast<long>(len);
  }
  return fe;
}

}  // namespace

agent::edit_set edits_between(const mock_bundle& before, const mock_bundle& after) {
  agent::edit_set e;
  for (const auto& [path, text] : after.files) {
    const auto it = before.files.find(path);
    if (it == before.files.end()) {
      agent::file_edit fe;
      fe.path = path;
      fe.kind = agent::file_edit_kind::whole;
      fe.contents = with_newline(text);
      e.files.push_back(std::move(fe));
    } else if (it->second != text) {
      e.files.push_back(blocks_for(path, it->second, text));
    }
  }
  for (const auto& [path, text] : before.files)
    if (!after.files.count(path)) {
      agent::file_edit fe;
      fe.path = path;
      fe.kind = agent::file_edit_kind::remove;
      e.files.push_back(std::move(fe));
    }
  for (const auto& f : before.flags)
    if (std::find(after.flags.begin(), after.flags.end(), f) == after.flags.end())
      e.flags.push_back({false, f});
  for (const auto& f : after.flags)
    if (std::find(before.flags.begin(), before.flags.end(), f) == before.flags.end())
      e.flags.push_back({true, f});
  return e;
}

}  // namespace lathe::mock
