#include "core/error.h"

namespace lathe {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::parse_error:
      return "parse_error";
    case errc::io_error:
      return "io_error";
    case errc::not_found:
      return "not_found";
    case errc::unsupported:
      return "unsupported";
    case errc::store_error:
      return "store_error";
    case errc::internal:
      return "internal";
  }
  return "internal";
}

}  // namespace lathe
