#include "prompt_reader.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "choice.h"
#include "core/feature_registry.h"
#include "source.h"

namespace lathe::mock {
namespace {

const std::regex markdown_heading(R"(^#{2,6} \S)");
const std::regex operation_line(R"(^lathe-operation: ([a-z_]+) v([0-9]+)[ \t\r]*$)");

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_role_line(std::string_view line) {
  return line == "### user" || line == "### assistant" || line == "### system";
}

// The field a heading line names, with any value on the same line. Headings are not indented:
// code lines of a kernel are, or do not look like a bare field name.
struct heading {
  std::string name;
  std::string inline_value;
  bool closing = false;  // </name>
};

std::optional<heading> heading_of(std::string_view raw) {
  std::string line = trim(raw);
  if (raw.empty() || raw[0] == ' ' || raw[0] == '\t' || line.empty()) return std::nullopt;
  heading h;
  static const std::regex tag(R"(^<(/?)([A-Za-z_ ]+)>$)");
  static const std::regex banner(R"(^===+ *([A-Za-z_ ]+?) *===+$)");
  std::smatch m;
  if (std::regex_match(line, m, tag)) {
    h.closing = m[1].length() > 0;
    h.name = m[2];
  } else if (std::regex_match(line, m, banner)) {
    h.name = m[1];
  } else {
    // "## Kernel", "- **features**:", "`restore`: x @ f"
    size_t p = 0;
    while (p < line.size() &&
           (line[p] == '#' || line[p] == '-' || line[p] == '*' || line[p] == ' '))
      ++p;
    line = line.substr(p);
    std::string name;
    size_t i = 0;
    for (; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '*' || c == '`') continue;
      if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ' ')) break;
      name.push_back(c);
    }
    while (i < line.size() && (line[i] == '*' || line[i] == '`')) ++i;
    h.name = trim(name);
    if (i == line.size()) {
      // a bare name
    } else if (line[i] == ':') {
      h.inline_value = trim(std::string_view(line).substr(i + 1));
    } else {
      return std::nullopt;
    }
  }
  h.name = lower(trim(h.name));
  std::replace(h.name.begin(), h.name.end(), ' ', '_');
  if (h.name.empty()) return std::nullopt;
  return h;
}

