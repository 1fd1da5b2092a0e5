#include "core/outcome.h"

#include "core/enum_parse.h"

namespace lathe {

std::string_view to_string(outcome o) {
  switch (o) {
    case outcome::ok:
      return "ok";
    case outcome::forbidden:
      return "forbidden";
    case outcome::unsupported_target:
      return "unsupported_target";
    case outcome::compile_error:
      return "compile_error";
    case outcome::load_error:
      return "load_error";
    case outcome::launch_error:
      return "launch_error";
    case outcome::crash:
      return "crash";
    case outcome::timeout:
      return "timeout";
    case outcome::resource_limit:
      return "resource_limit";
    case outcome::wrong_result:
      return "wrong_result";
    case outcome::nan_or_inf:
      return "nan_or_inf";
    case outcome::input_mutated:
      return "input_mutated";
    case outcome::unwritten_output:
      return "unwritten_output";
    case outcome::cached_output:
      return "cached_output";
    case outcome::suspicious_speed:
      return "suspicious_speed";
    case outcome::unstable:
      return "unstable";
    case outcome::edit_not_applied:
      return "edit_not_applied";
    case outcome::infra_error:
      return "infra_error";
  }
  return "?";
}

std::optional<outcome> parse_outcome(std::string_view name) {
  return parse_enum(name, outcome::infra_error);
}

bool built(outcome o) {
  switch (o) {
    case outcome::forbidden:
    case outcome::compile_error:
    case outcome::load_error:
    case outcome::edit_not_applied:
      return false;
    case outcome::ok:
    case outcome::unsupported_target:
    case outcome::launch_error:
    case outcome::crash:
    case outcome::timeout:
    case outcome::resource_limit:
    case outcome::wrong_result:
    case outcome::nan_or_inf:
    case outcome::input_mutated:
    case outcome::unwritten_output:
    case outcome::cached_output:
    case outcome::suspicious_speed:
    case outcome::unstable:
    case outcome::infra_error:
      return true;
  }
  return false;
}

bool correct(outcome o) { return o == outcome::ok || o == outcome::unstable; }

std::string_view outcome_text(const std::optional<outcome>& o) { return o ? to_string(*o) : std::string_view(); }

}  // namespace lathe
