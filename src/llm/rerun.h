// A resumed run's model calls (docs/optimize.md "Run events and resume"): the calls the run made
// before it was stopped are in the store's call log; a request that matches one of them — same
// prompt template and version, same hash of its rendered fields, the same n-th time in this
// session — is answered with the recorded reply instead of a new call, and its recorded use is
// charged to the run's ledger again. Anything else goes to the provider it wraps (the metered
// one). So a proposer operation that was in flight when the run was killed does not pay again for
// the calls it had already made; the journal covers the operations that had finished.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llm/budget.h"
#include "llm/cassette.h"
#include "llm/command.h"
#include "llm/provider.h"
#include "store/llm_call.h"

namespace lathe::llm {

// A logged call's key, "<template>/v<version>/<fields hash>", and whether a resumed run answers
// from it (a success with a reply and a template); batch mode (batch_dir.h) counts them alike.
std::string key_text(const std::string& id, int32_t version, const std::string& fields);
bool answers_from_log(const llm_call& c);

class rerun_provider final : public workspace_provider {
 public:
  // `recorded`: the run's calls, oldest first (store::llm_calls(run_id)); failed ones are not
  // answered from the log. `budget` may be null.
  rerun_provider(std::unique_ptr<provider> inner, const std::vector<llm_call>& recorded, ledger* budget);
  std::string name() const override;  // the inner provider's
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  call_result call_in(const request& r, const kernel_bundle& bundle, const cancel_token* cancel = nullptr) override;
  int64_t answered_from_log() const { return answered_; }

 private:
  std::optional<response> recorded_for(const request& r);
  std::unique_ptr<provider> inner_;
  std::map<std::string, std::vector<llm_call>> by_key_;  // "<template>/v<version>/<fields hash>"
  call_counter counter_;
  ledger* budget_ = nullptr;
  std::mutex mu_;
  int64_t answered_ = 0;
};

}  // namespace lathe::llm
