// task.toml: a valid task loads completely; every error names the file, the line and the field.
#include <cstdint>
#include "spec/task_file.h"

#include <gtest/gtest.h>

#include "core/task.h"
#include "test_util.h"

namespace lathe {
namespace {

const std::string base_toml = R"(name        = "gemm"
operator    = "gemm"
platform    = "cpu"
role        = "source"
description = "C = A B"
reference   = "reference.cpp"
allow_libraries = ["openblas"]

[[scalar]]
name  = "alpha"
value = 1

[[input]]
name  = "A"
dtype = "float32"
shape = ["M", "K"]
distribution = { kind = "uniform", low = -1.0, high = 1.0 }

[[input]]
name  = "B"
dtype = "bf16"
shape = ["K", "N"]
distribution = { kind = "normal", mean = 0.0, stddev = 2.0 }

[[output]]
name  = "C"
dtype = "float32"
shape = ["M", "N"]

[[shapes]]
name = "small"
M = 17
N = 33
K = 29

[[shapes]]
name = "main"
M = 512
N = 512
K = 512

[perturbations]
scale = [0.001, 8.0]

[comparison]
kind = "elementwise"
rtol = 1e-4

[cost]
flops = "2*M*N*K"
bytes = "4*(M*K + N*M) + 2*K*N"
)";

// 1-based line of the first line containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const auto pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

class task_file : public ::testing::Test {
 protected:
  // Writes tasks/<name>/ with the toml, a reference and a naive kernel; returns task.toml.
  std::filesystem::path make(const std::string& toml, const std::string& name = "gemm") {
    const auto dir = tmp_.path() / "tasks" / name;
    test::write_file(dir / "task.toml", toml);
    test::write_file(dir / "reference.cpp", "// reference\n");
    test::write_file(dir / "kernels" / "naive.cpp", "// naive\n");
    return dir / "task.toml";
  }
  // Loading must fail; returns the message after checking it starts with "file:line: ".
  std::string load_error(const std::string& toml, int line) {
    const auto file = make(toml);
    auto t = load_task(file);
    EXPECT_FALSE(t.has_value());
    if (t) return {};
    const std::string prefix = file.string() + ":" + std::to_string(line) + ": ";
    EXPECT_EQ(t.error().message.rfind(prefix, 0), 0u) << t.error().message;
    EXPECT_EQ(t.error().code, errc::parse_error);
    return t.error().message.substr(std::min(prefix.size(), t.error().message.size()));
  }
  test::temp_dir tmp_;
};

TEST_F(task_file, valid_task_loads_every_field) {
  const auto file = make(base_toml);
  auto t = load_task(file.parent_path());  // the directory works as well as the file
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->name, "gemm");
  EXPECT_EQ(t->op, "gemm");
  EXPECT_EQ(t->plat, platform::cpu);
  EXPECT_EQ(t->role, task_role::source);
  EXPECT_EQ(t->baseline, "naive");
  EXPECT_EQ(t->reference, "reference.cpp");
  EXPECT_TRUE(t->dir.is_absolute());
  EXPECT_EQ(t->dir.filename(), "gemm");
  ASSERT_EQ(t->scalars.size(), 1u);
  EXPECT_EQ(t->scalars[0].value, 1.0);
  ASSERT_EQ(t->inputs.size(), 2u);
  EXPECT_EQ(t->inputs[1].type, dtype::bf16);
  EXPECT_EQ(t->inputs[1].dist.kind, distribution_kind::normal);
  EXPECT_EQ(t->inputs[1].dist.stddev, 2.0);
  EXPECT_EQ(t->inputs[0].shape[1].symbol, "K");
  ASSERT_EQ(t->outputs.size(), 1u);
  ASSERT_EQ(t->shapes.size(), 2u);
  EXPECT_EQ(t->shapes[0].symbols.at("K"), 29);
  EXPECT_EQ(t->perturb.scale, (std::vector<double>{0.001, 8.0}));
  EXPECT_TRUE(t->perturb.shift.empty());
  EXPECT_EQ(t->compare.tol.rtol, 1e-4);
  EXPECT_FALSE(t->compare.tol.atol.has_value());
  EXPECT_EQ(t->allow_libraries, std::vector<std::string>{"openblas"});
  EXPECT_EQ(timing_shape(*t).name, "main");  // largest by input bytes
  EXPECT_EQ(smallest_shape(*t).name, "small");
  auto flops = eval_cost(t->cost.flops, t->shapes[1]);
  ASSERT_TRUE(flops.has_value());
  EXPECT_EQ(*flops, 2.0 * 512 * 512 * 512);
  EXPECT_EQ(*eval_cost("", t->shapes[0]), 0.0);
  auto a = resolve(t->inputs[0], t->shapes[0]);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->shape, (std::vector<int64_t>{17, 29}));
  EXPECT_EQ(a->elements, 17u * 29u);
  EXPECT_EQ(a->bytes, 17u * 29u * 4u);
}

