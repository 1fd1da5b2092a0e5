#include "py_chain.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>

#include "source.h"

namespace lathe::mock {
namespace {

struct token {
  enum class kind : uint8_t { name, number, text, op, end } k = kind::end;
  std::string s;  // a name may be dotted ("torch.nn.functional.gelu")
};

tl::expected<std::vector<token>, std::string> tokenize(const std::string& e) {
  static const std::regex number(R"(^(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)");
  std::vector<token> out;
  for (size_t i = 0; i < e.size();) {
    const char c = e[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < e.size() && (is_ident_char(e[j]) ||
                              (e[j] == '.' && j + 1 < e.size() &&
                               (std::isalpha(static_cast<unsigned char>(e[j + 1])) || e[j + 1] == '_'))))
        ++j;
      out.push_back({token::kind::name, e.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < e.size() && std::isdigit(static_cast<unsigned char>(e[i + 1])))) {
      std::smatch m;
      const std::string rest = e.substr(i);
      std::regex_search(rest, m, number);
      if (m.length(0) < static_cast<std::ptrdiff_t>(rest.size()) && (is_ident_char(rest[m.length(0)])))
        return tl::unexpected("a number the mock does not read: " + rest.substr(0, m.length(0) + 1));
      out.push_back({token::kind::number, m.str(0)});
      i += m.length(0);
    } else if (c == '\'' || c == '"') {
      const size_t j = e.find(c, i + 1);
      if (j == std::string::npos) return tl::unexpected(std::string("an unterminated string"));
      out.push_back({token::kind::text, e.substr(i + 1, j - i - 1)});
      i = j + 1;
    } else if (std::string_view("()+-*/,=.").find(c) != std::string_view::npos) {
      if ((c == '*' || c == '/') && i + 1 < e.size() && e[i + 1] == c)
        return tl::unexpected(std::string("the operator ") + c + c + ", which the mock does not fuse");
      out.push_back({token::kind::op, std::string(1, c)});
      ++i;
    } else {
      return tl::unexpected(std::string("the character '") + c + "', which the mock does not read");
    }
  }
  out.push_back({token::kind::end, ""});
  return out;
}

// The activation a function name reaches, or "" (torch.relu, F.relu, torch.nn.functional.relu…).
std::string activation(const std::string& name) {
  std::string n = name;
  for (const char* prefix : {"torch.nn.functional.", "nn.functional.", "functional.", "F.", "torch."})
    if (n.starts_with(prefix)) {
      n = n.substr(std::string_view(prefix).size());
      break;
    }
  for (const char* a : {"relu", "tanh", "sigmoid", "gelu", "leaky_relu"})
    if (n == a) return n;
  return "";
}

using node_result = tl::expected<chain_node, std::string>;

class parser {
 public:
  parser(const py_problem& p, std::map<std::string, chain_node>& locals, std::vector<token> t)
      : p_(p), locals_(locals), t_(std::move(t)) {}

  node_result whole() {
    auto n = expr();
    if (n && t_[at_].k != token::kind::end) return tl::unexpected("unexpected '" + t_[at_].s + "'");
    return n;
  }

 private:
  bool is_op(const char* s) const { return t_[at_].k == token::kind::op && t_[at_].s == s; }

  static chain_node binary(std::string op, chain_node l, chain_node r) {
    chain_node n;
    n.k = chain_node::kind::binary;
    n.text = std::move(op);
    n.tensor = l.tensor || r.tensor;
    n.args = {std::move(l), std::move(r)};
    return n;
  }

  node_result expr() {
    auto l = term();
    while (l && (is_op("+") || is_op("-"))) {
      const std::string op = t_[at_++].s;
      auto r = term();
      if (!r) return r;
      l = binary(op, std::move(*l), std::move(*r));
    }
    return l;
  }

  node_result term() {
    auto l = unary();
    while (l && (is_op("*") || is_op("/"))) {
      const std::string op = t_[at_++].s;
      auto r = unary();
      if (!r) return r;
      l = binary(op, std::move(*l), std::move(*r));
    }
    return l;
  }

  node_result unary() {
    if (is_op("+")) {
      ++at_;
      return unary();
    }
    if (is_op("-")) {
      ++at_;
      auto o = unary();
      if (!o) return o;
      chain_node n;
      n.k = chain_node::kind::negate;
      n.tensor = o->tensor;
      n.args = {std::move(*o)};
      return n;
    }
    return postfix();
  }

