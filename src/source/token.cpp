// The tokenizer of token.h. One forward pass over the bytes; conditional groups and bracket
// matching are tracked in the same pass so that a bracket opened in one `#if` branch and closed
// after the `#endif` pairs the way the compiler would see it.
#include "source/token.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>

#include "source/lex_chars.h"
#include "source/pp_expr.h"
#include "core/text.h"

namespace lathe::agent::rules {

using detail::eval_pp_condition;
using detail::is_blank;
using detail::is_digit;
using detail::is_ident_char;
using detail::is_ident_start;
using detail::splice_len;

namespace {

// End of a `//` comment starting at i: the first newline that is not spliced (a `//` comment
// ending in a backslash swallows the next line: a classic way to comment out code by accident).
size_t line_comment_end(std::string_view s, size_t i) {
  size_t j = i + 2;
  while (j < s.size()) {
    if (size_t sp = splice_len(s, j)) {
      j += sp;
      continue;
    }
    if (s[j] == '\n') break;
    ++j;
  }
  while (j > i && s[j - 1] == '\r') --j;
  return j;
}

// Longest match first. `<<<` and `>>>` are CUDA's launch brackets; `>>>` also closes three
// template argument lists, which the anchor layer sorts out (it needs the `<<<` to call it a
// launch). Digraphs are not recognised: `<:` would break `std::vector<::std::string>`.
constexpr std::array<std::string_view, 7> kPunct3 = {
    "<<<", ">>>", "<<=", ">>=", "->*", "...", "<=>"};
constexpr std::array<std::string_view, 22> kPunct2 = {
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*"};

bool is_string_prefix(std::string_view id) {
  return id == "u8" || id == "u" || id == "U" || id == "L";
}
bool is_raw_prefix(std::string_view id) {
  return id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR";
}
enum class tri : uint8_t { no, maybe, yes };

int rank(branch b) {
  return b == branch::active ? 0 : b == branch::conditional ? 1 : 2;
}

// One `#if … #endif` group being read.
struct cond_group {
  branch parent = branch::active;  // where the `#if` line itself lies
  tri taken = tri::no;             // whether an earlier branch of the group is (maybe) compiled
  bool seen_else = false;
  uint32_t line = 0;
  branch current = branch::active;  // the branch being read
  std::vector<int32_t> snapshot;    // open brackets at the `#if`: every branch starts from it
  // The branch whose bracket state continues after `#endif`: the most likely compiled one.
  bool have_chosen = false;
  branch chosen_where = branch::inactive;
  std::vector<int32_t> chosen_stack;
};

branch decide(branch parent, tri taken, tri cond) {
  if (parent == branch::inactive || taken == tri::yes || cond == tri::no) return branch::inactive;
  if (cond == tri::yes && taken == tri::no) return parent;
  return branch::conditional;
}

class lexer {
 public:
  explicit lexer(std::string_view s) : s_(s) { out_.source = s; }

  token_list run() {
    while (pos_ < s_.size()) step();
    for (int32_t open : stack_)
      error(out_.tokens[open].line, cat("'", out_.text(open), "' is never closed"));
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it)
      error(it->line, "#if without #endif");
    std::stable_sort(out_.errors.begin(), out_.errors.end(), [](const auto& a, const auto& b) {
      return line_of_message(a) < line_of_message(b);
    });
    return std::move(out_);
  }

 private:
  static long line_of_message(const std::string& m) {
    return std::strtol(m.c_str() + 5, nullptr, 10);
  }

  uint32_t line_at(size_t offset) {
    if (offset < line_pos_) line_pos_ = 0, line_ = 1;
    for (; line_pos_ < offset && line_pos_ < s_.size(); ++line_pos_)
      if (s_[line_pos_] == '\n') ++line_;
    return line_;
  }

  void error(uint32_t line, const std::string& what) {
    out_.errors.push_back(cat("line ", std::to_string(line), ": ", what));
  }

  branch where() const { return groups_.empty() ? branch::active : groups_.back().current; }

  size_t emit(token_kind kind, size_t begin, size_t end, branch w) {
    token t;
    t.kind = kind;
    t.begin = static_cast<uint32_t>(begin);
    t.end = static_cast<uint32_t>(end);
    t.line = line_at(begin);
    t.depth = static_cast<int32_t>(stack_.size());
    t.where = w;
    out_.tokens.push_back(t);
    if (kind != token_kind::comment) line_has_token_ = true;
    if (kind != token_kind::comment && kind != token_kind::preprocessor) seen_code_or_group_ = true;
    return out_.tokens.size() - 1;
  }

  void step() {
    const char c = s_[pos_];
    if (c == '\n') {
      line_has_token_ = false;
      ++pos_;
      return;
    }
    if (is_blank(c)) {
      ++pos_;
      return;
    }
    if (size_t sp = splice_len(s_, pos_)) {  // a spliced line continues the logical line
      pos_ += sp;
      return;
    }
    const char n = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    if (c == '/' && n == '/') {
      size_t end = line_comment_end(s_, pos_);
      emit(token_kind::comment, pos_, end, where());
      pos_ = end;
      return;
    }
    if (c == '/' && n == '*') {
      size_t close = s_.find("*/", pos_ + 2);
      size_t end = close == std::string_view::npos ? s_.size() : close + 2;
      size_t i = emit(token_kind::comment, pos_, end, where());
      if (close == std::string_view::npos) error(out_.tokens[i].line, "unterminated /* comment");
      pos_ = end;
      return;
    }
    if (c == '#' && !line_has_token_) return directive();
    if (is_digit(c) || (c == '.' && is_digit(n))) return number();
    if (is_ident_start(c)) return identifier();
    if (c == '"') return quoted(pos_, pos_, '"');
    if (c == '\'') return quoted(pos_, pos_, '\'');
    punct();
  }

  void identifier() {
    size_t j = pos_;
    while (j < s_.size() && is_ident_char(s_[j])) ++j;
    const std::string_view id = s_.substr(pos_, j - pos_);
    const char next = j < s_.size() ? s_[j] : '\0';
    if (next == '"' && is_raw_prefix(id)) return raw_string(pos_, j);
    if ((next == '"' || next == '\'') && is_string_prefix(id)) return quoted(pos_, j, next);
    emit(token_kind::identifier, pos_, j, where());
    pos_ = j;
  }

  // pp-number: digits, letters, `.`, digit separators (`'` before a digit or letter) and the
  // exponent signs e+ e- p+ p- (so `1e-3f` and `0x1p+4` are one token, as the standard says).
  void number() {
    size_t j = pos_ + 1;
    while (j < s_.size()) {
      const char c = s_[j];
      const char n = j + 1 < s_.size() ? s_[j + 1] : '\0';
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (n == '+' || n == '-')) {
        j += 2;
      } else if (is_ident_char(c) || c == '.') {
        ++j;
      } else if (c == '\'' && is_ident_char(n)) {
        j += 2;
      } else {
        break;
      }
    }
    emit(token_kind::number, pos_, j, where());
    pos_ = j;
  }

