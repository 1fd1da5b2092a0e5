// KernelBench's names for problems and their generated kernels (issue 24, item 5; issue 44, item
// 4): a suite folder of problem files `<P>_<Name>.py` (`19_ReLU.py`) whose level is the folder's
// name (`level1`), and kernels named as its eval_from_generations writes them,
// `level_<L>_problem_<P>_sample_<S>_kernel.py`. `lathe bench` reads that layout (cli/
// bench_kernelbench.h); `lathe solve` writes it (search/solve.h). Names only: nothing is read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace lathe {

// KernelBench's problem number: the leading digits of the file's name (`19_ReLU.py` -> 19).
std::optional<int> kernelbench_problem_id(const std::filesystem::path& problem_file);

// The level a suite folder names (`.../level1`, `level_2/` -> 1, 2), if it names one.
std::optional<int> kernelbench_level(const std::filesystem::path& suite_dir);

// "level_<L>_problem_<P>_sample_<S>_kernel.py".
std::string kernelbench_kernel_name(int32_t level, int32_t problem, int32_t sample);

}  // namespace lathe
