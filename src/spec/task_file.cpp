// task.toml (docs/tasks.md). Strict: a misspelt key, a wrong type or a shape that cannot be
// allocated is an error naming the file, the line and the field, because a typo that passes
// silently becomes a task that checks something else than its author meant.
#include <cstdint>
#include "spec/task_file.h"

#include "spec/problem.h"
#include "spec/toml_read.h"

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include <cctype>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

namespace lathe {
namespace {

namespace fs = std::filesystem;

using detail::is_identifier;
using detail::line_of;

const char* type_name(const toml::node& n) {
  if (n.is_string()) return "a string";
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a float";
  if (n.is_boolean()) return "a boolean";
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a date/time";
}

// Reads one task.toml; every error is "file:line: context: what".
class task_reader {
 public:
  explicit task_reader(std::string file) : file_(std::move(file)) {}

  tl::unexpected<error> err(uint32_t line, const std::string& ctx, const std::string& what) const {
    std::string m = file_ + ":" + std::to_string(line) + ": ";
    if (!ctx.empty()) m += ctx + ": ";
    return fail(errc::parse_error, m + what);
  }

  // Every key of `t` must be in `allowed`.
  result<void> check_keys(const toml::table& t, std::initializer_list<std::string_view> allowed,
                          const std::string& ctx) const {
    for (const auto& [k, v] : t) {
      bool ok = false;
      for (auto a : allowed) ok = ok || a == k.str();
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return err(line_of(v), ctx,
                   "unknown key '" + std::string(k.str()) + "' (expected one of: " + list + ")");
      }
    }
    return {};
  }

