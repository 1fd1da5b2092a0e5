// Shapes, costs and kernels of a loaded task (task_file.h): no TOML here, so the code that sizes
// buffers does not drag the parser along.
#include <cstdint>
#include <stdexcept>

#include "core/expr.h"
#include "spec/task_file.h"

namespace lathe {

namespace fs = std::filesystem;

result<resolved_tensor> resolve(const tensor_spec& t, const shape_set& s) {
  resolved_tensor r;
  uint64_t elements = 1;
  bool overflow = false, zero = false;
  for (const auto& d : t.shape) {
    int64_t v = d.value;
    if (!d.symbol.empty()) {
      auto it = s.symbols.find(d.symbol);
      if (it == s.symbols.end())
        return fail(errc::invalid_argument, "tensor '" + t.name + "': symbol '" + d.symbol +
                                                "' is not bound in shape set '" + s.name + "'");
      v = it->second;
    }
    if (v < 0)
      return fail(errc::invalid_argument,
                  "tensor '" + t.name + "': negative dimension " + std::to_string(v));
    r.shape.push_back(v);
    zero = zero || v == 0;
    overflow = overflow || __builtin_mul_overflow(elements, static_cast<uint64_t>(v), &elements);
  }
  auto dims = [&] {
    std::string out = "[";
    for (size_t i = 0; i < r.shape.size(); ++i) out += (i ? ", " : "") + std::to_string(r.shape[i]);
    return out + "]";
  };
  if (zero) return r;  // an empty tensor: no element, no byte, whatever the other dimensions
  if (overflow)
    return fail(errc::invalid_argument,
                "tensor '" + t.name + "': element count of shape " + dims() + " overflows 64 bits");
  r.elements = elements;
  if (__builtin_mul_overflow(elements, uint64_t{size_of(t.type)}, &r.bytes))
    return fail(errc::invalid_argument,
                "tensor '" + t.name + "': byte size of shape " + dims() + " overflows 64 bits");
  return r;
}

result<double> eval_cost(const std::string& expr, const shape_set& s) {
  if (expr.find_first_not_of(" \t\r\n") == std::string::npos) return 0.0;
  auto v = eval_expr(expr, s.symbols);
  if (!v) return tl::unexpected(v.error());
  return static_cast<double>(*v);
}

std::optional<fs::path> find_kernel(const task& t, const std::string& name) {
  // A name, not a path: "../x" or "a/b" would reach outside kernels/.
  if (name.empty() || name[0] == '.' || name.find_first_of("/\\") != std::string::npos)
    return std::nullopt;
  std::error_code ec;
  const fs::path base = t.dir / "kernels";
  if (fs::is_directory(base / name, ec)) return base / name;
  for (const char* ext : {".cpp", ".cu", ".cc"}) {
    fs::path p = base / (name + ext);
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

namespace {

// Total input bytes of one set, saturating (a set that does not resolve sorts last).
uint64_t input_bytes(const task& t, const shape_set& s) {
  uint64_t total = 0;
  for (const auto& in : t.inputs) {
    auto r = resolve(in, s);
    if (!r || __builtin_add_overflow(total, r->bytes, &total)) return UINT64_MAX;
  }
  return total;
}

void require_shapes(const task& t) {
  if (t.shapes.empty()) throw std::logic_error("task '" + t.name + "' has no shape set");
}

}  // namespace

const shape_set& timing_shape(const task& t) {
  require_shapes(t);
  for (const auto& s : t.shapes)
    if (s.time) return s;
  const shape_set* best = &t.shapes.front();
  uint64_t best_bytes = input_bytes(t, *best);
  for (const auto& s : t.shapes) {
    const uint64_t b = input_bytes(t, s);
    if (b > best_bytes) best = &s, best_bytes = b;
  }
  return *best;
}

const shape_set& smallest_shape(const task& t) {
  require_shapes(t);
  const shape_set* best = &t.shapes.front();
  uint64_t best_bytes = input_bytes(t, *best);
  for (const auto& s : t.shapes) {
    const uint64_t b = input_bytes(t, s);
    if (b < best_bytes) best = &s, best_bytes = b;
  }
  return *best;
}

}  // namespace lathe
