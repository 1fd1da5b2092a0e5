// A PyTorch problem task's inputs by role (docs/problems.md): for a KernelBench problem the task
// lists forward's tensors first, then the Model's state_dict entries in the Model's order
// (python/lathe_problem.py model_spec, kept on the task as problem_model). What `lathe task show`
// and the prompts' task text say of each input.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/task.h"

namespace lathe {

struct problem_input_roles {
  size_t forward = 0;              // the first `forward` inputs are forward's tensors
  std::vector<std::string> state;  // then one per state_dict entry, by name (may be fewer)
};

// Every input is forward's for a task without a Model spec (or with one that does not parse).
problem_input_roles problem_inputs(const task& t);

// The compute ops a KernelBench problem's Model.forward runs, aten base names (`addmm`, `sigmoid`,
// `sum`: python/lathe_problem.py reference_ops, recorded when the problem was imported), sorted.
// Empty for a task without a Model spec: what its operator family is read from (core/op_family.h).
std::vector<std::string> problem_ops(const task& t);

}  // namespace lathe
