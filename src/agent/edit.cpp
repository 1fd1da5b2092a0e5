// Exact application of edits to a kernel bundle (apply in edit.h; the reply format is read in
// edit_parse.cpp). Every failure message is written for the model that produced the edit: it names
// the file and the block, says why, and shows what the file really holds, because the model only
// sees this text.
#include "agent/edit.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <unordered_map>

#include "agent/edit_lines.h"
#include "spec/bundle.h"

namespace lathe::agent {
namespace {

using detail::at_line;
using detail::clip;
using detail::err;
using detail::trim;
using std::string;
using std::string_view;

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

}  // namespace lathe::agent
