// Tunables in kernel.toml (docs/tune.md): the [tune] section read, refused with the reason,
// written back; configurations applied as defines and content-hashed; the space a task's shapes
// and a target's limits allow.
#include "spec/tune.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "spec/bundle.h"
#include "spec/python_knobs.h"
#include "test_util.h"

namespace lathe {
namespace {

namespace fs = std::filesystem;

class tune_spec : public ::testing::Test {
 protected:
  result<kernel_bundle> load(const std::string& manifest, const std::string& name = "k") {
    test::write_file(tmp_.path() / name / "kernel.toml", manifest);
    test::write_file(tmp_.path() / name / "kernel.cpp", "int f() { return BLOCK; }\n");
    return load_bundle(tmp_.path() / name);
  }
  std::string error_of(const std::string& manifest) {
    auto b = load(manifest);
    EXPECT_FALSE(b.has_value()) << manifest;
    return b ? std::string() : b.error().message;
  }
  test::temp_dir tmp_;
};

const char* const two_knobs = R"(
[tune]
constraints = ["BLOCK * ITEMS <= 1024"]
[tune.params]
ITEMS = { from = 1, to = 8, times = 2 }
BLOCK = [256, 64, 128]
)";

TEST_F(tune_spec, lists_ranges_and_defaults) {
  auto b = load(two_knobs);
  ASSERT_TRUE(b.has_value()) << b.error().message;
  const tune_space& s = b->manifest.tune;
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "BLOCK");  // sorted by name, values as declared
  EXPECT_EQ(s.params[0].values, (std::vector<int64_t>{256, 64, 128}));
  EXPECT_EQ(s.params[1].name, "ITEMS");
  EXPECT_EQ(s.params[1].values, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(s.constraints, std::vector<std::string>{"BLOCK * ITEMS <= 1024"});
  EXPECT_EQ(s.defaults, (tune_config{{"BLOCK", 256}, {"ITEMS", 1}}));  // first values

  auto stepped = load("[tune.params]\nU = { from = 2, to = 9, step = 3 }\n", "s");
  ASSERT_TRUE(stepped.has_value()) << stepped.error().message;
  EXPECT_EQ(stepped->manifest.tune.params[0].values, (std::vector<int64_t>{2, 5, 8}));

  // The default: declared, else the tunable's integer define, else its first value.
  auto declared = load("[tune.params]\nU = [1, 2, 4]\n[tune.default]\nU = 4\n", "d");
  ASSERT_TRUE(declared.has_value()) << declared.error().message;
  EXPECT_EQ(declared->manifest.tune.defaults.at("U"), 4);
  auto defined = load("[defines]\nU = 2\n[tune.params]\nU = [1, 2, 4]\n", "e");
  ASSERT_TRUE(defined.has_value()) << defined.error().message;
  EXPECT_EQ(defined->manifest.tune.defaults.at("U"), 2);
}

TEST_F(tune_spec, a_bad_section_is_refused_with_its_line_and_reason) {
  EXPECT_NE(error_of("[tune]\nconstraints = []\n").find("must name at least one tunable"), std::string::npos);
  EXPECT_NE(error_of("[tune]\nknobs = 1\n[tune.params]\nU = [1]\n").find("unknown key 'knobs'"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\n1U = [1]\n").find("not a macro name"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = [1, 2, 1]\n").find("value 1 given twice"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = [1, 2.5]\n").find("values must be integers"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = { from = 8, to = 1 }\n").find("above `to`"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = { from = 0, to = 8, times = 2 }\n").find("starts at 1"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = { from = 1, to = 8, step = 0 }\n").find("positive integer"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = { from = 1, to = 100000 }\n").find("more than 4096 values"), std::string::npos);
  // The span of a range in 128 bits: int64's extremes do not wrap into a small count.
  EXPECT_NE(error_of("[tune.params]\nU = { from = -9223372036854775808, to = 9223372036854775807 }\n")
                .find("more than 4096 values"),
            std::string::npos);
  EXPECT_NE(error_of("[tune]\nconstraints = [\"" + std::string(600, '1') + "\"]\n[tune.params]\nU = [1]\n")
                .find("longer than 512"),
            std::string::npos);
  std::string many = "[tune]\nconstraints = [";
  for (int i = 0; i < 33; ++i) many += "\"U > 0\", ";
  EXPECT_NE(error_of(many + "]\n[tune.params]\nU = [1]\n").find("more than 32 constraints"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = { from = 1, to = 8, by = 2 }\n").find("unknown key 'by'"), std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = [1, 2]\n[tune.default]\nU = 3\n").find("not one of its values"),
            std::string::npos);
  EXPECT_NE(error_of("[tune.params]\nU = [1, 2]\n[tune.default]\nV = 1\n").find("'V' is not a tunable"),
            std::string::npos);
  EXPECT_NE(error_of("[defines]\nU = 1\n[tune.params]\nU = [1, 2]\n[tune.default]\nU = 2\n").find("give one default"),
            std::string::npos);
  EXPECT_NE(error_of("[defines]\nU = \"x\"\n[tune.params]\nU = [1, 2]\n").find("not an integer"), std::string::npos);
  const std::string lined = error_of("language = \"cpp\"\n\n[tune.params]\nU = [1, 1]\n");
  EXPECT_NE(lined.find("kernel.toml:4: tune:"), std::string::npos) << lined;
}

TEST_F(tune_spec, configurations_are_bundles_with_their_own_hash) {
  auto b = load(two_knobs);
  ASSERT_TRUE(b.has_value()) << b.error().message;
  auto plain = load("", "plain");
  ASSERT_TRUE(plain.has_value());
  EXPECT_NE(b->hash, plain->hash);  // the same source, a tune space: another bundle

  auto c = configure(*b, {{"BLOCK", 64}, {"ITEMS", 4}});
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->manifest.defines.at("BLOCK"), "64");
  EXPECT_EQ(c->manifest.defines.at("ITEMS"), "4");
  EXPECT_EQ(c->name, "k[BLOCK=64,ITEMS=4]");
  EXPECT_NE(c->hash, b->hash);
  EXPECT_EQ(c->hash, bundle_hash(*c));
  auto again = configure(*b, {{"ITEMS", 4}, {"BLOCK", 64}});
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->hash, c->hash);  // content, not the order given
  auto other = configure(*b, {{"BLOCK", 128}, {"ITEMS", 4}});
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->hash, c->hash);

