// A run (DESIGN.md): one decompose / optimize / evolve / bench session, persistent and resumable.
// JSON: core/json_run.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/budget.h"

namespace lathe {

enum class run_kind : uint8_t { decompose, optimize, evolve, bench, tune };
enum class run_state : uint8_t { running, finished, failed, interrupted };

struct run {
  std::string id;
  run_kind kind = run_kind::optimize;
  std::string task;
  run_state state = run_state::running;
  budget limits;
  std::string created_at, updated_at;
  std::string args;     // the verb's arguments as JSON text (what --resume re-reads)
  std::string summary;  // the verb's result as JSON text, once finished
  std::string message;  // why it failed or was interrupted
};

const char* to_string(run_kind k);
const char* to_string(run_state s);
// "an optimize run", "a bench run": the kind's name with its article, for messages.
std::string a_run(run_kind k);
// A new run's id: "<kind>-YYYYMMDD-HHMMSS-xxxx" (UTC, 4 random hex digits).
std::string new_run_id(run_kind k);

}  // namespace lathe
