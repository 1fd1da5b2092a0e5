// Batch mode (issue 23, docs/config.md "Batch mode"): the model answers where it is reachable,
// the gate runs where the GPU is. A run started with `--propose-only DIR` writes each prompt it
// needs to DIR (`<key>.prompt`, the kernel bundle beside it as `<key>.bundle/`) and stops,
// interrupted and resumable, at the first call whose answer is not there yet; whoever answers
// writes `<key>.reply` (the model's whole reply text: JSON and edit blocks, as a command
// provider's stdout); `--gate-batch DIR` resumes the run, and every call whose reply is there is
// answered with it. `<key>` is the cassette key: template, version, fields hash, sampling and the
// n-th such call of the run (calls the run's log already answered count, so that a key names
// the same call in every session).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llm/cassette.h"
#include "llm/command.h"
#include "llm/provider.h"
#include "store/llm_call.h"

namespace lathe::llm {

class batch_dir_provider final : public workspace_provider {
 public:
  // `name`: the model that answers (provenance, from lathe.toml). `recorded`: the run's calls so
  // far (store::llm_calls), whose successful ones a resumed run answers from its log.
  batch_dir_provider(std::filesystem::path dir, std::string name, const std::vector<llm_call>& recorded);
  std::string name() const override { return name_; }
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  call_result call_in(const request& r, const kernel_bundle& bundle, const cancel_token* cancel = nullptr) override;
  // The prompts written this session that wait for their replies.
  std::vector<std::filesystem::path> waiting() const;

 private:
  call_result answer(const request& r, const kernel_bundle* bundle);
  std::filesystem::path dir_;
  std::string name_;
  std::map<std::string, int32_t> answered_before_;  // by "<template>/v<version>/<fields hash>"
  call_counter counter_;
  mutable std::mutex mu_;
  std::vector<std::filesystem::path> waiting_;
};

// The file stem of a call in a batch directory: "<template>.v<version>.<fields hash>.<sampling>.<n>".
std::string batch_stem(const request& r, int32_t n);

}  // namespace lathe::llm
