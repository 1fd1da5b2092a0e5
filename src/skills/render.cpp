// Skill cards as Agent Skills folders (render.h).
#include "skills/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

#include "skills/render_yaml.h"

namespace lathe::skills {

namespace fs = std::filesystem;

namespace {

// Characters, not bytes: the format's limits count characters, and descriptions may hold
// non-ASCII text (the guillemets below, a card's prose).
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

// An XML tag: '<' then a letter, '/', '!' or '?', and a '>' later.
bool has_xml_tag(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != '<') continue;
    const char c = s[i + 1];
    const bool opens = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/' || c == '!' || c == '?';
    if (opens && s.find('>', i + 2) != std::string_view::npos) return true;
  }
  return false;
}

std::string fmt_ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", r);
  return std::string(buf) + "x";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// One line, no XML-looking angle brackets (the description rule), blanks collapsed.
std::string one_line(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else if (c == '<') {
      out += "\u2039";
    } else if (c == '>') {
      out += "\u203a";
    } else if (c != ' ' || (!out.empty() && out.back() != ' ')) {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Cut to at most `max` characters at a word boundary, marking the cut.
std::string clip(const std::string& s, size_t max) {
  if (utf8_length(s) <= max) return s;
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && ++chars > max - 1) break;
    out += s[i];
  }
  if (auto sp = out.rfind(' '); sp != std::string::npos && sp > out.size() / 2) out.erase(sp);
  return out + "\u2026";
}

std::string fence_language(const std::string& carrier_key) {
  if (carrier_key.rfind("cuda", 0) == 0) return "cuda";
  if (carrier_key.rfind("cpp", 0) == 0) return "cpp";
  return "";
}

// The SEARCH/REPLACE blocks, flag changes and whole files of a docs/edits.md text.
struct diff_block {
  std::string file, before, after, kind;  // kind: "replace", "whole", "flags"
};

std::vector<diff_block> parse_diff(const std::string& text) {
  std::vector<diff_block> out;
  std::istringstream in(text);
  std::string l, file, mode;
  diff_block cur;
  std::string* into = nullptr;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.rfind("@@@ FILE ", 0) == 0) {
      file = l.substr(9);
      mode = "file";
    } else if (l.rfind("@@@ WHOLE ", 0) == 0) {
      cur = {l.substr(10), "", "", "whole"};
      into = &cur.after;
      mode = "whole";
    } else if (l == "@@@ FLAGS") {
      cur = {"", "", "", "flags"};
      into = &cur.after;
      mode = "flags";
    } else if (l == "@@@ END") {
      if (mode == "whole" || mode == "flags") out.push_back(cur);
      mode.clear();
      into = nullptr;
    } else if (mode == "file" && l == "<<<<<<< SEARCH") {
      cur = {file, "", "", "replace"};
      into = &cur.before;
    } else if (mode == "file" && l == "=======" && into == &cur.before) {
      into = &cur.after;
    } else if (mode == "file" && l == ">>>>>>> REPLACE") {
      out.push_back(cur);
      into = nullptr;
    } else if (into) {
      *into += l + "\n";
    }
  }
  return out;
}

// At most `max` lines of `text`, saying how many were left out.
std::string head_lines(const std::string& text, size_t max) {
  std::string out;
  size_t n = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (n == max) {
      size_t rest = 0;
      for (size_t p = pos; p < text.size(); ++p) rest += text[p] == '\n';
      return out + "… (" + std::to_string(rest + (text.back() != '\n')) +
             " more lines: `lathe skills show` prints the whole carrier)\n";
    }
    out += text.substr(pos, end - pos) + "\n";
    ++n;
    pos = end + 1;
  }
  return out;
}

void fenced(std::ostringstream& o, const std::string& lang, const std::string& text) {
  // A fence longer than any backtick run inside keeps the block closed where it should be.
  std::string fence = "```";
  while (text.find(fence) != std::string::npos) fence += '`';
  o << fence << lang << "\n" << text;
  if (!text.empty() && text.back() != '\n') o << "\n";
  o << fence << "\n";
}

void bullets(std::ostringstream& o, const std::vector<std::string>& v) {
  for (const auto& s : v) o << "- " << s << "\n";
}