  // A method call on a value: (y * 2).relu(), torch.sigmoid(y).tanh().
  node_result postfix() {
    auto n = primary();
    while (n && is_op(".") && t_[at_ + 1].k == token::kind::name && t_[at_ + 2].k == token::kind::op &&
           t_[at_ + 2].s == "(" && t_[at_ + 3].k == token::kind::op && t_[at_ + 3].s == ")") {
      const std::string fn = activation("torch." + t_[at_ + 1].s);
      if (fn != "relu" && fn != "tanh" && fn != "sigmoid")
        return tl::unexpected("the method ." + t_[at_ + 1].s + "(), which the mock does not fuse");
      if (!n->tensor) return tl::unexpected("." + fn + "() on no tensor");
      at_ += 4;
      chain_node c;
      c.k = chain_node::kind::call;
      c.text = fn;
      c.tensor = true;
      c.args = {std::move(*n)};
      n = std::move(c);
    }
    return n;
  }

  struct call_args {
    std::vector<chain_node> positional;
    std::map<std::string, token> keywords;  // literals; an expression's is the op "expr"
    std::map<std::string, chain_node> values;  // the expressions
  };

  tl::expected<call_args, std::string> arguments() {
    call_args a;  // at_ is past '('
    while (!is_op(")")) {
      if (t_[at_].k == token::kind::name && t_[at_ + 1].k == token::kind::op && t_[at_ + 1].s == "=") {
        const std::string key = t_[at_].s;
        at_ += 2;
        const token& v = t_[at_];
        if (v.k == token::kind::text ||
            (v.k == token::kind::name && (v.s == "True" || v.s == "False" || v.s == "None"))) {
          a.keywords[key] = v;
          ++at_;
        } else {
          // A keyword whose value is an expression (negative_slope=self.slope, =0.2).
          auto e = expr();
          if (!e) return tl::unexpected(e.error());
          a.values[key] = std::move(*e);
          a.keywords[key] = {token::kind::op, "expr"};
        }
      } else {
        auto v = expr();
        if (!v) return tl::unexpected(v.error());
        a.positional.push_back(std::move(*v));
      }
      if (is_op(",")) ++at_;
      else if (!is_op(")")) return tl::unexpected("unexpected '" + t_[at_].s + "' in a call");
    }
    ++at_;
    return a;
  }

  node_result number_of(const call_args& a, const std::string& key, size_t pos, const char* def) {
    if (a.positional.size() > pos) return a.positional[pos];
    chain_node n;
    n.k = chain_node::kind::number;
    n.text = def;
    if (auto it = a.keywords.find(key); it != a.keywords.end()) {
      if (it->second.k == token::kind::op) return a.values.at(key);
      return tl::unexpected(key + "=" + it->second.s + ", which the mock does not read");
    }
    return n;
  }

  node_result call(const std::string& name) {
    auto a = arguments();
    if (!a) return tl::unexpected(a.error());
    if (name.starts_with("self.")) {
      const std::string attr = name.substr(5);
      const auto it = p_.attributes.find(attr);
      if (it == p_.attributes.end() || it->second != attribute_kind::linear)
        return tl::unexpected("forward calls " + name + ", which is not an nn.Linear the mock keeps");
      if (a->positional.size() != 1 || !a->keywords.empty() ||
          a->positional[0].k != chain_node::kind::base || !a->positional[0].text.empty())
        return tl::unexpected("forward applies " + name + " to something other than its input " + p_.input);
      chain_node n;
      n.k = chain_node::kind::base;
      n.text = attr;
      n.tensor = true;
      return n;
    }
    // A method on a tensor: x.relu(), y.tanh().
    std::string fn = activation(name), receiver;
    if (const auto dot = name.find('.'); dot != std::string::npos && locals_.count(name.substr(0, dot))) {
      receiver = name.substr(0, dot);
      fn = activation("torch." + name.substr(dot + 1));
      if (fn != "relu" && fn != "tanh" && fn != "sigmoid") fn.clear();
    }
    if (fn.empty()) return tl::unexpected("forward calls " + name + ", which the mock does not fuse");
    if (!receiver.empty()) {
      if (!a->positional.empty() || !a->keywords.empty())
        return tl::unexpected(name + "() with arguments, which the mock does not read");
      a->positional.insert(a->positional.begin(), locals_.at(receiver));
    }
    for (const auto& [key, value] : a->keywords)
      if (key != "inplace" && key != "approximate" && key != "negative_slope")
        return tl::unexpected(name + "(" + key + "=…), which the mock does not read");
    if (a->positional.empty() || !a->positional[0].tensor)
      return tl::unexpected(name + " on no tensor");
    chain_node n;
    n.k = chain_node::kind::call;
    n.tensor = true;
    n.text = fn;
    n.args = {a->positional[0]};
    if (fn == "gelu") {
      if (auto it = a->keywords.find("approximate"); it != a->keywords.end()) {
        if (it->second.s == "tanh") n.text = "gelu_tanh";
        else if (it->second.s != "none") return tl::unexpected("gelu(approximate='" + it->second.s + "')");
      }
    } else if (fn == "leaky_relu") {
      auto slope = number_of(*a, "negative_slope", 1, "0.01");
      if (!slope) return slope;
      if (slope->tensor) return tl::unexpected(std::string("leaky_relu with a tensor slope"));
      n.args.push_back(std::move(*slope));
    }
    const size_t allowed = fn == "leaky_relu" ? 2 : 1;
    if (a->positional.size() > allowed) return tl::unexpected(name + " with more arguments than the mock reads");
    return n;
  }

