// A YAML subset for SKILL.md front matter (render_yaml.h says which subset and why).
#include "skills/render_yaml.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace lathe::skills {

namespace {

using nlohmann::json;

struct line {
  int number = 0;    // 1-based, for messages
  int indent = 0;    // leading spaces
  std::string text;  // without the indent, trailing blanks and CR removed
  bool blank = false;  // empty or a comment
};

std::vector<line> yaml_lines(std::string_view yaml) {
  std::vector<line> out;
  int number = 0;
  size_t pos = 0;
  while (pos <= yaml.size()) {
    size_t end = yaml.find('\n', pos);
    if (end == std::string_view::npos) end = yaml.size();
    std::string raw(yaml.substr(pos, end - pos));
    pos = end + 1;
    ++number;
    while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ' || raw.back() == '\t'))
      raw.pop_back();
    line l;
    l.number = number;
    while (l.indent < static_cast<int>(raw.size()) && raw[static_cast<size_t>(l.indent)] == ' ')
      ++l.indent;
    l.text = raw.substr(static_cast<size_t>(l.indent));
    l.blank = l.text.empty() || l.text[0] == '#';
    out.push_back(std::move(l));
    if (end == yaml.size()) break;
  }
  return out;
}

class parser {
 public:
  explicit parser(std::vector<line> lines) : lines_(std::move(lines)) {}

  result<json> document() {
    skip_blank();
    if (at_end()) return json(nullptr);
    auto v = node(lines_[i_].indent);
    if (!v) return v;
    skip_blank();
    if (!at_end()) return bad(lines_[i_], "unexpected text after the document (indentation?)");
    return v;
  }

 private:
  std::vector<line> lines_;
  size_t i_ = 0;

  bool at_end() const { return i_ >= lines_.size(); }
  void skip_blank() {
    while (!at_end() && lines_[i_].blank) ++i_;
  }
  static tl::unexpected<lathe::error> bad(const line& l, const std::string& what) {
    return fail(errc::parse_error, "YAML line " + std::to_string(l.number) + ": " + what);
  }

  static bool is_item(const std::string& t) { return t == "-" || t.rfind("- ", 0) == 0; }

  // The position of the `:` that ends a mapping key on this text, if it is one.
  static std::optional<size_t> key_colon(const std::string& t) {
    if (t.empty() || is_item(t)) return std::nullopt;
    size_t i = 0;
    if (t[0] == '"' || t[0] == '\'') {
      const char q = t[0];
      for (i = 1; i < t.size(); ++i) {
        if (q == '\'' && t[i] == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
          ++i;
        } else if (q == '"' && t[i] == '\\') {
          ++i;
        } else if (t[i] == q) {
          break;
        }
      }
      ++i;
      if (i < t.size() && t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) return i;
      return std::nullopt;
    }
    for (; i < t.size(); ++i)
      if (t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) return i;
    return std::nullopt;
  }

  result<json> node(int indent) {
    const line& l = lines_[i_];
    if (is_item(l.text)) return sequence(l.indent);
    if (key_colon(l.text)) return mapping(l.indent);
    const std::string first = l.text;
    ++i_;
    return scalar_lines(first, std::min(indent, l.indent) - 1);
  }

  result<std::string> key_of(const line& l, size_t colon) {
    std::string k = l.text.substr(0, colon);
    if (!k.empty() && (k[0] == '"' || k[0] == '\'')) {
      auto v = quoted(k, l, nullptr);
      if (!v) return tl::unexpected(v.error());
      return *v;
    }
    return k;
  }

  result<json> mapping(int indent) {
    json out = json::object();
    for (;;) {
      skip_blank();
      if (at_end() || lines_[i_].indent < indent) return out;
      const line l = lines_[i_];
      if (l.indent > indent) return bad(l, "unexpected indentation");
      auto colon = key_colon(l.text);
      if (!colon) return bad(l, "expected `key: value` in a mapping");
      auto key = key_of(l, *colon);
      if (!key) return tl::unexpected(key.error());
      if (out.contains(*key)) return bad(l, "duplicate key '" + *key + "'");
      std::string rest = l.text.substr(*colon + 1);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      ++i_;
      auto v = value_after(rest, l, indent);
      if (!v) return v;
      out[*key] = std::move(*v);
    }
  }

