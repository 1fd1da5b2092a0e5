#include "spec/python_knobs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "core/lines.h"

namespace lathe {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A knob line: NAME [: int] = [-]DIGITS [# …]. The name, the value and where the value's text is.
struct knob_match {
  std::string name;
  int64_t value = 0;
  size_t value_at = 0, value_len = 0;
};

std::optional<knob_match> match_knob(std::string_view line) {
  if (line.empty() || !ident_start(line[0])) return std::nullopt;
  size_t i = 0;
  while (i < line.size() && ident_char(line[i])) ++i;
  knob_match m;
  m.name = std::string(line.substr(0, i));
  auto spaces = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  spaces();
  if (i < line.size() && line[i] == ':') {  // an annotation: `: int` only
    ++i;
    spaces();
    if (line.compare(i, 3, "int") != 0 || (i + 3 < line.size() && ident_char(line[i + 3]))) return std::nullopt;
    i += 3;
    spaces();
  }
  if (i >= line.size() || line[i] != '=' || (i + 1 < line.size() && line[i + 1] == '=')) return std::nullopt;
  ++i;
  spaces();
  m.value_at = i;
  if (i < line.size() && line[i] == '-') ++i;
  const size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == digits) return std::nullopt;
  m.value_len = i - m.value_at;
  const auto [end, ec] = std::from_chars(line.data() + m.value_at, line.data() + i, m.value);
  if (ec != std::errc() || end != line.data() + i) return std::nullopt;
  spaces();
  if (i < line.size() && line[i] != '#') return std::nullopt;  // `BLOCK = 4 * 32`: an expression
  return m;
}

// The triple-quoted string a line leaves open (`open`: its quotes), from the one it began in.
void track_strings(std::string_view line, std::string& open) {
  for (size_t i = 0; i + 3 <= line.size(); ++i) {
    const std::string_view three = line.substr(i, 3);
    if (three != "\"\"\"" && three != "'''") continue;
    if (open.empty())
      open = std::string(three);
    else if (open == three)
      open.clear();
    i += 2;
  }
}

}  // namespace

std::map<std::string, std::vector<python_knob>> python_knob_lines(const std::string& source) {
  std::map<std::string, std::vector<python_knob>> out;
  std::string open;  // the quotes of a triple-quoted string the line is inside
  const auto lines = split_lines(source);
  for (size_t n = 0; n < lines.size(); ++n) {
    if (open.empty())
      if (auto m = match_knob(lines[n])) out[m->name].push_back({n, m->value});
    track_strings(lines[n], open);
  }
  return out;
}

result<void> bind_python_tunables(kernel_bundle& b, const std::vector<std::string>& explicit_defaults) {
  if (b.manifest.lang != language::python || b.manifest.tune.empty()) return {};
  const auto src = b.sources.find(b.manifest.entry);
  if (src == b.sources.end()) return fail(errc::invalid_argument, b.name + ": no entry file " + b.manifest.entry);
  const auto knobs = python_knob_lines(src->second);
  for (const tunable& p : b.manifest.tune.params) {
    const auto k = knobs.find(p.name);
    const size_t seen = k == knobs.end() ? 0 : k->second.size();
    if (seen != 1)
      return fail(errc::invalid_argument,
                  b.name + ": tunable '" + p.name + "' of a Python kernel must be one top-level `" + p.name +
                      " = <integer>` line in " + b.manifest.entry + " (found " + std::to_string(seen) + ")");
    const int64_t literal = k->second.front().value;
    const bool given = std::find(explicit_defaults.begin(), explicit_defaults.end(), p.name) != explicit_defaults.end();
    if (given && b.manifest.tune.defaults[p.name] != literal)
      return fail(errc::invalid_argument, b.name + ": [tune.default] gives '" + p.name + "' = " +
                                              std::to_string(b.manifest.tune.defaults[p.name]) + " but " +
                                              b.manifest.entry + " sets " + std::to_string(literal) + "; give one default");
    if (std::find(p.values.begin(), p.values.end(), literal) == p.values.end())
      return fail(errc::invalid_argument, b.name + ": '" + p.name + "' = " + std::to_string(literal) + " in " +
                                              b.manifest.entry + " is not one of its values");
    b.manifest.tune.defaults[p.name] = literal;
  }
  return {};
}

result<std::string> set_python_knobs(const std::string& source, const tune_config& c) {
  const auto knobs = python_knob_lines(source);
  const auto views = split_lines(source);
  std::vector<std::string> lines(views.begin(), views.end());
  for (const auto& [name, value] : c) {
    const auto k = knobs.find(name);
    if (k == knobs.end() || k->second.size() != 1)
      return fail(errc::invalid_argument, "'" + name + "' is not one top-level `" + name + " = <integer>` line");
    std::string& line = lines[k->second.front().line];
    const auto m = match_knob(line);
    line.replace(m->value_at, m->value_len, std::to_string(value));
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    out += lines[i];
  }
  if (source.ends_with('\n')) out += '\n';  // the last line's end, as the source had it
  return out;
}

}  // namespace lathe