  result<std::optional<std::string>> str(const toml::table& t, std::string_view key,
                                         const std::string& ctx, bool required) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (required)
        return err(line_of(t), ctx, "missing required field '" + std::string(key) + "'");
      return std::optional<std::string>{};
    }
    if (!n->is_string())
      return err(line_of(*n), ctx,
                 "'" + std::string(key) + "' must be a string, not " + type_name(*n));
    return std::optional<std::string>{n->as_string()->get()};
  }

  result<double> number(const toml::node& n, const std::string& ctx,
                        const std::string& field) const {
    double v;
    if (n.is_integer())
      v = static_cast<double>(n.as_integer()->get());
    else if (n.is_floating_point())
      v = n.as_floating_point()->get();
    else
      return err(line_of(n), ctx, "'" + field + "' must be a number, not " + type_name(n));
    if (!std::isfinite(v)) return err(line_of(n), ctx, "'" + field + "' must be finite");
    return v;
  }

  result<std::optional<double>> opt_number(const toml::table& t, std::string_view key,
                                           const std::string& ctx) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return std::optional<double>{};
    auto v = number(*n, ctx, std::string(key));
    if (!v) return tl::unexpected(v.error());
    return std::optional<double>{*v};
  }

  result<std::optional<bool>> boolean(const toml::table& t, std::string_view key,
                                      const std::string& ctx) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return std::optional<bool>{};
    if (!n->is_boolean())
      return err(line_of(*n), ctx,
                 "'" + std::string(key) + "' must be true or false, not " + type_name(*n));
    return std::optional<bool>{n->as_boolean()->get()};
  }

  result<std::vector<std::string>> str_array(const toml::table& t, std::string_view key,
                                             const std::string& ctx) const {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (n == nullptr) return out;
    if (!n->is_array())
      return err(line_of(*n), ctx, "'" + std::string(key) + "' must be an array of strings");
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_string())
        return err(line_of(e), ctx,
                   "'" + std::string(key) + "' must hold strings, not " + type_name(e));
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  result<std::vector<double>> num_array(const toml::table& t, std::string_view key,
                                        const std::string& ctx) const {
    std::vector<double> out;
    const toml::node* n = t.get(key);
    if (n == nullptr) return out;
    if (!n->is_array())
      return err(line_of(*n), ctx, "'" + std::string(key) + "' must be an array of numbers");
    for (const toml::node& e : *n->as_array()) {
      auto v = number(e, ctx, std::string(key));
      if (!v) return tl::unexpected(v.error());
      out.push_back(*v);
    }
    return out;
  }

  // The tables of an array of tables ([[input]]); absent -> empty.
  result<std::vector<const toml::table*>> tables(const toml::table& t, std::string_view key) const {
    std::vector<const toml::table*> out;
    const toml::node* n = t.get(key);
    if (n == nullptr) return out;
    if (!n->is_array_of_tables())
      return err(
          line_of(*n), "",
          "'" + std::string(key) + "' must be an array of tables ([[" + std::string(key) + "]])");
    for (const toml::node& e : *n->as_array()) out.push_back(e.as_table());
    return out;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

#define LATHE_TRY(var, expr) \
  auto var = (expr);         \
  if (!var) return tl::unexpected(var.error())

result<distribution> read_distribution(const task_reader& r, const toml::node& n,
                                       const std::string& ctx) {
  if (!n.is_table()) return r.err(line_of(n), ctx, "'distribution' must be a table");
  const toml::table& t = *n.as_table();
  const std::string dctx = ctx + ": distribution";
  LATHE_TRY(kind, r.str(t, "kind", dctx, true));
  distribution d;
  auto number_or = [&](std::string_view key, double& out) -> result<void> {
    LATHE_TRY(v, r.opt_number(t, key, dctx));
    if (*v) out = **v;
    return {};
  };
  if (*kind == "uniform" || *kind == "integers") {
    d.kind = *kind == "uniform" ? distribution_kind::uniform : distribution_kind::integers;
    LATHE_TRY(keys, r.check_keys(t, {"kind", "low", "high"}, dctx));
    LATHE_TRY(lo, number_or("low", d.low));
    LATHE_TRY(hi, number_or("high", d.high));
    if (d.kind == distribution_kind::uniform && !(d.low < d.high))
      return r.err(line_of(n), dctx, "uniform needs low < high");
    if (d.kind == distribution_kind::integers) {
      // Whole numbers that fp64 holds exactly, so every integer in [low, high] can be drawn.
      const double limit = 9007199254740992.0;
      if (d.low != std::floor(d.low) || d.high != std::floor(d.high) || std::fabs(d.low) > limit ||
          std::fabs(d.high) > limit)
        return r.err(line_of(n), dctx, "integers needs whole numbers low and high (|x| <= 2^53)");
      if (d.low > d.high) return r.err(line_of(n), dctx, "integers needs low <= high");
    }
  } else if (*kind == "normal") {
    d.kind = distribution_kind::normal;
    LATHE_TRY(keys, r.check_keys(t, {"kind", "mean", "stddev"}, dctx));
    LATHE_TRY(m, number_or("mean", d.mean));
    LATHE_TRY(s, number_or("stddev", d.stddev));
    if (d.stddev < 0) return r.err(line_of(n), dctx, "normal needs stddev >= 0");
  } else if (*kind == "constant") {
    d.kind = distribution_kind::constant;
    LATHE_TRY(keys, r.check_keys(t, {"kind", "value"}, dctx));
    if (t.get("value") == nullptr) return r.err(line_of(n), dctx, "missing required field 'value'");
    LATHE_TRY(v, number_or("value", d.value));
  } else {
    return r.err(line_of(*t.get("kind")), dctx,
                 "unknown kind '" + **kind + "' (uniform | normal | integers | constant)");
  }
  return d;
}

result<tensor_spec> read_tensor(const task_reader& r, const toml::table& t, bool input,
                                size_t index) {
  const std::string what = input ? "input" : "output";
  std::string ctx = what + " #" + std::to_string(index + 1);
  LATHE_TRY(name, r.str(t, "name", ctx, true));
  tensor_spec s;
  s.name = **name;
  ctx = what + " '" + s.name + "'";
  if (input) {
    LATHE_TRY(keys, r.check_keys(t, {"name", "dtype", "shape", "distribution"}, ctx));
  } else {
    LATHE_TRY(keys, r.check_keys(t, {"name", "dtype", "shape"}, ctx));
  }
  LATHE_TRY(dt, r.str(t, "dtype", ctx, true));
  auto type = parse_dtype(**dt);
  if (!type) return r.err(line_of(*t.get("dtype")), ctx, "unknown dtype '" + **dt + "'");
  s.type = *type;
  const toml::node* shape = t.get("shape");
  if (shape == nullptr) return r.err(line_of(t), ctx, "missing required field 'shape'");
  if (!shape->is_array())
    return r.err(line_of(*shape), ctx, "'shape' must be an array of integers and symbol names");
  for (const toml::node& e : *shape->as_array()) {
    dim d;
    if (e.is_integer()) {
      d.value = e.as_integer()->get();
      if (d.value < 0)
        return r.err(line_of(e), ctx, "shape: negative dimension " + std::to_string(d.value));
    } else if (e.is_string() && is_identifier(e.as_string()->get())) {
      d.symbol = e.as_string()->get();
    } else {
      return r.err(
          line_of(e), ctx,
          "shape: expected an integer or a symbol name, not " +
              (e.is_string() ? "'" + e.as_string()->get() + "'" : std::string(type_name(e))));
    }
    s.shape.push_back(std::move(d));
  }
  if (const toml::node* n = t.get("distribution")) {
    LATHE_TRY(d, read_distribution(r, *n, ctx));
    s.dist = *d;
  }
  return s;
}

result<shape_set> read_shape_set(const task_reader& r, const toml::table& t, size_t index) {
  std::string ctx = "shape set #" + std::to_string(index + 1);
  LATHE_TRY(name, r.str(t, "name", ctx, true));
  shape_set s;
  s.name = **name;
  ctx = "shape set '" + s.name + "'";
  LATHE_TRY(time, r.boolean(t, "time", ctx));
  s.time = time->value_or(false);
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "name" || key == "time") continue;
    // Any other key binds a symbol, so a misspelt "time" shows up here as a bad symbol.
    if (!is_identifier(key)) return r.err(line_of(v), ctx, "'" + key + "' is not a symbol name");
    if (!v.is_integer() || v.as_integer()->get() < 0)
      return r.err(
          line_of(v), ctx,
          "symbol '" + key + "' must be a non-negative integer, not " +
              (v.is_integer() ? std::to_string(v.as_integer()->get()) : std::string(type_name(v))) +
              (v.is_boolean() ? " (only 'time' takes true or false)" : ""));
    s.symbols[key] = v.as_integer()->get();
  }
  return s;
}

