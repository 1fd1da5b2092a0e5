// XXH3-128 content hashes and the field hasher.
#include "core/hash.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

TEST(hash, known_answer_xxh3_128_of_empty_input) {
  // xxHash's sanity vector for XXH3_128bits(""): high 0x99AA06D3014798D8, low 0x6001C324468D497F,
  // printed in canonical (big-endian) order.
  EXPECT_EQ(content_hash(""), "99aa06d3014798d86001c324468d497f");
}

TEST(hash, is_32_lowercase_hex_digits_and_deterministic) {
  const std::string h = content_hash("lathe");
  ASSERT_EQ(h.size(), 32u);
  for (char c : h) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << h;
  EXPECT_EQ(h, content_hash("lathe"));
  EXPECT_NE(h, content_hash("lathf"));
  EXPECT_NE(content_hash(std::string_view("a\0b", 3)), content_hash(std::string_view("a\0c", 3)));
}

TEST(hasher, field_boundaries_are_part_of_the_hash) {
  hasher a, b, c, d;
  a.add("ab").add("c");
  b.add("a").add("bc");
  c.add("ab").add("c");
  d.add("abc");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_EQ(a.hex(), c.hex());
  EXPECT_NE(a.hex(), d.hex());
  // hex() does not consume the state.
  EXPECT_EQ(a.hex(), a.hex());
  hasher e, f;
  f.add("");
  EXPECT_NE(e.hex(), f.hex());  // one empty field is not zero fields
}

}  // namespace
}  // namespace lathe
