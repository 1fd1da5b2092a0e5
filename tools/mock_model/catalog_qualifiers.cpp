// The catalog's qualifiers and intrinsics: restrict, read_only_load, launch_bounds, fast_math.
#include <algorithm>
#include <regex>
#include <set>

#include "catalog_detail.h"

namespace lathe::mock::detail {
namespace {

const char* pointee_types =
    R"((?:const\s+)?(?:float|double|int|int32_t|int64_t|uint32_t|unsigned|float2|float4|int4|__half|half|__nv_bfloat16))";

// The block size a kernel is launched with, when the launch names it plainly; else 1024, the
// largest block there is, which bounds any launch.
std::string launch_block(const mock_bundle& b, const std::string& kernel) {
  const std::regex site("\\b" + kernel + R"(\s*<<<([^;]*?)>>>)");
  for (const auto& [path, text] : b.files) {
    const source_view v(text);
    std::smatch m;
    const std::string& code = v.code();
    if (!std::regex_search(code, m, site)) continue;
    const std::string args = m[1];
    int depth = 0;
    std::vector<std::string> parts(1);
    for (char c : args) {
      if (c == '(' || c == '<' || c == '{')
        ++depth;
      else if (c == ')' || c == '>' || c == '}')
        --depth;
      if (c == ',' && depth == 0)
        parts.emplace_back();
      else
        parts.back().push_back(c);
    }
    if (parts.size() < 2) break;
    const std::string block = trim(parts[1]);
    if (std::regex_match(block, std::regex(R"([0-9]+)"))) return block;
    if (std::regex_match(block, std::regex(R"([A-Z][A-Z0-9_]*)")) &&
        std::regex_search(code, std::regex(R"(constexpr\s+(?:int|unsigned)\s+)" + block +
                                           R"(\s*=\s*[0-9]+\s*;)")))
      return block;
    break;
  }
  return "1024";
}

const std::pair<const char*, const char*> fast_intrinsics[] = {
    {"__expf", "expf"}, {"__logf", "logf"}, {"__sinf", "sinf"},
    {"__cosf", "cosf"}, {"__powf", "powf"}, {"__exp10f", "exp10f"}};

// Arguments of the call whose '(' is at `open`, split at top-level commas.
std::vector<std::string> call_args(const std::string& text, const std::string& code, size_t open,
                                   size_t close) {
  std::vector<std::string> out;
  int depth = 0;
  size_t from = open + 1;
  for (size_t i = open + 1; i < close; ++i) {
    if (code[i] == '(' || code[i] == '[')
      ++depth;
    else if (code[i] == ')' || code[i] == ']')
      --depth;
    else if (code[i] == ',' && depth == 0) {
      out.push_back(trim(std::string_view(text).substr(from, i - from)));
      from = i + 1;
    }
  }
  out.push_back(trim(std::string_view(text).substr(from, close - from)));
  return out;
}

}  // namespace

// ---- restrict ---------------------------------------------------------------------------------

void remove_restrict(const mock_bundle&, const std::string& path, const source_view& v,
                     const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  for (const auto& f : fns) {
    std::vector<splice> s;
    for (const char* kw : {"__restrict__", "__restrict", "restrict"})
      for (size_t at : find_words(code, kw, f.params_open, f.body_close)) {
        size_t b = at, e = at + std::string_view(kw).size();
        if (b > 0 && code[b - 1] == ' ')
          --b;
        else if (e < code.size() && code[e] == ' ')
          ++e;
        s.push_back({b, e, ""});
      }
    if (s.empty()) continue;
    out.push_back(make("restrict", "remove", path, f, nullptr,
                       "removed " + std::to_string(s.size()) + " __restrict__ qualifier" +
                           (s.size() > 1 ? "s" : "") + " in " + f.name + " (" +
                           where(path, v, f.params_open) + ")",
                       apply_splices(v.text(), s)));
  }
}

void add_restrict(const mock_bundle& b, const std::string& path, const source_view& v,
                  const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  const std::regex param(std::string(R"(^\s*)") + pointee_types + R"(\s*\*\s*([A-Za-z_]\w*)\s*$)");
  const std::regex local(std::string(R"((?:^|[;{])\s*)") + pointee_types +
                         R"((\s*\*)\s*[A-Za-z_]\w*\s*=[^=])");
  for (const auto& f : fns) {
    if (abi_helper(v, f)) continue;
    std::vector<splice> s;
    if (f.name != "lathe_launch") {
      // Parameters, split at top-level commas.
      size_t from = f.params_open + 1;
      int depth = 0;
      for (size_t i = f.params_open + 1; i <= f.params_close; ++i) {
        const char c = code[i];
        if (c == '(' || c == '<' || c == '[')
          ++depth;
        else if ((c == ')' || c == '>' || c == ']') && i != f.params_close)
          --depth;
        if ((c == ',' && depth == 0) || i == f.params_close) {
          const std::string p = code.substr(from, i - from);
          if (std::regex_match(p, param)) {
            const size_t star = from + p.rfind('*');
            s.push_back({star + 1, star + 1, " __restrict__"});
          }
          from = i + 1;
        }
      }
    }
    if (!f.global) {
      // Pointer locals of the body (a CPU kernel's views of its tensors).
      for (size_t l = v.line_of(f.body_open); l <= v.line_of(f.body_close); ++l) {
        const std::string line(v.code_line(l));
        std::smatch m;
        if (!std::regex_search(line, m, local)) continue;
        if (line.find("__restrict") != std::string::npos) continue;
        const size_t star = v.line_start(l) + static_cast<size_t>(m.position(1) + m.length(1));
        s.push_back({star, star, " __restrict__"});
      }
    }
    if (s.empty()) continue;
    out.push_back(make("restrict", "add", path, f, nullptr,
                       "declared " + std::to_string(s.size()) + " pointer" +
                           (s.size() > 1 ? "s" : "") + " of " + f.name + " __restrict__ (" +
                           where(path, v, f.params_open) + ")",
                       apply_splices(v.text(), s)));
  }
  (void)b;
}

// ---- read_only_load ---------------------------------------------------------------------------

void remove_ldg(const mock_bundle&, const std::string& path, const source_view& v,
                const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  for (const auto& f : fns) {
    std::vector<splice> s;
    for (size_t at : find_words(code, "__ldg", f.body_open, f.body_close)) {
      size_t open = at + 5;
      while (open < code.size() && code[open] == ' ') ++open;
      if (open >= code.size() || code[open] != '(') continue;
      const size_t close = match_close(code, open);
      if (close == std::string::npos) continue;
      const std::string arg = trim(std::string_view(v.text()).substr(open + 1, close - open - 1));
      // __ldg(&p[i]) -> p[i]; __ldg(p + i) -> *(p + i)
      const bool address = arg.starts_with("&") && arg.find_first_of("+-?", 1) == std::string::npos;
      s.push_back({at, close + 1, address ? arg.substr(1) : "*(" + arg + ")"});
    }
    if (s.empty()) continue;
    out.push_back(make("read_only_load", "remove", path, f, nullptr,
                       "turned " + std::to_string(s.size()) + " __ldg load" +
                           (s.size() > 1 ? "s" : "") + " of " + f.name + " into plain loads (" +
                           where(path, v, s.front().begin) + ")",
                       apply_splices(v.text(), s)));
  }
}

void add_ldg(const mock_bundle& b, const std::string& path, const source_view& v,
             const std::vector<function_span>& fns, std::vector<change>& out) {
  if (!b.cuda) return;
  const std::string& code = v.code();
  static const std::regex decl(
      R"(\bconst\s+(?:float|double|int|unsigned|uint32_t|int64_t|float2|float4|int2|int4)\s*\*\s*(?:__restrict__\s*)?([A-Za-z_]\w*)\s*[,)=])");
  for (const auto& f : fns) {
    if (!f.global && !f.device) continue;
    std::set<std::string> names;
    const std::string region = code.substr(f.params_open, f.body_close - f.params_open);
    for (auto it = std::sregex_iterator(region.begin(), region.end(), decl);
         it != std::sregex_iterator(); ++it)
      names.insert((*it)[1]);
    std::vector<splice> s;
    for (const auto& name : names)
      for (size_t at : find_words(code, name, f.body_open, f.body_close)) {
        size_t open = at + name.size();
        if (open >= code.size() || code[open] != '[') continue;
        const size_t close = match_close(code, open);
        if (close == std::string::npos) continue;
        size_t before = at;
        while (before > 0 && code[before - 1] == ' ') --before;
        if (before > 0 && (code[before - 1] == '&' || code[before - 1] == '.')) continue;
        size_t after = close + 1;
        while (after < code.size() && code[after] == ' ') ++after;
        const char a = after < code.size() ? code[after] : '\0';
        const char a2 = after + 1 < code.size() ? code[after + 1] : '\0';
        const bool store =
            (a == '=' && a2 != '=') ||
            (std::string_view("+-*/%&|^").find(a) != std::string_view::npos && a2 == '=') ||
            (a == '+' && a2 == '+') || (a == '-' && a2 == '-');
        if (store) continue;
        s.push_back({at, close + 1, "__ldg(&" + v.text().substr(at, close + 1 - at) + ")"});
      }
    if (s.empty()) continue;
    std::sort(s.begin(), s.end(),
              [](const splice& x, const splice& y) { return x.begin < y.begin; });
    out.push_back(make("read_only_load", "add", path, f, nullptr,
                       "routed " + std::to_string(s.size()) + " load" + (s.size() > 1 ? "s" : "") +
                           " of " + f.name + " through __ldg (" + where(path, v, s.front().begin) +
                           ")",
                       apply_splices(v.text(), s)));
  }
}

// ---- launch_bounds ----------------------------------------------------------------------------

void remove_bounds(const mock_bundle&, const std::string& path, const source_view& v,
                   const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  for (const auto& f : fns) {
    for (size_t at : find_words(code, "__launch_bounds__", f.head, f.params_open)) {
      size_t open = at + 17;
      while (open < code.size() && code[open] == ' ') ++open;
      if (open >= code.size() || code[open] != '(') continue;
      const size_t close = match_close(code, open);
      if (close == std::string::npos) continue;
      size_t b = at, e = close + 1;
      if (e < code.size() && code[e] == ' ')
        ++e;
      else if (b > 0 && code[b - 1] == ' ')
        --b;
      out.push_back(make("launch_bounds", "remove", path, f, nullptr,
                         "removed `" + v.text().substr(at, close + 1 - at) + "` from " + f.name +
                             " (" + where(path, v, at) + ")",
                         apply_splices(v.text(), {{b, e, ""}})));
    }
  }
}

void add_bounds(const mock_bundle& b, const std::string& path, const source_view& v,
                const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  for (const auto& f : fns) {
    if (!f.global || !find_words(code, "__launch_bounds__", f.head, f.params_open).empty())
      continue;
    size_t name = f.params_open;
    while (name > 0 && (code[name - 1] == ' ' || code[name - 1] == '\n')) --name;
    name -= f.name.size();
    const std::string bound = "__launch_bounds__(" + launch_block(b, f.name) + ")";
    out.push_back(
        make("launch_bounds", "add", path, f, nullptr,
             "declared " + f.name + " with `" + bound + "` (" + where(path, v, name) + ")",
             apply_splices(v.text(), {{name, name, bound + " "}})));
  }
}

// ---- fast_math --------------------------------------------------------------------------------

void remove_fast(const mock_bundle& b, const std::string& path, const source_view& v,
                 const std::vector<function_span>& fns, std::vector<change>& out) {
  const std::string& code = v.code();
  for (const auto& f : fns) {
    std::vector<splice> s;
    for (const auto& [fast, accurate] : fast_intrinsics)
      for (size_t at : find_words(code, fast, f.body_open, f.body_close))
        s.push_back({at, at + std::string_view(fast).size(), accurate});
    for (const char* special : {"__fdividef", "rsqrtf"})
      for (size_t at : find_words(code, special, f.body_open, f.body_close)) {
        size_t open = at + std::string_view(special).size();
        while (open < code.size() && code[open] == ' ') ++open;
        if (open >= code.size() || code[open] != '(') continue;
        const size_t close = match_close(code, open);
        if (close == std::string::npos) continue;
        const auto args = call_args(v.text(), code, open, close);
        if (std::string_view(special) == "__fdividef" && args.size() == 2)
          s.push_back({at, close + 1, "((" + args[0] + ") / (" + args[1] + "))"});
        else if (args.size() == 1)
          s.push_back({at, close + 1, "(1.0f / sqrtf(" + args[0] + "))"});
      }
    if (s.empty()) continue;
    std::sort(s.begin(), s.end(),
              [](const splice& x, const splice& y) { return x.begin < y.begin; });
    out.push_back(make("fast_math", "remove", path, f, nullptr,
                       "replaced " + std::to_string(s.size()) + " fast-math intrinsic call" +
                           (s.size() > 1 ? "s" : "") + " in " + f.name +
                           " with the accurate functions (" + where(path, v, s.front().begin) + ")",
                       apply_splices(v.text(), s)));
  }
  // The flag form: a change of flags only, reported once (for the entry file).
  if (path != b.entry) return;
  for (const char* flag : {"--use_fast_math", "-ffast-math"}) {
    if (!has_flag(b, flag)) continue;
    change c;
    c.feature = "fast_math";
    c.action = "remove_fast_math";
    const function_span* entry = nullptr;
    for (const auto& f : fns)
      if (f.global || f.name == "lathe_launch") entry = entry ? entry : &f;
    c.function = entry ? entry->name : "lathe_launch";
    c.locus = c.function;
    c.what = std::string("removed the compile flag ") + flag;
    c.flags.push_back({false, flag});
    out.push_back(std::move(c));
  }
}

void add_fast(const mock_bundle& b, const std::string& path, const source_view& v,
              const std::vector<function_span>& fns, std::vector<change>& out) {
  if (!b.cuda) return;  // on the CPU it is a flag, and tasks forbid it unless they allow it
  const std::string& code = v.code();
  for (const auto& f : fns) {
    if (!f.global && !f.device) continue;
    std::vector<splice> s;
    for (const auto& [fast, accurate] : fast_intrinsics)
      for (size_t at : find_words(code, accurate, f.body_open, f.body_close)) {
        size_t open = at + std::string_view(accurate).size();
        while (open < code.size() && code[open] == ' ') ++open;
        if (open < code.size() && code[open] == '(') s.push_back({at, at, "__"});
      }
    if (s.empty()) continue;
    std::sort(s.begin(), s.end(),
              [](const splice& x, const splice& y) { return x.begin < y.begin; });
    out.push_back(make("fast_math", "add", path, f, nullptr,
                       "switched " + std::to_string(s.size()) + " math call" +
                           (s.size() > 1 ? "s" : "") + " of " + f.name +
                           " to the fast intrinsics (" + where(path, v, s.front().begin) + ")",
                       apply_splices(v.text(), s)));
  }
}

}  // namespace lathe::mock::detail