  result<json> sequence(int indent) {
    json out = json::array();
    for (;;) {
      skip_blank();
      if (at_end() || lines_[i_].indent < indent) return out;
      line l = lines_[i_];
      if (l.indent > indent) return bad(l, "unexpected indentation");
      if (!is_item(l.text)) return out;  // the mapping around a same-indent sequence goes on
      std::string rest = l.text.size() > 1 ? l.text.substr(2) : "";
      size_t lead = 0;
      while (lead < rest.size() && rest[lead] == ' ') ++lead;
      rest.erase(0, lead);
      if (!rest.empty() && (key_colon(rest) || is_item(rest)) && rest[0] != '[' && rest[0] != '{') {
        // "- key: value": a mapping (or nested sequence) that starts on the item's line; read
        // the rest of the line as a line of its own, indented to where it starts.
        lines_[i_].indent = indent + 2 + static_cast<int>(lead);
        lines_[i_].text = rest;
        auto v = node(lines_[i_].indent);
        if (!v) return v;
        out.push_back(std::move(*v));
        continue;
      }
      ++i_;
      auto v = value_after(rest, l, indent);
      if (!v) return v;
      out.push_back(std::move(*v));
    }
  }

  // The value of a key or an item whose line (at `indent`) ends with `rest`.
  result<json> value_after(const std::string& rest, const line& l, int indent) {
    if (rest.empty() || rest[0] == '#') {
      skip_blank();
      if (at_end()) return json("");
      const line& next = lines_[i_];
      if (next.indent > indent || (next.indent == indent && is_item(next.text)))
        return node(next.indent);
      return json("");
    }
    if (rest[0] == '|' || rest[0] == '>') return block_scalar(rest, l, indent);
    if (rest[0] == '&' || rest[0] == '*' || rest[0] == '!')
      return bad(l, "anchors, aliases and tags are outside the subset lathe reads");
    if (rest[0] == '[' || rest[0] == '{') return flow(rest, l);
    return scalar_lines(rest, indent);
  }

  // A plain or quoted scalar that starts with `first` and may continue on the following lines
  // indented deeper than `indent` (folded: one line break is a space, a blank line a newline).
  result<json> scalar_lines(const std::string& first, int indent) {
    const line& at = lines_[i_ == 0 ? 0 : i_ - 1];
    std::string text = first;
    const bool quoted_scalar = !first.empty() && (first[0] == '"' || first[0] == '\'');
    auto closed = [&](const std::string& t) {
      if (!quoted_scalar) return false;
      std::string dummy;
      return quoted(t, at, &dummy).has_value();
    };
    while (!at_end()) {
      if (quoted_scalar && closed(text)) break;
      const line& next = lines_[i_];
      if (next.text.empty()) {
        text += "\n";
        ++i_;
        continue;
      }
      if (next.indent <= indent) break;
      if (!quoted_scalar && (next.blank || key_colon(next.text) || is_item(next.text))) break;
      if (!text.empty() && text.back() != '\n') text += ' ';
      text += next.text;
      ++i_;
    }
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (quoted_scalar) {
      auto v = quoted(text, at, nullptr);
      if (!v) return tl::unexpected(v.error());
      return json(*v);
    }
    if (auto hash = text.find(" #"); hash != std::string::npos) text.erase(hash);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return json(text);
  }

