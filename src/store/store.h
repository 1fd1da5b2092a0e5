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
#include "core/kernel.h"
#include "core/profile.h"
#include "store/llm_call.h"

struct sqlite3;

namespace lathe {

struct evaluation_summary {
  int64_t id = 0;
  std::string created_at, task, kernel_name, kernel_hash, outcome;
  std::optional<double> speedup;
};

class store {
 public:
  static constexpr int schema_version = 4;  // bump with a migration in store/migrations.cpp

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
