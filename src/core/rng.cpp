#include <cstdint>
#include "core/rng.h"

#include "core/rng_element.h"

namespace lathe {

static_assert(static_cast<uint8_t>(distribution_kind::uniform) == rng::kind_uniform);
static_assert(static_cast<uint8_t>(distribution_kind::normal) == rng::kind_normal);
static_assert(static_cast<uint8_t>(distribution_kind::integers) == rng::kind_integers);
static_assert(static_cast<uint8_t>(distribution_kind::constant) == rng::kind_constant);

void fill_tensor(dtype t, const distribution& d, double scale, double shift, uint64_t seed,
                 uint32_t tensor_index, void* data, uint64_t elements) {
  rng::element_params p;
  p.kind = static_cast<uint8_t>(d.kind);
  switch (d.kind) {
    case distribution_kind::uniform:
    case distribution_kind::integers:
      p.a = d.low;
      p.b = d.high;
      break;
    case distribution_kind::normal:
      p.a = d.mean;
      p.b = d.stddev;
      break;
    case distribution_kind::constant:
      p.a = d.value;
      p.b = 0.0;
      break;
  }
  p.scale = scale;
  p.shift = shift;
  p.seed = seed;
  p.tensor = tensor_index;
  for (uint64_t i = 0; i < elements; ++i)
    rng::store_element(t, data, i, rng::element_value(p, t, i));
}

double load_as_double(dtype t, const void* data, uint64_t i) {
  return rng::load_element(t, data, i);
}

void store_from_double(dtype t, void* data, uint64_t i, double v) {
  rng::store_element(t, data, i, v);
}

}  // namespace lathe
