#include <cstdint>
#include "core/expr.h"

#include <cctype>

namespace lathe {
namespace {

// Recursive descent over the grammar in expr.h. Every operation is checked: a cost model or a
// shape that overflows int64 must be refused, not wrapped into a plausible wrong number.
class parser {
 public:
  parser(std::string_view text, const std::map<std::string, int64_t>& symbols, bool logic)
      : text_(text), symbols_(symbols), logic_(logic) {}

  result<int64_t> parse() {
    auto v = top();
    if (!v) return v;
    skip_space();
    if (pos_ != text_.size()) return error_here("unexpected '" + std::string(1, text_[pos_]) + "'");
    return v;
  }

 private:
  // Nesting bound: expressions come from files, and unbounded recursion is a stack overflow.
  static constexpr int max_depth = 200;

  tl::unexpected<error> error_here(const std::string& what) const {
    return fail(errc::invalid_argument, "expression '" + std::string(text_) + "': " + what +
                                            " at column " + std::to_string(pos_ + 1));
  }
  tl::unexpected<error> overflow(const char* op) const {
    return fail(errc::invalid_argument,
                "expression '" + std::string(text_) + "': " + op + " overflows int64");
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool eat2(const char* two) {
    skip_space();
    if (text_.substr(pos_, 2) == two) {
      pos_ += 2;
      return true;
    }
    return false;
  }

  result<int64_t> top() { return logic_ ? disjunction() : expr(); }

  // Conditions (eval_condition only): || over && over ! over one comparison of two sums; each
  // a 0 or 1. Both sides are always evaluated: an error in either is never hidden.
  result<int64_t> disjunction() {
    auto lhs = conjunction();
    if (!lhs) return lhs;
    int64_t v = *lhs;
    while (eat2("||")) {
      auto rhs = conjunction();
      if (!rhs) return rhs;
      v = (v != 0 || *rhs != 0) ? 1 : 0;
    }
    return v;
  }
  result<int64_t> conjunction() {
    auto lhs = negation();
    if (!lhs) return lhs;
    int64_t v = *lhs;
    while (eat2("&&")) {
      auto rhs = negation();
      if (!rhs) return rhs;
      v = (v != 0 && *rhs != 0) ? 1 : 0;
    }
    return v;
  }
  result<int64_t> negation() {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '!' && text_.substr(pos_, 2) != "!=") {
      ++pos_;
      if (++depth_ > max_depth) return error_here("nesting deeper than 200");
      auto v = negation();
      --depth_;
      if (!v) return v;
      return *v == 0 ? 1 : 0;
    }
    return comparison();
  }
  result<int64_t> comparison() {
    auto lhs = expr();
    if (!lhs) return lhs;
    static constexpr const char* two[] = {"<=", ">=", "==", "!="};
    for (const char* op : two)
      if (eat2(op)) {
        auto rhs = expr();
        if (!rhs) return rhs;
        const int64_t a = *lhs, b = *rhs;
        const bool r = op[0] == '<' ? a <= b : op[0] == '>' ? a >= b : op[0] == '=' ? a == b : a != b;
        return r ? 1 : 0;
      }
    skip_space();
    if (pos_ < text_.size() && (text_[pos_] == '<' || text_[pos_] == '>')) {
      const char op = text_[pos_++];
      auto rhs = expr();
      if (!rhs) return rhs;
      return (op == '<' ? *lhs < *rhs : *lhs > *rhs) ? 1 : 0;
    }
    return lhs;
  }

  result<int64_t> expr() {
    auto lhs = term();
    if (!lhs) return lhs;
    int64_t v = *lhs;
    for (;;) {
      if (eat('+')) {
        auto rhs = term();
        if (!rhs) return rhs;
        if (__builtin_add_overflow(v, *rhs, &v)) return overflow("addition");
      } else if (eat('-')) {
        auto rhs = term();
        if (!rhs) return rhs;
        if (__builtin_sub_overflow(v, *rhs, &v)) return overflow("subtraction");
      } else {
        return v;
      }
    }
  }

  result<int64_t> term() {
    auto lhs = factor();
    if (!lhs) return lhs;
    int64_t v = *lhs;
    for (;;) {
      if (eat('*')) {
        auto rhs = factor();
        if (!rhs) return rhs;
        if (__builtin_mul_overflow(v, *rhs, &v)) return overflow("multiplication");
      } else if (eat('/')) {
        auto rhs = factor();
        if (!rhs) return rhs;
        if (*rhs == 0)
          return fail(errc::invalid_argument,
                      "expression '" + std::string(text_) + "': division by zero");
        if (v == INT64_MIN && *rhs == -1) return overflow("division");
        v /= *rhs;
      } else if (eat('%')) {
        auto rhs = factor();
        if (!rhs) return rhs;
        if (*rhs == 0)
          return fail(errc::invalid_argument,
                      "expression '" + std::string(text_) + "': remainder by zero");
        v = (v == INT64_MIN && *rhs == -1) ? 0 : v % *rhs;
      } else {
        return v;
      }
    }
  }

  result<int64_t> factor() {
    if (++depth_ > max_depth) return error_here("nesting deeper than 200");
    auto v = factor_inner();
    --depth_;
    return v;
  }

  result<int64_t> factor_inner() {
    skip_space();
    if (pos_ >= text_.size()) return error_here("unexpected end");
    const char c = text_[pos_];
    if (c == '-') {
      ++pos_;
      auto v = factor();
      if (!v) return v;
      if (*v == INT64_MIN) return overflow("negation");
      return -*v;
    }
    if (c == '(') {
      ++pos_;
      auto v = top();
      if (!v) return v;
      if (!eat(')')) return error_here("expected ')'");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{text_[pos_] - '0'}, &v))
          return overflow("integer literal");
        ++pos_;
      }
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      const std::string name(text_.substr(start, pos_ - start));
      auto it = symbols_.find(name);
      if (it == symbols_.end())
        return fail(errc::invalid_argument,
                    "expression '" + std::string(text_) + "': unknown symbol '" + name + "'");
      return it->second;
    }
    return error_here("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text_;
  const std::map<std::string, int64_t>& symbols_;
  bool logic_ = false;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

result<int64_t> eval_expr(std::string_view text, const std::map<std::string, int64_t>& symbols) {
  return parser(text, symbols, false).parse();
}

result<bool> eval_condition(std::string_view text, const std::map<std::string, int64_t>& symbols) {
  auto v = parser(text, symbols, true).parse();
  if (!v) return tl::unexpected(v.error());
  return *v != 0;
}

}  // namespace lathe
