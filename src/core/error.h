// Errors across module boundaries: tl::expected<T, error>. An error carries what a user needs to
// fix the problem (file, line, field, the tool's log), never just a code.
#pragma once

#include <string>
#include <tl/expected.hpp>
#include <utility>

namespace lathe {

enum class errc {
  invalid_argument,  // bad user input: a flag, a path
  parse_error,       // a manifest or task file that does not parse or misses a field
  io_error,          // the file system said no
  not_found,
  unsupported,       // a dtype, platform or feature lathe does not handle
  store_error,       // SQLite
  internal,          // a bug in lathe
};

struct error {
  errc code = errc::internal;
  std::string message;
};

template <class T>
using result = tl::expected<T, error>;

inline tl::unexpected<error> fail(errc code, std::string message) {
  return tl::unexpected<error>(error{code, std::move(message)});
}

const char* to_string(errc code);

}  // namespace lathe
