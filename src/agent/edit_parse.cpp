// Reading and writing the edit format of docs/edits.md (parse_edits, render_edits in edit.h).
// Every failure message is written for the model that produced the reply: it names the reply line
// and says what was expected there, because the model only sees this text.
#include "agent/edit.h"
#include "agent/edit_lines.h"

namespace lathe::agent {
namespace {

using detail::at_line;
using detail::clip;
using detail::err;
using detail::is_fence;
using detail::is_marker;
using detail::rtrim;
using detail::trim;
using std::string;
using std::string_view;

// ---- parsing -------------------------------------------------------------------------------

class parser {
 public:
  explicit parser(string_view reply) : lines_(split_lines(reply)) {}

  edit_result<edit_set> run() {
    edit_set out;
    while (i_ < lines_.size()) {
      const string_view line = rtrim(lines_[i_]);
      const int32_t no = static_cast<int32_t>(i_ + 1);
      if (is_marker(line, marker_search))
        return tl::unexpected(
            err("", 0,
                at_line(no) + ": a SEARCH/REPLACE block outside a FILE block; put '@@@ FILE path' "
                              "on the line before it (a FILE block ends at '@@@ END' or at the "
                              "first line of prose)"));
      if (line != "@@@" && !line.starts_with("@@@ ")) {
        ++i_;  // prose
        continue;
      }
      // "@@@ WORD argument"
      const string_view rest = trim(line.substr(3));
      const string word(rest.substr(0, rest.find(' ')));
      const string arg(rest.size() > word.size() ? trim(rest.substr(word.size())) : "");
      const bool takes_path =
          word == "FILE" || word == "WHOLE" || word == "DELETE" || word == "INVALID";
      if (takes_path && arg.empty())
        return tl::unexpected(err("", 0, at_line(no) + ": '@@@ " + word + "' needs a file path"));
      if (word == "FILE") {
        auto fe = file_block(arg, no);
        if (!fe) return tl::unexpected(fe.error());
        out.files.push_back(std::move(*fe));
      } else if (word == "WHOLE" || word == "INVALID") {
        auto body = until_end(arg, no, word);
        if (!body) return tl::unexpected(body.error());
        if (word == "WHOLE")
          out.files.push_back({arg, file_edit_kind::whole, {}, strip_fences(*body), no});
        else
          out.files.push_back({arg, file_edit_kind::invalid, {}, *body, no});
      } else if (word == "DELETE") {
        out.files.push_back({arg, file_edit_kind::remove, {}, {}, no});
        ++i_;
      } else if (word == "ISA") {
        if (arg.empty())
          return tl::unexpected(
              err("", 0, at_line(no) + ": '@@@ ISA' needs a level ('@@@ ISA x86-64-v2')"));
        if (out.isa)
          return tl::unexpected(err("", 0,
                                    at_line(no) + ": a second '@@@ ISA' line (the first says " +
                                        clip(*out.isa) + "); a kernel has one target ISA"));
        out.isa = arg;
        ++i_;
      } else if (word == "FLAGS" && arg.empty()) {
        auto fl = flags_block(no);
        if (!fl) return tl::unexpected(fl.error());
        out.flags.insert(out.flags.end(), fl->begin(), fl->end());
      } else if (word == "END") {
        return tl::unexpected(
            err("", 0,
                at_line(no) + ": '@@@ END' without a block to end (WHOLE, FLAGS and FILE blocks "
                              "end with it)"));
      } else {
        return tl::unexpected(
            err("", 0,
                at_line(no) + ": unknown marker '" + clip(line) +
                    "' (markers: @@@ FILE path, @@@ WHOLE path, @@@ DELETE path, @@@ FLAGS, "
                    "@@@ ISA level, @@@ END)"));
      }
    }
    if (out.empty())
      return tl::unexpected(
          err("", 0,
              "the reply contains no edit: write each change as a '@@@ FILE path' block of "
              "SEARCH/REPLACE blocks, a '@@@ WHOLE path' block, a '@@@ DELETE path' line, a "
              "'@@@ FLAGS' block or an '@@@ ISA level' line (docs/edits.md)"));
    return out;
  }

 private:
  edit_result<file_edit> file_block(const string& path, int32_t no) {
    file_edit fe{path, file_edit_kind::blocks, {}, {}, no};
    ++i_;
    while (i_ < lines_.size()) {
      const string_view line = lines_[i_];
      if (is_marker(line, marker_end)) {
        ++i_;
        break;
      }
      if (trim(line).empty() || is_fence(line)) {
        ++i_;
        continue;
      }
      if (!is_marker(line, marker_search)) break;  // a marker or prose ends the block
      const int32_t block_no = static_cast<int32_t>(fe.blocks.size() + 1);
      const int32_t start = static_cast<int32_t>(i_ + 1);
      const string where =
          path + ", block " + std::to_string(block_no) + " (" + at_line(start) + ")";
      search_replace sr;
      sr.reply_line = start;
      ++i_;
      auto search = section(marker_divider, where, "'=======' after its SEARCH text");
      if (!search) return tl::unexpected(search.error());
      sr.search = std::move(*search);
      auto replace = section(marker_replace, where, "'>>>>>>> REPLACE' after its REPLACE text");
      if (!replace) return tl::unexpected(replace.error());
      sr.replace = std::move(*replace);
      fe.blocks.push_back(std::move(sr));
    }
    if (fe.blocks.empty())
      return tl::unexpected(err(path, 0,
                                path + " (" + at_line(no) +
                                    "): a FILE block with no SEARCH/REPLACE block; write "
                                    "'<<<<<<< SEARCH', the exact lines, '=======', their "
                                    "replacement, '>>>>>>> REPLACE'"));
    return fe;
  }