const char* verdict_words(trial_verdict v) {
  switch (v) {
    case trial_verdict::reproduced: return "reproduced the declared effect";
    case trial_verdict::not_reproduced: return "passed the gate, effect not reproduced";
    case trial_verdict::gate_failed: return "failed the gate";
    case trial_verdict::not_applicable: return "not applicable";
  }
  return "?";
}

std::string status_words(const skill_card& c) {
  switch (c.status) {
    case card_status::candidate:
      return "candidate: not yet admitted (no held-out task has reproduced its effect in lathe)";
    case card_status::admitted:
      return "admitted: reproduced on held-out tasks by a model-written application";
    case card_status::replay_admitted:
      return "replay-admitted: reproduced on held-out tasks, but only by rule replay "
             "(mechanical), never by a model";
    case card_status::refused: return "refused: tried on held-out tasks and not admitted";
  }
  return "?";
}

void example_configuration(std::ostringstream& o, const skill_card& c) {
  bool any = false;
  if (auto it = c.carriers.find("rules"); it != c.carriers.end()) {
    try {
      const auto inv = nlohmann::json::parse(it->second);
      o << "The rule engine's carrier: rule `" << inv.value("rule", std::string()) << "` at anchor `"
        << inv.value("anchor", std::string()) << "`";
      if (inv.contains("params") && inv["params"].is_object() && !inv["params"].empty()) {
        std::vector<std::string> ps;
        for (auto& [k, v] : inv["params"].items())
          ps.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
        o << " with " << join(ps, ", ");
      }
      o << ".\n\n";
      any = true;
    } catch (const std::exception&) {
      // Not an invocation: shown verbatim with the other carriers below.
    }
  }
  if (!c.anchor.empty()) {
    o << "Anchor: `" << c.anchor << "`.\n";
    any = true;
  }
  if (!c.shape.empty()) {
    std::vector<std::string> dims;
    for (const auto& [k, v] : c.shape) dims.push_back(k + "=" + std::to_string(v));
    o << "Measured on the source task's timed shape " << join(dims, ", ") << ".\n";
    any = true;
  }
  if (!any) o << "No configuration recorded (no rule carrier, anchor or shape).\n";
}

void before_after(std::ostringstream& o, const skill_card& c) {
  constexpr size_t max_lines = 60;  // a SKILL.md body should stay well under ~500 lines
  bool any = false;
  for (const auto& [key, text] : c.carriers) {
    if (key == "rules" || text.empty()) continue;
    const auto blocks = parse_diff(text);
    const std::string lang = fence_language(key);
    if (blocks.empty()) {
      o << "Carrier `" << key << "` (as recorded; not an edit lathe can apply):\n\n";
      fenced(o, "", head_lines(text, 2 * max_lines));
      o << "\n";
      any = true;
      continue;
    }
    o << "From carrier `" << key << "`:\n\n";
    size_t shown = 0;
    for (const auto& b : blocks) {
      if (++shown > 3) {
        o << "(" << blocks.size() - 3 << " more blocks in the carrier)\n\n";
        break;
      }
      if (b.kind == "flags") {
        o << "Compiler flags:\n\n";
        fenced(o, "", b.after);
      } else if (b.kind == "whole") {
        o << "After (`" << b.file << "`, whole file):\n\n";
        fenced(o, lang, head_lines(b.after, max_lines));
      } else {
        o << "Before (`" << b.file << "`):\n\n";
        fenced(o, lang, head_lines(b.before, max_lines));
        o << "\nAfter:\n\n";
        fenced(o, lang, head_lines(b.after, max_lines));
      }
      o << "\n";
    }
    any = true;
  }
  if (!any) o << "No text diff recorded for this card.\n";
}

}  // namespace

std::vector<std::string> skill_name_problems(std::string_view name) {
  std::vector<std::string> out;
  if (name.empty()) return {"the name is empty"};
  if (name.size() > skill_name_max)
    out.push_back("the name has " + std::to_string(name.size()) + " characters; at most 64");
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      out.push_back("the name may hold only a-z, 0-9 and '-' (found '" + std::string(1, c) + "')");
      break;
    }
  if (name.front() == '-' || name.back() == '-')
    out.push_back("the name may not start or end with a hyphen");
  if (name.find("--") != std::string_view::npos) out.push_back("the name may not hold '--'");
  for (const char* reserved : {"anthropic", "claude"})
    if (name.find(reserved) != std::string_view::npos)
      out.push_back(std::string("the name may not hold the reserved word '") + reserved + "'");
  return out;
}

