// The MAP-Elites archive of `lathe evolve` (issue 9; DESIGN.md "descriptor"; docs/evolve.md):
// islands, each a grid of cells over configurable descriptors, one elite per cell; the composite
// score that ranks every child, failed ones included; parent and inspiration sampling with
// exploration / exploitation / elite ratios; ring migration. Pure bookkeeping: the gate's verdicts
// come in as numbers, and an elite is replaced only when the caller's paired re-measure says so
// (`contest` below), never on a first measurement.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace lathe::search {

// What a descriptor measures of a kernel: a closed set, parsed once from `--descriptors`.
enum class descriptor_kind : uint8_t {
  complexity,  // non-blank source lines
  score,       // the composite score
  features,    // how many verified features
  feature,     // `feature:<name>`: 0 or 1, whether that verified feature is present
};

// One descriptor: a value of a kernel cut into bins by ascending edges (n edges, n + 1 bins).
struct descriptor {
  std::string name;     // as given and stored with the run: "complexity", "feature:smem_tiling"
  descriptor_kind kind = descriptor_kind::complexity;
  std::string feature;  // the feature's name (descriptor_kind::feature)
  std::vector<double> edges;
  int bins() const { return static_cast<int>(edges.size()) + 1; }
  int bin_of(double v) const;
};
// "complexity:40,80,160;features:2,4" -> two descriptors. Empty text: complexity and features at
// their defaults (docs/evolve.md).
result<std::vector<descriptor>> parse_descriptors(const std::string& text);

// What the gate said about a child, as the score sees it.
struct verdict_summary {
  bool compiles = false;
  bool correct = false;
  std::optional<double> speedup;  // paired, over the task's baseline (correct and decided only)
};
// Kernel-Smith's composite score, ordered so that failed children still rank: 0 when it does not
// compile, 0.25 when it compiles and is wrong, 1 + speedup when correct (1 + 1 when correct but
// undecided: parity, never a gain).
double composite_score(const verdict_summary& v);

struct elite {
  std::string hash;                // the kernel's content hash (its bundle is stored apart)
  double score = 0;
  verdict_summary verdict;
  std::vector<double> values;      // one per descriptor
  int32_t generation = 0;
  std::string parent;              // parent hash ("" for the initial population)
  int64_t evaluation = 0;
};

// Where a child goes. archive::place answers new_cell, contest or kept; `failed` is the record's
// word (child_record::placement) for a child that never reached the archive.
enum class placement : uint8_t {
  new_cell,  // the cell was empty: the child is its elite
  contest,   // the cell has an elite with a lower score: a paired re-measure decides
  kept,      // the incumbent scores at least as high: the child is not placed
  failed,    // the proposer failed or the child failed the gate: never placed
};
const char* to_string(placement p);

struct sampling {
  double exploration = 0.2;   // a uniformly random elite of the island
  double exploitation = 0.5;  // score-proportional among the island's elites
  double elite = 0.3;         // uniformly among the island's top `top_k` by score
  int32_t top_k = 3;
  int32_t inspirations = 2;   // other elites shown with the parent (other cells; best first)
};
// "exploration=0.2,exploitation=0.5,elite=0.3,top=3,inspirations=2" (any subset); ratios must
// be non-negative and sum to a positive number (they are normalized).
result<sampling> parse_sampling(const std::string& text);

class archive {
 public:
  archive(std::vector<descriptor> d, int32_t islands);

  const std::vector<descriptor>& descriptors() const { return desc_; }
  int32_t islands() const { return static_cast<int32_t>(cells_.size()); }
  // The cell index of descriptor values (row-major over the descriptors' bins).
  int64_t cell_of(const std::vector<double>& values) const;

  // Where a child with `score` and `values` would go on island i (nothing changes).
  placement place(int32_t island, double score, const std::vector<double>& values) const;
  // Puts e in its cell on island i, replacing any incumbent. The caller has decided: new_cell,
  // or a contest the child won on a paired re-measure.
  void put(int32_t island, const elite& e);

  const elite* incumbent(int32_t island, int64_t cell) const;
  std::vector<const elite*> elites(int32_t island) const;  // by cell index
  const elite* best(int32_t island) const;                   // highest score (first cell on ties)
  const elite* best() const;                                 // over all islands
  size_t size() const;                                       // elites over all islands

  // A parent on island i by the sampling ratios, and its inspirations: elites of other cells of
  // the same island, best first (none when the island has one elite). Deterministic given `rng`.
  const elite* parent(int32_t island, const sampling& s, std::mt19937_64& rng) const;
  std::vector<const elite*> inspirations(int32_t island, const elite& parent, const sampling& s) const;

  // Ring migration: each island's best elite as a migrant to island (i + 1) % n. Returns the
  // (target island, migrant) pairs; the caller places each like a child (an empty cell takes it,
  // an occupied one only after a won contest).
  std::vector<std::pair<int32_t, elite>> migrants() const;

 private:
  std::vector<descriptor> desc_;
  std::vector<std::map<int64_t, elite>> cells_;  // per island
};

}  // namespace lathe::search
