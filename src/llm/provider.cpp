#include "llm/provider.h"

namespace lathe::llm {

const char* to_string(finish_reason f) {
  switch (f) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::stop_sequence: return "stop_sequence";
    case finish_reason::content_filter: return "content_filter";
    case finish_reason::error: return "error";
    case finish_reason::other: return "other";
  }
  return "other";
}

const char* to_string(call_error e) {
  switch (e) {
    case call_error::none: return "none";
    case call_error::unauthorized: return "unauthorized";
    case call_error::bad_request: return "bad_request";
    case call_error::rate_limited: return "rate_limited";
    case call_error::server: return "server";
    case call_error::timeout: return "timeout";
    case call_error::network: return "network";
    case call_error::malformed: return "malformed";
    case call_error::cancelled: return "cancelled";
    case call_error::missing_cassette: return "missing_cassette";
    case call_error::budget: return "budget";
    case call_error::waiting: return "waiting";
  }
  return "none";
}

}  // namespace lathe::llm
