// Input generation on the host: every element from the counter-based RNG (core/philox.h) through
// rng_element.h, which a CUDA kernel uses to generate the identical values on the device.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/task.h"

namespace lathe {

// Fills `elements` elements of type `t` at `data`: element i comes from
// philox::draw(seed, tensor_index, i) under distribution `d`, then value * scale + shift
// (floating dtypes only: perturbations keep integers and bools as drawn), converted to `t`
// (bf16/f16 round to nearest even; integers take the floor and saturate).
void fill_tensor(dtype t, const distribution& d, double scale, double shift, uint64_t seed,
                 uint32_t tensor_index, void* data, uint64_t elements);

// Element i of a buffer of `t`, widened to double (int64/uint64 beyond 2^53 round).
double load_as_double(dtype t, const void* data, uint64_t i);
// Stores v as element i of a buffer of `t`, converted as fill_tensor converts.
void store_from_double(dtype t, void* data, uint64_t i, double v);

}  // namespace lathe
