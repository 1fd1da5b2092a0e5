// The ModelNew file the mock writes for a KernelBench problem (docs/proposer.md, "The mock
// model"): the problem's code as it was, then one C++ extension (torch.utils.cpp_extension.
// load_inline, CPU; on a CUDA problem a CUDA kernel, a thread per element) that computes
// forward's elementwise chain in one loop over the elements, and
// a `class ModelNew(nn.Module)` with the Model's constructor as written (the same attributes and
// submodules, so parameters bind by name) whose forward calls it.
#pragma once

#include <string>
#include <vector>

#include "py_chain.h"
#include "py_problem.h"

namespace lathe::mock {

struct modelnew_options {
  bool wrong = false;  // the store slip (wrong.h's `store`): every output scaled by 1.0625
  // The loop's techniques, registry names among omp_parallel (threads from 32768 elements on),
  // simd (`#pragma omp simd`) and restrict (`__restrict__` pointers). Empty: all three, the
  // mock's own answer; a materialize names the cards' (issue 44, item 3).
  std::vector<std::string> techniques;
  std::vector<std::string> cards;  // ids of the cards carried, said in the extension's header
  // A CUDA problem (the prompt's target is a CUDA device): the chain as one CUDA kernel, a thread
  // per element on torch's current stream (load_inline's cuda_sources); no technique applies.
  bool cuda = false;
};

// What the mock can write into its extension's loop, in the reply's order.
inline const std::vector<std::string>& loop_techniques() {
  static const std::vector<std::string> all = {"omp_parallel", "simd", "restrict"};
  return all;
}

// The extension's C++ source.
std::string fused_source(const fused_chain& c, const modelnew_options& o);

// The extension's CUDA source (o.cuda), and the C++ declaration load_inline binds.
std::string fused_cuda_source(const fused_chain& c, const modelnew_options& o);
std::string fused_cuda_declaration(const fused_chain& c);

// The whole new file.
std::string modelnew_file(const py_problem& p, const fused_chain& c, const modelnew_options& o);

}  // namespace lathe::mock
