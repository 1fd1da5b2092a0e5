#include "core/hash.h"

#include <xxhash.h>

#include <cstdint>
#include <new>

namespace lathe {
namespace {

std::string to_hex(XXH128_hash_t h) {
  // The canonical (big-endian) form, so the text is the same on every host.
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[2 * i] = digits[c.digest[i] >> 4];
    s[2 * i + 1] = digits[c.digest[i] & 0xf];
  }
  return s;
}

XXH3_state_t* state_of(void* p) {
  return static_cast<XXH3_state_t*>(p);
}

}  // namespace

std::string content_hash(std::string_view bytes) {
  return to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

hasher::hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_of(state_));
}

hasher::~hasher() {
  XXH3_freeState(state_of(state_));
}

hasher& hasher::add(std::string_view field) {
  // Length prefix as 8 little-endian bytes: field boundaries are part of the hash.
  unsigned char len[8];
  const uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  XXH3_128bits_update(state_of(state_), len, sizeof len);
  XXH3_128bits_update(state_of(state_), field.data(), field.size());
  return *this;
}

std::string hasher::hex() const {
  return to_hex(XXH3_128bits_digest(state_of(state_)));
}

}  // namespace lathe