result<void> read_sections(const task_reader& r, const toml::table& root, task& t) {
  if (const toml::node* n = root.get("perturbations")) {
    if (!n->is_table()) return r.err(line_of(*n), "", "'perturbations' must be a table");
    const toml::table& p = *n->as_table();
    LATHE_TRY(keys, r.check_keys(p, {"scale", "shift"}, "perturbations"));
    LATHE_TRY(scale, r.num_array(p, "scale", "perturbations"));
    LATHE_TRY(shift, r.num_array(p, "shift", "perturbations"));
    for (double s : *scale)
      if (s == 0.0)
        return r.err(line_of(*p.get("scale")), "perturbations", "'scale' must not hold 0");
    t.perturb.scale = *scale;
    t.perturb.shift = *shift;
  }
  if (const toml::node* n = root.get("comparison")) {
    if (!n->is_table()) return r.err(line_of(*n), "", "'comparison' must be a table");
    const toml::table& c = *n->as_table();
    LATHE_TRY(keys, r.check_keys(c, {"kind", "rtol", "atol", "nerr"}, "comparison"));
    LATHE_TRY(kind, r.str(c, "kind", "comparison", false));
    if (*kind) {
      if (**kind == "elementwise")
        t.compare.kind = comparison_kind::elementwise;
      else if (**kind == "sorted_set")
        t.compare.kind = comparison_kind::sorted_set;
      else if (**kind == "topk")
        t.compare.kind = comparison_kind::topk;
      else
        return r.err(line_of(*c.get("kind")), "comparison",
                     "unknown kind '" + **kind + "' (elementwise | sorted_set | topk)");
      // Outputs are known here: a task's [[output]] tables are read before this section, a
      // wrapper's come from its problem.
      if (std::string why = comparison_misfit(t); !why.empty())
        return r.err(line_of(*c.get("kind")), "comparison", why);
    }
    for (auto [key, slot] :
         {std::pair{"rtol", &t.compare.tol.rtol}, std::pair{"atol", &t.compare.tol.atol},
          std::pair{"nerr", &t.compare.tol.nerr}}) {
      LATHE_TRY(v, r.opt_number(c, key, "comparison"));
      if (*v && **v < 0)
        return r.err(line_of(*c.get(key)), "comparison", std::string("'") + key + "' must be >= 0");
      *slot = *v;
    }
  }
  if (const toml::node* n = root.get("cost")) {
    if (!n->is_table()) return r.err(line_of(*n), "", "'cost' must be a table");
    const toml::table& c = *n->as_table();
    LATHE_TRY(keys, r.check_keys(c, {"flops", "bytes"}, "cost"));
    for (auto [key, slot] :
         {std::pair{"flops", &t.cost.flops}, std::pair{"bytes", &t.cost.bytes}}) {
      const toml::node* e = c.get(key);
      if (e == nullptr) continue;
      if (e->is_integer())
        *slot = std::to_string(e->as_integer()->get());
      else if (e->is_string())
        *slot = e->as_string()->get();
      else
        return r.err(line_of(*e), "cost",
                     std::string("'") + key + "' must be an expression string");
    }
  }
  return {};
}

