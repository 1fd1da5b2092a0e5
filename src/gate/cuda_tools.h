// The CUDA tools lathe uses or points a user to (ncu, compute-sanitizer, cuobjdump, nsys):
// where they are and which version, for `lathe doctor` and the profile stage.
#pragma once

#include <filesystem>
#include <string>

namespace lathe::gate {

struct cuda_tool {
  std::string name;
  std::filesystem::path path;  // empty when not found
  std::string version;         // the line of `--version` that names it; empty when not found
};

// Looks in $PATH, then /usr/local/cuda/bin (where the toolkit puts them and PATH often misses).
cuda_tool find_cuda_tool(const std::string& name);

}  // namespace lathe::gate
