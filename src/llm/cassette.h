// Cassettes (docs/prompts.md): recorded model calls, replayed so that tests and runs are
// deterministic and offline. A cassette's key is the prompt template's id and version, the hash
// of its rendered fields and a call index (the n-th identical call of a session reads the n-th
// recording). `record` wraps any provider and writes one JSON file per call; `replay` reads them
// and fails loudly (call_error::missing_cassette) when one is missing or stale, naming the
// nearest recording so that the user sees what changed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llm/command.h"
#include "llm/provider.h"

namespace lathe::llm {

struct cassette_key {
  std::string template_id;  // "_raw" for a request without a template
  int32_t template_version = 0;
  std::string fields_hash;  // for "_raw": the prompt's hash
  int32_t index = 0;        // 0 for the first call with this key in a session
  // The request's sampling settings (sampling_tag): the same prompt asked at another temperature
  // is another call. Empty: a cassette recorded before sampling was in the key, read only when
  // its recorded settings are the request's.
  std::string sampling;
};

// "t0.6-p0.95-m16384": temperature, top_p ("none" when unset) and max_tokens of `r`.
std::string sampling_tag(const request& r);

// The key of `r` at call index `index`; fails (bad_request) on a template id or fields hash that
// cannot name a file.
tl::expected<cassette_key, call_failure> key_of(const request& r, int32_t index = 0);
// `<dir>/<template_id>/v<version>/<fields_hash>.<index>.json`
std::filesystem::path cassette_path(const std::filesystem::path& dir, const cassette_key& k);
// Hash of what the model was shown (system prompt, messages, JSON schema): a recording whose
// prompt differs from the request's is stale (the template text changed without a new version).
std::string prompt_hash(const request& r);

// Call indices per key, for one session (thread-safe).
class call_counter {
 public:
  int32_t next(const std::string& key);

 private:
  std::mutex mu_;
  std::map<std::string, int32_t> counts_;
};

class replay_provider final : public workspace_provider {
 public:
  explicit replay_provider(std::filesystem::path dir);
  std::string name() const override;  // "replay/<dir>"
  // A call the cassettes cannot answer (missing, stale) fails, and says so on stderr whatever the
  // verb's --quiet or --json: a caller that treats a failed call as one more rejected attempt
  // must not turn a recording that no longer covers the run into a quiet pass.
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  // The bundle is part of the recorded prompt's fields; the recording already holds the edits.
  call_result call_in(const request& r, const kernel_bundle& bundle,
                      const cancel_token* cancel = nullptr) override;

 private:
  call_result lookup(const request& r);
  std::filesystem::path dir_;
  call_counter counter_;
};

struct record_options {
  // Variables whose values must never be written (a model echoing a key it was shown by mistake,
  // a provider putting one in an id): replaced by "[redacted:NAME]" in the cassette.
  std::vector<std::string> secret_variables = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"};
};

class record_provider final : public workspace_provider {
 public:
  record_provider(std::unique_ptr<provider> inner, std::filesystem::path dir,
                  record_options options = {});
  std::string name() const override;  // the inner provider's name: recording changes nothing
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  // Passes the bundle on when the inner provider works on files, else calls it plainly.
  call_result call_in(const request& r, const kernel_bundle& bundle,
                      const cancel_token* cancel = nullptr) override;

 private:
  call_result keep(const request& r, call_result got);
  std::unique_ptr<provider> inner_;
  std::filesystem::path dir_;
  record_options options_;
  call_counter counter_;
};

}  // namespace lathe::llm
