// The fields of each operation's prompt for the mock tests, built from real bundles
// (docs/proposer.md "Prompts", the table of fields per operation).
#pragma once

#include <regex>
#include <string>

#include "core/feature_registry.h"
#include "mock_run.h"

namespace lathe::mock_test {

inline const char* task_text = "name: test\noperator: elementwise\ndescription: a shipped kernel\n";

inline std::string target_of(const kernel_bundle& b) {
  return b.manifest.lang == language::cuda ? "cuda sm_90a" : "cpu x86-64-v3 (avx2, fma)";
}

inline field_list backward_fields(const kernel_bundle& b, const std::string& features = "",
                                  const std::string& prior = "") {
  return {{"task", task_text},    {"target", target_of(b)}, {"kernel", kernel_field(b)},
          {"features", features}, {"action_prior", prior},  {"rejected", ""}};
}

inline field_list forward_fields(const kernel_bundle& b, const std::string& name,
                                 const std::string& locus) {
  const auto* d = find_feature(name);
  return {{"task", task_text},
          {"target", target_of(b)},
          {"kernel", kernel_field(b)},
          {"restore", name + " @ " + locus + "\n" + std::string(d ? d->definition : "") + "\n"},
          {"action", "remove_" + name},
          {"rejected", ""}};
}

inline field_list audit_fields(const kernel_bundle& b, const std::vector<std::string>& names) {
  std::string features;
  for (const auto& n : names)
    features += n + ": " + std::string(find_feature(n)->definition) + "\n";
  return {{"task", task_text},
          {"target", target_of(b)},
          {"kernel", kernel_field(b, true)},
          {"features", features}};
}

inline field_list repair_fields(const kernel_bundle& b) {
  return {{"task", task_text},
          {"target", target_of(b)},
          {"kernel", kernel_field(b)},
          {"goal", "remove omp_parallel at lathe_launch/r"},
          {"outcome", "wrong_result"},
          {"diagnostics", "shape tiny, seed 1: Y[6,0] = nan (poison), expected 0.012"}};
}

inline field_list mutate_fields(const kernel_bundle& b, const std::string& direction = "") {
  return {{"task", task_text},  {"target", target_of(b)}, {"kernel", kernel_field(b)},
          {"inspirations", ""}, {"direction", direction}, {"rejected", ""}};
}

inline field_list materialize_fields(const kernel_bundle& b, const std::string& provides) {
  const std::string card = "card 1\nintent: Add " + provides + "\nanchor: the kernel's loops\n" +
                           "carrier: (see the card's diff)\nprovides: " + provides + "\n";
  return {{"task", task_text}, {"target", target_of(b)}, {"kernel", kernel_field(b)},
          {"features", ""},    {"cards", card},          {"rejected", ""}};
}

inline field_list seed_fields(const std::string& reference, const std::string& target,
                              const std::string& entry) {
  return {{"task", task_text},
          {"target", target},
          {"reference", "=== FILE reference.cpp ===\n" + reference},
          {"entry_features", ""},
          {"entry_file", entry}};
}

inline field_list rank_fields(const kernel_bundle& b, const std::string& features,
                              const std::string& paths) {
  return {{"task", task_text},
          {"target", target_of(b)},
          {"kernel", kernel_field(b)},
          {"features", features},
          {"paths", paths}};
}

inline field_list card_fields(const kernel_bundle& before, const kernel_bundle& after,
                              const std::string& step) {
  return {{"task", task_text}, {"target", target_of(before)},    {"step", step},
          {"diff", ""},        {"before", kernel_field(before)}, {"after", kernel_field(after)}};
}

// Occurrences of a mechanism's spelling in a bundle's code (line comments dropped), plus its
// flags: what a claim "removed" or "added" has to change.
inline int mechanism_count(const kernel_bundle& b, const std::string& feature) {
  static const std::map<std::string, std::string> spelling = {
      {"loop_unroll", R"(#\s*pragma\s+(unroll|GCC\s+unroll))"},
      {"restrict", R"(__restrict__|__restrict\b)"},
      {"omp_parallel", R"(#\s*pragma\s+omp\s+parallel)"},
      {"simd", R"(#\s*pragma\s+omp\s+simd)"},
      {"read_only_load", R"(__ldg\s*\()"},
      {"launch_bounds", R"(__launch_bounds__)"},
      {"fast_math", R"(\b(__expf|__logf|__sinf|__cosf|__powf|__fdividef|rsqrtf)\s*\()"},
  };
  const auto it = spelling.find(feature);
  if (it == spelling.end()) return 0;
  const std::regex re(it->second);
  int n = 0;
  for (const auto& [path, text] : b.sources) {
    std::string code;
    size_t p = 0;
    while (p < text.size()) {
      auto e = text.find('\n', p);
      if (e == std::string::npos) e = text.size();
      std::string line = text.substr(p, e - p);
      if (auto c = line.find("//"); c != std::string::npos) line.resize(c);
      code += line + "\n";
      p = e + 1;
    }
    n += static_cast<int>(
        std::distance(std::sregex_iterator(code.begin(), code.end(), re), std::sregex_iterator()));
  }
  if (feature == "fast_math")
    for (const auto& f : b.manifest.flags) n += f == "--use_fast_math" || f == "-ffast-math";
  return n;
}

}  // namespace lathe::mock_test
