#include "reply.h"

#include <algorithm>

#include "diff_edits.h"
#include "source.h"

namespace lathe::mock {
namespace {

bool occurs_at_line_start(const std::string& file, const std::string& search) {
  return ("\n" + file).find("\n" + search) != std::string::npos;
}

// The same edit with its first SEARCH misquoted: re-indented until it occurs nowhere.
agent::edit_set misquote(const agent::edit_set& e, const mock_bundle& before,
                         const mock_bundle& after) {
  agent::edit_set bad = e;
  for (auto& fe : bad.files) {
    if (fe.kind != agent::file_edit_kind::blocks || fe.blocks.empty()) continue;
    const std::string& file = before.files.at(fe.path);
    std::string& search = fe.blocks.front().search;
    const std::string original = search;
    for (const char* prefix : {"  ", "\t", " "}) {
      search = prefix + original;
      if (!occurs_at_line_start(file, search)) return bad;
    }
    search = original;
  }
  // No SEARCH/REPLACE to misquote (a whole file, flags only): a block on the entry file whose
  // SEARCH is its first code line, re-indented.
  const mock_bundle& src = before.files.empty() ? after : before;
  std::string path = src.entry.empty() || !src.files.count(src.entry) ? "" : src.entry;
  if (path.empty() && !src.files.empty()) path = src.files.begin()->first;
  if (path.empty()) path = "kernel.cpp";
  std::string line = "int lathe_launch(const lathe_args* args) {";
  if (src.files.count(path))
    for (const auto& l : split_lines(src.files.at(path)))
      if (!trim(l).empty()) {
        line = l;
        break;
      }
  agent::file_edit fe;
  fe.path = path;
  fe.kind = agent::file_edit_kind::blocks;
  fe.blocks.push_back({"   " + line + "\n", line + "\n", 0});
  agent::edit_set out;
  out.files.push_back(std::move(fe));
  return out;
}

std::string misnomer(const std::string& name) {
  static const std::pair<const char*, const char*> table[] = {
      {"loop_unroll", "unrolling"}, {"restrict", "restrict_pointers"},
      {"omp_parallel", "openmp"},   {"simd", "vectorization"},
      {"read_only_load", "ldg"},    {"launch_bounds", "launch_bound"},
      {"fast_math", "fastmath"},    {"vector_access", "vectorized_loads"},
  };
  for (const auto& [n, wrong] : table)
    if (name == n) return wrong;
  return name + "_opt";
}

// Breaks the object's schema one way, chosen by the stream among those that apply.
std::string break_schema(nlohmann::ordered_json& body, stream& s) {
  std::vector<std::string> kinds = {"missing_key", "wrong_type"};
  const char* name_keys[] = {"removes", "adds", "provides", "requires", "conflicts"};
  std::string name_key;
  for (const char* k : name_keys)
    if (name_key.empty() && body.contains(k) && body[k].is_array() && !body[k].empty())
      name_key = k;
  const bool verdicts = body.contains("verdicts") && !body["verdicts"].empty();
  if (!name_key.empty() || verdicts) kinds.push_back("unregistered_name");
  const std::string kind = kinds[s.below(kinds.size())];
  std::vector<std::string> keys;
  for (const auto& [k, v] : body.items()) keys.push_back(k);
  const std::string key = keys[s.below(keys.size())];
  if (kind == "missing_key") {
    body.erase(key);
    return "missing_key (" + key + ")";
  }
  if (kind == "wrong_type") {
    auto& v = body[key];
    if (v.is_string())
      v = static_cast<int64_t>(v.get<std::string>().size());
    else
      v = v.dump();  // an array or object as a string
    return "wrong_type (" + key + ")";
  }
  if (!name_key.empty()) {
    auto& first = body[name_key][0];
    first = misnomer(first.get<std::string>());
    return "unregistered_name (" + name_key + ": " + first.get<std::string>() + ")";
  }
  auto& v = body["verdicts"][0];
  v["name"] = misnomer(v["name"].get<std::string>());
  v["status"] = "probably";
  return "unregistered_name (verdicts[0]: " + v["name"].get<std::string>() + ", status probably)";
}

agent::edit_set whole_edits(const mock_bundle& before, const mock_bundle& after) {
  agent::edit_set e = edits_between(before, after);
  for (auto& fe : e.files)
    if (fe.kind == agent::file_edit_kind::blocks) {
      fe.kind = agent::file_edit_kind::whole;
      fe.blocks.clear();
      fe.contents = after.files.at(fe.path);
      if (!fe.contents.empty() && fe.contents.back() != '\n') fe.contents.push_back('\n');
    }
  return e;
}

}  // namespace

int write_reply(const context& c, answer a, std::ostream& out, std::ostream& err) {
  std::string trailer;  // edit blocks after the JSON (files mode: flags; a misquoted block)
  if (a.has_edits) {
    const agent::edit_set e =
        a.whole ? whole_edits(a.before, a.after) : edits_between(a.before, a.after);
    std::string edits;
    if (!e.empty() && c.f.bad_edit) {
      const std::string bad = agent::render_edits(misquote(e, a.before, a.after));
      // Files mode: an agent that printed a block instead of editing the file.
      if (c.opt.mode == edit_mode::blocks)
        edits = bad;
      else
        trailer = bad;
      a.notes.push_back("bad edit: the first SEARCH does not occur in the file");
    } else if (!e.empty() && c.opt.mode == edit_mode::blocks) {
      edits = agent::render_edits(e);
    } else if (!e.empty()) {
      if (auto w = write_changed_files(a.before, a.after, c.dir); !w) {
        err << "lathe-mock-model: " << w.error() << "\n";
        return exit_write_failed;
      }
      // The manifest is not a file an agent may edit: flags travel as a FLAGS block.
      agent::edit_set flags;
      flags.flags = e.flags;
      if (!flags.empty()) trailer = agent::render_edits(flags);
    }
    a.body["edits"] = edits;
  }
  if (c.f.invalid) {
    auto s = c.choose.for_purpose("invalid_kind");
    a.notes.push_back("invalid reply: " + break_schema(a.body, s));
  }
  out << "```json\n"
      << a.body.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n```\n";
  if (!trailer.empty()) out << "\n" << trailer;
  for (const auto& n : a.notes) err << "lathe-mock-model: " << n << "\n";
  return exit_ok;
}

}  // namespace lathe::mock
