// A command-line option over a closed set: CLI11 checks the word against the enum's names (its
// error lists them) and the option's value is the enum, parsed here once (core/enum_parse.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/enum_parse.h"

namespace lathe::cli {

// The names of E's values, in order; `last` is E's last enumerator (parse_enum's convention).
template <class E>
std::vector<std::string> enum_words(E last) {
  std::vector<std::string> out;
  for (int i = 0; i <= static_cast<int>(last); ++i) out.emplace_back(to_string(static_cast<E>(i)));
  return out;
}

// `name` sets `into` from one of E's names; its default shown is `into`'s.
template <class E>
CLI::Option* add_enum_option(CLI::App* app, const std::string& name, E& into, E last, const std::string& help) {
  return app
      ->add_option_function<std::string>(
          name, [&into, last](const std::string& word) {
            if (auto e = parse_enum(word, last)) into = *e;  // checked below, before this runs
          }, help)
      ->check(CLI::IsMember(enum_words(last)))
      ->default_str(to_string(into));
}

// --platform WORD: where a bare PyTorch problem file (KernelBench or KLineage format) is imported
// and run, `cpu` (CPU PyTorch, .cpp kernels) or `cuda` (CUDA PyTorch on this machine's GPU, .cu
// and GPU Python kernels); `into` stays empty when not given (the verb's default, cpu unless a
// kernel argument says otherwise). A task.toml names its own platform: the option leaves it be.
inline CLI::Option* add_platform_option(CLI::App* app, std::string& into, const std::string& default_text) {
  return app
      ->add_option("--platform", into,
                   "where a bare PyTorch problem file runs: cpu | cuda (default: " + default_text +
                       "; a task.toml says its own)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
}

}  // namespace lathe::cli