  // A whole quoted scalar (quotes included). `rest` receives what follows the closing quote.
  result<std::string> quoted(const std::string& t, const line& l, std::string* rest) {
    const char q = t[0];
    std::string out;
    size_t i = 1;
    for (; i < t.size(); ++i) {
      const char c = t[i];
      if (q == '\'') {
        if (c == '\'') {
          if (i + 1 < t.size() && t[i + 1] == '\'') {
            out += '\'';
            ++i;
            continue;
          }
          break;
        }
        out += c;
        continue;
      }
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++i >= t.size()) return bad(l, "a double-quoted scalar ends in a backslash");
      switch (t[i]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case ' ': out += ' '; break;
        case 'u': {
          unsigned cp = 0;
          for (int k = 1; k <= 4; ++k) {
            const char h = i + static_cast<size_t>(k) < t.size() ? t[i + static_cast<size_t>(k)] : 'x';
            const int d = h >= '0' && h <= '9' ? h - '0'
                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) return bad(l, "a \\u escape needs four hex digits");
            cp = cp * 16 + static_cast<unsigned>(d);
          }
          i += 4;
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
          }
          break;
        }
        default: return bad(l, std::string("an unknown escape \\") + t[i]);
      }
    }
    if (i >= t.size()) return bad(l, "a quoted scalar is not closed");
    std::string after = t.substr(i + 1);
    while (!after.empty() && after[0] == ' ') after.erase(0, 1);
    if (!after.empty() && after[0] != '#' && rest == nullptr)
      return bad(l, "text after a quoted scalar: '" + after + "'");
    if (rest) *rest = after;
    return out;
  }

  result<json> block_scalar(const std::string& head, const line& l, int indent) {
    const bool literal = head[0] == '|';
    char chomp = ' ';
    for (size_t k = 1; k < head.size() && head[k] != ' '; ++k) {
      if (head[k] == '-' || head[k] == '+') chomp = head[k];
      else return bad(l, "block scalar indentation indicators are outside the subset");
    }
    std::vector<std::string> body;
    int block_indent = -1;
    while (!at_end()) {
      const line& next = lines_[i_];
      if (!next.text.empty() && next.indent <= indent) break;
      if (!next.text.empty() && block_indent < 0) block_indent = next.indent;
      if (next.text.empty()) {
        body.emplace_back();
      } else {
        body.push_back(std::string(static_cast<size_t>(next.indent - block_indent), ' ') + next.text);
      }
      ++i_;
    }
    size_t trailing = 0;
    while (!body.empty() && body.back().empty()) {
      body.pop_back();
      ++trailing;
    }
    std::string out;
    for (size_t k = 0; k < body.size(); ++k) {
      if (k > 0) {
        const bool fold = !literal && !body[k].empty() && !body[k - 1].empty() &&
                          body[k][0] != ' ' && body[k - 1][0] != ' ';
        out += fold ? " " : "\n";
      }
      out += body[k];
    }
    if (chomp != '-' && !body.empty()) out += '\n';
    if (chomp == '+') out.append(trailing, '\n');
    return json(out);
  }

  // One-line flow sequences of scalars (`[a, 'b c']`) and empty flow collections.
  result<json> flow(const std::string& t, const line& l) {
    if (t == "{}") return json::object();
    if (t[0] == '{') return bad(l, "flow mappings are outside the subset lathe reads");
    if (t.back() != ']') return bad(l, "a flow sequence must close on its line");
    json out = json::array();
    std::string inner = t.substr(1, t.size() - 2);
    size_t i = 0;
    while (i < inner.size()) {
      while (i < inner.size() && inner[i] == ' ') ++i;
      if (i >= inner.size()) break;
      std::string item;
      if (inner[i] == '"' || inner[i] == '\'') {
        std::string rest;
        auto v = quoted(inner.substr(i), l, &rest);
        if (!v) return tl::unexpected(v.error());
        item = *v;
        i = inner.size() - rest.size();
      } else {
        size_t end = inner.find(',', i);
        if (end == std::string::npos) end = inner.size();
        item = inner.substr(i, end - i);
        while (!item.empty() && item.back() == ' ') item.pop_back();
        i = end;
      }
      out.push_back(item);
      while (i < inner.size() && inner[i] == ' ') ++i;
      if (i < inner.size() && inner[i] != ',') return bad(l, "expected ',' in a flow sequence");
      ++i;
    }
    return out;
  }
};

}  // namespace

result<nlohmann::json> parse_yaml_subset(std::string_view yaml) {
  parser p(yaml_lines(yaml));
  return p.document();
}

result<front_matter> read_front_matter(std::string_view text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.remove_prefix(3);  // a BOM some editors write
  auto first_end = text.find('\n');
  if (first_end == std::string_view::npos ||
      (text.substr(0, first_end) != "---" && text.substr(0, first_end) != "---\r"))
    return fail(errc::parse_error, "no YAML front matter: the first line must be '---'");
  size_t pos = first_end + 1;
  for (;;) {
    size_t end = text.find('\n', pos);
    std::string_view l = text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
    if (l == "---" || l == "---\r") {
      auto fields = parse_yaml_subset(text.substr(first_end + 1, pos - first_end - 1));
      if (!fields) return fail(errc::parse_error, "front matter: " + fields.error().message);
      if (fields->is_null()) *fields = nlohmann::json::object();
      if (!fields->is_object()) return fail(errc::parse_error, "front matter is not a mapping");
      front_matter out;
      out.fields = std::move(*fields);
      out.body = end == std::string_view::npos ? "" : std::string(text.substr(end + 1));
      return out;
    }
    if (end == std::string_view::npos)
      return fail(errc::parse_error, "the front matter is not closed by a '---' line");
    pos = end + 1;
  }
}

std::string yaml_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace lathe::skills