// Cross-field checks once everything is read: symbols bound, sizes representable, one timed set,
// cost expressions valid in every set.
result<void> validate(const task_reader& r, const toml::table& root, const task& t,
                      const std::vector<const toml::table*>& set_tables) {
  std::set<std::string> set_names;
  const shape_set* timed = nullptr;
  for (size_t i = 0; i < t.shapes.size(); ++i) {
    const shape_set& s = t.shapes[i];
    const uint32_t line = line_of(*set_tables[i]);
    const std::string ctx = "shape set '" + s.name + "'";
    if (!set_names.insert(s.name).second) return r.err(line, ctx, "name used twice");
    if (s.time) {
      if (timed)
        return r.err(line, ctx,
                     "'time = true' is also set on shape set '" + timed->name +
                         "' (at most one set is timed)");
      timed = &s;
    }
    for (const auto* list : {&t.inputs, &t.outputs}) {
      const char* what = list == &t.inputs ? "input" : "output";
      for (const auto& ts : *list) {
        for (const auto& d : ts.shape)
          if (!d.symbol.empty() && !s.symbols.count(d.symbol))
            return r.err(
                line, ctx,
                "symbol '" + d.symbol + "' (used by " + what + " '" + ts.name + "') is not bound");
        auto res = resolve(ts, s);
        if (!res) return r.err(line, ctx, res.error().message);
      }
    }
    for (auto [key, expr] :
         {std::pair{"flops", &t.cost.flops}, std::pair{"bytes", &t.cost.bytes}}) {
      auto v = eval_cost(*expr, s);
      if (!v) {
        const toml::node* n = root.get_as<toml::table>("cost")->get(key);
        return r.err(n ? line_of(*n) : line, std::string("cost.") + key,
                     v.error().message + " (in shape set '" + s.name + "')");
      }
    }
  }
  return {};
}

result<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(errc::io_error, p.string() + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(errc::io_error, p.string() + ": read error");
  return ss.str();
}

// A task.toml with `problem = "file.py"`: the problem gives inputs, outputs, scalars, shapes
// and the reference; the file gives identity, role, baseline kernels, perturbations, comparison.
result<task> problem_task(const task_reader& r, const toml::table& root, const task& head,
                          const std::string& file) {
  for (const char* k : {"reference", "gpu_reference", "input", "output", "shapes", "scalar"})
    if (const toml::node* n = root.get(k))
      return r.err(line_of(*n), "",
                   std::string("'") + k + "' comes from the problem file (problem = \"" + file +
                       "\"); remove it");
  std::error_code ec;
  const toml::node* pn = root.get("problem");
  const fs::path p = head.dir / file;
  if (fs::path(file).is_absolute() || !fs::is_regular_file(p, ec))
    return r.err(line_of(*pn), "", "problem '" + file + "' is not a file in " + head.dir.string());
  auto t = gate::import_problem(p, head.plat);
  if (!t) return r.err(line_of(*pn), "", t.error().message);
  const std::string imported = t->description;
  t->name = head.name;
  t->op = head.op;
  t->role = head.role;
  t->dir = head.dir;
  t->description = head.description.empty() ? imported : head.description;
  LATHE_TRY(sections, read_sections(r, root, *t));
  LATHE_TRY(libs, r.str_array(root, "allow_libraries", ""));
  t->allow_libraries = *libs;
  LATHE_TRY(fast, r.boolean(root, "allow_fast_math", ""));
  t->allow_fast_math = fast->value_or(false);
  LATHE_TRY(base, r.str(root, "baseline", "", false));
  if (*base) {
    t->baseline = **base;
    if (!find_kernel(*t, t->baseline))
      return r.err(line_of(*root.get("baseline")), "",
                   "baseline kernel '" + t->baseline + "' not found under " + (t->dir / "kernels").string());
  } else {
    t->baseline = find_kernel(*t, "naive") ? "naive" : "";
  }
  return t;
}