bool in(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_field_name(std::string_view name) {
  for (std::string_view op :
       {"propose_backward", "rederive_forward", "audit_features", "abstract_card", "materialize",
        "repair", "seed_baseline", "rank_paths", "mutate"})
    if (in(operation_fields(op), name)) return true;
  return false;
}

}  // namespace

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b < text.size()) {
    auto e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    out.emplace_back(text.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

const std::vector<std::string>& operation_fields(std::string_view operation) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> table = {
      {"propose_backward", {"task", "target", "kernel", "features", "action_prior", "rejected"}},
      {"rederive_forward", {"task", "target", "kernel", "restore", "action", "rejected"}},
      {"audit_features", {"task", "target", "kernel", "features"}},
      {"abstract_card", {"task", "target", "step", "diff", "before", "after"}},
      {"materialize", {"task", "target", "kernel", "features", "cards", "rejected"}},
      {"repair", {"task", "target", "kernel", "goal", "outcome", "diagnostics"}},
      {"seed_baseline", {"task", "target", "reference", "entry_features", "entry_file"}},
      {"rank_paths", {"task", "target", "kernel", "features", "paths"}},
      {"mutate", {"task", "target", "kernel", "inspirations", "direction", "rejected"}},
  };
  static const std::vector<std::string> none;
  const auto it = table.find(operation);
  return it == table.end() ? none : it->second;
}

tl::expected<prompt, std::string> read_prompt(std::string_view input) {
  const std::vector<std::string> lines = split_lines(input);
  prompt p;
  std::vector<std::pair<std::string, std::string>> messages;  // role, content
  const bool conversation = std::any_of(lines.begin(), lines.end(), is_role_line);
  if (conversation) {
    std::string* current = &p.system;
    for (const auto& l : lines) {
      if (is_role_line(l)) {
        messages.emplace_back(l.substr(4), "");
        current = &messages.back().second;
        continue;
      }
      current->append(l).push_back('\n');
    }
    // command_prompt() ends every message with a blank line; the system prompt with one too.
    for (auto& [role, content] : messages)
      while (content.ends_with("\n\n")) content.pop_back();
    while (p.system.ends_with('\n')) p.system.pop_back();
  } else {
    size_t at = lines.size();
    for (size_t i = 0; i < lines.size() && at == lines.size(); ++i)
      if (std::regex_match(lines[i], operation_line)) at = i;
    std::string user;
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string& to = i < at ? p.system : user;
      to.append(lines[i]).push_back('\n');
    }
    while (p.system.ends_with('\n')) p.system.pop_back();
    // As in a conversation: trailing blank lines are not part of the message, so a repair round
    // hashes the same first message.
    while (user.ends_with("\n\n")) user.pop_back();
    messages.emplace_back("user", user);
  }
  std::vector<size_t> users;
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].first == "user") users.push_back(i);
  if (users.empty()) return tl::unexpected(std::string("the prompt has no user message"));
  p.user = messages[users.front()].second;
  const auto first_line = split_lines(p.user);
  std::smatch m;
  if (first_line.empty() || !std::regex_match(first_line.front(), m, operation_line))
    return tl::unexpected(std::string(
        "the first line of the user message is not 'lathe-operation: <operation> v<N>'"));
  p.operation = m[1];
  p.version = std::stoi(m[2]);
  if (operation_fields(p.operation).empty())
    return tl::unexpected("unknown operation '" + p.operation + "'");
  if (users.size() >= 2 && users.back() == messages.size() - 1) {
    p.repair = true;
    p.feedback = messages.back().second;
  }
  p.hash = fnv1a(p.user, fnv1a(p.system));
  // Only the `## language` heading itself: the kernel's manifest has a `language: python` line
  // of its own, which field() would take for this one.
  static const std::regex language_heading(R"(^#{2,6} +language[ \t\r]*$)", std::regex::icase);
  const auto user_lines = split_lines(p.user);
  for (size_t i = 0; i < user_lines.size(); ++i) {
    if (!std::regex_match(user_lines[i], language_heading)) continue;
    for (size_t j = i + 1; j < user_lines.size(); ++j) {
      std::string name = trim(user_lines[j]);
      name.erase(std::remove(name.begin(), name.end(), '`'), name.end());
      if (name.empty()) continue;
      // The name is the line's first word ("modelnew", or "modelnew: a KernelBench file").
      size_t e = 0;
      while (e < name.size() && (std::isalnum(static_cast<unsigned char>(name[e])) ||
                                 name[e] == '-' || name[e] == '_'))
        ++e;
      if (e > 0 && !std::regex_search(name, markdown_heading)) p.language = lower(name.substr(0, e));
      break;
    }
    break;
  }
  return p;
}

std::optional<std::string> field(std::string_view message, std::string_view name,
                                 std::string_view operation) {
  const auto& names = operation_fields(operation);
  const auto lines = split_lines(message);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto h = heading_of(lines[i]);
    if (!h || h->closing || h->name != name) continue;
    std::string value = h->inline_value.empty() ? "" : h->inline_value + "\n";
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const auto next = heading_of(lines[j]);
      if (next && next->closing && next->name == name) break;
      if (next && !next->closing && next->name != name && in(names, next->name)) break;
      // Any other markdown section ("## Reply", "## registry") ends it too; code never starts a
      // line with "## ".
      if (std::regex_search(lines[j], markdown_heading)) break;
      value.append(lines[j]).push_back('\n');
    }
    while (value.ends_with("\n\n")) value.pop_back();
    return value;
  }
  return std::nullopt;
}

