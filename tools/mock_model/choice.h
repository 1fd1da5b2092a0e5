// Deterministic choices for the mock model: every decision it makes (which mechanism, which site,
// whether this answer is wrong) is drawn from a stream that depends only on --seed, the text of
// the prompt and the purpose of the draw. Streams are split by purpose so that turning one rate
// up does not change any other choice: a test can flip --wrong-rate and get the same site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lathe::mock {

// FNV-1a, 64 bits: small, stable across platforms and releases (the mock's output must not change
// when a library's hash does).
uint64_t fnv1a(std::string_view text, uint64_t basis = 0xcbf29ce484222325ull);

// One stream of splitmix64 values.
class stream {
 public:
  explicit stream(uint64_t state) : state_(state) {}
  uint64_t next();
  // Uniform in [0, n); 0 when n == 0.
  size_t below(size_t n);
  // True with probability `rate` (0 never, 1 always).
  bool chance(double rate);

 private:
  uint64_t state_;
};

// Hands out one stream per purpose ("site", "wrong", "bad_edit"…) for a given seed and prompt.
class chooser {
 public:
  chooser(uint64_t seed, uint64_t prompt_hash) : seed_(seed), prompt_(prompt_hash) {}
  stream for_purpose(std::string_view purpose) const;

 private:
  uint64_t seed_, prompt_;
};

}  // namespace lathe::mock
