// PyTorch problem files as tasks (docs/problems.md): KernelBench (`Model`, `get_inputs`,
// `get_init_inputs`), KLineage (`make_inputs(*, device, seed)`, `torch_ref(**inputs)`) and
// KLineage definitions (JSON with axes and a `reference`). The problem runs in its own Python
// process (python/lathe_problem.py) in the one sandbox (spec/problem_launch.h: the file's code is
// not trusted, and `lathe synth` mines it), the task's oracle: it draws a trial's inputs with the trial's
// seed, computes the reference (in float64 where the problem allows), and writes both into a
// shared-memory file this process maps; nothing goes through the filesystem or the pipe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/kernel.h"
#include "core/task.h"

namespace lathe::gate {

class problem_oracle {
 public:
  // One oracle per (problem file, device) for the life of this process: importing torch costs
  // a second or more, and an optimize run gates hundreds of candidates.
  static result<std::shared_ptr<problem_oracle>> shared(const std::filesystem::path& problem,
                                                        platform p);
  ~problem_oracle();
  problem_oracle(const problem_oracle&) = delete;
  problem_oracle& operator=(const problem_oracle&) = delete;

  // One request, one reply (python/lathe_problem.py lists them). A reply with ok=false is an
  // error naming the problem's exception; a dead or silent worker is one too.
  result<nlohmann::json> request(const nlohmann::json& req, double timeout_s = 600);

  // The shared region, at least `bytes` long; valid until the next call.
  result<uint8_t*> region(uint64_t bytes);
  std::mutex& lock() { return mu_; }

  // False once the worker has ended (it ends itself when a CUDA error sticks to its context):
  // shared() then starts a fresh one.
  bool alive();

  const nlohmann::json& description() const { return description_; }
  // "torch 2.11.0 (cuda 13.0, python 3.12.3)": recorded with every evaluation.
  const std::string& runtime() const { return runtime_; }
  // How the process is confined (spec/problem_launch.h): the problem's code is not trusted.
  const std::string& sandbox() const { return sandbox_; }

 private:
  problem_oracle() = default;
  // The first of python_interpreters() that imports torch, started on `problem` and described.
  static result<std::shared_ptr<problem_oracle>> start_first(const std::filesystem::path& problem, platform p);
  static result<std::unique_ptr<problem_oracle>> start(const std::filesystem::path& python,
                                                       const std::filesystem::path& problem,
                                                       platform p);
  result<std::string> read_line(double timeout_s);
  // The quit request written and the worker's stdin closed, without waiting for it to end.
  void ask_to_quit();
  std::string stderr_tail() const;

  int pid_ = -1;
  int to_ = -1, from_ = -1, err_ = -1;  // worker's stdin, reply channel, stderr
  int mem_ = -1;                        // the memfd, the worker's descriptor 3
  uint8_t* map_ = nullptr;
  uint64_t map_bytes_ = 0;
  std::string pending_, errors_;
  nlohmann::json description_;
  std::string runtime_;
  std::filesystem::path folder_;  // its own folder, removed when it ends
  std::string sandbox_;
  std::mutex mu_;
};

// One of lathe's Python scripts (`name`: "lathe_problem.py", "lathe_kernel.py"…): the file named by
// the environment variable `override_var` when set, else share/lathe/python/ next to the binary,
// else the source tree's python/.
std::filesystem::path python_script(const char* name, const char* override_var);

// The Python worker script: python_script("lathe_problem.py", "LATHE_PROBLEM_WORKER").
std::filesystem::path problem_worker_script();

// The interpreters lathe tries, in order, for its Python workers (problems and kernels alike):
// $LATHE_PYTHON alone when set; else the first python3 on PATH, then /usr/bin/python3 unless
// that is the same path (a virtual environment's python3 links to the system's binary but
// imports its own packages: paths are compared, not files).
std::vector<std::filesystem::path> python_interpreters();

// True for paths a problem import handles: *.py, and *.json KLineage definitions.
bool is_problem_file(const std::filesystem::path& p);

// The task a problem file defines on platform `p`: its inputs (problem inputs, then the model's
// parameters in state_dict order), outputs, scalars (get_init_inputs numbers, then numeric
// forward arguments), one shape set ("problem", the shapes get_inputs makes), the perturbations
// the file declares (LATHE_PERTURBATIONS), elementwise comparison at the dtype's defaults, no
// baseline kernel (eager PyTorch, timed live in comparability mode).
result<task> import_problem(const std::filesystem::path& file, platform p);

// A KernelBench problem's own Model as a Python ModelNew (`class ModelNew(Model)`), the baseline
// a candidate is paired against when the task has no baseline kernel: eager PyTorch, run by the
// same Python worker as a candidate's ModelNew, on the task's platform (on CUDA the worker holds
// the slots on the device). Empty for other tasks (docs/python-kernels.md).
std::optional<kernel_bundle> eager_baseline(const task& t);

}  // namespace lathe::gate