  // Written and loaded again: the same configured bundle.
  ASSERT_TRUE(write_bundle(*c, tmp_.path() / "written").has_value());
  auto loaded = load_bundle(tmp_.path() / "written");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ(loaded->hash, c->hash);
  EXPECT_EQ(loaded->manifest.tune.params.size(), 2u);

  EXPECT_NE(configure(*b, {{"BLOCK", 64}}).error().message.find("no value for 'ITEMS'"), std::string::npos);
  EXPECT_NE(configure(*b, {{"BLOCK", 32}, {"ITEMS", 1}}).error().message.find("not one of its values"),
            std::string::npos);
  EXPECT_NE(configure(*b, {{"BLOCK", 64}, {"ITEMS", 1}, {"X", 1}}).error().message.find("'X' is not a tunable"),
            std::string::npos);
  EXPECT_NE(configure(*plain, {}).error().message.find("declares no tunables"), std::string::npos);
}

// A Python kernel's tunables are top-level `NAME = <integer>` lines of its entry file (issue 45):
// the default is the literal, a configuration rewrites it, and the configured kernel written and
// loaded again is the same bundle.
TEST_F(tune_spec, a_python_kernels_knobs_are_literals_of_its_entry_file) {
  const std::string source =
      "import torch\n"
      "BLOCK = 64  # rows a chunk\n"
      "ITEMS: int = 2\n"
      "DOC = \"\"\"\n"
      "BLOCK = 1\n"          // inside a string: not a knob
      "\"\"\"\n"
      "def f(x):\n"
      "    BLOCK = 3\n"      // not top level
      "    return x.view(-1, BLOCK) * ITEMS\n";
  const auto knobs = python_knob_lines(source);
  ASSERT_EQ(knobs.count("BLOCK"), 1u);
  ASSERT_EQ(knobs.at("BLOCK").size(), 1u);
  EXPECT_EQ(knobs.at("BLOCK")[0].value, 64);
  EXPECT_EQ(knobs.at("ITEMS")[0].value, 2);
  EXPECT_EQ(knobs.count("DOC"), 0u);  // a string, not an integer

  const std::string manifest = "language = \"python\"\nentry = \"kernel.py\"\nfiles = [\"kernel.py\"]\n"
                               "[tune.params]\nBLOCK = [32, 64, 128]\nITEMS = [1, 2, 4]\n";
  test::write_file(tmp_.path() / "py" / "kernel.toml", manifest);
  test::write_file(tmp_.path() / "py" / "kernel.py", source);
  auto b = load_bundle(tmp_.path() / "py");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->manifest.tune.defaults.at("BLOCK"), 64);  // the literal, not the first value
  EXPECT_EQ(b->manifest.tune.defaults.at("ITEMS"), 2);
  auto c = configure(*b, {{"BLOCK", 128}, {"ITEMS", 4}});
  ASSERT_TRUE(c.has_value()) << c.error().message;
  const std::string& configured = c->sources.at("kernel.py");
  EXPECT_NE(configured.find("BLOCK = 128  # rows a chunk\n"), std::string::npos) << configured;
  EXPECT_NE(configured.find("ITEMS: int = 4\n"), std::string::npos) << configured;
  EXPECT_NE(configured.find("BLOCK = 1\n"), std::string::npos);  // the string's text untouched
  EXPECT_NE(configured.find("    BLOCK = 3\n"), std::string::npos);
  EXPECT_TRUE(c->manifest.defines.empty());  // no -D for Python
  EXPECT_NE(c->hash, b->hash);
  ASSERT_TRUE(write_bundle(*c, tmp_.path() / "py_written").has_value());
  auto loaded = load_bundle(tmp_.path() / "py_written");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ(loaded->hash, c->hash);
  EXPECT_EQ(loaded->manifest.tune.defaults.at("BLOCK"), 128);

  // Refused, each saying why: a knob that is no such line, a [tune.default] against the literal,
  // a literal outside the values.
  test::write_file(tmp_.path() / "py" / "kernel.toml", manifest + "WARPS = [1, 2]\n");
  auto missing = load_bundle(tmp_.path() / "py");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("'WARPS' of a Python kernel must be one top-level `WARPS = <integer>`"),
            std::string::npos) << missing.error().message;
  test::write_file(tmp_.path() / "py" / "kernel.toml", manifest + "[tune.default]\nBLOCK = 32\n");
  auto against = load_bundle(tmp_.path() / "py");
  ASSERT_FALSE(against.has_value());
  EXPECT_NE(against.error().message.find("give one default"), std::string::npos) << against.error().message;
  test::write_file(tmp_.path() / "py" / "kernel.toml",
                   "language = \"python\"\nentry = \"kernel.py\"\nfiles = [\"kernel.py\"]\n"
                   "[tune.params]\nBLOCK = [32, 128]\nITEMS = [1, 2, 4]\n");
  auto outside = load_bundle(tmp_.path() / "py");
  ASSERT_FALSE(outside.has_value());
  EXPECT_NE(outside.error().message.find("is not one of its values"), std::string::npos) << outside.error().message;
}

