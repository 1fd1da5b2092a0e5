// The shipped prompt templates (prompts/) against the proposer: every operation has one, and each
// renders with exactly the fields the proposer gives; and the JSON of a reply is found where a
// model puts it.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/ask.h"
#include "scripted.h"

namespace lathe::agent::test {
namespace {

// Every shipped version of every operation: v2 is the newest of the code-writing and search
// operations, v1 stays so that calls recorded with it replay (llm_options::prompt_version).
TEST(prompts, every_operation_renders_with_exactly_the_proposer_fields) {
  for (operation op : all_operations) {
    const int32_t newest = writes_code(op) || op == operation::rank_paths ? 2 : 1;
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

}  // namespace
}  // namespace lathe::agent::test
