// Prompt templates: parsing `<id>.v<N>.md`, strict rendering, the fields hash (docs/prompts.md).
#include "agent/prompt.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "core/hash.h"

namespace lathe::agent {
namespace {

namespace fs = std::filesystem;
using std::string;
using std::string_view;

constexpr string_view section_system = "=== system ===";
constexpr string_view section_user = "=== user ===";

string_view rtrim(string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool is_field_name(string_view s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Splits one section's text into literal and field pieces. `first_line` numbers messages.
result<std::vector<template_piece>> pieces_of(const string& text, const string& origin,
                                              int32_t first_line) {
  std::vector<template_piece> out;
  string literal;
  int32_t line = first_line;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 3, "\\{{") == 0) {  // an escaped, literal "{{"
      literal += "{{";
      i += 3;
      continue;
    }
    if (text.compare(i, 2, "{{") == 0) {
      const size_t close = text.find("}}", i + 2);
      const size_t nl = text.find('\n', i);
      string_view name;
      if (close != string::npos && (nl == string::npos || close < nl)) {
        name = string_view(text).substr(i + 2, close - i - 2);
        while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
        while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      }
      if (!is_field_name(name))
        return fail(errc::parse_error,
                    origin + ":" + std::to_string(line) +
                        ": '{{' must open a field '{{name}}' (lower-case letters, digits, _) on "
                        "one line; write '\\{{' for a literal '{{'");
      if (!literal.empty()) out.push_back({false, std::move(literal)});
      literal.clear();
      out.push_back({true, string(name)});
      i = close + 2;
      continue;
    }
    if (text[i] == '\n') ++line;
    literal += text[i++];
  }
  if (!literal.empty()) out.push_back({false, std::move(literal)});
  return out;
}

// Section text: its lines, without trailing blank lines, without a final newline.
string finish_section(std::vector<string>& lines) {
  while (!lines.empty() && rtrim(lines.back()).empty()) lines.pop_back();
  string out;
  for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
  return out;
}

}  // namespace

result<prompt_template> parse_template(string id, int32_t version, string_view text,
                                       string origin) {
  if (origin.empty()) origin = id + ".v" + std::to_string(version) + ".md";
  prompt_template t;
  t.id = std::move(id);
  t.version = version;
  t.origin = origin;
  if (version < 1) return fail(errc::parse_error, origin + ": template versions start at 1");

  // Walk the lines: comment lines go, section markers switch sections.
  enum class where { none, system, user } at = where::none;
  std::vector<string> sys, usr, top;
  int32_t sys_line = 0, usr_line = 0, top_line = 0;
  bool seen_system = false, seen_user = false;
  std::istringstream in{string(text)};
  string raw;
  int32_t no = 0;
  while (std::getline(in, raw)) {
    ++no;
    const string_view line = rtrim(raw);
    if (line.starts_with("{{!")) {
      if (!line.ends_with("}}"))
        return fail(errc::parse_error, origin + ":" + std::to_string(no) +
                                           ": a comment line is '{{! text }}' on one line");
      continue;
    }
    if (line == section_system || line == section_user) {
      const bool system = line == section_system;
      bool& seen = system ? seen_system : seen_user;
      if (seen)
        return fail(errc::parse_error, origin + ":" + std::to_string(no) + ": a second '" +
                                           string(line) + "' section");
      if (at == where::none && !finish_section(top).empty())
        return fail(errc::parse_error,
                    origin + ":" + std::to_string(top_line) +
                        ": text before the first section marker ('=== system ===' or "
                        "'=== user ===')");
      seen = true;
      at = system ? where::system : where::user;
      (system ? sys_line : usr_line) = no + 1;
      continue;
    }
    auto& dest = at == where::system ? sys : at == where::user ? usr : top;
    if (at == where::none && top.empty()) top_line = no;
    dest.push_back(raw.ends_with('\r') ? raw.substr(0, raw.size() - 1) : raw);
  }
  if (!seen_system && !seen_user) {  // no markers: the whole text is the user message
    usr = std::move(top);
    usr_line = top_line;
  }
  auto s = pieces_of(finish_section(sys), origin, sys_line);
  if (!s) return tl::unexpected(s.error());
  auto u = pieces_of(finish_section(usr), origin, usr_line);
  if (!u) return tl::unexpected(u.error());
  if (u->empty()) return fail(errc::parse_error, origin + ": the user message is empty");
  t.system = std::move(*s);
  t.user = std::move(*u);
  std::set<string> names;
  for (const auto* part : {&t.system, &t.user})
    for (const auto& p : *part)
      if (p.field) names.insert(p.text);
  t.fields.assign(names.begin(), names.end());
  return t;
}

