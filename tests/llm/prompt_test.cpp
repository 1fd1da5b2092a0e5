// Prompt templates (agent/prompt.h): file names, sections, strict fields, the fields hash.
#include "agent/prompt.h"

#include <gtest/gtest.h>

#include "core/test_util.h"

namespace lathe::agent {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* backward_v1 =
    "{{! One backward step: remove one optimization. Fields: kernel, task. }}\n"
    "=== system ===\n"
    "You de-optimize {{task}} kernels.\n"
    "\n"
    "=== user ===\n"
    "Kernel:\n"
    "{{ kernel }}\n"
    "Reply with edits; a literal \\{{ stays.\n"
    "\n\n";

TEST(prompt, sections_fields_and_rendering) {
  auto t = parse_template("propose_backward", 1, backward_v1);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->fields, (std::vector<std::string>{"kernel", "task"}));
  auto r = render(*t, {{"kernel", "int f() { return {{task}}; }"}, {"task", "gemm"}});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->system, "You de-optimize gemm kernels.");
  // Values are inserted as they are: a value's own "{{task}}" is not expanded.
  EXPECT_EQ(r->user,
            "Kernel:\nint f() { return {{task}}; }\nReply with edits; a literal {{ stays.");
  EXPECT_EQ(r->template_id, "propose_backward");
  EXPECT_EQ(r->template_version, 1);
  EXPECT_EQ(r->fields_hash,
            fields_hash({{"kernel", "int f() { return {{task}}; }"}, {"task", "gemm"}}));
  const llm::request q = to_request(*r);
  EXPECT_EQ(q.system, r->system);
  ASSERT_EQ(q.messages.size(), 1u);
  EXPECT_EQ(q.messages[0].role, "user");
  EXPECT_EQ(q.messages[0].content, r->user);
  EXPECT_EQ(q.template_id, "propose_backward");
  EXPECT_EQ(q.template_version, 1);
  EXPECT_EQ(q.fields_hash, r->fields_hash);
}

TEST(prompt, missing_and_unused_fields_fail_naming_each) {
  auto t = parse_template("propose_backward", 1, backward_v1);
  ASSERT_TRUE(t.has_value());
  auto missing = render(*t, {{"kernel", "k"}});
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(has(missing.error().message, "missing field(s) task")) << missing.error().message;
  auto unused = render(*t, {{"kernel", "k"}, {"task", "t"}, {"target", "sm_90a"}});
  ASSERT_FALSE(unused.has_value());
  EXPECT_TRUE(has(unused.error().message, "not used: target")) << unused.error().message;
  auto both = render(*t, {{"kernel", "k"}, {"tsk", "t"}});
  ASSERT_FALSE(both.has_value());
  EXPECT_TRUE(has(both.error().message, "missing field(s) task"));
  EXPECT_TRUE(has(both.error().message, "not used: tsk"));
}

TEST(prompt, fields_hash_is_stable_and_sensitive) {
  const prompt_fields a{{"kernel", "k1"}, {"task", "gemm"}};
  prompt_fields b;  // inserted in the other order
  b["task"] = "gemm";
  b["kernel"] = "k1";
  EXPECT_EQ(fields_hash(a), fields_hash(b));
  EXPECT_EQ(fields_hash(a).size(), 32u);
  EXPECT_NE(fields_hash(a), fields_hash({{"kernel", "k2"}, {"task", "gemm"}}));
  // Boundaries count: moving a character from one field to the next changes the hash.
  EXPECT_NE(fields_hash({{"a", "xy"}, {"b", "z"}}), fields_hash({{"a", "x"}, {"b", "yz"}}));
  EXPECT_NE(fields_hash({{"a", "x"}}), fields_hash({{"b", "x"}}));
}

TEST(prompt, template_syntax_errors_name_the_line) {
  auto bad = parse_template("t", 1, "=== user ===\nfine\n{{ Bad-Name }}\n", "t.v1.md");
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(has(bad.error().message, "t.v1.md:3:")) << bad.error().message;
  auto split = parse_template("t", 1, "=== user ===\n{{kernel\n}}\n");
  EXPECT_FALSE(split.has_value());
  auto before = parse_template("t", 1, "stray\n=== user ===\nx\n", "t.v1.md");
  ASSERT_FALSE(before.has_value());
  EXPECT_TRUE(has(before.error().message, "before the first section"));
  auto twice = parse_template("t", 1, "=== user ===\nx\n=== user ===\ny\n");
  EXPECT_FALSE(twice.has_value());
  EXPECT_FALSE(parse_template("t", 1, "=== system ===\nonly a system prompt\n").has_value());
  EXPECT_FALSE(parse_template("t", 0, "x").has_value());
  // No markers: the whole text is the user message, no system prompt.
  auto plain = parse_template("t", 1, "Hello {{name}}\n");
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->system.empty());
  EXPECT_EQ(render(*plain, {{"name", "you"}})->user, "Hello you");
}

TEST(prompt, library_loads_versions_and_finds_them) {
  test::temp_dir tmp;
  test::write_file(tmp / "p/propose_backward.v1.md", "=== user ===\nv1 {{kernel}}\n");
  test::write_file(tmp / "p/propose_backward.v2.md", "=== user ===\nv2 {{kernel}}\n");
  test::write_file(tmp / "p/repair.v1.md", "Fix {{kernel}} given {{log}}\n");
  test::write_file(tmp / "p/README.md", "not a template\n");
  test::write_file(tmp / "p/notes.txt", "ignored\n");
  auto lib = prompt_library::load(tmp / "p");
  ASSERT_TRUE(lib.has_value()) << lib.error().message;
  EXPECT_EQ(lib->all().size(), 3u);
  auto latest = lib->find("propose_backward");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ((*latest)->version, 2);
  auto v1 = lib->find("propose_backward", 1);
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(render(**v1, {{"kernel", "K"}})->user, "v1 K");
  auto v3 = lib->find("propose_backward", 3);
  ASSERT_FALSE(v3.has_value());
  EXPECT_TRUE(has(v3.error().message, "versions: 1, 2")) << v3.error().message;
  EXPECT_FALSE(lib->find("mutate").has_value());

  test::write_file(tmp / "p/Repair.V1.md", "x\n");
  auto badname = prompt_library::load(tmp / "p");
  ASSERT_FALSE(badname.has_value());
  EXPECT_TRUE(has(badname.error().message, "<id>.v<N>.md"));
}

}  // namespace
}  // namespace lathe::agent