  // Lines up to the `end` marker (consumed). Any other block marker first is an error: the
  // block is malformed, and guessing where it ends would be fuzzing.
  edit_result<string> section(string_view end, const string& where, const string& expected) {
    string text;
    while (i_ < lines_.size()) {
      const string_view line = lines_[i_];
      if (is_marker(line, end)) {
        ++i_;
        return text;
      }
      if (is_marker(line, marker_search) || is_marker(line, marker_divider) ||
          is_marker(line, marker_replace) || rtrim(line).starts_with("@@@ ")) {
        return tl::unexpected(err("", 0,
                                  where + ": expected " + expected + ", found '" +
                                      clip(rtrim(line)) + "' on " +
                                      at_line(static_cast<int32_t>(i_ + 1))));
      }
      text.append(line).push_back('\n');
      ++i_;
    }
    return tl::unexpected(err("", 0, where + ": the reply ends before " + expected));
  }

  edit_result<string> until_end(const string& path, int32_t no, string_view what) {
    ++i_;
    string text;
    while (i_ < lines_.size()) {
      if (is_marker(lines_[i_], marker_end)) {
        ++i_;
        return text;
      }
      text.append(lines_[i_]).push_back('\n');
      ++i_;
    }
    return tl::unexpected(err(
        path, 0,
        path + " (" + at_line(no) + "): '@@@ " + string(what) + "' without its '@@@ END' line"));
  }

  edit_result<std::vector<flag_edit>> flags_block(int32_t no) {
    std::vector<flag_edit> out;
    ++i_;
    while (i_ < lines_.size()) {
      const string_view line = trim(lines_[i_]);
      const int32_t at = static_cast<int32_t>(i_ + 1);
      ++i_;
      if (line == marker_end) return out;
      if (line.empty() || line.starts_with("```")) continue;
      // The sign, a blank, the flag: "-O2" alone would be ambiguous (remove "O2"? add "-O2"?).
      const string_view flag = line.size() > 2 ? trim(line.substr(2)) : string_view{};
      if ((line[0] != '+' && line[0] != '-') || (line[1] != ' ' && line[1] != '\t') || flag.empty())
        return tl::unexpected(
            err("", 0,
                at_line(at) + ": a FLAGS line is '+ FLAG' (add) or '- FLAG' (remove), found '" +
                    clip(line) + "'"));
      out.push_back({line[0] == '+', string(flag)});
    }
    return tl::unexpected(err("", 0, at_line(no) + ": '@@@ FLAGS' without its '@@@ END' line"));
  }

  // A WHOLE block wrapped in a code fence (```cpp … ```) holds what is inside the fence: no C++
  // or CUDA source starts with ```, so this reading is exact, not a guess.
  static string strip_fences(const string& body) {
    const auto lines = split_lines(body);
    if (lines.size() >= 2 && is_fence(lines.front()) && trim(lines.back()) == "```") {
      string out;
      for (size_t k = 1; k + 1 < lines.size(); ++k) out.append(lines[k]).push_back('\n');
      return out;
    }
    return body;
  }

  std::vector<string_view> lines_;
  size_t i_ = 0;
};

}  // namespace

edit_result<edit_set> parse_edits(std::string_view reply) {
  return parser(reply).run();
}

std::string render_edits(const edit_set& edits) {
  string out;
  const auto body = [&](const string& text) {
    out += text;
    if (!text.empty() && text.back() != '\n') out.push_back('\n');
  };
  for (const file_edit& fe : edits.files) {
    switch (fe.kind) {
      case file_edit_kind::blocks:
        out.append(marker_file).append(fe.path).push_back('\n');
        for (const auto& sr : fe.blocks) {
          out.append(marker_search).push_back('\n');
          body(sr.search);
          out.append(marker_divider).push_back('\n');
          body(sr.replace);
          out.append(marker_replace).push_back('\n');
        }
        break;
      case file_edit_kind::whole:
        out.append(marker_whole).append(fe.path).push_back('\n');
        body(fe.contents);
        break;
      case file_edit_kind::remove:
        out.append(marker_delete).append(fe.path).push_back('\n');
        continue;  // one line, no END
      case file_edit_kind::invalid:
        out.append(marker_invalid).append(fe.path).push_back('\n');
        body(fe.contents);
        break;
    }
    out.append(marker_end).push_back('\n');
  }
  if (!edits.flags.empty()) {
    out.append(marker_flags).push_back('\n');
    for (const auto& f : edits.flags)
      out.append(f.add ? "+ " : "- ").append(f.flag).push_back('\n');
    out.append(marker_end).push_back('\n');
  }
  if (edits.isa) out.append(marker_isa).append(*edits.isa).push_back('\n');  // one line, no END
  return out;
}

}  // namespace lathe::agent
