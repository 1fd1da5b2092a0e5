#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

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
  auto fill = [&](uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i) rng::store_element(t, data, i, rng::element_value(p, t, i));
  };
  // Each element is a function of (seed, tensor, index) alone (counter-based Philox), so a large
  // tensor is drawn on every core in chunks, bit for bit the same: a 16M-element normal tensor
  // took ~0.5 s on one core of the 2-core VM, and the gate draws several an evaluation.
  constexpr uint64_t chunk_floor = uint64_t{1} << 20;
  const uint64_t cores = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, 16);
  const uint64_t parts = std::min<uint64_t>(cores, elements / chunk_floor);
  if (parts < 2) {
    fill(0, elements);
    return;
  }
  std::vector<std::thread> helpers;
  const uint64_t step = (elements + parts - 1) / parts;
  for (uint64_t k = 1; k < parts; ++k)
    helpers.emplace_back(fill, k * step, std::min(elements, (k + 1) * step));
  fill(0, std::min(elements, step));
  for (auto& h : helpers) h.join();
}

double load_as_double(dtype t, const void* data, uint64_t i) {
  return rng::load_element(t, data, i);
}

void store_from_double(dtype t, void* data, uint64_t i, double v) {
  rng::store_element(t, data, i, v);
}

}  // namespace lathe
