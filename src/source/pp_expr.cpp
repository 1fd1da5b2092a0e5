// The `#if` condition evaluator of pp_expr.h: a small lexer and a recursive-descent parser over
// integers, `true`/`false` and the C operators.
#include "source/pp_expr.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "source/lex_chars.h"

namespace lathe::agent::rules::detail {

namespace {

class pp_eval {
 public:
  explicit pp_eval(std::string_view s) : s_(s) {}

  std::optional<int64_t> run() {
    lex();
    std::optional<int64_t> v = ternary();
    if (!ok_ || i_ != toks_.size()) return std::nullopt;
    return v;
  }

 private:
  using val = std::optional<int64_t>;
  struct tok {
    bool number = false, ident = false;
    std::string_view text;
    val value;
  };

  void lex() {
    size_t j = 0;
    while (j < s_.size()) {
      const char c = s_[j];
      if (is_blank(c) || c == '\n') {
        ++j;
      } else if (is_digit(c)) {
        size_t b = j;
        while (j < s_.size() && (is_ident_char(s_[j]) || s_[j] == '\'' || s_[j] == '.')) ++j;
        toks_.push_back({true, false, s_.substr(b, j - b), parse_number(s_.substr(b, j - b))});
      } else if (is_ident_start(c)) {
        size_t b = j;
        while (j < s_.size() && is_ident_char(s_[j])) ++j;
        toks_.push_back({false, true, s_.substr(b, j - b), std::nullopt});
      } else if (c == '\'') {
        size_t b = j++;
        while (j < s_.size() && s_[j] != '\'') j += s_[j] == '\\' ? 2 : 1;
        j = std::min(j + 1, s_.size());
        const std::string_view lit = s_.substr(b, j - b);
        val v;
        if (lit.size() == 3) v = static_cast<unsigned char>(lit[1]);
        toks_.push_back({true, false, lit, v});
      } else {
        static constexpr std::array<std::string_view, 8> ops = {
            "&&", "||", "==", "!=", "<=", ">=", "<<", ">>"};
        size_t len =
            std::any_of(ops.begin(), ops.end(), [&](auto o) { return s_.substr(j).starts_with(o); })
                ? 2
                : 1;
        toks_.push_back({false, false, s_.substr(j, len), std::nullopt});
        j += len;
      }
    }
  }

  static val parse_number(std::string_view t) {
    std::string digits;
    for (char c : t)
      if (c != '\'') digits += c;
    while (!digits.empty() && std::string_view("uUlLzZ").find(digits.back()) != std::string::npos)
      digits.pop_back();
    int base = 10;
    size_t at = 0;
    if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
      base = 16, at = 2;
    else if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B'))
      base = 2, at = 2;
    else if (digits.size() > 1 && digits[0] == '0')
      base = 8, at = 1;
    if (at >= digits.size()) return base == 8 ? val(0) : std::nullopt;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(digits.c_str() + at, &end, base);
    if (end != digits.c_str() + digits.size()) return std::nullopt;  // 1.5, 1e3: not integers
    return static_cast<int64_t>(v);
  }

  bool at(std::string_view op) const {
    return i_ < toks_.size() && !toks_[i_].number && !toks_[i_].ident && toks_[i_].text == op;
  }
  bool eat(std::string_view op) {
    if (!at(op)) return false;
    ++i_;
    return true;
  }

  val ternary() {
    val c = lor();
    if (!eat("?")) return c;
    val a = ternary();
    if (!eat(":")) ok_ = false;
    val b = ternary();
    if (c) return *c != 0 ? a : b;
    return a && b && *a == *b ? a : std::nullopt;
  }

  val lor() {
    val a = land();
    while (eat("||")) {
      val b = land();
      if ((a && *a != 0) || (b && *b != 0))
        a = 1;
      else if (a && b)
        a = 0;
      else
        a = std::nullopt;
    }
    return a;
  }