std::vector<std::string> skill_description_problems(std::string_view d) {
  std::vector<std::string> out;
  if (d.find_first_not_of(" \t\r\n") == std::string_view::npos) return {"the description is empty"};
  if (const size_t n = utf8_length(d); n > skill_description_max)
    out.push_back("the description has " + std::to_string(n) + " characters; at most 1024");
  if (has_xml_tag(d)) out.push_back("the description may not hold XML tags");
  return out;
}

std::string kebab_name(std::string_view text) {
  std::string out;
  for (const char raw : text) {
    char c = raw;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > skill_name_max) {
    out.resize(skill_name_max);
    if (auto h = out.rfind('-'); h != std::string::npos && h >= skill_name_max - 16) out.resize(h);
    while (!out.empty() && out.back() == '-') out.pop_back();
  }
  return out;
}

std::string provenance_label(const provenance& p) {
  std::string out;
  const std::string tag = to_string(p);
  if (p.kind == "llm") {
    if (p.detail.find("mock") != std::string::npos)
      out = "mock model (" + tag + "): a scripted test double, not a model's work";
    else if (p.detail.rfind("replay/", 0) == 0)
      out = "recorded model reply replayed (" + tag + ")";
    else
      out = "model-written (" + tag + ")";
  } else if (p.kind == "rules") {
    out = "rule engine (" + tag + "): mechanical; it shows the machinery works, not that a model "
          "learned anything";
  } else if (p.kind == "replay") {
    out = "replayed (" + tag + "): a recorded result, not a new one";
  } else if (p.kind == "human") {
    out = "written by a person";
  } else if (p.kind == "import") {
    out = "imported from " + (p.detail.empty() ? std::string("another library") : p.detail) +
          ": not verified by lathe";
  } else {
    out = tag.empty() ? "unknown" : tag;
  }
  if (p.mechanical && p.kind != "rules") out += "; mechanical (a byte-identical replay)";
  return out;
}

std::string provenance_short(const provenance& p) {
  const std::string tag = to_string(p);
  if (p.kind == "llm")
    return (p.detail.find("mock") != std::string::npos ? "mock model (" : "model (") + tag + ")";
  if (p.kind == "rules") return "rule engine (" + tag + ")";
  if (p.kind == "replay") return "replay (" + tag + ")";
  if (p.kind == "import") return "imported (" + tag + ")";
  if (p.kind == "human") return "a person";
  return tag.empty() ? "unknown" : tag;
}

std::string skill_description(const skill_card& c) {
  // What it does gets at most 600 characters, so that when to use it always has room.
  std::string what = clip(one_line(c.intent.empty() ? c.name : c.intent), 600);
  if (!what.empty() && what.back() != '.') what += '.';
  std::vector<std::string> where;
  for (const auto& [key, text] : c.carriers)
    if (key != "rules") where.push_back(key);
  std::string when = " Use when optimizing " + (c.op.empty() ? std::string("a kernel") : c.op + " kernels");
  if (!where.empty()) when += " (" + join(where, ", ") + ")";
  when += " that lack it";
  std::vector<std::string> pre;
  for (const auto& k : c.constraints) pre.push_back(k.what + " " + k.value);
  for (size_t i = 0; i < c.preconditions.size() && pre.size() < 3; ++i) {
    std::string p = one_line(c.preconditions[i]);
    while (!p.empty() && (p.back() == '.' || p.back() == ';')) p.pop_back();
    if (!p.empty()) pre.push_back(p);
  }
  if (!pre.empty()) when += ", when " + join(pre, "; ");
  when += ".";
  const std::string status = std::string(" lathe status: ") + to_string(c.status) +
                             ". Verify every application with `lathe eval`.";
  // The status always fits: it is what tells an agent whether the card was verified.
  const size_t room = skill_description_max - utf8_length(status) - utf8_length(what) - 1;
  return what + " " + clip(one_line(when), room) + status;
}

