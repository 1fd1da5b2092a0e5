// One answer per operation (docs/proposer.md "Replies"). Each function reads the prompt's fields,
// decides with the chooser, and returns the reply object plus, for code-writing operations, the
// kernel before and after; reply.h turns that into the reply text (and files).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "choice.h"
#include "kernel_io.h"
#include "options.h"
#include "prompt_reader.h"

namespace lathe::mock {

// The faults this answer carries, drawn once per call (all false on a repair round).
struct faults {
  bool invalid = false, bad_edit = false, wrong = false;
};

struct context {
  const prompt& p;
  const options& opt;
  chooser choose;
  faults f;
  std::filesystem::path dir;  // the working directory
};

struct answer {
  nlohmann::ordered_json body;     // the reply object, `edits` not yet set
  bool has_edits = false;          // the reply has an `edits` string
  mock_bundle before, after;       // code-writing operations: the kernel and what it became
  bool whole = false;              // write the changed files as WHOLE edits (seed_baseline)
  std::vector<std::string> notes;  // for stderr: what the mock did and which faults it made
};

using answer_result = tl::expected<answer, std::string>;  // error: no kernel to work on

// Code-writing operations (answer_code.cpp).
answer_result answer_backward(const context& c);
answer_result answer_forward(const context& c);
answer_result answer_materialize(const context& c);
answer_result answer_mutate(const context& c);
answer_result answer_repair(const context& c);
// mutate, materialize and repair of a search that writes ModelNew files (answer_modelnew.cpp).
answer_result answer_modelnew(const context& c);
// answer_seed.cpp
answer_result answer_seed(const context& c);
// answer_audit.cpp
answer_result answer_audit(const context& c);
// answer_card.cpp
answer_result answer_card(const context& c);
// answer_rank.cpp
answer_result answer_rank(const context& c);

// A refusal (docs/proposer.md, "The mock model"): the operation's keys, no edits, and a rationale
// starting "refused: ". `names` fills the feature list the schema requires (1-3 names).
answer refusal(const prompt& p, const std::string& why, std::vector<std::string> names);

}  // namespace lathe::mock