  val land() {
    val a = binary(0);
    while (eat("&&")) {
      val b = binary(0);
      if ((a && *a == 0) || (b && *b == 0))
        a = 0;
      else if (a && b)
        a = 1;
      else
        a = std::nullopt;
    }
    return a;
  }

  // Binary operators by precedence level, loosest first.
  static constexpr std::array<std::array<std::string_view, 4>, 8> kLevels = {{
      {"|", "", "", ""},
      {"^", "", "", ""},
      {"&", "", "", ""},
      {"==", "!=", "", ""},
      {"<", ">", "<=", ">="},
      {"<<", ">>", "", ""},
      {"+", "-", "", ""},
      {"*", "/", "%", ""},
  }};

  val binary(size_t level) {
    if (level == kLevels.size()) return unary();
    val a = binary(level + 1);
    for (;;) {
      std::string_view op;
      for (std::string_view o : kLevels[level])
        if (!o.empty() && at(o)) op = o;
      if (op.empty()) return a;
      ++i_;
      val b = binary(level + 1);
      a = (a && b) ? apply(op, *a, *b) : std::nullopt;
    }
  }

  static val apply(std::string_view op, int64_t a, int64_t b) {
    // Wrap-around arithmetic through uint64_t, as the preprocessor's intmax_t would, without UB.
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    if (op == "|") return static_cast<int64_t>(ua | ub);
    if (op == "^") return static_cast<int64_t>(ua ^ ub);
    if (op == "&") return static_cast<int64_t>(ua & ub);
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    if (op == "<") return a < b;
    if (op == ">") return a > b;
    if (op == "<=") return a <= b;
    if (op == ">=") return a >= b;
    if (op == "<<") return b < 0 || b > 63 ? val() : static_cast<int64_t>(ua << b);
    if (op == ">>") return b < 0 || b > 63 ? val() : a >> b;
    if (op == "+") return static_cast<int64_t>(ua + ub);
    if (op == "-") return static_cast<int64_t>(ua - ub);
    if (op == "*") return static_cast<int64_t>(ua * ub);
    if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
    return op == "/" ? a / b : a % b;
  }

  val unary() {
    if (eat("!")) {
      val v = unary();
      return v ? val(*v == 0) : v;
    }
    if (eat("~")) {
      val v = unary();
      return v ? val(static_cast<int64_t>(~static_cast<uint64_t>(*v))) : v;
    }
    if (eat("-")) {
      val v = unary();
      return v ? val(static_cast<int64_t>(0 - static_cast<uint64_t>(*v))) : v;
    }
    if (eat("+")) return unary();
    return primary();
  }

  void skip_parens() {
    int depth = 0;
    do {
      if (at("(")) ++depth;
      if (at(")")) --depth;
      ++i_;
    } while (depth > 0 && i_ < toks_.size());
    if (depth > 0) ok_ = false;
  }

  val primary() {
    if (i_ >= toks_.size()) {
      ok_ = false;
      return std::nullopt;
    }
    if (eat("(")) {
      val v = ternary();
      if (!eat(")")) ok_ = false;
      return v;
    }
    const tok& t = toks_[i_];
    if (t.number) {
      ++i_;
      return t.value;
    }
    if (!t.ident) {
      ok_ = false;
      return std::nullopt;
    }
    ++i_;
    if (t.text == "defined") {  // defined X, defined(X): the command line decides
      if (at("("))
        skip_parens();
      else if (i_ < toks_.size())
        ++i_;
      return std::nullopt;
    }
    if (t.text == "true") return 1;
    if (t.text == "false") return 0;
    if (at("(")) skip_parens();  // __has_include(…), a function-like macro
    return std::nullopt;
  }

  std::string_view s_;
  std::vector<tok> toks_;
  size_t i_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<int64_t> eval_pp_condition(std::string_view body) {
  return pp_eval(body).run();
}

}  // namespace lathe::agent::rules::detail