kernel_text read_kernel(std::string_view text) {
  static const std::regex file_line(R"(^=== FILE (.+?) ===[ \t\r]*$)");
  static const std::regex flags_line(
      R"(^[-*# ]*(?:compile(?:r)? |manifest(?:'s)? )?flags\s*[:=]\s*(.*)$)", std::regex::icase);
  static const std::regex numbered_line(R"(^ *([0-9]+)\|(?: (.*)|)$)");
  kernel_text k;
  const auto lines = split_lines(text);
  std::smatch m;
  auto read_flags = [&](const std::string& value) {
    k.flags_shown = true;
    std::string cleaned;
    for (char c : value) cleaned.push_back(c == '[' || c == ']' || c == ',' || c == '"' ? ' ' : c);
    for (const auto& tok : split_lines(cleaned)) {
      size_t b = 0;
      while (b < tok.size()) {
        const auto s = tok.find_first_not_of(" \t", b);
        if (s == std::string::npos) break;
        auto e = tok.find_first_of(" \t", s);
        if (e == std::string::npos) e = tok.size();
        const std::string flag = tok.substr(s, e - s);
        if (flag.size() > 1 && flag[0] == '-') k.flags.push_back(flag);
        b = e;
      }
    }
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i][0] == ' ') continue;
    if (std::regex_match(lines[i], m, flags_line) && !k.flags_shown) read_flags(m[1]);
    static const std::regex entry_line(R"re(^entry\s*[:=]\s*"?([^\s"]+)"?\s*$)re");
    if (k.entry.empty() && std::regex_match(lines[i], m, entry_line)) k.entry = m[1];
    if (!std::regex_match(lines[i], m, file_line)) continue;
    kernel_file f;
    f.path = m[1];
    std::vector<std::string> body;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const std::string& l = lines[j];
      if (l.starts_with("=== ") || l.starts_with("lathe-")) break;
      if (!l.empty() && l[0] != ' ' && std::regex_match(l, flags_line)) break;
      // Another field's heading ends the last file (a template without an end marker).
      if (const auto h = heading_of(l); h && !h->closing && is_field_name(h->name)) break;
      if (const auto h = heading_of(l); h && h->closing) break;
      if (std::regex_search(l, markdown_heading)) break;
      body.push_back(l);
    }
    i = j - 1;
    while (!body.empty() && trim(body.back()).empty()) body.pop_back();
    // A fenced body means the lines inside the fence.
    if (body.size() >= 2 && body.front().starts_with("```") && trim(body.back()) == "```") {
      body.erase(body.begin());
      body.pop_back();
    }
    const bool numbered =
        !body.empty() && std::all_of(body.begin(), body.end(), [](const std::string& l) {
          return std::regex_match(l, numbered_line);
        });
    if (numbered) {
      k.numbered = true;
      for (auto& l : body) {
        std::smatch n;
        std::regex_match(l, n, numbered_line);
        l = n[2];
      }
    }
    for (const auto& l : body) f.text.append(l).push_back('\n');
    k.files.push_back(std::move(f));
  }
  return k;
}

std::vector<feature_line> feature_lines(std::string_view text) {
  static const std::regex line_re(
      R"(^[ \t]*(?:[-*][ \t]+)?`?([a-z_]+)`?[ \t]*@[ \t]*([^ \t(]+)[ \t]*(?:\((.*)\))?.*$)");
  std::vector<feature_line> out;
  for (const auto& l : split_lines(text)) {
    std::smatch m;
    if (!std::regex_match(l, m, line_re) || !find_feature(m[1].str())) continue;
    out.push_back({m[1], m[2], m[3]});
  }
  return out;
}

std::vector<std::string> registry_names_in(std::string_view text) {
  // A name counts as a word of its own or as a part of an action category joined by '_'
  // ("remove_loop_unroll"), never inside a longer word ("restricted").
  const auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::vector<std::pair<size_t, std::string>> found;
  for (const auto& d : feature_registry()) {
    for (size_t p = text.find(d.name); p != std::string_view::npos; p = text.find(d.name, p + 1)) {
      const size_t e = p + d.name.size();
      if ((p > 0 && alnum(text[p - 1])) || (e < text.size() && alnum(text[e]))) continue;
      found.emplace_back(p, std::string(d.name));
      break;
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [pos, name] : found) out.push_back(std::move(name));
  return out;
}

bool target_is_cuda(std::string_view target) {
  static const std::regex platform_word(R"((?:^|[\s;])platform:\s*([A-Za-z0-9_]+))");
  static const std::regex sm_arch(R"((?:^|[\s;:])sm_[0-9]+[a-z]?(?:$|[\s;,]))");
  const std::string t(target);
  std::smatch m;
  if (std::regex_search(t, m, platform_word)) return m[1] == "cuda";
  return std::regex_search(t, sm_arch);
}

}  // namespace lathe::mock
