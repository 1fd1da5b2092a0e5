#include "core/run.h"

#include <cstdio>
#include <ctime>
#include <random>

#include "core/text.h"

namespace lathe {

std::string a_run(run_kind k) {
  const std::string name = to_string(k);
  return (std::string("aeiou").find(name.front()) == std::string::npos ? "a " : "an ") + name + " run";
}

const char* to_string(run_kind k) {
  switch (k) {
    case run_kind::decompose:
      return "decompose";
    case run_kind::optimize:
      return "optimize";
    case run_kind::evolve:
      return "evolve";
    case run_kind::bench:
      return "bench";
    case run_kind::tune:
      return "tune";
  }
  return "?";
}

const char* to_string(run_state s) {
  switch (s) {
    case run_state::running:
      return "running";
    case run_state::finished:
      return "finished";
    case run_state::failed:
      return "failed";
    case run_state::interrupted:
      return "interrupted";
  }
  return "?";
}

std::string new_run_id(run_kind k) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char tail[8];
  std::snprintf(tail, sizeof tail, "%04x", static_cast<unsigned>(rd() & 0xffffu));
  return cat(to_string(k), "-", stamp, "-", tail);
}

}  // namespace lathe