  // "…" or '…' (with an optional prefix from `begin`). Escapes skip one character; an
  // unescaped newline ends an unterminated literal there. In an inactive branch that is no
  // error: compilers skip the text of `#if 0` (where "don't" is common) without lexing literals.
  void quoted(size_t begin, size_t quote, char q) {
    size_t j = quote + 1;
    bool closed = false;
    while (j < s_.size()) {
      if (s_[j] == '\\') {
        size_t sp = splice_len(s_, j);
        j += sp ? sp : 2;
        continue;
      }
      if (s_[j] == q) {
        ++j;
        closed = true;
        break;
      }
      if (s_[j] == '\n') break;
      ++j;
    }
    j = std::min(j, s_.size());
    if (closed)
      while (j < s_.size() && is_ident_char(s_[j])) ++j;  // user-defined literal suffix: "x"sv
    else
      while (j > quote + 1 && s_[j - 1] == '\r') --j;
    const branch w = where();
    size_t i = emit(q == '"' ? token_kind::string : token_kind::character, begin, j, w);
    if (!closed && w != branch::inactive)
      error(out_.tokens[i].line,
            q == '"' ? "unterminated string literal" : "unterminated character literal");
    pos_ = j;
  }

  // R"delim( … )delim": no escapes, no splices, newlines allowed; the delimiter is at most 16
  // characters and has no blanks, parentheses or backslashes.
  void raw_string(size_t begin, size_t quote) {
    size_t j = quote + 1;
    while (j < s_.size() && j - quote - 1 <= 16 && s_[j] != '(' && !is_blank(s_[j]) &&
           s_[j] != '\n' && s_[j] != ')' && s_[j] != '\\' && s_[j] != '"')
      ++j;
    if (j >= s_.size() || s_[j] != '(' || j - quote - 1 > 16) {
      error(line_at(begin), "invalid raw string delimiter");
      return quoted(begin, quote, '"');
    }
    const std::string close = cat(")", s_.substr(quote + 1, j - quote - 1), "\"");
    size_t found = s_.find(close, j + 1);
    size_t end = found == std::string_view::npos ? s_.size() : found + close.size();
    if (found != std::string_view::npos)
      while (end < s_.size() && is_ident_char(s_[end])) ++end;
    size_t i = emit(token_kind::string, begin, end, where());
    if (found == std::string_view::npos) error(out_.tokens[i].line, "unterminated raw string");
    pos_ = end;
  }