TEST_F(task_file, time_true_picks_the_timed_set) {
  auto t = load_task(make(replace(base_toml, "K = 29\n", "K = 29\ntime = true\n")));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(timing_shape(*t).name, "small");
}

TEST_F(task_file, missing_required_fields_are_named) {
  for (const char* field : {"name", "operator", "platform", "role", "reference"}) {
    std::string toml = base_toml;
    const auto start = toml.find(std::string(field) + " ");
    toml.erase(start, toml.find('\n', start) + 1 - start);
    const std::string msg = load_error(toml, 1);
    EXPECT_NE(msg.find("missing required field '" + std::string(field) + "'"), std::string::npos)
        << msg;
  }
}

TEST_F(task_file, missing_field_of_a_tensor_names_tensor_field_and_line) {
  const std::string toml = replace(base_toml, "dtype = \"bf16\"\n", "");
  const std::string msg = load_error(toml, line_of(toml, "name  = \"B\"") - 1);  // the [[input]]
  EXPECT_EQ(msg, "input 'B': missing required field 'dtype'");
  const std::string no_shape = replace(base_toml, "shape = [\"M\", \"N\"]\n", "");
  EXPECT_EQ(load_error(no_shape, line_of(no_shape, "[[output]]")),
            "output 'C': missing required field 'shape'");
}

TEST_F(task_file, unknown_dtype) {
  const std::string toml = replace(base_toml, "dtype = \"float32\"", "dtype = \"floot32\"");
  EXPECT_EQ(load_error(toml, line_of(toml, "floot32")), "input 'A': unknown dtype 'floot32'");
}

TEST_F(task_file, unknown_keys_are_errors) {
  std::string toml = replace(base_toml, "description", "descripton");
  EXPECT_NE(load_error(toml, line_of(toml, "descripton")).find("unknown key 'descripton'"),
            std::string::npos);
  toml = replace(base_toml, "name  = \"C\"", "name  = \"C\"\ndistribution = { kind = \"normal\" }");
  EXPECT_NE(load_error(toml, line_of(toml, "distribution = { kind = \"normal\" }"))
                .find("output 'C': unknown key 'distribution'"),
            std::string::npos);
  toml = replace(base_toml, "rtol = 1e-4", "rtl = 1e-4");
  EXPECT_NE(load_error(toml, line_of(toml, "rtl")).find("comparison: unknown key 'rtl'"),
            std::string::npos);
  toml = replace(base_toml, "low = -1.0, high = 1.0", "low = -1.0, hi = 1.0");
  EXPECT_NE(load_error(toml, line_of(toml, "hi = 1.0")).find("unknown key 'hi'"),
            std::string::npos);
  toml = replace(base_toml, "[cost]", "[costs]");
  EXPECT_NE(load_error(toml, line_of(toml, "[costs]")).find("unknown key 'costs'"),
            std::string::npos);
}

