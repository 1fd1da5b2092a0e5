// Internal to search/: which configuration `lathe tune` measures next (search/tune.h). An ordered
// sampler walks a list fixed at the start (exhaustive, random, each rung of successive halving);
// the model sampler chooses from what was measured so far (a tree-structured Parzen estimator over
// the declared values, Bergstra et al. 2011, in its categorical form).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/kernel.h"
#include "search/tune.h"

namespace lathe::search::detail {

class tune_sampler {
 public:
  virtual ~tune_sampler() = default;
  // The next configuration, given every point measured so far (the default first); none when the
  // strategy has nothing more to ask.
  virtual std::optional<tune_config> next(const std::vector<tune_point>& measured) = 0;
  // How many it will ask at most (for progress), the default included.
  virtual size_t planned() const = 0;
};

std::unique_ptr<tune_sampler> ordered_sampler(std::vector<tune_config> order);

// The model: random configurations until `initial` have passed (the default counted), then at
// each step the unmeasured admitted configuration with the highest l(x) / g(x), l and g the
// per-tunable frequencies of its values among the best quarter of the points that passed and
// among the rest (failures included), smoothed by a uniform prior; one step in ten a random one.
// At most `max_evaluations` (0: every admitted configuration).
std::unique_ptr<tune_sampler> model_sampler(const tune_space& space, std::vector<tune_config> admitted, uint64_t seed,
                                            int64_t max_evaluations, size_t initial = 5);

}  // namespace lathe::search::detail
