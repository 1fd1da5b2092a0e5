#include "cli/cpu_slots.h"

#include <CLI/CLI.hpp>

#include "verify/slot_verifier.h"

namespace lathe::cli {

result<std::unique_ptr<gate::cpu_slot_pool>> make_cpu_slot_pool(int32_t n) {
  if (n <= 0) return nullptr;
  auto slots = gate::split_cores(gate::allowed_cores(), static_cast<uint32_t>(n));
  if (!slots) return fail(errc::invalid_argument, "--cpu-slots: " + slots.error().message);
  return std::make_unique<gate::cpu_slot_pool>(std::move(*slots));
}

result<std::unique_ptr<gate::cpu_slot_pool>> cpu_slot_pool_for(const task& t, int32_t n) {
  if (n > 0 && t.plat == platform::cuda)
    return fail(errc::invalid_argument, "--cpu-slots splits this host's CPU cores among evaluations; task " + t.name +
                                            " runs on CUDA, where the GPU is the slot (one timing at a time under its "
                                            "device lock): leave --cpu-slots out");
  return make_cpu_slot_pool(n);
}

std::unique_ptr<lineages::verifier> pooled_verifier(lineages::gate_hooks hooks, gate::cpu_slot_pool* pool) {
  if (pool) return std::make_unique<lineages::slot_verifier>(std::move(hooks), *pool);
  return std::make_unique<lineages::gate_verifier>(std::move(hooks));
}

void add_cpu_slots_option(CLI::App* verb, int32_t& n, const std::string& what) {
  verb->add_option("--cpu-slots", n,
                   what + ": split the cores into N slots of their own (each with its own lock, workers pinned to "
                          "its cores with as many threads); a paired series runs on one slot. 0: none (the whole "
                          "machine, unpinned)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
}

}  // namespace lathe::cli
