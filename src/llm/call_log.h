// Every model call, stored append-only (store/llm_call.h), so that a run can be audited and
// replayed: the prompt as the rendered request, the reply, tokens, cost, latency, provider,
// model and template.
//
// Key hygiene: the stored prompt is built from the request's own fields (llm/provider.h
// `request` holds no headers, so no Authorization or x-api-key can be among them), and every
// text that is stored — prompt, reply, error message — has the values of the key variables
// (config.h secret_values) replaced by "[redacted]" first, in case a prompt quotes a file or an
// error echoes a header.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "llm/budget.h"
#include "llm/config.h"
#include "llm/provider.h"
#include "store/store.h"

namespace lathe::llm {

// The request as the store keeps it: JSON (sorted keys) of system, messages, temperature, top_p,
// max_tokens, stop, json_schema, template_id, template_version and fields_hash, with `secrets`
// redacted.
std::string request_record(const request& r, const std::vector<std::string>& secrets);

// Redaction is llm/http.h's `redact`, the transport's own: one rule for every text lathe keeps.

struct call_identity {
  std::optional<std::string> run_id;
  std::string provider;       // provider.h's kind: "openai", "anthropic", "command", "replay"
  std::string model;          // the configured model
  std::optional<price> cost;  // its price; nullopt: the stored cost is NULL (unknown)
};
call_identity identity_of(const config& c, std::optional<std::string> run_id);

// The store record of one call. `failed_latency_seconds`: how long a failed call took (a
// response carries its own latency; a failure does not).
lathe::llm_call make_record(const call_identity& id, const request& r, const call_result& res,
                            const std::vector<std::string>& secrets,
                            double failed_latency_seconds = 0);

// Writes one record per call into a store, from any number of threads (the store's connection
// is used by one of them at a time).
class call_log {
 public:
  call_log(lathe::store& db, call_identity id, std::vector<std::string> secrets)
      : db_(db), id_(std::move(id)), secrets_(std::move(secrets)) {}

  result<int64_t> record(const request& r, const call_result& res,
                         double failed_latency_seconds = 0);

 private:
  lathe::store& db_;
  call_identity id_;
  std::vector<std::string> secrets_;
  std::mutex mu_;
};

}  // namespace lathe::llm