// The task's identity: name (its directory's), operator, platform, role, description.
result<void> read_head(const task_reader& r, const toml::table& root, task& t) {
  LATHE_TRY(name, r.str(root, "name", "", true));
  t.name = **name;
  if (const std::string dir_name = t.dir.filename().string(); t.name != dir_name)
    return r.err(line_of(*root.get("name")), "",
                 "name '" + t.name + "' differs from the task directory '" + dir_name +
                     "' (docs/tasks.md: the name equals the directory name)");
  LATHE_TRY(op, r.str(root, "operator", "", true));
  t.op = **op;
  LATHE_TRY(plat, r.str(root, "platform", "", true));
  if (**plat == "cpu")
    t.plat = platform::cpu;
  else if (**plat == "cuda")
    t.plat = platform::cuda;
  else
    return r.err(line_of(*root.get("platform")), "",
                 "unknown platform '" + **plat + "' (cpu | cuda)");
  LATHE_TRY(role, r.str(root, "role", "", true));
  if (**role == "source")
    t.role = task_role::source;
  else if (**role == "heldout")
    t.role = task_role::heldout;
  else
    return r.err(line_of(*root.get("role")), "",
                 "unknown role '" + **role + "' (source | heldout)");
  LATHE_TRY(desc, r.str(root, "description", "", false));
  t.description = desc->value_or("");
  return {};
}

// The reference and, for a CUDA task, the GPU reference: files in the task directory.
result<void> read_references(const task_reader& r, const toml::table& root, task& t) {
  std::error_code ec;
  LATHE_TRY(ref, r.str(root, "reference", "", true));
  t.reference = **ref;
  if (t.reference.is_absolute() || !fs::is_regular_file(t.dir / t.reference, ec))
    return r.err(line_of(*root.get("reference")), "",
                 "reference '" + **ref + "' is not a file in " + t.dir.string());
  LATHE_TRY(gref, r.str(root, "gpu_reference", "", false));
  if (*gref) {
    t.gpu_reference = **gref;
    if (t.plat != platform::cuda)
      return r.err(line_of(*root.get("gpu_reference")), "",
                   "gpu_reference is for CUDA tasks (platform = \"cuda\")");
    if (t.gpu_reference.is_absolute() || !fs::is_regular_file(t.dir / t.gpu_reference, ec))
      return r.err(line_of(*root.get("gpu_reference")), "",
                   "gpu_reference '" + **gref + "' is not a file in " + t.dir.string());
  }
  return {};
}

result<void> read_scalars(const task_reader& r, const toml::table& root, task& t) {
  LATHE_TRY(scalars, r.tables(root, "scalar"));
  for (size_t i = 0; i < scalars->size(); ++i) {
    const toml::table& s = *(*scalars)[i];
    std::string ctx = "scalar #" + std::to_string(i + 1);
    LATHE_TRY(sname, r.str(s, "name", ctx, true));
    ctx = "scalar '" + **sname + "'";
    LATHE_TRY(skeys, r.check_keys(s, {"name", "value"}, ctx));
    const toml::node* v = s.get("value");
    if (v == nullptr) return r.err(line_of(s), ctx, "missing required field 'value'");
    LATHE_TRY(value, r.number(*v, ctx, "value"));
    for (const auto& other : t.scalars)
      if (other.name == **sname) return r.err(line_of(s), ctx, "name used twice");
    t.scalars.push_back({**sname, *value});
  }
  return {};
}

