#include "choice.h"

namespace lathe::mock {

uint64_t fnv1a(std::string_view text, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t stream::next() {
  // splitmix64 (Steele, Lea, Flood 2014): every state gives a well-mixed output, so streams
  // seeded from neighbouring values are unrelated.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

size_t stream::below(size_t n) {
  return n == 0 ? 0 : static_cast<size_t>(next() % n);
}

bool stream::chance(double rate) {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  // 53 random bits: a double in [0, 1).
  return static_cast<double>(next() >> 11) * 0x1.0p-53 < rate;
}

stream chooser::for_purpose(std::string_view purpose) const {
  stream s(seed_ * 0x9e3779b97f4a7c15ull ^ prompt_ ^ fnv1a(purpose));
  s.next();  // one step so that the first draw already mixes all three inputs
  return s;
}

}  // namespace lathe::mock
