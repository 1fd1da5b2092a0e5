// Prompt templates (docs/prompts.md): versioned files `<id>.v<N>.md` with named fields
// `{{field}}`. Rendering is strict both ways (a missing field and an unused field both fail), so a
// prompt never silently loses the kernel it was meant to show. The template id, version and the
// hash of the rendered fields are a call's identity: its cassette key (llm/cassette.h) and what
// the call record names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "llm/provider.h"

namespace lathe::agent {

struct template_piece {
  bool field = false;  // true: `text` is a field name; false: literal text
  std::string text;
};

struct prompt_template {
  std::string id;                      // "propose_backward"
  int32_t version = 0;                 // >= 1
  std::string origin;                  // file it came from, for messages
  std::vector<template_piece> system;  // empty: no system prompt
  std::vector<template_piece> user;
  std::vector<std::string> fields;  // every field used, sorted, unique
};

// Field values by name. std::map: iteration (and so the fields hash) is in a stable order.
using prompt_fields = std::map<std::string, std::string>;

struct rendered_prompt {
  std::string template_id;
  int32_t template_version = 0;
  std::string fields_hash;  // fields_hash(fields), context fields left out from version 2 on
  std::string system;
  std::string user;
  // From version 2 on: the hash of the rendering with every context field left as {{name}}, what
  // a cassette checks its prompt against (llm::request::prompt_key). Empty before version 2.
  std::string prompt_key;
};

// A context field carries this machine or this run's measurements: the target and the contract
// (cores, device), progress (times, ratios, budget), rejected attempts with their ratios, cards'
// and paths' evidence, elites' speedups, a failed gate's diagnostics on fresh seeds. From template
// version 2 on, context fields are in the prompt and out of the cassette key: a recorded run
// replays on another machine and through a fresh gate, the replies found by what was asked (task,
// kernel, features, action) and their order.
bool is_context_field(std::string_view name);

// Parses a template's text; `origin` is used in messages only.
result<prompt_template> parse_template(std::string id, int32_t version, std::string_view text,
                                       std::string origin = {});
// Reads `<dir>/<id>.v<N>.md`: id and version come from the file name.
result<prompt_template> load_template(const std::filesystem::path& file);

// Every template of a directory; several versions of one id may coexist (old cassettes keep
// replaying against the version they were recorded with).
class prompt_library {
 public:
  static result<prompt_library> load(const std::filesystem::path& dir);
  // version 0: the highest version of `id`.
  result<const prompt_template*> find(std::string_view id, int32_t version = 0) const;
  const std::vector<prompt_template>& all() const { return templates_; }

 private:
  std::vector<prompt_template> templates_;  // sorted by (id, version)
};

// Content hash of the fields: names and values, in name order, each length-prefixed.
std::string fields_hash(const prompt_fields& fields);

// Fails on a field the template uses but `fields` lacks, and on a field given but never used,
// naming every one of them.
result<rendered_prompt> render(const prompt_template& t, const prompt_fields& fields);

// A request with the rendered system prompt, one user message and the template's identity
// (template_id, template_version, fields_hash); sampling settings keep their defaults.
llm::request to_request(const rendered_prompt& p);

}  // namespace lathe::agent
