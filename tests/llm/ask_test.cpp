// Structured replies: the schema validator, JSON extraction, and the bounded repair round-trip
// (a scripted provider returns queued replies and records every request it receives).
#include <gtest/gtest.h>

#include <deque>

#include "agent/ask.h"
#include "agent/schema.h"

using namespace lathe;
using nlohmann::json;

namespace {

const json edit_schema = json::parse(R"({
  "type": "object",
  "required": ["action", "edits"],
  "additionalProperties": false,
  "properties": {
    "action": {"type": "string", "enum": ["unroll", "vectorize"]},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "edits": {"type": "array", "minItems": 1, "maxItems": 3,
              "items": {"type": "object", "required": ["path"],
                        "properties": {"path": {"type": "string", "minLength": 1}}}}
  }
})");

class scripted : public llm::provider {
 public:
  std::deque<llm::call_result> replies;
  std::vector<llm::request> seen;
  std::string name() const override { return "scripted/test"; }
  llm::call_result call(const llm::request& r, const llm::cancel_token*) override {
    seen.push_back(r);
    if (replies.empty()) return tl::unexpected(llm::call_failure{llm::call_error::server, "no more", 500, 1});
    auto c = replies.front();
    replies.pop_front();
    return c;
  }
  void say(const std::string& text) {
    llm::response r;
    r.text = text;
    r.tokens_out = static_cast<int64_t>(text.size());
    replies.push_back(r);
  }
};

}  // namespace

TEST(schema, valid_replies_pass_and_each_violation_is_named) {
  EXPECT_TRUE(agent::validate(edit_schema, json::parse(R"({"action":"unroll","edits":[{"path":"k.cu"}]})")).empty());
  auto errors = agent::validate(edit_schema, json::parse(
      R"({"action":"fuse","confidence":1.5,"edits":[{"path":""},{}],"extra":1})"));
  const std::string d = agent::describe(errors);
  EXPECT_NE(d.find("$.action: not one of [unroll, vectorize]"), std::string::npos) << d;
  EXPECT_NE(d.find("$.confidence: above the maximum 1"), std::string::npos) << d;
  EXPECT_NE(d.find("$.edits[0].path: shorter than 1 characters"), std::string::npos) << d;
  EXPECT_NE(d.find("$.edits[1].path: required"), std::string::npos) << d;
  EXPECT_NE(d.find("$.extra: not allowed"), std::string::npos) << d;
  EXPECT_EQ(errors.size(), 5u);
  // Types: an integer-valued float is an integer; a string is not a number.
  const json int_schema = json::parse(R"({"type":"integer"})");
  EXPECT_TRUE(agent::validate(int_schema, json(3.0)).empty());
  EXPECT_FALSE(agent::validate(int_schema, json(3.5)).empty());
  EXPECT_EQ(agent::describe(agent::validate(json::parse(R"({"type":"number"})"), json("7"))),
            "$: expected number, got string");
  // A keyword the validator does not check is an error in the schema, not a silent pass.
  EXPECT_NE(agent::describe(agent::validate(json::parse(R"({"type":"string","pattern":"^a"})"), json("b")))
                .find("'pattern' is not supported"),
            std::string::npos);
}

TEST(ask, json_is_found_in_fences_and_prose) {
  EXPECT_EQ(agent::extract_json("{\"a\": 1}")->at("a"), 1);
  EXPECT_EQ(agent::extract_json("Here:\n```json\n{\"a\": 2}\n```\nDone.")->at("a"), 2);
  EXPECT_EQ(agent::extract_json("I think {\"a\": 3} is right")->at("a"), 3);
  auto bad = agent::extract_json("{\"a\": ");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("not JSON"), std::string::npos);
}

TEST(ask, a_bad_reply_is_shown_back_with_its_errors_until_it_is_fixed) {
  scripted p;
  p.say("not json at all");
  p.say(R"({"action":"fuse","edits":[]})");
  p.say(R"({"action":"unroll","edits":[{"path":"kernel.cu"}]})");
  llm::request r;
  r.template_id = "propose_backward";
  r.template_version = 2;
  r.fields_hash = "h";
  r.messages = {{"user", "de-optimize this"}};
  auto reply = agent::ask_json(p, r, edit_schema, 2);
  ASSERT_TRUE(reply) << reply.error().last_error;
  EXPECT_EQ(reply->repairs, 2);
  EXPECT_EQ(reply->calls.size(), 3u);
  EXPECT_EQ(reply->value["edits"][0]["path"], "kernel.cu");
  ASSERT_EQ(p.seen.size(), 3u);
  // The first repair shows the model its reply and the parse problem…
  ASSERT_EQ(p.seen[1].messages.size(), 3u);
  EXPECT_EQ(p.seen[1].messages[1].role, "assistant");
  EXPECT_EQ(p.seen[1].messages[1].content, "not json at all");
  EXPECT_NE(p.seen[1].messages[2].content.find("not JSON"), std::string::npos);
  // …the second the schema violations, by path.
  EXPECT_NE(p.seen[2].messages[4].content.find("$.action: not one of"), std::string::npos)
      << p.seen[2].messages[4].content;
  EXPECT_NE(p.seen[2].messages[4].content.find("$.edits: fewer than 1 items"), std::string::npos);
  // Repairs are keyed apart for cassettes; the schema travels with every request.
  EXPECT_EQ(p.seen[0].template_id, "propose_backward");
  EXPECT_EQ(p.seen[1].template_id, "propose_backward/repair");
  EXPECT_NE(p.seen[1].fields_hash, p.seen[2].fields_hash);
  EXPECT_EQ(json::parse(p.seen[0].json_schema), edit_schema);
}

TEST(ask, repairs_are_bounded_and_call_failures_pass_through) {
  scripted p;
  for (int i = 0; i < 5; ++i) p.say(R"({"action":"unroll"})");
  llm::request r;
  auto reply = agent::ask_json(p, r, edit_schema, 1);
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().what, agent::ask_failure::kind::invalid);
  EXPECT_NE(reply.error().last_error.find("$.edits: required"), std::string::npos);
  EXPECT_EQ(p.seen.size(), 2u);  // the question and one repair, no more
  EXPECT_EQ(reply.error().calls.size(), 2u);

  scripted down;  // no replies queued: the provider fails
  auto failed = agent::ask_json(down, r, edit_schema, 3);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().what, agent::ask_failure::kind::call);
  EXPECT_EQ(failed.error().call.kind, llm::call_error::server);
  EXPECT_EQ(down.seen.size(), 1u);  // transport failures are not repaired here
}