result<void> read_tensors(const task_reader& r, const toml::table& root, task& t) {
  std::set<std::string> tensor_names;  // inputs and outputs share one namespace
  for (bool input : {true, false}) {
    LATHE_TRY(list, r.tables(root, input ? "input" : "output"));
    if (list->empty())
      return r.err(1, "",
                   std::string("missing required field '") + (input ? "input" : "output") +
                       "' (at least one [[" + (input ? "input" : "output") + "]])");
    for (size_t i = 0; i < list->size(); ++i) {
      LATHE_TRY(ts, read_tensor(r, *(*list)[i], input, i));
      if (!tensor_names.insert(ts->name).second)
        return r.err(line_of(*(*list)[i]), "", "tensor name '" + ts->name + "' is used twice");
      (input ? t.inputs : t.outputs).push_back(std::move(*ts));
    }
  }
  return {};
}

}  // namespace

result<task> load_task(const fs::path& path, std::optional<platform> problem_platform) {
  std::error_code ec;
  if (gate::is_problem_file(path) && fs::is_regular_file(path, ec))
    return gate::import_problem(path, problem_platform.value_or(platform::cpu));
  const fs::path file = fs::is_directory(path, ec) ? path / "task.toml" : path;
  if (!fs::is_regular_file(file, ec))
    return fail(errc::not_found,
                fs::is_directory(path, ec)
                    ? path.string() + ": no task.toml in this directory"
                    : path.string() + ": no such task (a directory with task.toml)");
  const task_reader r(file.string());
  LATHE_TRY(text, read_file(file));
  toml::parse_result parsed = toml::parse(*text, file.string());
  if (!parsed) {
    const auto& e = parsed.error();
    return r.err(e.source().begin.line > 0 ? e.source().begin.line : 1, "",
                 "TOML syntax: " + std::string(e.description()));
  }
  const toml::table& root = parsed.table();
  LATHE_TRY(keys, r.check_keys(root,
                               {"name", "operator", "platform", "role", "description", "baseline",
                                "reference", "gpu_reference", "problem", "allow_libraries", "allow_fast_math", "scalar",
                                "input", "output", "shapes", "perturbations", "comparison", "cost"},
                               ""));
  task t;
  t.dir = fs::absolute(file, ec).lexically_normal().parent_path();
  LATHE_TRY(head, read_head(r, root, t));
  LATHE_TRY(prob, r.str(root, "problem", "", false));
  if (*prob) return problem_task(r, root, t, **prob);
  LATHE_TRY(refs, read_references(r, root, t));
  LATHE_TRY(libs, r.str_array(root, "allow_libraries", ""));
  t.allow_libraries = *libs;
  LATHE_TRY(fast, r.boolean(root, "allow_fast_math", ""));
  t.allow_fast_math = fast->value_or(false);

  LATHE_TRY(scalars, read_scalars(r, root, t));
  LATHE_TRY(tensors, read_tensors(r, root, t));
  LATHE_TRY(sets, r.tables(root, "shapes"));
  if (sets->empty())
    return r.err(1, "", "missing required field 'shapes' (at least one [[shapes]])");
  for (size_t i = 0; i < sets->size(); ++i) {
    LATHE_TRY(s, read_shape_set(r, *(*sets)[i], i));
    t.shapes.push_back(std::move(*s));
  }
  LATHE_TRY(sections, read_sections(r, root, t));
  LATHE_TRY(valid, validate(r, root, t, *sets));

  LATHE_TRY(base, r.str(root, "baseline", "", false));
  t.baseline = base->value_or("naive");
  if (!find_kernel(t, t.baseline)) {
    const toml::node* n = root.get("baseline");
    return r.err(n ? line_of(*n) : 1, "",
                 "baseline kernel '" + t.baseline + "' not found (looked for kernels/" +
                     t.baseline + "/ and kernels/" + t.baseline + ".cpp, .cu, .cc in " +
                     t.dir.string() + ")");
  }
  return t;
}

}  // namespace lathe