  void punct() {
    size_t len = 1;
    const std::string_view rest = s_.substr(pos_);
    if (std::any_of(kPunct3.begin(), kPunct3.end(), [&](auto p) { return rest.starts_with(p); }))
      len = 3;
    else if (std::any_of(kPunct2.begin(), kPunct2.end(),
                         [&](auto p) { return rest.starts_with(p); }))
      len = 2;
    const char c = s_[pos_];
    const bool open = c == '(' || c == '[' || c == '{';
    const bool close = c == ')' || c == ']' || c == '}';
    if (close) return closer(c);
    size_t i = emit(token_kind::punct, pos_, pos_ + len, where());
    if (open) stack_.push_back(static_cast<int32_t>(i));
    pos_ += len;
  }

  void closer(char c) {
    const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
    auto opener = [&](int32_t i) { return s_[out_.tokens[i].begin]; };
    // Recovery: close the nearest matching opener, reporting what was left open above it; a
    // closer with no opener at all is reported and left unmatched.
    auto it =
        std::find_if(stack_.rbegin(), stack_.rend(), [&](int32_t i) { return opener(i) == want; });
    const uint32_t line = line_at(pos_);
    if (it == stack_.rend()) {
      error(line, cat("unmatched '", std::string(1, c), "'"));
      emit(token_kind::punct, pos_, pos_ + 1, where());
      ++pos_;
      return;
    }
    while (stack_.back() != *it) {
      const token& t = out_.tokens[stack_.back()];
      error(t.line, cat("'", out_.text(t), "' is not closed before '", std::string(1, c),
                        "' on line ", std::to_string(line)));
      stack_.pop_back();
    }
    const int32_t open = stack_.back();
    stack_.pop_back();
    size_t i = emit(token_kind::punct, pos_, pos_ + 1, where());
    out_.tokens[i].match = open;
    out_.tokens[open].match = static_cast<int32_t>(i);
    ++pos_;
  }

