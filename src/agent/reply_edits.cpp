// Applying a reply's edits: JSON first, then the blocks outside it (agent/reply_edits.h).
#include "agent/reply_edits.h"
#include "core/lines.h"

#include <algorithm>

namespace lathe::agent {
namespace {

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

std::string plain_path(std::string p) {
  while (p.rfind("./", 0) == 0) p.erase(0, 2);
  return p;
}

// The outside blocks that still change something after the JSON's edits.
edit_set without_repeats(edit_set outside, const kernel_bundle& now) {
  std::erase_if(outside.files, [&](const file_edit& fe) {
    auto it = now.sources.find(plain_path(fe.path));
    if (fe.kind == file_edit_kind::whole)
      return it != now.sources.end() && it->second == fe.contents;
    if (fe.kind == file_edit_kind::remove) return it == now.sources.end();
    return false;
  });
  std::erase_if(outside.flags, [&](const flag_edit& f) {
    const auto& flags = now.manifest.flags;
    const bool present = std::find(flags.begin(), flags.end(), f.flag) != flags.end();
    return f.add == present;
  });
  if (outside.isa && *outside.isa == now.manifest.isa) outside.isa.reset();
  return outside;
}

}  // namespace

bool has_edit_blocks(std::string_view text) {
  for (std::string_view raw : split_lines(text)) {
    const std::string_view line = rtrim(raw);
    if (line == "@@@" || line.starts_with("@@@ ") || line == marker_search) return true;
  }
  return false;
}

edit_result<applied_edits> apply_reply_edits(const kernel_bundle& base, std::string_view json_edits,
                                             std::string_view reply_text) {
  applied_edits out{base, {}};
  bool any = false;
  if (!blank(json_edits)) {
    auto set = parse_edits(json_edits);
    if (!set) {
      set.error().message = "in the JSON's \"edits\" value: " + set.error().message;
      return tl::unexpected(set.error());
    }
    auto k = apply(out.kernel, *set);
    if (!k) {
      k.error().message = "in the JSON's \"edits\" value: " + k.error().message;
      return tl::unexpected(k.error());
    }
    out.kernel = std::move(*k);
    out.edits = render_edits(*set);
    any = true;
  }
  if (has_edit_blocks(reply_text)) {
    auto set = parse_edits(reply_text);
    if (!set) {
      set.error().message = "in the edit blocks after the JSON: " + set.error().message;
      return tl::unexpected(set.error());
    }
    edit_set rest = any ? without_repeats(std::move(*set), out.kernel) : std::move(*set);
    if (!rest.empty()) {
      auto k = apply(out.kernel, rest);
      if (!k) {
        k.error().message = "in the edit blocks after the JSON: " + k.error().message;
        return tl::unexpected(k.error());
      }
      out.kernel = std::move(*k);
      out.edits += render_edits(rest);
    }
    any = true;
  }
  if (!any) {
    auto none = parse_edits("");  // the format's own "no edit" message, which says how to write one
    return tl::unexpected(none ? edit_error{"", 0, "the reply contains no edit"} : none.error());
  }
  return out;
}

}  // namespace lathe::agent
