// The task's reference, loaded into the trusted process (it is shipped code, not a candidate).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "lathe/abi.h"

namespace lathe::gate {

class problem_oracle;

class reference {
 public:
  static result<reference> load(const std::filesystem::path& object);
  // A PyTorch problem's reference: its Python worker draws the inputs too (spec/problem.h).
  static reference of_problem(std::shared_ptr<problem_oracle> oracle);
  reference() = default;
  problem_oracle* problem() const { return problem_.get(); }
  // Computes every output in fp64 into `outputs` (one DLTensor of kDLFloat/64 per output).
  result<void> compute(const lathe_args& args) const;

 private:
  struct closer {
    void operator()(void* h) const;
  };
  std::shared_ptr<void> handle_;
  int (*fn_)(const lathe_args*) = nullptr;
  std::shared_ptr<problem_oracle> problem_;
};

}  // namespace lathe::gate
