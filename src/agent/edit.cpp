// Edits: the reply format of docs/edits.md, and exact application to a kernel bundle. Every
// failure message is written for the model that produced the edit: it names the file and the
// block, says why, and shows what the file really holds, because the model only sees this text.
#include "agent/edit.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <unordered_map>

#include "spec/bundle.h"

namespace lathe::agent {
namespace {

using std::string;
using std::string_view;

// ---- lines ---------------------------------------------------------------------------------

std::vector<string_view> split_lines(string_view text) {
  std::vector<string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == string_view::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

string_view rtrim(string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

string_view trim(string_view s) {
  s = rtrim(s);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool is_fence(string_view line) {
  return trim(line).starts_with("```");
}

// A marker line: the marker alone, trailing blanks (and a CR) tolerated.
bool is_marker(string_view line, string_view marker) {
  return rtrim(line) == marker;
}

string clip(string_view s, size_t n = 160) {
  return s.size() <= n ? string(s) : string(s.substr(0, n)) + "…";
}

edit_error err(string path, int32_t block, string message) {
  return edit_error{std::move(path), block, std::move(message)};
}

string at_line(int32_t line) {
  return "reply line " + std::to_string(line);
}

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

// ---- paths ---------------------------------------------------------------------------------

// The bundle-relative form of `path`, or an error for the model. Lexical only: an in-memory
// bundle has no links (load_bundle refused links leading out; llm/command refuses new ones).
edit_result<string> bundle_path(const string& path, const kernel_bundle& b) {
  namespace fs = std::filesystem;
  const auto bad = [&](const string& why) {
    return tl::unexpected(err(path, 0, "'" + clip(path) + "': " + why));
  };
  if (path.find('\\') != string::npos || path.find('\0') != string::npos)
    return bad("not a plain relative path ('/' separates directories)");
  const fs::path p(path);
  if (p.is_absolute() || p.has_root_name()) return bad("absolute paths are outside the bundle");
  const fs::path norm = p.lexically_normal();
  for (const auto& part : norm)
    if (part == "..") return bad("'..' leads outside the bundle");
  const string rel = norm.generic_string();
  if (rel.empty() || rel == "." || rel.back() == '/') return bad("names a directory, not a file");
  if (rel == "kernel.toml")
    return bad(
        "kernel.toml is the manifest, not a source; change compiler flags with a FLAGS "
        "block ('@@@ FLAGS', then '+ -flag' or '- -flag' lines, then '@@@ END') and the target "
        "ISA with a line '@@@ ISA level' ('@@@ ISA x86-64-v2')");
  if (b.sources.count(rel)) return rel;
  // A new file: the rules load_bundle and the build can live with.
  for (const auto& part : norm)
    if (part.string().starts_with("."))
      return bad("hidden names (starting with '.') are not bundle files");
  for (char c : rel) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == '+' || c == '/';
    if (!ok) return bad("a new file's name may hold letters, digits and _ - . + / only");
  }
  return rel;
}

bool allowed_new_file(const string& rel) {
  const string ext = std::filesystem::path(rel).extension().string();
  return std::find(std::begin(new_file_extensions), std::end(new_file_extensions), ext) !=
         std::end(new_file_extensions);
}

string files_of(const kernel_bundle& b) {
  string out;
  for (const auto& [rel, text] : b.sources) out += (out.empty() ? "" : ", ") + rel;
  return out;
}

// ---- SEARCH/REPLACE ------------------------------------------------------------------------

// Similarity of two lines in [0, 1]: shared prefix and suffix over the longer length. Cheap and
// good enough to point at "the line you meant"; it never decides whether an edit applies.
double similarity(string_view a, string_view b) {
  a = trim(a);
  b = trim(b);
  const size_t n = std::max(a.size(), b.size());
  if (n == 0) return 1.0;
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  return static_cast<double>(pre + suf) / static_cast<double>(n);
}

// Where in `file` the SEARCH lines most likely were meant to be: the window start that most
// SEARCH lines agree on (matching after trimming), else the line most like SEARCH's first
// non-blank line. nullopt when nothing resembles it.
std::optional<int64_t> nearest_start(const std::vector<string_view>& file,
                                     const std::vector<string_view>& search) {
  std::unordered_map<string_view, std::vector<int64_t>> where;
  for (size_t k = 0; k < file.size(); ++k)
    if (!trim(file[k]).empty()) where[trim(file[k])].push_back(static_cast<int64_t>(k));
  std::unordered_map<int64_t, int64_t> votes;
  for (size_t j = 0; j < search.size(); ++j) {
    const auto it = where.find(trim(search[j]));
    if (it == where.end() || it->second.size() > 64) continue;  // "}" votes everywhere
    for (int64_t k : it->second) ++votes[k - static_cast<int64_t>(j)];
  }
  std::optional<int64_t> best;
  int64_t best_votes = 0;
  for (const auto& [start, v] : votes)
    if (v > best_votes || (v == best_votes && best && start < *best)) {
      best = start;
      best_votes = v;
    }
  if (best) return best;
  for (size_t j = 0; j < search.size(); ++j) {
    if (trim(search[j]).empty()) continue;
    double best_sim = 0.5;  // below this, pointing at a line would mislead more than help
    for (size_t k = 0; k < file.size(); ++k) {
      const double s = similarity(search[j], file[k]);
      if (s > best_sim) {
        best_sim = s;
        best = static_cast<int64_t>(k) - static_cast<int64_t>(j);
      }
    }
    return best;
  }
  return std::nullopt;
}

string numbered(const std::vector<string_view>& file, int64_t from, int64_t to) {
  string out;
  for (int64_t k = from; k < to; ++k)
    out += std::to_string(k + 1) + " | " + clip(file[static_cast<size_t>(k)], 200) + "\n";
  return out;
}

string not_found_message(string_view text, const search_replace& sr, const string& path) {
  const auto file = split_lines(text);
  const auto search = split_lines(sr.search);
  const auto start = nearest_start(file, search);
  if (!start)
    return "the SEARCH text does not occur in " + path + ", and no line of " + path +
           " resembles its first line. Copy the lines to replace exactly from the current " + path +
           " (" + std::to_string(file.size()) + " lines).";
  const int64_t n = static_cast<int64_t>(file.size());
  const int64_t m = static_cast<int64_t>(search.size());
  const int64_t from = std::clamp<int64_t>(*start - 2, 0, n);
  const int64_t to = std::clamp<int64_t>(*start + m + 2, from, std::min(n, from + 40));
  string msg = "the SEARCH text does not occur in " + path + ". The closest lines of " + path +
               " are " + std::to_string(from + 1) + "-" + std::to_string(to) + ":\n" +
               numbered(file, from, to);
  for (int64_t j = 0; j < m; ++j) {
    const int64_t k = *start + j;
    const string_view s = search[static_cast<size_t>(j)];
    if (k < 0) continue;
    if (k >= n) {
      msg +=
          "The file ends before SEARCH line " + std::to_string(j + 1) + " ('" + clip(s) + "').\n";
      break;
    }
    const string_view f = file[static_cast<size_t>(k)];
    if (s == f) continue;
    msg += "First difference: SEARCH line " + std::to_string(j + 1) + " is '" + clip(s) +
           "', line " + std::to_string(k + 1) + " of " + path + " is '" + clip(f) + "'";
    msg += trim(s) == trim(f) ? " (they differ only in whitespace, which must match exactly).\n"
                              : ".\n";
    break;
  }
  return msg + "Copy the lines to replace exactly as they are in the file, indentation included.";
}

// Applies one block to `text`. SEARCH must occur exactly once, starting at a line start (it holds
// whole lines). A file without a final newline matches as if it had one, and keeps lacking it.
edit_result<string> apply_block(const string& text, const search_replace& sr, const string& path,
                                int32_t index, int32_t count) {
  const string where = path + ", SEARCH/REPLACE block " + std::to_string(index) + " of " +
                       std::to_string(count) + " (" + at_line(sr.reply_line) + "): ";
  const string after = index > 1 ? " (blocks apply in order: this one sees the file as the "
                                   "blocks before it left it)"
                                 : "";
  if (sr.search.empty() || trim(sr.search).empty())
    return tl::unexpected(
        err(path, index,
            where +
                "the SEARCH text is empty; SEARCH must hold the exact lines to replace (to "
                "write a whole file, use '@@@ WHOLE " +
                path + "')"));
  string work = text;
  const bool added_newline = !work.empty() && work.back() != '\n';
  if (added_newline) work.push_back('\n');
  std::vector<size_t> hits;
  for (size_t pos = work.find(sr.search); pos != string::npos; pos = work.find(sr.search, pos + 1))
    if (pos == 0 || work[pos - 1] == '\n') hits.push_back(pos);
  if (hits.empty())
    return tl::unexpected(err(path, index, where + not_found_message(work, sr, path) + after));
  if (hits.size() > 1) {
    string lines;
    for (size_t k = 0; k < hits.size() && k < 8; ++k)
      lines += (k ? ", " : "") +
               std::to_string(std::count(work.begin(), work.begin() + hits[k], '\n') + 1);
    if (hits.size() > 8) lines += ", …";
    return tl::unexpected(err(path, index,
                              where + "the SEARCH text occurs " + std::to_string(hits.size()) +
                                  " times in " + path + " (starting at lines " + lines +
                                  "); add neighbouring lines to SEARCH so that it "
                                  "occurs exactly once" +
                                  after));
  }
  work.replace(hits[0], sr.search.size(), sr.replace);
  if (added_newline && !work.empty() && work.back() == '\n') work.pop_back();
  return work;
}

// ---- flags ---------------------------------------------------------------------------------

edit_result<void> apply_flag(std::vector<string>& flags, const flag_edit& f) {
  const auto bad = [&](const string& why) {
    return tl::unexpected(err("kernel.toml", 0, "flag '" + clip(f.flag) + "': " + why));
  };
  // Syntax only: which flags are allowed is the gate's screen's decision (per task).
  if (f.flag.empty() || f.flag.size() > 200 || f.flag[0] != '-' ||
      std::any_of(f.flag.begin(), f.flag.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' '; }))
    return bad("a flag is one compiler option starting with '-', without spaces");
  const auto it = std::find(flags.begin(), flags.end(), f.flag);
  string current;
  for (const auto& x : flags) current += (current.empty() ? "" : " ") + x;
  if (current.empty()) current = "(none)";
  if (f.add) {
    if (it != flags.end()) return bad("already present (current flags: " + current + ")");
    flags.push_back(f.flag);
  } else {
    if (it == flags.end())
      return bad("not present, cannot remove (current flags: " + current + ")");
    flags.erase(it);
  }
  return {};
}

// Syntax only, like apply_flag: which level the kernel may have is the gate's decision
// (unsupported_target above the host). The characters keep the level one token of the compile
// command (-march=LEVEL, -gencode=arch=compute_N,code=sm_N): nothing else can ride along.
edit_result<void> apply_isa(kernel_manifest& m, const string& level) {
  const string current = m.isa.empty() ? "none: the host's level" : m.isa;
  const auto bad = [&](const string& why) {
    return tl::unexpected(err("kernel.toml", 0, "ISA '" + clip(level) + "': " + why));
  };
  const bool ok =
      !level.empty() && level.size() <= 64 && std::all_of(level.begin(), level.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
      });
  if (!ok)
    return bad(
        "a level is letters, digits and _ - . only, like x86-64-v3 or sm_90a (current isa: " +
        current + ")");
  if (level == m.isa) return bad("the manifest's isa is already " + level + ": not a change");
  m.isa = level;
  return {};
}

}  // namespace

edit_result<edit_set> parse_edits(std::string_view reply) {
  return parser(reply).run();
}

edit_result<kernel_bundle> apply(const kernel_bundle& bundle, const edit_set& edits) {
  if (edits.empty()) return tl::unexpected(err("", 0, "no edit to apply"));
  kernel_bundle out = bundle;
  for (const file_edit& fe : edits.files) {
    auto rel = bundle_path(fe.path, out);
    if (!rel) return tl::unexpected(rel.error());
    const string& p = *rel;
    const bool exists = out.sources.count(p) > 0;
    switch (fe.kind) {
      case file_edit_kind::invalid:
        return tl::unexpected(err(p, 0, p + ": " + fe.contents));
      case file_edit_kind::remove:
        if (!exists)
          return tl::unexpected(err(p, 0,
                                    "cannot delete " + p + ": no such file in the bundle (files: " +
                                        files_of(out) + ")"));
        if (p == out.manifest.entry)
          return tl::unexpected(
              err(p, 0, "cannot delete " + p + ": it is the bundle's entry file"));
        out.sources.erase(p);
        break;
      case file_edit_kind::whole:
        if (!exists && !allowed_new_file(p)) {
          string exts;
          for (auto e : new_file_extensions) exts += (exts.empty() ? "" : " ") + string(e);
          return tl::unexpected(err(p, 0,
                                    "cannot create " + p +
                                        ": a new bundle file must be a source or header (" + exts +
                                        ")"));
        }
        if (fe.contents.size() > max_file_bytes)
          return tl::unexpected(err(p, 0,
                                    p + ": " + std::to_string(fe.contents.size()) +
                                        " bytes; a bundle file holds at most 16 MiB"));
        out.sources[p] = fe.contents;
        break;
      case file_edit_kind::blocks: {
        if (!exists)
          return tl::unexpected(err(p, 0,
                                    "cannot edit " + p +
                                        ": no such file in the bundle (files: " + files_of(out) +
                                        "); to create a file, use '@@@ WHOLE " + p + "'"));
        string text = out.sources.at(p);
        const int32_t count = static_cast<int32_t>(fe.blocks.size());
        for (int32_t k = 0; k < count; ++k) {
          auto next = apply_block(text, fe.blocks[static_cast<size_t>(k)], p, k + 1, count);
          if (!next) return tl::unexpected(next.error());
          text = std::move(*next);
        }
        if (text.size() > max_file_bytes)
          return tl::unexpected(err(p, 0,
                                    p + ": the edited file has " + std::to_string(text.size()) +
                                        " bytes; a bundle file holds at most 16 MiB"));
        out.sources[p] = std::move(text);
        break;
      }
    }
  }
  for (const flag_edit& f : edits.flags) {
    auto ok = apply_flag(out.manifest.flags, f);
    if (!ok) return tl::unexpected(ok.error());
  }
  if (edits.isa)
    if (auto ok = apply_isa(out.manifest, *edits.isa); !ok) return tl::unexpected(ok.error());
  uint64_t total = 0;
  for (const auto& [rel, text] : out.sources) total += text.size();
  if (total > max_bundle_bytes)
    return tl::unexpected(err("", 0,
                              "the edited bundle has " + std::to_string(total) +
                                  " bytes; a bundle holds at most 64 MiB"));
  out.manifest.files.clear();
  for (const auto& [rel, text] : out.sources) out.manifest.files.push_back(rel);
  out.bare = bundle.bare && out.sources.size() == 1 &&
             out.manifest.flags == bundle.manifest.flags && out.manifest.isa == bundle.manifest.isa;
  out.origin.clear();
  out.hash = bundle_hash(out);
  if (out.hash == bundle.hash)
    return tl::unexpected(
        err("", 0, "the edits leave the kernel unchanged (every file and flag is as it was)"));
  return out;
}

edit_result<kernel_bundle> apply_reply(const kernel_bundle& bundle, std::string_view reply) {
  auto edits = parse_edits(reply);
  if (!edits) return tl::unexpected(edits.error());
  return apply(bundle, *edits);
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