result<prompt_template> load_template(const fs::path& file) {
  static const std::regex name(R"(([a-z0-9_]+)\.v([1-9][0-9]{0,5})\.md)");
  std::smatch m;
  const string base = file.filename().string();
  if (!std::regex_match(base, m, name))
    return fail(errc::invalid_argument,
                file.string() +
                    ": a template file is named '<id>.v<N>.md' (id: a-z 0-9 _; "
                    "N: 1, 2, …)");
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(errc::io_error, file.string() + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_template(m[1].str(), std::stoi(m[2].str()), ss.str(), file.string());
}

result<prompt_library> prompt_library::load(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(errc::not_found, dir.string() + ": no such template directory");
  prompt_library lib;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".md" || p.filename() == "README.md") continue;
    auto t = load_template(p);
    if (!t) return tl::unexpected(t.error());
    lib.templates_.push_back(std::move(*t));
  }
  if (ec) return fail(errc::io_error, dir.string() + ": " + ec.message());
  std::sort(lib.templates_.begin(), lib.templates_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.id, a.version) < std::tie(b.id, b.version);
  });
  return lib;
}

result<const prompt_template*> prompt_library::find(string_view id, int32_t version) const {
  const prompt_template* best = nullptr;
  string versions;
  for (const auto& t : templates_) {
    if (t.id != id) continue;
    versions += (versions.empty() ? "" : ", ") + std::to_string(t.version);
    if (version == 0 ? (!best || t.version > best->version) : t.version == version) best = &t;
  }
  if (best) return best;
  if (versions.empty()) return fail(errc::not_found, "no prompt template '" + string(id) + "'");
  return fail(errc::not_found, "prompt template '" + string(id) + "' has no version " +
                                   std::to_string(version) + " (versions: " + versions + ")");
}

bool is_context_field(std::string_view name) {
  static constexpr std::string_view context[] = {"target", "contract", "progress", "rejected",
                                                 "cards", "paths", "inspirations", "step",
                                                 "outcome", "diagnostics"};
  return std::find(std::begin(context), std::end(context), name) != std::end(context);
}

namespace {

std::string key_fields_hash(const prompt_fields& fields) {
  prompt_fields kept;
  for (const auto& [name, value] : fields)
    if (!is_context_field(name)) kept.emplace(name, value);
  return fields_hash(kept);
}

}  // namespace

std::string fields_hash(const prompt_fields& fields) {
  hasher h;
  h.add("lathe.fields/1").add(std::to_string(fields.size()));
  for (const auto& [name, value] : fields) h.add(name).add(value);
  return h.hex();
}

result<rendered_prompt> render(const prompt_template& t, const prompt_fields& fields) {
  string missing, unused;
  for (const auto& f : t.fields)
    if (!fields.count(f)) missing += (missing.empty() ? "" : ", ") + f;
  for (const auto& [name, value] : fields)
    if (!std::binary_search(t.fields.begin(), t.fields.end(), name))
      unused += (unused.empty() ? "" : ", ") + name;
  if (!missing.empty() || !unused.empty()) {
    string msg = "template " + t.id + " v" + std::to_string(t.version) + " (" + t.origin + "):";
    if (!missing.empty()) msg += " missing field(s) " + missing + ";";
    if (!unused.empty()) msg += " field(s) given but not used: " + unused + ";";
    msg.pop_back();
    return fail(errc::invalid_argument, msg);
  }
  const auto fill = [&](const std::vector<template_piece>& pieces, bool keyed) {
    string out;
    for (const auto& p : pieces)  // one pass
      out += !p.field ? p.text
             : keyed && is_context_field(p.text) ? "{{" + p.text + "}}"
                                                 : fields.at(p.text);
    return out;
  };
  rendered_prompt r;
  r.template_id = t.id;
  r.template_version = t.version;
  r.system = fill(t.system, false);
  r.user = fill(t.user, false);
  if (t.version >= 2) {
    r.fields_hash = key_fields_hash(fields);
    hasher h;
    h.add("lathe.prompt-key/1").add(fill(t.system, true)).add(fill(t.user, true));
    r.prompt_key = h.hex();
  } else {
    r.fields_hash = fields_hash(fields);
  }
  return r;
}

llm::request to_request(const rendered_prompt& p) {
  llm::request r;
  r.system = p.system;
  r.messages.push_back({"user", p.user});
  r.template_id = p.template_id;
  r.template_version = p.template_version;
  r.fields_hash = p.fields_hash;
  r.prompt_key = p.prompt_key;
  return r;
}

}  // namespace lathe::agent