task task_with(std::vector<shape_set> shapes) {
  task t;
  t.name = "t";
  t.shapes = std::move(shapes);
  return t;
}

TEST_F(tune_spec, the_space_is_what_every_constraint_admits_on_every_shape_set) {
  auto b = load(R"(
[tune]
constraints = ["BLOCK * ITEMS <= 512", "N % (BLOCK * ITEMS) == 0"]
[tune.params]
BLOCK = [64, 128, 256]
ITEMS = [1, 2, 4]
)");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  const task t = task_with({{"small", {{"N", 512}}, false}, {"main", {{"N", 1536}}, true}});
  auto e = enumerate_configs(b->manifest.tune, t, target{});
  ASSERT_TRUE(e.has_value()) << e.error().message;
  std::vector<std::string> got;
  for (const auto& c : e->configs) got.push_back(config_label(c));
  // 1536 = 3 * 512: every product of 64..512 that divides 512 divides 1536 too.
  EXPECT_EQ(got, (std::vector<std::string>{"BLOCK=64,ITEMS=1", "BLOCK=64,ITEMS=2", "BLOCK=64,ITEMS=4",
                                           "BLOCK=128,ITEMS=1", "BLOCK=128,ITEMS=2", "BLOCK=128,ITEMS=4",
                                           "BLOCK=256,ITEMS=1", "BLOCK=256,ITEMS=2"}));
  ASSERT_EQ(e->refused.size(), 1u);
  EXPECT_EQ(config_label(e->refused[0].config), "BLOCK=256,ITEMS=4");
  EXPECT_EQ(e->refused[0].constraint, "BLOCK * ITEMS <= 512");
  EXPECT_EQ(e->refused[0].shape_set, "small");

  // A shape set that 3 * 64 does not divide refuses on that set.
  const task ragged = task_with({{"small", {{"N", 512}}, false}, {"odd", {{"N", 640}}, true}});
  auto r = enumerate_configs(b->manifest.tune, ragged, target{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto it = std::find_if(r->refused.begin(), r->refused.end(),
                         [](const tune_refusal& x) { return config_label(x.config) == "BLOCK=256,ITEMS=2"; });
  ASSERT_NE(it, r->refused.end());
  EXPECT_EQ(it->shape_set, "odd");
  EXPECT_EQ(it->constraint, "N % (BLOCK * ITEMS) == 0");
  EXPECT_EQ(r->refused_count, r->refused.size());
  EXPECT_EQ(r->configs.size(), 3u);  // products dividing gcd(512, 640) = 128: 64x1, 64x2, 128x1
}

TEST_F(tune_spec, target_limits_are_names_a_constraint_may_use) {
  auto b = load("[tune]\nconstraints = [\"TILE * TILE * 16 <= TARGET_SMEM_BYTES\"]\n[tune.params]\nTILE = [16, 32, 64, 128]\n");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  target gpu;
  gpu.smem_optin_bytes = 232448;  // an H200's opt-in shared memory per block
  auto e = enumerate_configs(b->manifest.tune, task_with({}), gpu);
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_EQ(e->configs.size(), 3u);  // 128 * 128 * 16 = 262144 does not fit
  target cpu;  // no shared memory: the name is unknown there, and that is an error, not a refusal
  auto none = enumerate_configs(b->manifest.tune, task_with({}), cpu);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("unknown symbol 'TARGET_SMEM_BYTES'"), std::string::npos);
}

TEST_F(tune_spec, a_space_that_cannot_be_searched_is_an_error_that_says_why) {
  const task t = task_with({{"main", {{"N", 1000}}, true}});
  auto shadow = load("[tune.params]\nN = [1, 2]\n", "shadow");
  ASSERT_TRUE(shadow.has_value());
  EXPECT_NE(enumerate_configs(shadow->manifest.tune, t, target{}).error().message.find("shape symbol"),
            std::string::npos);
  auto unknown = load("[tune]\nconstraints = [\"U <= M\"]\n[tune.params]\nU = [1, 2]\n", "unknown");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_NE(enumerate_configs(unknown->manifest.tune, t, target{}).error().message.find("unknown symbol 'M'"),
            std::string::npos);
  auto bad_default = load("[tune]\nconstraints = [\"N % U == 0\"]\n[tune.params]\nU = [3, 4]\n", "bad");
  ASSERT_TRUE(bad_default.has_value());
  EXPECT_NE(enumerate_configs(bad_default->manifest.tune, t, target{}).error().message.find("default configuration U=3"),
            std::string::npos);
  std::string big = "[tune.params]\n";
  for (const char* n : {"A", "B", "C"}) big += std::string(n) + " = { from = 1, to = 200 }\n";
  auto huge = load(big, "huge");
  ASSERT_TRUE(huge.has_value()) << huge.error().message;
  EXPECT_NE(enumerate_configs(huge->manifest.tune, t, target{}).error().message.find("more than 1000000"),
            std::string::npos);
  // 400,000 configurations x 30 constraints x 2 shape sets: more checks than allowed.
  std::string checks = "[tune]\nconstraints = [";
  for (int i = 0; i < 30; ++i) checks += "\"A > 0\", ";
  checks += "]\n[tune.params]\nA = { from = 1, to = 1000 }\nB = { from = 1, to = 400 }\n";
  auto heavy = load(checks, "heavy");
  ASSERT_TRUE(heavy.has_value()) << heavy.error().message;
  const task two = task_with({{"a", {{"N", 1}}, false}, {"b", {{"N", 2}}, true}});
  EXPECT_NE(enumerate_configs(heavy->manifest.tune, two, target{}).error().message.find("checks: narrow the values"),
            std::string::npos);
}

}  // namespace
}  // namespace lathe
