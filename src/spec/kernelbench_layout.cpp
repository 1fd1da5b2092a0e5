#include "spec/kernelbench_layout.h"

#include <regex>

namespace fs = std::filesystem;

namespace lathe {

std::optional<int> kernelbench_problem_id(const fs::path& problem_file) {
  static const std::regex id(R"((\d+)_.*)");
  std::smatch m;
  const std::string f = problem_file.filename().string();
  if (!std::regex_match(f, m, id)) return std::nullopt;
  return std::stoi(m[1]);
}

std::optional<int> kernelbench_level(const fs::path& suite_dir) {
  static const std::regex level(R"(level_?(\d+))");
  std::smatch m;
  const fs::path p = suite_dir.lexically_normal();
  // `level1/` normalizes to `level1/` with an empty file name: its parent's name is the folder's.
  const std::string f = p.filename().string().empty() ? p.parent_path().filename().string() : p.filename().string();
  if (!std::regex_match(f, m, level)) return std::nullopt;
  return std::stoi(m[1]);
}

std::string kernelbench_kernel_name(int32_t level, int32_t problem, int32_t sample) {
  return "level_" + std::to_string(level) + "_problem_" + std::to_string(problem) + "_sample_" +
         std::to_string(sample) + "_kernel.py";
}

}  // namespace lathe