  node_result primary() {
    const token t = t_[at_];
    if (t.k == token::kind::number) {
      ++at_;
      chain_node n;
      n.k = chain_node::kind::number;
      n.text = t.s;
      return n;
    }
    if (is_op("(")) {
      ++at_;
      auto n = expr();
      if (!n) return n;
      if (!is_op(")")) return tl::unexpected(std::string("an unclosed '('"));
      ++at_;
      return n;
    }
    if (t.k != token::kind::name) return tl::unexpected("unexpected '" + t.s + "'");
    ++at_;
    if (is_op("(")) {
      ++at_;
      return call(t.s);
    }
    if (const auto it = locals_.find(t.s); it != locals_.end()) return it->second;
    if (t.s.starts_with("self.") && t.s.find('.', 5) == std::string::npos) {
      const std::string attr = t.s.substr(5);
      const auto it = p_.attributes.find(attr);
      if (it == p_.attributes.end()) return tl::unexpected("forward reads " + t.s + ", which __init__ does not set");
      if (it->second != attribute_kind::value)
        return tl::unexpected("forward reads " + t.s + " (a module or a tensor) as a value");
      chain_node n;
      n.k = chain_node::kind::attribute;
      n.text = attr;
      return n;
    }
    return tl::unexpected("forward reads " + t.s + ", which the mock does not fuse");
  }

  const py_problem& p_;
  std::map<std::string, chain_node>& locals_;
  std::vector<token> t_;
  size_t at_ = 0;
};

void collect(const chain_node& n, std::vector<std::string>& bases, std::vector<std::string>& scalars,
             bool& computes) {
  if (n.k == chain_node::kind::base) bases.push_back(n.text);
  if (n.k == chain_node::kind::attribute &&
      std::find(scalars.begin(), scalars.end(), n.text) == scalars.end())
    scalars.push_back(n.text);
  if (n.tensor && n.k != chain_node::kind::base) computes = true;
  for (const auto& a : n.args) collect(a, bases, scalars, computes);
}

}  // namespace

tl::expected<fused_chain, std::string> read_chain(const py_problem& p) {
  std::map<std::string, chain_node> locals;
  chain_node input;
  input.tensor = true;
  locals[p.input] = input;
  static const std::regex assign(R"(^([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$)");
  for (const auto& s : p.forward_body) {
    std::string target, rhs;
    std::smatch m;
    if (s.starts_with("return ") || s.starts_with("return(")) {
      rhs = s.substr(6);
    } else if (std::regex_match(s, m, assign)) {
      target = m[1];
      rhs = m[2];
    } else {
      return tl::unexpected("forward's statement `" + s + "`, which the mock does not fuse");
    }
    auto tokens = tokenize(rhs);
    if (!tokens) return tl::unexpected(tokens.error());
    auto n = parser(p, locals, std::move(*tokens)).whole();
    if (!n) return tl::unexpected(n.error());
    if (!target.empty()) {
      locals[target] = std::move(*n);
      continue;
    }
    fused_chain c;
    std::vector<std::string> bases;
    bool computes = false;
    collect(*n, bases, c.scalars, computes);
    if (!n->tensor) return tl::unexpected(std::string("forward returns no tensor"));
    if (!computes)
      return tl::unexpected("forward returns " + std::string(bases.front().empty() ? "its input" : "the Linear's output") +
                            " unchanged: no elementwise work to fuse");
    for (const auto& b : bases)
      if (b != bases.front())
        return tl::unexpected(std::string("forward combines its input with a Linear's output: the mock fuses a chain over one tensor"));
    c.linear = bases.front();
    c.expr = std::move(*n);
    return c;
  }
  return tl::unexpected(std::string("forward has no return the mock reads"));
}

std::string describe(const chain_node& n, const std::string& base) {
  switch (n.k) {
    case chain_node::kind::base: return base;
    case chain_node::kind::number: return n.text;
    case chain_node::kind::attribute: return "self." + n.text;
    case chain_node::kind::negate: return "-" + describe(n.args[0], base);
    case chain_node::kind::binary:
      return "(" + describe(n.args[0], base) + " " + n.text + " " + describe(n.args[1], base) + ")";
    case chain_node::kind::call: {
      std::string s = n.text + "(" + describe(n.args[0], base);
      for (size_t i = 1; i < n.args.size(); ++i) s += ", " + describe(n.args[i], base);
      return s + ")";
    }
  }
  return "";
}

}  // namespace lathe::mock
