// mutate, materialize and repair when the search writes KernelBench ModelNew files (the prompt's
// `## language` is `modelnew`): one answer, the fused ModelNew of modelnew_file.h as a WHOLE of
// the entry file. Mechanical, not a model's work: a forward the mock cannot read is refused with
// the reason, and a file that already is the mock's answer is refused too (there is nothing else
// the mock knows to try).
#include "answers.h"
#include "modelnew_file.h"
#include "py_chain.h"
#include "py_problem.h"

namespace lathe::mock {
namespace {

// What the file claims, each present in the C++ it writes: `#pragma omp parallel for simd` over
// `__restrict__` pointers.
const std::vector<std::string> claimed = {"omp_parallel", "simd", "restrict"};

}  // namespace

answer_result answer_modelnew(const context& c) {
  auto kernel = operation_kernel(c.p, c.dir, true);
  if (!kernel) return tl::unexpected(kernel.error());
  const std::string& op = c.p.operation;
  std::string entry = kernel->entry;
  if (!kernel->files.count(entry))
    for (const auto& [path, text] : kernel->files)
      if (path.ends_with(".py")) {
        entry = path;
        break;
      }
  if (!entry.ends_with(".py") || !kernel->files.count(entry))
    return refusal(c.p, "the language is modelnew but the kernel has no Python entry file", claimed);
  const std::string& text = kernel->files.at(entry);

  auto problem = read_problem(text);
  if (!problem) return refusal(c.p, "cannot read the problem in " + entry + ": " + problem.error(), claimed);
  auto chain = read_chain(*problem);
  if (!chain)
    return refusal(c.p,
                   "the mock fuses only an elementwise chain (relu, tanh, sigmoid, gelu, leaky_relu, "
                   "+ - * / by scalars) over forward's input or one nn.Linear of it: " +
                       chain.error(),
                   claimed);

  answer a;
  modelnew_options o;
  if (c.f.wrong) {
    // The one slip a ModelNew gets: wrong.h's `store` (whatever --wrong-kind asks).
    o.wrong = true;
    a.notes.push_back("wrong answer (store) at fused_forward: every output scaled by 1.0625");
  }
  const std::string file = modelnew_file(*problem, *chain, o);
  const bool mine = text.find(modelnew_marker) != std::string::npos;
  if (file == text)
    return refusal(c.p,
                   op == "repair"
                       ? "the file is the mock's own fused ModelNew as the mock writes it: the "
                         "failure is not one of the mock's slips, and the mock has nothing else to "
                         "try"
                       : "the kernel already is the mock's fused ModelNew: the mock knows no "
                         "other change to it",
                   claimed);

  a.has_edits = true;
  a.whole = true;
  a.before = *kernel;
  a.after = *kernel;
  a.after.files[entry] = file;
  const std::string chain_text =
      describe(chain->expr, chain->linear.empty() ? problem->input
                                                  : "self." + chain->linear + "(" + problem->input + ")");
  const std::string what =
      "Model.forward's elementwise chain " + chain_text +
      " computed in one C++ loop over the elements (load_inline; OpenMP parallel for simd "
      "over __restrict__ pointers, threads from 32768 elements on)" +
      (chain->linear.empty() ? "" : "; the Linear self." + chain->linear + " stays torch's") + ".";
  a.notes.push_back("fused ModelNew of " + entry + ": " + chain_text);
  if (op == "repair") {
    a.body["diagnosis"] =
        mine ? "the mock's fused ModelNew was altered (a slip such as a scaled store): written "
               "again from the problem"
             : "the kernel is not the mock's fused ModelNew: written as the mock writes it";
    a.body["rationale"] = what;
    return a;
  }
  a.body["action"] = "fuse_elementwise";
  a.body["locus"] = "ModelNew.forward";
  a.body["adds"] = claimed;
  if (op == "mutate") a.body["removes"] = nlohmann::ordered_json::array();
  a.body["rationale"] = what;
  return a;
}

}  // namespace lathe::mock