std::string skill_md(const skill_card& c, const std::string& name) {
  std::ostringstream o;
  o << "---\n";
  o << "name: " << name << "\n";
  o << "description: " << yaml_quote(skill_description(c)) << "\n";
  o << "metadata:\n";
  o << "  lathe-card-id: " << yaml_quote(c.id) << "\n";
  o << "  lathe-status: " << yaml_quote(to_string(c.status)) << "\n";
  o << "  lathe-provenance: " << yaml_quote(to_string(c.prov)) << "\n";
  o << "---\n\n";
  o << "# " << name << "\n\n";
  o << "A lathe skill card (`lathe skills show " << (kebab_name(c.name) == c.name ? c.name : c.id)
    << "`). Its status is **"
    << to_string(c.status) << "**; read the evidence below before relying on its effect.\n\n";

  o << "## Intent\n\n" << (c.intent.empty() ? "(none recorded)" : c.intent) << "\n\n";
  std::vector<std::string> facts;
  if (!c.action.empty()) facts.push_back("action `" + c.action + "`");
  if (!c.op.empty()) facts.push_back("operator `" + c.op + "`");
  if (!facts.empty()) o << "Learned as " << join(facts, ", ") << ".\n\n";

  o << "## Preconditions\n\n";
  if (c.preconditions.empty()) o << "No prose preconditions recorded.\n";
  bullets(o, c.preconditions);
  o << "\nCheckable constraints (lathe checks them against the target before using the card):\n\n";
  if (c.constraints.empty()) o << "- none recorded\n";
  for (const auto& k : c.constraints) o << "- " << k.what << ": `" << k.value << "`\n";
  o << "\nFeature contract: requires "
    << (c.requires_features.empty() ? "nothing" : join(c.requires_features, ", ")) << "; provides "
    << (c.provides_features.empty() ? "nothing recorded" : join(c.provides_features, ", "))
    << "; conflicts with "
    << (c.conflicts_features.empty() ? "nothing" : join(c.conflicts_features, ", ")) << ".\n\n";

  o << "## Scope\n\n" << (c.scope.empty() ? "(none recorded)" : c.scope) << "\n\n";
  std::vector<std::string> carriers;
  for (const auto& [key, text] : c.carriers) carriers.push_back("`" + key + "`");
  o << "Carriers: " << (carriers.empty() ? "none" : join(carriers, ", "));
  if (!c.source_tasks.empty()) o << ". Source tasks: " << join(c.source_tasks, ", ");
  if (!c.target.empty()) o << ". Evidence measured on `" << c.target << "`";
  o << (c.target.empty() ? ". Evidence measured" : ",") << " on " << to_string(c.evidence_lang) << " kernels";
  o << ".\n\n";

  o << "## Risk\n\n" << (c.risk.empty() ? "(none recorded)" : c.risk) << "\n\n";

  o << "## Effect and evidence\n\n";
  o << (c.effect.empty() ? "No effect recorded." : c.effect) << "\n\n";
  if (c.declared_ratio)
    o << "- Declared ratio: " << fmt_ratio(*c.declared_ratio)
      << " (time before / time after, geometric mean of the paired ratios of its source steps)\n";
  else
    o << "- Declared ratio: none measured\n";
  o << "- Abstracted by: " << provenance_label(c.prov) << "\n";
  o << "- Admission: " << status_words(c);
  if (!c.status_reason.empty()) o << " (" << c.status_reason << ")";
  o << "\n";
  if (!c.sources.empty()) o << "- Induced from: " << join(c.sources, ", ") << "\n";
  if (!c.evidence.empty()) {
    std::vector<std::string> ids;
    for (const auto id : c.evidence) ids.push_back(std::to_string(id));
    o << "- Gate evaluations: " << join(ids, ", ") << " (ids in the exporting workspace's store)\n";
  }
  o << "\n";
  if (c.trials.empty()) {
    o << "No held-out trials yet.\n\n";
  } else {
    o << "Held-out trials (every one, failures included):\n\n";
    o << "| task | verdict | ratio | gate outcome | applied by |\n|---|---|---|---|---|\n";
    for (const auto& t : c.trials)
      o << "| " << t.task << " | " << verdict_words(t.verdict) << " | "
        << (t.ratio ? fmt_ratio(*t.ratio) : "-") << " | " << (t.outcome.empty() ? "-" : t.outcome)
        << " | " << provenance_short(t.prov) << " |\n";
    o << "\n";
  }
  if (!c.verification_log.empty()) {
    o << "Verification log:\n\n";
    bullets(o, c.verification_log);
    o << "\n";
  }

  o << "## Verify before you keep it\n\n"
    << "The effect above was measured on lathe's targets, not yours. After applying this card to a kernel, "
       "gate the result against the kernel you started from:\n\n"
    << "```sh\nlathe eval TASK NEW_KERNEL --baseline OLD_KERNEL\n```\n\n"
    << "Keep the change only if the outcome is `ok` (checked against the fp64 reference on fresh inputs) and "
       "the paired speedup's interval lies above 1 + epsilon (the A/A margin lathe prints). Exit code 0 means "
       "`ok`, 3 means the machine was too noisy to decide (measure again), 1 means the kernel failed a check.\n\n";
  o << "## Example configuration\n\n";
  example_configuration(o, c);
  o << "\n## Before / after\n\n";
  before_after(o, c);
  return o.str();
}

