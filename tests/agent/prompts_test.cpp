// The shipped prompt templates (prompts/) against the proposer: every operation has one, and each
// renders with exactly the fields the proposer gives; and the JSON of a reply is found where a
// model puts it.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/ask.h"
#include "scripted.h"

namespace lathe::agent::test {
namespace {

// Every shipped version of every operation: v3 is the newest of the operations that write into a
// kernel a search may hold in another language (mutate, materialize, repair: the `language`
// field), v2 of the others (context fields out of the cassette key); older versions stay so that
// calls recorded with them replay (llm_options::prompt_version).
TEST(prompts, every_operation_renders_with_exactly_the_proposer_fields) {
  for (operation op : all_operations) {
    const int32_t newest =
        op == operation::mutate || op == operation::materialize || op == operation::repair ? 3 : 2;
    auto top = prompts().find(to_string(op));
    ASSERT_TRUE(top) << top.error().message;
    EXPECT_EQ((*top)->version, newest) << to_string(op);
    for (int32_t version = 1; version <= newest; ++version) {
      SCOPED_TRACE(std::string(to_string(op)) + " v" + std::to_string(version));
      auto t = prompts().find(to_string(op), version);
      ASSERT_TRUE(t) << t.error().message;
      std::vector<std::string> fields = llm_proposer::field_names(op, version);
      std::sort(fields.begin(), fields.end());
      EXPECT_EQ((*t)->fields, fields);
      EXPECT_EQ(version >= 2 && writes_code(op),
                std::find(fields.begin(), fields.end(), "contract") != fields.end());
      prompt_fields values;
      for (const auto& f : fields) values[f] = "<<value of " + f + ">>";
      auto r = render(**t, values);
      ASSERT_TRUE(r) << r.error().message;
      EXPECT_EQ(r->user.substr(0, r->user.find('\n')),
                std::string("lathe-operation: ") + to_string(op) + " v" + std::to_string(version));
      EXPECT_FALSE(r->system.empty());
      for (const auto& f : fields)
        EXPECT_TRUE(has(r->system + r->user, "<<value of " + f + ">>")) << f;
      // Every reply key of the operation's schema is described to the model.
      for (const auto& [key, _] : reply_schema(op).at("properties").items())
        EXPECT_TRUE(has(r->user, "\"" + key + "\"")) << key;
      // Strict both ways: a field more or less fails.
      values["surplus"] = "x";
      EXPECT_FALSE(render(**t, values));
      values.erase("surplus");
      values.erase(fields.front());
      EXPECT_FALSE(render(**t, values));
    }
  }
}

TEST(extract_json, a_json_fence_wins_over_code_fences) {
  const std::string reply =
      "Here is the new loop:\n```cpp\nfor (int i = 0; i < n; ++i) { y[i] = x[i]; }\n```\n"
      "And the reply:\n```json\n{\"a\": 1}\n```\n";
  auto v = extract_json(reply);
  ASSERT_TRUE(v) << v.error();
  EXPECT_EQ(v->at("a"), 1);
  // An example object in an untyped fence before the answer: the json fence is the answer.
  auto example =
      extract_json("For example:\n```\n{\"a\": 0}\n```\nMine:\n```json\n{\"a\": 1}\n```\n");
  ASSERT_TRUE(example) << example.error();
  EXPECT_EQ(example->at("a"), 1);
  // A bare object after a code fence: the brace of the code is skipped.
  auto bare = extract_json("```cpp\nint f() { return 0; }\n```\n{\"b\": 2}\n");
  ASSERT_TRUE(bare) << bare.error();
  EXPECT_EQ(bare->at("b"), 2);
  // An edits value holding a fenced WHOLE body: the ``` inside the JSON string does not close
  // the json fence.
  const nlohmann::json inner = {{"edits", "@@@ WHOLE k.cpp\n```cpp\nint x;\n```\n@@@ END\n"}};
  auto nested = extract_json("```json\n" + inner.dump() + "\n```");
  ASSERT_TRUE(nested) << nested.error();
  EXPECT_EQ(*nested, inner);
  // A broken json fence is reported with the parser's message.
  auto broken = extract_json("```json\n{\"a\": \n```");
  ASSERT_FALSE(broken);
  EXPECT_TRUE(has(broken.error(), "not JSON"));
}

// From v2 on the machine and the run's measurements (context fields) are in the prompt and out
// of the cassette key: another machine, or a fresh gate's times, ask for the same recorded reply;
// what was asked (a kernel) and the template's own text still change the key.
TEST(prompts, context_fields_are_in_the_prompt_and_out_of_the_key_from_v2_on) {
  const std::string text = "=== system ===\nS {{target}}\n=== user ===\nK {{kernel}} P {{progress}}\n";
  auto v2 = parse_template("mutate", 2, text);
  auto v1 = parse_template("mutate", 1, text);
  ASSERT_TRUE(v2 && v1);
  const prompt_fields here = {{"target", "cores: 2"}, {"kernel", "k()"}, {"progress", "1.00 ms"}};
  prompt_fields there = here;
  there["target"] = "cores: 16";
  there["progress"] = "815 us";
  prompt_fields other = here;
  other["kernel"] = "k2()";
  auto a = render(*v2, here), b = render(*v2, there), c = render(*v2, other);
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(a->user, b->user);
  EXPECT_TRUE(has(b->user, "815 us"));
  EXPECT_EQ(a->fields_hash, b->fields_hash);
  EXPECT_EQ(a->prompt_key, b->prompt_key);
  EXPECT_NE(a->fields_hash, c->fields_hash);
  EXPECT_NE(a->prompt_key, c->prompt_key);
  auto edited = parse_template("mutate", 2, text + "Be brief.\n");
  ASSERT_TRUE(edited);
  auto d = render(*edited, here);
  EXPECT_EQ(d->fields_hash, a->fields_hash);
  EXPECT_NE(d->prompt_key, a->prompt_key);
  auto old_here = render(*v1, here), old_there = render(*v1, there);  // v1 keys stay as recorded
  EXPECT_NE(old_here->fields_hash, old_there->fields_hash);
  EXPECT_TRUE(old_here->prompt_key.empty());
  for (const char* f : {"target", "contract", "progress", "rejected", "cards", "paths",
                        "inspirations", "diagnostics"})
    EXPECT_TRUE(is_context_field(f)) << f;
  for (const char* f : {"task", "kernel", "features", "action", "restore", "direction", "registry"})
    EXPECT_FALSE(is_context_field(f)) << f;
}

}  // namespace
}  // namespace lathe::agent::test
