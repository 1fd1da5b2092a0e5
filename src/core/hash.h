// Content hashing (XXH3-128), hex encoded. Used for kernel identity, blobs and cache keys.
#pragma once

#include <string>
#include <string_view>

namespace lathe {

std::string content_hash(std::string_view bytes);  // 32 hex digits

// Incremental hashing of several fields; each field is length-prefixed so ("ab","c") and
// ("a","bc") differ.
class hasher {
 public:
  hasher();
  ~hasher();
  hasher(const hasher&) = delete;
  hasher& operator=(const hasher&) = delete;
  hasher& add(std::string_view field);
  std::string hex() const;

 private:
  void* state_;
};

}  // namespace lathe
