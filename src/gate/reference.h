// The task's reference, loaded into the trusted process (it is shipped code, not a candidate).
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "lathe/abi.h"

namespace lathe::gate {

class reference {
 public:
  static result<reference> load(const std::filesystem::path& object);
  reference() = default;
  // Computes every output in fp64 into `outputs` (one DLTensor of kDLFloat/64 per output).
  result<void> compute(const lathe_args& args) const;

 private:
  struct closer {
    void operator()(void* h) const;
  };
  std::shared_ptr<void> handle_;
  int (*fn_)(const lathe_args*) = nullptr;
};

}  // namespace lathe::gate
