#include "search/tune_sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

namespace lathe::search::detail {
namespace {

class ordered final : public tune_sampler {
 public:
  explicit ordered(std::vector<tune_config> order) : order_(std::move(order)) {}
  std::optional<tune_config> next(const std::vector<tune_point>& measured) override {
    // The first entry is the default, which the engine measures itself before asking.
    const size_t at = measured.size();
    if (at >= order_.size()) return std::nullopt;
    return order_[at];
  }
  size_t planned() const override { return order_.size(); }

 private:
  std::vector<tune_config> order_;
};


class model final : public tune_sampler {
 public:
  model(const tune_space& space, std::vector<tune_config> admitted, uint64_t seed, int64_t max_evaluations,
        size_t initial)
      : space_(space), admitted_(std::move(admitted)), rng_(seed), initial_(initial) {
    planned_ = admitted_.size();
    if (max_evaluations > 0) planned_ = std::min(planned_, static_cast<size_t>(max_evaluations));
  }
  size_t planned() const override { return planned_; }

  std::optional<tune_config> next(const std::vector<tune_point>& measured) override {
    if (measured.size() >= planned_) return std::nullopt;
    std::set<tune_config> seen;
    for (const auto& p : measured) seen.insert(p.config);
    std::vector<size_t> open;
    for (size_t i = 0; i < admitted_.size(); ++i)
      if (!seen.count(admitted_[i])) open.push_back(i);
    if (open.empty()) return std::nullopt;
    const size_t ok = std::count_if(measured.begin(), measured.end(), passed_checks);
    // Random while too few have passed to tell good from bad, and one step in ten after.
    if (ok < initial_ || rng_() % 10 == 0) return admitted_[open[rng_() % open.size()]];

    // good: the best quarter (at least one) of those that passed; bad: every other point.
    std::vector<const tune_point*> ranked;
    for (const auto& p : measured)
      if (passed_checks(p)) ranked.push_back(&p);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const tune_point* a, const tune_point* b) { return *a->speedup > *b->speedup; });
    const size_t n_good = std::max<size_t>(1, static_cast<size_t>(std::ceil(0.25 * static_cast<double>(ranked.size()))));
    std::set<const tune_point*> good(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n_good));
    // Per tunable and value: counts among good and bad.
    std::map<std::string, std::map<int64_t, double>> in_good, in_bad;
    double n_bad = 0;
    for (const auto& p : measured) {
      const bool g = good.count(&p) > 0;
      n_bad += g ? 0 : 1;
      for (const auto& [name, v] : p.config) (g ? in_good : in_bad)[name][v] += 1;
    }
    // Sampling the open set when it is large bounds the work of a step.
    constexpr size_t most_scored = 20000;
    if (open.size() > most_scored) {
      for (size_t i = 0; i < most_scored; ++i) std::swap(open[i], open[i + rng_() % (open.size() - i)]);
      open.resize(most_scored);
    }
    double best_score = -INFINITY;
    std::vector<size_t> best;
    for (size_t i : open) {
      double score = 0;  // log l(x) - log g(x), each tunable's values smoothed by a uniform prior
      for (const tunable& t : space_.params) {
        const int64_t v = admitted_[i].at(t.name);
        const double prior = 1.0 / static_cast<double>(t.values.size());
        const double l = (in_good[t.name][v] + prior) / (static_cast<double>(n_good) + 1.0);
        const double g = (in_bad[t.name][v] + prior) / (n_bad + 1.0);
        score += std::log(l) - std::log(g);
      }
      if (score > best_score + 1e-12) {
        best_score = score;
        best = {i};
      } else if (std::abs(score - best_score) <= 1e-12) {
        best.push_back(i);
      }
    }
    return admitted_[best[rng_() % best.size()]];
  }

 private:
  tune_space space_;
  std::vector<tune_config> admitted_;
  std::mt19937_64 rng_;
  size_t initial_;
  size_t planned_ = 0;
};

}  // namespace

std::unique_ptr<tune_sampler> ordered_sampler(std::vector<tune_config> order) {
  return std::make_unique<ordered>(std::move(order));
}

std::unique_ptr<tune_sampler> model_sampler(const tune_space& space, std::vector<tune_config> admitted, uint64_t seed,
                                            int64_t max_evaluations, size_t initial) {
  return std::make_unique<model>(space, std::move(admitted), seed, max_evaluations, initial);
}

}  // namespace lathe::search::detail