result<std::vector<written_skill>> write_skill_folders(const std::vector<skill_card>& cards,
                                                       const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(errc::io_error, dir.string() + ": " + ec.message());
  std::vector<written_skill> out;
  std::set<std::string> taken;
  for (const auto& c : cards) {
    written_skill w;
    w.card_id = c.id;
    w.card_name = c.name;
    std::string name = kebab_name(c.name);
    if (name.empty()) name = kebab_name("card-" + c.id);
    if (taken.count(name)) {
      const std::string suffix = "-" + kebab_name(c.id).substr(0, 8);
      name = kebab_name(name.substr(0, skill_name_max - suffix.size()) + suffix);
    }
    w.name = name;
    w.folder = dir / name;
    w.problems = skill_name_problems(name);
    if (kebab_name(c.name) != c.name)
      w.problems.push_back("note: the card's name '" + c.name + "' was written as '" + name + "'");
    const std::string desc = skill_description(c);
    for (auto& p : skill_description_problems(desc)) w.problems.push_back(p);
    const bool blocked = std::any_of(w.problems.begin(), w.problems.end(),
                                     [](const std::string& p) { return p.rfind("note:", 0) != 0; });
    if (blocked || taken.count(name)) {
      if (taken.count(name)) w.problems.push_back("another card in this export has the name '" + name + "'");
      out.push_back(std::move(w));
      continue;
    }
    taken.insert(name);
    fs::create_directories(w.folder, ec);
    if (ec) return fail(errc::io_error, w.folder.string() + ": " + ec.message());
    {
      std::ofstream f(w.folder / "SKILL.md", std::ios::binary | std::ios::trunc);
      f << skill_md(c, name);
      if (!f) return fail(errc::io_error, (w.folder / "SKILL.md").string() + ": write failed");
    }
    w.written = true;
    for (auto& p : skill_md_problems(w.folder)) w.problems.push_back(p);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<std::string> skill_md_problems(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return {folder.string() + " is not a directory"};
  const fs::path file = folder / "SKILL.md";
  if (!fs::is_regular_file(file, ec)) return {"no SKILL.md in " + folder.string()};
  std::ifstream in(file, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto fm = read_front_matter(text);
  if (!fm) return {"SKILL.md: " + fm.error().message};
  std::vector<std::string> out;
  const auto& f = fm->fields;
  const std::string folder_name = folder.filename().string();
  if (!f.contains("name") || !f["name"].is_string()) {
    out.push_back("the front matter has no `name`");
  } else {
    const std::string name = f["name"].get<std::string>();
    for (auto& p : skill_name_problems(name)) out.push_back(p);
    if (name != folder_name)
      out.push_back("the name '" + name + "' differs from the folder's name '" + folder_name + "'");
  }
  if (!f.contains("description") || !f["description"].is_string())
    out.push_back("the front matter has no `description`");
  else
    for (auto& p : skill_description_problems(f["description"].get<std::string>())) out.push_back(p);
  if (f.contains("compatibility")) {
    if (!f["compatibility"].is_string())
      out.push_back("`compatibility` is not a string");
    else if (utf8_length(f["compatibility"].get<std::string>()) > skill_compatibility_max)
      out.push_back("`compatibility` has more than 500 characters");
  }
  if (f.contains("metadata")) {
    if (!f["metadata"].is_object())
      out.push_back("`metadata` is not a mapping");
    else
      for (auto& [k, v] : f["metadata"].items())
        if (!v.is_string()) out.push_back("`metadata." + k + "` is not a string");
  }
  if (fm->body.find_first_not_of(" \t\r\n") == std::string::npos)
    out.push_back("SKILL.md has no instructions after the front matter");
  return out;
}

}  // namespace lathe::skills
