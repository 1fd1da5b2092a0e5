// The gate's closed outcome enum (PROTOCOL.md): the first failing stage decides.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lathe {

enum class outcome : uint8_t {
  ok,
  forbidden,           // static screen (sources, symbols, libraries) or a blocked system call
  unsupported_target,  // the host lacks the ISA / capability the bundle requires
  compile_error,
  load_error,          // dlopen failed, no lathe_launch, missing or wrong ABI tag
  launch_error,        // lathe_launch returned non-zero
  crash,               // the worker died of a signal (segfault, abort…) or exited
  timeout,             // wall-clock or CPU-time limit
  resource_limit,      // memory limit, or threads left running after a call
  wrong_result,
  nan_or_inf,
  input_mutated,
  unwritten_output,
  cached_output,       // same output for different inputs
  suspicious_speed,    // below the roofline floor even after a re-check
  unstable,            // the machine's A/A noise is too high to decide
  edit_not_applied,
  infra_error,         // lathe could not run the evaluation (a worker that cannot start, the
                       // task's own baseline or reference failing: "a task problem"): not the
                       // kernel's doing; the gate tries once more before saying so
};

std::string_view to_string(outcome o);
std::optional<outcome> parse_outcome(std::string_view name);

// The two sets that summaries count (evolve's score, bench, KernelBench's JSON, rules, export),
// defined once here instead of re-derived from names at each site (issue 43).
//
// built: the kernel got past its build, compiled and loaded. Not built: forbidden (refused by the
// screen or a blocked call, never counted as a working build), compile_error, load_error (dlopen
// failed or no lathe_launch: the object is not a usable kernel), edit_not_applied (no kernel was
// made). unsupported_target and infra_error stay built, as evolve and KernelBench's JSON counted
// them before: the gate also answers unsupported_target after a CUDA kernel built on a machine
// without a device, and infra_error is lathe failing to start a worker after the build.
bool built(outcome o);
// correct: the kernel's outputs passed every check: ok, or unstable (correct; only its speed was
// left open by the machine's noise).
bool correct(outcome o);

// An outcome field as run records store it: its name, "" for none (a child whose proposer failed,
// a series that decided).
std::string_view outcome_text(const std::optional<outcome>& o);

}  // namespace lathe
