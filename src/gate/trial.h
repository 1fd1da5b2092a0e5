// The data of one trial: the layout of a slot in a worker's region, inputs generated in trusted
// memory from the counter-based RNG, and the fp64 reference outputs computed from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/task.h"
#include "gate/cpu/wire.h"
#include "gate/reference.h"

namespace lathe::gate {

struct slot_layout {
  const shape_set* shapes = nullptr;
  std::vector<resolved_tensor> inputs, outputs;
  std::vector<uint64_t> input_offset, output_offset;  // from the slot's start, 256-aligned
  uint64_t slot_bytes = 0;                            // rounded up to a page
  uint64_t input_bytes = 0, output_bytes = 0;
};

result<slot_layout> make_layout(const task& t, const shape_set& s);
wire::command setup_command(const task& t, const slot_layout& l, uint32_t slots);

// How inputs of one trial are drawn: the seed, and a scale/shift perturbation (PROTOCOL.md:
// the task's value distributions and allowed perturbations).
struct trial_spec {
  uint64_t seed = 0;
  double scale = 1.0, shift = 0.0;
};
// Trial i of `count`: i = 0 unperturbed, later ones cycle through the task's perturbations.
trial_spec trial_for(const task& t, uint64_t seed_base, uint32_t i);
// Trials on the shape set checked `set_index`-th: `seeds` (at least 3), and on the first (the
// smallest) one for every perturbation the task declares, so that each runs in every
// evaluation: with three seeds softmax's shifts of +-100, its fourth and fifth options, never ran.
uint32_t trials_on_set(const task& t, uint32_t seeds, uint32_t set_index);

struct trial_data {
  trial_spec spec;
  std::vector<uint8_t> inputs;       // one slot's input area, as copied into the region
  std::vector<std::vector<double>> ref;  // one fp64 buffer per output
};

result<trial_data> make_trial(const task& t, const slot_layout& l, const reference& ref,
                              const trial_spec& spec);
// The inputs alone (a problem's Python worker draws its reference with them all the same).
result<trial_data> make_inputs(const task& t, const slot_layout& l, const reference& ref,
                               const trial_spec& spec);
// The same into a trial_data that held another trial: its buffers are reused, which spares the
// page faults of fresh ones (a 16M-element reference is 128 MiB of new pages, 4 us a page on the
// 2-core VM).
result<void> make_trial_into(const task& t, const slot_layout& l, const reference& ref,
                             const trial_spec& spec, trial_data& d);
result<void> make_inputs_into(const task& t, const slot_layout& l, const reference& ref,
                              const trial_spec& spec, trial_data& d);

// The fp64 reference outputs of the inputs in `d.inputs` (a slot's input area), into `d.ref`;
// d.spec.seed is the draw a problem's Python worker takes its tensors' shapes and kinds from.
result<void> compute_reference(const task& t, const slot_layout& l, const reference& ref,
                               trial_data& d);

// Copies the trial's inputs into slot `slot` of a region and poisons its outputs.
void stage_inputs(const task& t, const slot_layout& l, const trial_data& d, uint8_t* slot);
void poison_outputs(const task& t, const slot_layout& l, uint8_t* slot);
// True when the region's inputs still equal the trial's.
bool inputs_intact(const slot_layout& l, const trial_data& d, const uint8_t* slot);

}  // namespace lathe::gate
