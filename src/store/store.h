// The store: SQLite in WAL mode, a versioned schema with migrations, append-only evaluations,
// samples, profiles and model calls (triggers refuse UPDATE and DELETE), content-addressed blobs. Safe with
// several lathe processes on one workspace (busy timeout, immediate transactions).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evaluation.h"
#include "core/expert.h"
#include "core/kernel.h"
#include "core/profile.h"
#include "store/llm_call.h"

struct sqlite3;

namespace lathe {

// Declared, not included: llm/ (call_log.h) includes the store, and a card or a lineage edit
// must rebuild only what reads them. A caller of these methods includes core/lineage.h,
// core/card.h or core/run.h itself.
struct lineage;
struct skill_card;
struct card_trial;
struct run;
enum class run_kind : uint8_t;

// One record of a run's history (store/lineage_store.cpp): what happened, in order.
struct run_event {
  int64_t seq = 0;  // 1, 2, … within the run
  std::string created_at;
  std::string kind;  // the verb's own vocabulary ("backward_accepted", "forward", "card")
  std::string json;  // the event's body as JSON text
};

struct evaluation_summary {
  int64_t id = 0;
  std::string created_at, task, kernel_name, kernel_hash, outcome;
  std::optional<double> speedup;
};

class store {
 public:
  static constexpr int schema_version = 5;  // bump with a migration in store/migrations.cpp

  static result<store> open(const std::filesystem::path& db_file);
  store(store&&) noexcept;
  store& operator=(store&&) noexcept;
  ~store();

  result<int> version() const;  // schema version of the open database

  // Content-addressed blobs: returns the hash; storing the same bytes twice is a no-op.
  result<std::string> put_blob(std::string_view bytes);
  result<std::string> get_blob(const std::string& hash) const;

  // Kernels by content hash (manifest as JSON, sources as one blob).
  result<void> put_kernel(const kernel_bundle& k);
  result<kernel_bundle> get_kernel(const std::string& hash) const;

  // An evaluation and all its raw samples, in one transaction. Returns its id.
  result<int64_t> add_evaluation(const evaluation& e);
  result<evaluation> get_evaluation(int64_t id) const;
  // Newest first. An empty task_filter lists every task; limit <= 0 lists them all.
  result<std::vector<evaluation_summary>> list_evaluations(const std::string& task_filter,
                                                           int limit) const;

  // A hardware profile (its raw output as a blob), in one transaction. Returns its id.
  result<int64_t> add_profile(const profile& p);
  // Every profile of a kernel, oldest first, each with its raw output and created_at.
  result<std::vector<profile>> profiles_for(const std::string& kernel_hash) const;

  // One model call (its prompt and reply as blobs), in one transaction. Returns its id. The
  // record is refused when it names no provider, no template id or no prompt, or carries a
  // negative count: an audit trail with holes is worse than an error.
  result<int64_t> add_llm_call(const llm_call& c);
  // The calls of one run, or every call when `run_id` is nullopt; oldest first, with their
  // prompts and replies.
  result<std::vector<llm_call>> llm_calls(const std::optional<std::string>& run_id) const;

  // ---- the lineage side (store/lineage_store.cpp) ----------------------------------------

  // Runs: inserted or updated by id (state, updated_at, summary change; kind, task and
  // created_at are kept from the first write). created_at/updated_at are set by the store.
  result<void> put_run(const run& r);
  result<std::optional<run>> get_run(const std::string& id) const;
  // The run a `--resume` names: it must exist and be of `kind`; the errors say which, and how to
  // list the runs of that kind.
  result<run> run_to_resume(const std::string& id, run_kind kind) const;
  // Newest first; an empty kind_filter lists every kind; limit <= 0 lists them all.
  result<std::vector<run>> list_runs(const std::string& kind_filter, int limit) const;
  // Appends one event (its seq is the next in the run) and returns the seq. The run must exist.
  result<int64_t> add_run_event(const std::string& run_id, const std::string& kind,
                                const std::string& json_text);
  result<std::vector<run_event>> run_events(const std::string& run_id) const;

  // lathe init's verdicts on experts, append-only. Returns the record's id.
  result<int64_t> add_expert_check(const expert_check& c);
  // The newest check of that kernel for that task, if any.
  result<std::optional<expert_check>> latest_expert_check(const std::string& task,
                                                          const std::string& kernel_hash) const;

  // Lineages: inserted or replaced by id (a lineage grows during its run).
  result<void> put_lineage(const lineage& l);
  result<std::optional<lineage>> get_lineage(const std::string& id) const;
  // Oldest first; an empty task_filter lists every task.
  result<std::vector<lineage>> list_lineages(const std::string& task_filter) const;

  // Cards: inserted or replaced by id; a name already used by another card is refused. The
  // card's `trials` are not stored with it: they live in card_trials (add_card_trial) and are
  // filled in by get_card / list_cards.
  result<void> put_card(const skill_card& c);
  result<std::optional<skill_card>> get_card(const std::string& id_or_name) const;
  // By name; an empty op_filter lists every operator.
  result<std::vector<skill_card>> list_cards(const std::string& op_filter) const;
  // Appends a trial to a card's verification log (the card must exist); returns its id.
  result<int64_t> add_card_trial(const std::string& card_id, const card_trial& t);

  // A small cache of measured values (target ceilings, A/A noise), keyed by text. Not
  // append-only: a measurement may be refreshed.
  result<void> put_measurement(const std::string& key, const std::string& json_text);
  result<std::optional<std::string>> get_measurement(const std::string& key) const;

 private:
  struct closer {
    void operator()(sqlite3* db) const;
  };
  explicit store(sqlite3* db);
  std::unique_ptr<sqlite3, closer> db_;
};

}  // namespace lathe
