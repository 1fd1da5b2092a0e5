#include "cli/search_language.h"

#include "spec/problem.h"

namespace lathe::cli {

result<search_language> pick_search_language(const task& t, const std::string& asked) {
  const bool bare_problem = !t.problem.empty() && t.baseline.empty();
  search_language sl;
  if (asked.empty()) {
    sl.lang = bare_problem && t.problem_format == problem_format::kernelbench ? candidate_language::modelnew : candidate_language::c_abi;
  } else {
    auto l = parse_candidate_language(asked);
    if (!l) return fail(errc::invalid_argument, "--language '" + asked + "': expected c-abi or modelnew");
    if (*l == candidate_language::python)
      return fail(errc::unsupported, "--language python: a search writes C-ABI kernels or ModelNew files, not "
                                     "Python launch() kernels (lathe eval gates those)");
    sl.lang = *l;
  }
  if (sl.lang != candidate_language::modelnew) return sl;
  if (t.problem.empty() || t.problem_format != problem_format::kernelbench || t.problem_model.empty())
    return fail(errc::invalid_argument, "--language modelnew: task " + t.name +
                                            " is not a KernelBench problem (a file with Model, get_inputs and "
                                            "get_init_inputs): a ModelNew has no Model to start from");
  sl.eager = gate::eager_baseline(t);
  if (!sl.eager)
    return fail(errc::unsupported, "--language modelnew: task " + t.name +
                                       ": its problem file cannot be read back as the eager baseline (its "
                                       "Model is the start and the baseline; docs/python-kernels.md)");
  return sl;
}

result<void> check_start_language(const kernel_bundle& start, const search_language& sl) {
  const candidate_language l = language_of(start);
  if (sl.lang != candidate_language::modelnew || l == sl.lang) return {};
  return fail(errc::invalid_argument, "the start kernel " + start.name + " is written in " + std::string(to_string(l)) +
                                          ", the search in " + std::string(to_string(sl.lang)) +
                                          " (--language)");
}

}  // namespace lathe::cli