  // A directive runs to the end of its logical line. A /* comment */ inside it may span lines
  // and the directive goes on after it; quotes are skipped only when they close on the same
  // line, because `#error don't` is legal.
  void directive() {
    size_t j = pos_ + 1;
    while (j < s_.size()) {
      if (size_t sp = splice_len(s_, j)) {
        j += sp;
        continue;
      }
      const char c = s_[j];
      if (c == '\n') break;
      if (c == '/' && j + 1 < s_.size() && s_[j + 1] == '*') {
        size_t close = s_.find("*/", j + 2);
        if (close == std::string_view::npos) {
          error(line_at(j), "unterminated /* comment");
          j = s_.size();
          break;
        }
        j = close + 2;
        continue;
      }
      if (c == '/' && j + 1 < s_.size() && s_[j + 1] == '/') {
        j = line_comment_end(s_, j);
        break;
      }
      if (c == '"' || c == '\'') {
        size_t k = j + 1;
        while (k < s_.size() && s_[k] != c && s_[k] != '\n') k += s_[k] == '\\' ? 2 : 1;
        j = k < s_.size() && s_[k] == c ? k + 1 : j + 1;
        continue;
      }
      ++j;
    }
    j = std::min(j, s_.size());
    size_t end = j;
    while (end > pos_ + 1 && s_[end - 1] == '\r') --end;
    const std::string_view text = s_.substr(pos_, end - pos_);
    const std::string_view name = directive_name(text);
    // An include guard's #ifndef comes before any code and any other conditional (comments,
    // `#pragma once` and the like may precede it).
    const bool first = !seen_code_or_group_;
    if (name == "if" || name == "ifdef" || name == "ifndef") seen_code_or_group_ = true;
    const uint32_t line = line_at(pos_);
    branch w = where();
    if (name == "if" || name == "ifdef" || name == "ifndef") {
      tri cond = tri::maybe;
      if (name == "if") cond = eval(directive_body(text));
      if (name == "ifndef" && first && is_include_guard(directive_body(text), end)) cond = tri::yes;
      open_group(w, cond, line);
    } else if (name == "elif" || name == "elifdef" || name == "elifndef" || name == "else") {
      if (groups_.empty()) {
        error(line, cat("#", name, " without #if"));
      } else {
        w = groups_.back().parent;
        if (groups_.back().seen_else) error(line, cat("#", name, " after #else"));
        tri cond = name == "else"   ? tri::yes
                   : name == "elif" ? eval(directive_body(text))
                                    : tri::maybe;
        next_branch(cond, name == "else");
      }
    } else if (name == "endif") {
      if (groups_.empty()) {
        error(line, "#endif without #if");
      } else {
        w = groups_.back().parent;
        close_group();
      }
    }
    emit(token_kind::preprocessor, pos_, end, w);
    pos_ = j;
  }

  static tri eval(const std::string& body) {
    const std::optional<int64_t> v = eval_pp_condition(body);
    if (!v) return tri::maybe;
    return *v != 0 ? tri::yes : tri::no;
  }

  // `#ifndef X` / `#define X` as the very first lines: an include guard. Treating the whole
  // header as conditional would make every edit in it "conditional"; a guard is compiled once.
  bool is_include_guard(const std::string& name, size_t from) const {
    size_t j = from;
    while (j < s_.size()) {
      if (s_[j] == '\n' || is_blank(s_[j])) {
        ++j;
      } else if (s_.substr(j, 2) == "//") {
        j = line_comment_end(s_, j);
      } else if (s_.substr(j, 2) == "/*") {
        size_t close = s_.find("*/", j + 2);
        if (close == std::string_view::npos) return false;
        j = close + 2;
      } else {
        break;
      }
    }
    if (j >= s_.size() || s_[j] != '#') return false;
    size_t e = s_.find('\n', j);
    const std::string_view line = s_.substr(j, e == std::string_view::npos ? s_.npos : e - j);
    if (directive_name(line) != "define") return false;
    const std::string body = directive_body(line);
    return body == name || body.starts_with(cat(name, " "));
  }

  void open_group(branch parent, tri cond, uint32_t line) {
    cond_group g;
    g.parent = parent;
    g.line = line;
    g.snapshot = stack_;
    g.current = decide(parent, tri::no, cond);
    g.taken = cond;
    groups_.push_back(std::move(g));
  }

  void finish_branch(cond_group& g, branch where, std::vector<int32_t> end_stack) {
    if (!g.have_chosen || rank(where) < rank(g.chosen_where)) {
      g.have_chosen = true;
      g.chosen_where = where;
      g.chosen_stack = std::move(end_stack);
    }
  }

