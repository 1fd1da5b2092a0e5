// The YAML front matter of SKILL.md files (the Agent Skills format, and KLineage's cards), read
// as a subset of YAML rather than through a YAML library: block mappings and sequences by
// indentation, plain / single-quoted / double-quoted scalars (folded over several lines), `|` and
// `>` block scalars, one-line flow sequences, comments. That is everything PyYAML's safe_dump
// writes for KLineage's cards and everything render.cpp writes; anything else (anchors, tags,
// multi-line flow collections) is an error that says which line, never a silent misreading.
// Scalars stay strings: a card's fields are text, and "1.0" must not turn into a number.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace lathe::skills {

struct front_matter {
  nlohmann::json fields;  // an object: the YAML mapping between the two `---` lines
  std::string body;       // the Markdown after the closing `---`
};

// `---` on the first line, the YAML, `---` on a line of its own, then the body.
result<front_matter> read_front_matter(std::string_view text);

// The YAML subset above: an object, array, string or null (an empty document).
result<nlohmann::json> parse_yaml_subset(std::string_view yaml);

// A double-quoted YAML scalar that reads back as `s` exactly (escapes `"`, `\` and controls).
std::string yaml_quote(std::string_view s);

}  // namespace lathe::skills