TEST_F(task_file, overflowing_shapes_are_refused) {
  // 2^32 * 2^32 elements: the element count overflows.
  std::string toml =
      replace(base_toml, "M = 512\nN = 512\nK = 512", "M = 4294967296\nN = 512\nK = 4294967296");
  std::string msg = load_error(toml, line_of(toml, "name = \"main\"") - 1);
  EXPECT_NE(msg.find("shape set 'main'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("element count"), std::string::npos) << msg;
  EXPECT_NE(msg.find("overflows 64 bits"), std::string::npos) << msg;
  // 2^31 * 2^31 = 2^62 elements fit; 2^64 bytes of float32 do not.
  toml = replace(base_toml, "M = 512\nN = 512\nK = 512", "M = 2147483648\nN = 512\nK = 2147483648");
  msg = load_error(toml, line_of(toml, "name = \"main\"") - 1);
  EXPECT_NE(msg.find("byte size"), std::string::npos) << msg;
}

TEST_F(task_file, unbound_symbol) {
  const std::string toml = replace(base_toml, "N = 33\nK = 29\n", "N = 33\n");
  const std::string msg = load_error(toml, line_of(toml, "name = \"small\"") - 1);
  EXPECT_EQ(msg, "shape set 'small': symbol 'K' (used by input 'A') is not bound");
}

TEST_F(task_file, topk_needs_values_and_indices_of_one_shape) {
  // gemm's one float output is no (values, indices) pair: refused where the kind is named.
  const std::string toml = replace(base_toml, "kind = \"elementwise\"", "kind = \"topk\"");
  EXPECT_EQ(load_error(toml, line_of(toml, "kind = \"topk\"")),
            "comparison: topk needs an input and exactly two outputs (values, then indices)");
}

TEST_F(task_file, bad_values) {
  std::string toml = replace(base_toml, "kind = \"elementwise\"", "kind = \"elementwize\"");
  EXPECT_EQ(load_error(toml, line_of(toml, "elementwize")),
            "comparison: unknown kind 'elementwize' (elementwise | sorted_set | topk)");
  toml = replace(base_toml, "platform    = \"cpu\"", "platform    = \"gpu\"");
  EXPECT_EQ(load_error(toml, 3), "unknown platform 'gpu' (cpu | cuda)");
  toml = replace(base_toml, "role        = \"source\"", "role        = \"train\"");
  EXPECT_EQ(load_error(toml, 4), "unknown role 'train' (source | heldout)");
  toml = replace(base_toml, "low = -1.0, high = 1.0", "low = 1.0, high = 1.0");
  EXPECT_NE(load_error(toml, line_of(toml, "low = 1.0")).find("low < high"), std::string::npos);
  toml = replace(base_toml, "kind = \"uniform\"", "kind = \"gaussian\"");
  EXPECT_NE(load_error(toml, line_of(toml, "gaussian")).find("unknown kind 'gaussian'"),
            std::string::npos);
  toml = replace(base_toml, "M = 17", "M = -17");
  EXPECT_NE(load_error(toml, line_of(toml, "M = -17")).find("symbol 'M'"), std::string::npos);
  toml = replace(base_toml, "shape = [\"M\", \"K\"]", "shape = [\"M\", 2.5]");
  EXPECT_NE(load_error(toml, line_of(toml, "2.5")).find("input 'A': shape"), std::string::npos);
  toml = replace(base_toml, "value = 1", "value = \"one\"");
  EXPECT_NE(
      load_error(toml, line_of(toml, "\"one\"")).find("scalar 'alpha': 'value' must be a number"),
      std::string::npos);
  toml = replace(base_toml, "name  = \"B\"", "name  = \"A\"");
  EXPECT_NE(load_error(toml, line_of(toml, "dtype = \"bf16\"") - 2).find("'A' is used twice"),
            std::string::npos);
}

TEST_F(task_file, at_most_one_timed_set) {
  std::string toml = replace(base_toml, "K = 29\n", "K = 29\ntime = true\n");
  toml = replace(toml, "K = 512\n", "K = 512\ntime = true\n");
  EXPECT_NE(
      load_error(toml, line_of(toml, "name = \"main\"") - 1).find("also set on shape set 'small'"),
      std::string::npos);
  toml = replace(base_toml, "K = 29\n", "K = 29\ntime = 1\n");
  EXPECT_NE(load_error(toml, line_of(toml, "time = 1")).find("'time' must be true or false"),
            std::string::npos);
}

TEST_F(task_file, cost_expressions_are_checked_in_every_set) {
  std::string toml = replace(base_toml, "flops = \"2*M*N*K\"", "flops = \"2*M*N*X\"");
  EXPECT_NE(load_error(toml, line_of(toml, "2*M*N*X")).find("unknown symbol 'X'"),
            std::string::npos);
  toml = replace(base_toml, "flops = \"2*M*N*K\"", "flops = \"2*M*N*K*M*N*K*M*N\"");
  EXPECT_NE(load_error(toml, line_of(toml, "flops")).find("overflows"), std::string::npos);
}

TEST_F(task_file, structure_errors) {
  std::string toml = base_toml.substr(0, base_toml.find("[[input]]")) +
                     base_toml.substr(base_toml.find("[[output]]"));
  EXPECT_NE(load_error(toml, 1).find("'input'"), std::string::npos);
  toml = base_toml.substr(0, base_toml.find("[[shapes]]")) +
         base_toml.substr(base_toml.find("[perturbations]"));
  EXPECT_NE(load_error(toml, 1).find("'shapes'"), std::string::npos);
  // A TOML syntax error reports the parser's line.
  toml = replace(base_toml, "N = 33", "N = = 33");
  EXPECT_NE(load_error(toml, line_of(toml, "N = = 33")).find("TOML syntax"), std::string::npos);
}

TEST_F(task_file, name_and_directory_and_files) {
  // The name equals the directory name.
  auto file = make(base_toml, "other");
  auto t = load_task(file);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("differs from the task directory 'other'"), std::string::npos);
  // The baseline kernel must exist.
  std::string toml =
      replace(base_toml, "reference   =", "baseline    = \"openblas\"\nreference   =");
  EXPECT_NE(
      load_error(toml, line_of(toml, "baseline")).find("baseline kernel 'openblas' not found"),
      std::string::npos);
  test::write_file(tmp_.path() / "tasks/gemm/kernels/openblas/kernel.toml", "");
  EXPECT_TRUE(load_task(make(toml)).has_value());
  // The reference must exist.
  file = make(base_toml);
  std::filesystem::remove(file.parent_path() / "reference.cpp");
  t = load_task(file);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("reference 'reference.cpp' is not a file"), std::string::npos);
  // No task at all.
  t = load_task(tmp_.path() / "nowhere");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, errc::not_found);
}