  void next_branch(tri cond, bool is_else) {
    cond_group& g = groups_.back();
    finish_branch(g, g.current, stack_);
    stack_ = g.snapshot;
    g.current = decide(g.parent, g.taken, cond);
    if (cond == tri::yes)
      g.taken = tri::yes;
    else if (cond == tri::maybe && g.taken == tri::no)
      g.taken = tri::maybe;
    if (is_else) g.seen_else = true;
  }

  void close_group() {
    cond_group& g = groups_.back();
    finish_branch(g, g.current, stack_);
    // Without #else the group has an empty implicit one, compiled when no branch is.
    if (!g.seen_else) finish_branch(g, decide(g.parent, g.taken, tri::yes), g.snapshot);
    stack_ = std::move(g.chosen_stack);
    groups_.pop_back();
  }

  std::string_view s_;
  size_t pos_ = 0;
  size_t line_pos_ = 0;
  uint32_t line_ = 1;
  bool line_has_token_ = false;  // a non-comment token on this logical line: `#` is no directive
  bool seen_code_or_group_ = false;
  token_list out_;
  std::vector<int32_t> stack_;  // open brackets (token indices)
  std::vector<cond_group> groups_;
};

}  // namespace

size_t token_list::next_code(size_t i) const {
  for (size_t j = i + 1; j < tokens.size(); ++j)
    if (tokens[j].kind != token_kind::comment) return j;
  return tokens.size();
}

long token_list::prev_code(size_t i) const {
  for (long j = static_cast<long>(i) - 1; j >= 0; --j)
    if (tokens[j].kind != token_kind::comment) return j;
  return -1;
}

bool in_asm(const token_list& tl, size_t i) {
  const auto ident = [&](long k, std::string_view name) {
    return tl.tokens[k].kind == token_kind::identifier && tl.text(k) == name;
  };
  for (long k = static_cast<long>(i) - 1; k >= 0; --k) {
    const token& t = tl.tokens[k];
    if (t.kind != token_kind::punct || tl.text(k) != "(" || t.match < static_cast<int32_t>(i))
      continue;
    long p = tl.prev_code(k);
    while (p >= 0 && (ident(p, "volatile") || ident(p, "__volatile__") || ident(p, "inline") ||
                      ident(p, "goto")))
      p = tl.prev_code(p);
    return p >= 0 && (ident(p, "asm") || ident(p, "__asm__") || ident(p, "__asm"));
  }
  return false;
}

token_list tokenize(std::string_view source) {
  return lexer(source).run();
}

branch branch_of_bytes(const token_list& tl, size_t begin, size_t end) {
  branch worst = branch::active;
  bool touched = false;
  long prev = -1;
  size_t next = tl.tokens.size();
  for (size_t i = 0; i < tl.tokens.size(); ++i) {
    const token& t = tl.tokens[i];
    if (t.end <= begin) prev = static_cast<long>(i);
    if (t.begin >= end && next == tl.tokens.size()) next = i;
    // An insertion point (begin == end) touches a token only strictly inside it.
    const bool overlaps =
        begin < end ? t.begin < end && t.end > begin : t.begin < begin && begin < t.end;
    if (!overlaps) continue;
    touched = true;
    if (rank(t.where) > rank(worst)) worst = t.where;
  }
  if (touched) return worst;
  if (prev < 0) return next < tl.tokens.size() ? tl.tokens[next].where : branch::active;
  const token& p = tl.tokens[prev];
  auto name = [&](const token& t) {
    return t.kind == token_kind::preprocessor ? directive_name(tl.text(t)) : std::string_view();
  };
  const std::string_view pn = name(p);
  const bool opens = pn == "if" || pn == "ifdef" || pn == "ifndef" || pn == "elif" ||
                     pn == "else" || pn == "elifdef" || pn == "elifndef";
  if (!opens) return p.where;
  if (next >= tl.tokens.size()) return branch::conditional;
  const std::string_view nn = name(tl.tokens[next]);
  if (nn == "endif" || nn == "else" || nn == "elif" || nn == "elifdef" || nn == "elifndef")
    return rank(p.where) >= rank(branch::inactive) ? branch::inactive : branch::conditional;
  return tl.tokens[next].where;
}

}  // namespace lathe::agent::rules