TEST_F(task_file, gpu_reference_is_for_cuda_tasks_and_must_exist) {
  std::string toml = replace(base_toml, "reference   = \"reference.cpp\"",
                             "reference   = \"reference.cpp\"\ngpu_reference = \"reference.cu\"");
  // A CPU task has no use for it.
  EXPECT_NE(load_error(toml, line_of(toml, "gpu_reference")).find("for CUDA tasks"), std::string::npos);
  toml = replace(toml, "platform    = \"cpu\"", "platform    = \"cuda\"");
  EXPECT_NE(load_error(toml, line_of(toml, "gpu_reference")).find("'reference.cu' is not a file"),
            std::string::npos);
  auto file = make(toml);
  test::write_file(file.parent_path() / "reference.cu", "// gpu reference\n");
  auto t = load_task(file);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->gpu_reference, "reference.cu");
  // Optional: without it, nothing is set.
  t = load_task(make(replace(base_toml, "platform    = \"cpu\"", "platform    = \"cuda\"")));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_TRUE(t->gpu_reference.empty());
}

TEST_F(task_file, find_kernel_by_name_only) {
  const auto file = make(base_toml);
  auto t = load_task(file);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  test::write_file(file.parent_path() / "kernels/expert/kernel.cpp", "");
  test::write_file(file.parent_path() / "kernels/tiled.cu", "");
  EXPECT_EQ(find_kernel(*t, "naive"), file.parent_path() / "kernels/naive.cpp");
  EXPECT_EQ(find_kernel(*t, "expert"), file.parent_path() / "kernels/expert");
  EXPECT_EQ(find_kernel(*t, "tiled"), file.parent_path() / "kernels/tiled.cu");
  EXPECT_FALSE(find_kernel(*t, "missing").has_value());
  EXPECT_FALSE(find_kernel(*t, "../kernels/naive").has_value());
  EXPECT_FALSE(find_kernel(*t, "").has_value());
}

TEST(resolve, sizes_zero_dims_and_errors) {
  tensor_spec t{"X", dtype::f64, {{"M", 0}, {"", 3}}, {}};
  shape_set s{"s", {{"M", 5}}, false};
  auto r = resolve(t, s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->elements, 15u);
  EXPECT_EQ(r->bytes, 120u);
  // A zero dimension makes an empty tensor, even next to a huge one.
  shape_set zero{"z", {{"M", 0}}, false};
  tensor_spec wide{"W", dtype::f32, {{"", int64_t{1} << 62}, {"", int64_t{1} << 62}, {"M", 0}}, {}};
  r = resolve(wide, zero);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->elements, 0u);
  EXPECT_EQ(r->bytes, 0u);
  shape_set none{"n", {}, false};
  r = resolve(t, none);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("symbol 'M' is not bound in shape set 'n'"), std::string::npos);
  tensor_spec big{"B", dtype::u8, {{"", int64_t{1} << 40}, {"", int64_t{1} << 30}}, {}};
  r = resolve(big, none);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("element count"), std::string::npos);
}

}  // namespace
}  // namespace lathe
